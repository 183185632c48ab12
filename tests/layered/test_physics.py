"""emjax.layered against independent closed forms and 1-D integrals (layered_reference.py):
decay rates (Chance-Prock-Silbey), the perfect-conductor image, the electrostatic image
and the far fields above and below an interface."""

import layered_reference as ref  # tests/layered on sys.path (tests/reference.py is the DDA one)
import numpy as np
import pytest

from emjax.layered import Stack, green_tensor

LAM = 1.0
K0 = 2 * np.pi / LAM


@pytest.mark.parametrize("eps2", [2.25, 0.49, -10 + 1j, 4 + 2j])
@pytest.mark.parametrize("d", [0.03, pytest.param(0.3, marks=pytest.mark.slow)])
@pytest.mark.parametrize("orientation", ["perpendicular", "parallel"])
def test_decay_rate_vs_chance_prock_silbey(eps2, d, orientation):
    """Normalised decay rate of a dipole at height d (wavelengths) above glass, a
    low-index medium, a lossy metal and a lossy dielectric: 1 + (6 pi / k1) Im[n.G_s(r0,r0).n]
    from emjax's scattered tensor at the source against the CPS/Lukosz 1-D integral
    (scipy quad, 1e-12). The two share only the Fresnel formulas; tolerance 1e-8 relative,
    emjax at rtol 1e-11."""
    eps1 = 1.0
    st = Stack(eps=[eps1, eps2])
    src = np.array([0.0, 0.0, d])
    G = green_tensor(st, LAM, src, src[None], part="scattered", rtol=1e-11)[0]
    ours = ref.decay_rate_from_green(G, eps1, K0, orientation)
    theirs = ref.decay_rate(eps1, eps2, K0, d, orientation)
    assert abs(ours - theirs) < 1e-8 * abs(theirs)


def test_near_perfect_conductor_vs_image_dipole():
    """A substrate with eps = 1e8 i (|r_s + 1|, |r_p - 1| ~ 2 / |n2| ~ 2e-4) against the exact
    full-wave image of a perfect conductor, G0(r, mirror r') diag(-1, -1, 1), at points
    0.05 - 1.3 wavelengths away. Tolerance 1e-3 of the largest element: the conductor's
    finite skin (relative field error ~ |1/n2|, up to a few times that at grazing)."""
    st = Stack(eps=[1.0, 1e8j])
    src = np.array([0.0, 0.0, 0.2])
    pts = np.array([[0.3, 0.1, 0.05], [1.0, -0.5, 0.6], [0.0, 0.0, 0.4], [-0.2, 0.3, 0.25], [0.9, 0.9, 0.01]])
    G = green_tensor(st, LAM, src, pts, part="scattered", rtol=1e-10)
    Gi = ref.perfect_conductor_image(1.0, K0, pts, src)
    for n in range(len(pts)):
        assert np.abs(G[n] - Gi[n]).max() < 1e-3 * np.abs(Gi[n]).max(), n


def test_quasistatic_limit_vs_electrostatic_images():
    """Wavelength 1e4 times the geometry (k0 R ~ 6e-4): k0^2 G against the electrostatic
    image dipole (scattered part, above) and the transmitted field of a dipole in the mean
    permittivity (below), for glass and a lossy metal. Corrections are O((k0 R)^2) ~ 1e-6,
    tolerance 1e-5."""
    lam = 1e4
    k0 = 2 * np.pi / lam
    src = np.array([0.0, 0.0, 0.1])
    above = np.array([[0.2, 0.1, 0.05], [0.0, 0.3, 0.3], [-0.15, 0.0, 0.12]])
    below = np.array([[0.2, 0.1, -0.05], [0.0, 0.3, -0.3]])
    for eps2 in (2.25, -5 + 0.5j):
        st = Stack(eps=[1.0, eps2])
        Ga = k0**2 * green_tensor(st, lam, src, above, part="scattered", rtol=1e-11)
        Gb = k0**2 * green_tensor(st, lam, src, below, part="total", rtol=1e-11)
        Ra = ref.image_dipole_quasistatic(1.0, eps2, above, src)
        Rb = ref.image_dipole_quasistatic(1.0, eps2, below, src)
        assert np.abs(Ga - Ra).max() < 1e-5 * np.abs(Ra).max()
        assert np.abs(Gb - Rb).max() < 1e-5 * np.abs(Rb).max()


def _far(G, k, r):
    return G * (r * np.exp(-1j * k * r))


@pytest.mark.parametrize(
    "eps2", [pytest.param(2.25, marks=pytest.mark.slow), pytest.param(-4 + 0.3j, marks=pytest.mark.slow)]
)
def test_far_field_above_vs_fresnel_image(eps2):
    """Total field far above the interface (polar angles 20 and 55 degrees) against the
    asymptotic direct + Fresnel-weighted image far field. The exact field approaches it as
    1/r: r e^{-ikr} G at r = 200 and 400 wavelengths, extrapolated to r -> inf (2 A(2r) -
    A(r)), agrees to 1e-4 of the pattern's largest element (the remaining O(1/r^2))."""
    st = Stack(eps=[1.0, eps2])
    h = 0.15
    src = np.array([0.0, 0.0, h])
    th = np.radians([20.0, 55.0])
    dirs = np.stack([np.sin(th) * np.cos(0.4), np.sin(th) * np.sin(0.4), np.cos(th)], axis=1)
    A = []
    for r in (200.0, 400.0):
        pts = r * dirs
        A.append(_far(green_tensor(st, LAM, src, pts, rtol=1e-9), K0, r))
    ext = 2 * A[1] - A[0]
    R = _far(ref.far_field_reflected(1.0, eps2, K0, h, 400.0 * dirs), K0, 400.0)
    assert np.abs(ext - R).max() < 1e-4 * np.abs(R).max()


@pytest.mark.slow
def test_far_field_below_vs_stationary_phase():
    """Transmitted far field in glass below a dipole in air (polar angles 150 and 170 deg,
    away from the critical angle at 131.8 deg) against the stationary-phase result,
    extrapolated in 1/r from r = 200 and 400 wavelengths as above."""
    eps2 = 2.25
    st = Stack(eps=[1.0, eps2])
    h = 0.1
    src = np.array([0.0, 0.0, h])
    k2 = K0 * np.sqrt(eps2)
    th = np.radians([150.0, 170.0])
    dirs = np.stack([np.sin(th) * np.cos(1.1), np.sin(th) * np.sin(1.1), np.cos(th)], axis=1)
    A = []
    for r in (200.0, 400.0):
        A.append(_far(green_tensor(st, LAM, src, r * dirs, rtol=1e-9), k2, r))
    ext = 2 * A[1] - A[0]
    R = _far(ref.far_field_transmitted(1.0, eps2, K0, h, 400.0 * dirs), k2, 400.0)
    assert np.abs(ext - R).max() < 1e-4 * np.abs(R).max()
