"""Green tensor of a planar stack: homogeneous limit, reciprocity, interface conditions,
precision, inputs. (Comparisons with independent closed forms: test_physics.py.)"""

import numpy as np
import pytest

from emjax.errors import ConfigError
from emjax.layered import Stack, dipole_fields, free_space, green_tensor
from emjax.layered import green as green_mod

LAM = 0.6
K0 = 2 * np.pi / LAM
ALL = tuple(range(9))


def _run(stack, src, pts, part="total", rtol=1e-10, prec="double"):
    return green_mod._run(
        stack, LAM, src, np.atleast_2d(pts), part=part, rtol=rtol, prec=prec, sel_fn=ALL, batch=None
    )


@pytest.mark.slow  # ~25 s on the 2-core CI box: moved out of the fast suite (its 10-minute budget)
def test_homogeneous_stack_is_free_space():
    """All media equal (eps = 2.25 + 0.05i, two 'layers'): every reflection coefficient is 0,
    so the scattered part vanishes and the total - obtained for points in other 'layers'
    through the transmission recursion and the Sommerfeld integrals, in the source's layer
    from the closed form - equals the free-space dyadic (I + grad grad / k^2) exp(ikR)/(4 pi R)
    and its curl. Tolerance 1e-9: the quadrature's rtol is 1e-10."""
    e = 2.25 + 0.05j
    st = Stack(eps=[e, e, e, e], thickness=[0.3, 0.1], z_top=0.1)
    src = np.array([0.02, -0.01, -0.05])
    pts = np.array(
        [[0.3, 0.1, 0.35], [0.5, -0.2, -0.1], [0.05, 0.0, -0.6], [1.0, 0.7, 0.12], [0.0, 0.0, -0.25]]
    )
    r = _run(st, src, pts)
    k = K0 * np.sqrt(e)
    G0, GH0 = free_space(k, K0, pts - src)
    assert np.abs(r.G - G0).max() / np.abs(G0).max() < 1e-9
    assert np.abs(r.GH - GH0).max() / np.abs(GH0).max() < 1e-9
    sc = _run(st, src, pts, part="scattered")
    same = st.layer_of(pts[:, 2]) == st.layer_of(src[2])
    assert np.abs(sc.G[same]).max() < 1e-12 * np.abs(G0).max()


STACK4 = Stack(eps=[1.0, 2.25 + 0.1j, -8 + 1j, 3.0], thickness=[0.2, 0.05], z_top=0.0)
POINTS4 = {
    "top": np.array([0.13, -0.07, 0.11]),
    "glass": np.array([-0.2, 0.15, -0.12]),
    "metal": np.array([0.05, 0.02, -0.23]),
    "bottom": np.array([0.1, 0.3, -0.32]),
}


@pytest.mark.parametrize(
    "a,b",
    [
        pytest.param("top", "glass", marks=pytest.mark.slow),
        pytest.param("top", "bottom", marks=pytest.mark.slow),
        pytest.param("glass", "bottom", marks=pytest.mark.slow),  # 14 s; glass-glass stays fast
        pytest.param("metal", "top", marks=pytest.mark.slow),
        ("glass", "glass"),
    ],
)
def test_reciprocity_across_layers(a, b):
    """G_ij(r, r') = G_ji(r', r) for source and observation in any two media of a lossy
    four-medium stack (air / lossy glass / metal film / substrate). Independent of the
    method: it follows from the symmetric operator. Tolerance: 10 x rtol."""
    ra, rb = POINTS4[a], POINTS4[b]
    if a == b:
        rb = ra + np.array([0.07, 0.03, 0.02])
    g1 = _run(STACK4, rb, ra).G[0]
    g2 = _run(STACK4, ra, rb).G[0]
    assert np.abs(g1 - g2.T).max() < 1e-9 * np.abs(g1).max()


@pytest.mark.slow  # ~20 s on the 2-core CI box: moved out of the fast suite (its 10-minute budget)
def test_interface_conditions():
    """Across every interface of the four-medium stack, tangential E, normal eps E and all
    of H (mu = 1) are continuous: points 1e-9 wavelengths above and below each interface,
    source in the lossy glass. Tolerance 1e-7 relative: the field's own variation over the
    2e-9 gap is ~1e-8 of it."""
    src = POINTS4["glass"]
    xy = np.array([0.11, -0.04])
    eps = STACK4.permittivities(LAM)
    for i, zi in enumerate(STACK4.interfaces):
        d = 1e-9 * LAM
        pts = np.array([[*xy, zi + d], [*xy, zi - d]])
        r = dipole_fields(STACK4, LAM, src, pts, p=(0.3, -0.5, 0.8), rtol=1e-11)
        E, H = r.E, r.H
        scale = np.abs(E).max()
        assert np.abs(E[0, :2] - E[1, :2]).max() < 1e-7 * scale, i
        assert abs(eps[i] * E[0, 2] - eps[i + 1] * E[1, 2]) < 1e-7 * scale * abs(eps).max(), i
        assert np.abs(H[0] - H[1]).max() < 1e-7 * np.abs(H).max(), i


@pytest.mark.slow  # ~20 s on the 2-core CI box: moved out of the fast suite (its 10-minute budget)
def test_single_precision_matches_double():
    """The same field map in single and double precision (rtol 1e-5 / 1e-10) agrees to a
    few 1e-5 of the largest field: float32 rounding in the ~1e3-node sums."""
    st = Stack(eps=[2.25, 1.0])
    x = np.linspace(-0.3, 0.3, 9)
    pts = np.stack([x, np.zeros_like(x), np.linspace(-0.2, 0.25, 9)], axis=1)
    d = dipole_fields(st, LAM, (0, 0, 0.05), pts, p=(1, 0, 1), part="scattered", rtol=1e-10)
    s = dipole_fields(
        st, LAM, (0, 0, 0.05), pts, p=(1, 0, 1), part="scattered", rtol=1e-5, precision="single"
    )
    assert np.abs(s.E - d.E).max() < 5e-5 * np.abs(d.E).max()
    assert np.abs(s.H - d.H).max() < 5e-5 * np.abs(d.H).max()


@pytest.mark.slow  # ~19 s on the 2-core CI box: moved out of the fast suite (its 10-minute budget)
def test_error_estimate_bounds_actual_error():
    """The per-point Gauss-Kronrod estimate at rtol = 1e-6 bounds the actual error (against
    rtol = 1e-12) on a map around a dipole 0.02 wavelengths above a lossy metal."""
    st = Stack(eps=[1.0, -10 + 1j])
    x = np.linspace(-0.5, 0.5, 7)
    X, Z = np.meshgrid(x, np.linspace(-0.1, 0.3, 5))
    pts = np.stack([X.ravel(), np.full(X.size, 0.01), Z.ravel()], axis=1)
    src = (0.0, 0.0, 0.012)
    lo = _run(st, src, pts, part="scattered", rtol=1e-6)
    hi = _run(st, src, pts, part="scattered", rtol=1e-12)
    err = np.linalg.norm((lo.G - hi.G).reshape(len(pts), -1), axis=1) / np.linalg.norm(
        hi.G.reshape(len(pts), -1), axis=1
    )
    assert np.all(lo.error <= 1e-6 * 1.0001)
    assert np.all(err <= 3 * lo.error + 1e-14)


def test_green_tensor_shape_and_symmetry_in_plane():
    """G has shape (N, 3, 3); for points on the x axis G_xy = G_yx = G_yz = G_zy = 0 by mirror
    symmetry y -> -y (a check of the angular assembly)."""
    st = Stack(eps=[1.0, 4.0])
    pts = np.array([[0.2, 0.0, 0.1], [-0.3, 0.0, -0.2]])
    G = green_tensor(st, LAM, (0, 0, 0.05), pts, rtol=1e-10)
    assert G.shape == (2, 3, 3)
    for i, j in ((0, 1), (1, 0), (1, 2), (2, 1)):
        assert np.abs(G[:, i, j]).max() < 1e-12 * np.abs(G).max()


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(wavelength=-1.0), "wavelength"),
        (dict(points=np.zeros((3, 2))), "points"),
        (dict(source=(0, 0)), "source"),
        (dict(part="reflected"), "part"),
        (dict(rtol=0.0), "rtol"),
        (dict(rtol=1e-9, precision="single"), "single"),
        (dict(points=[[0.0, 0.0, 0.05]]), "coincides"),
        (dict(source=(0, 0, 0.0), points=[[0.1, 0.0, 0.0]]), "interface"),
    ],
)
def test_bad_inputs(kwargs, match):
    args = dict(stack=Stack(eps=[1.0, 2.0]), wavelength=LAM, source=(0, 0, 0.05), points=[[0.1, 0, 0.1]])
    args.update(kwargs)
    with pytest.raises(ConfigError, match=match):
        green_tensor(**args)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(eps=[1.0]), "at least two"),
        (dict(eps=[1.0, 2.0, 3.0], thickness=[]), "thickness"),
        (dict(eps=[1.0, 2.0, 3.0], thickness=[-1.0]), "thickness"),
        (dict(eps=[1.0, 2.0 - 0.1j]), "Im"),
        (dict(eps=[1.0, "glass"]), "eps"),
    ],
)
def test_bad_stacks(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        Stack(**kwargs)


@pytest.mark.slow
def test_stack_accepts_materials():
    """An emjax.materials object in the stack is evaluated at the wavelength: a Drude metal
    gives the same field as its permittivity typed in as a number."""
    from emjax.materials import Drude

    metal = Drude(1.0, omega_p=2 * np.pi / 0.3, gamma=0.1)
    eps = complex(metal.permittivity(2 * np.pi / LAM))
    pts = [[0.1, 0.0, 0.05], [0.2, 0.1, -0.02]]
    a = green_tensor(Stack(eps=[1.0, metal]), LAM, (0, 0, 0.04), pts, part="scattered", rtol=1e-8)
    b = green_tensor(Stack(eps=[1.0, eps]), LAM, (0, 0, 0.04), pts, part="scattered", rtol=1e-8)
    assert eps.real < 0 and np.array_equal(a, b)
