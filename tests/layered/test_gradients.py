"""Gradients of the layered Green's tensor against central finite differences.

Set-up: a lossy film (eps = 2 + 0.5i, d = 0.2) on glass (2.25) under vacuum, wavelength 1;
the source at z = 0.3 above the film, one observer above (z = 0.45: direct + reflected wave)
and one in the glass (z = -0.45: transmitted through the film). The Jacobian of Re and Im of
every component of G at both points with respect to the observers' and the source's x, y, z,
Re eps and Im eps of the film and its thickness is taken with ``jax.jacrev`` through the
public ``green_tensor`` (traced Stack, source, points) and compared, column by column, with
central differences of the same public function on concrete values (step 1e-5: truncation
~h^2 |f'''| / 6 ~ 1e-10, rounding ~1e-16 |G| / h ~ 1e-11 relative; each difference also
re-chooses its quadrature nodes, which moves G by far less than rtol = 1e-8).
Per-column relative errors ``|J - FD| / |FD|`` as measured on the 2-core CI box are listed
at each test; the tolerances keep a factor ~10-100 above them and fail on any real mistake
(a wrong sign or a missing term is an O(1) error).

Each gradient test compiles the traced integrand (the unrolled Bessel kernels, forward and
backward), ~20-40 s on the 2-core box: those are marked slow.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from emjax.errors import ConfigError
from emjax.layered import Stack, dipole_fields, green_tensor

WL = 1.0
P0 = np.array(
    [0.3, 0.2, 0.45,  # observer 1 (top medium)
     0.4, -0.1, -0.45,  # observer 2 (glass)
     0.05, 0.02, 0.3,  # source
     2.0, 0.5, 0.2,  # Re eps, Im eps, thickness of the film
     0.0]  # z_top
)  # fmt: skip
NAMES = ["x1", "y1", "z1", "x2", "y2", "z2", "xs", "ys", "zs", "Re eps", "Im eps", "d", "z_top"]


def _green(p, precision="double", rtol=1e-8):
    stack = Stack(eps=[1.0, p[9] + 1j * p[10], 2.25], thickness=[p[11]], z_top=p[12])
    pts = jnp.stack([p[0:3], p[3:6]]) if isinstance(p, jax.Array) else np.stack([p[0:3], p[3:6]])
    return green_tensor(stack, WL, p[6:9], pts, precision=precision, rtol=rtol)


def _ri(G):
    G = jnp.asarray(G)
    return jnp.concatenate([jnp.real(G).ravel(), jnp.imag(G).ravel()])


def _fd(f, p, h=1e-5):
    cols = []
    for i in range(len(p)):
        e = np.zeros_like(p)
        e[i] = h
        cols.append((np.asarray(f(p + e)) - np.asarray(f(p - e))) / (2 * h))
    return np.stack(cols, -1)


@pytest.fixture(scope="module")
def reference():
    with jax.enable_x64(True):
        fd = _fd(lambda p: _ri(_green(p)), P0)
        value = np.asarray(_ri(_green(P0)))
    return value, fd


def _column_errors(J, fd):
    return np.linalg.norm(J - fd, axis=0) / np.linalg.norm(fd, axis=0)


@pytest.mark.slow  # ~2-4 min on the 2-core box (26 host evaluations for the FD, compilation)
def test_jacrev_matches_central_differences(reference):
    """Reverse mode (jax.jacrev, the path of jax.grad). Measured per column (x1 y1 z1 x2 y2
    z2 xs ys zs Re-eps Im-eps d z_top): 1.1e-9 1.3e-9 1.4e-9 4.9e-10 4.9e-10 1.2e-9 1.0e-9
    1.3e-9 1.4e-9 3.6e-11 3.4e-11 2.6e-9 1.3e-9 (the finite differences' own truncation and
    the re-chosen nodes); tolerance 1e-7. The traced primal equals the host value to 1e-13,
    and d/dz_top = -(d/dz + d/dzs) per point (translation) to 1e-10."""
    value, fd = reference
    with jax.enable_x64(True):
        p = jnp.asarray(P0)
        J = np.asarray(jax.jacrev(lambda q: _ri(_green(q)))(p))
        primal = np.asarray(jax.jvp(lambda q: _ri(_green(q)), (p,), (p,))[0])
    # the traced path evaluates the same quadrature rule as the host path
    assert np.linalg.norm(primal - value) <= 1e-13 * np.linalg.norm(value)
    err = _column_errors(J, fd)
    print({k: f"{v:.1e}" for k, v in zip(NAMES, err)})
    assert np.all(err < 1e-7), dict(zip(NAMES, err))
    # translation invariance, exact for the quadrature rule: raising the stack = lowering
    # the observer and the source (observer 1: rows of point 0, observer 2: point 1)
    rows = np.arange(len(value)).reshape(2, 2, 9)  # (Re/Im, point, component)
    for k, zcol in ((0, 2), (1, 5)):
        r = rows[:, k].ravel()
        lhs, rhs = J[r, 12], -(J[r, zcol] + J[r, 8])
        assert np.linalg.norm(lhs - rhs) <= 1e-10 * np.linalg.norm(lhs)


@pytest.mark.slow  # ~1-2 min on the 2-core box (compilation in single precision)
def test_single_precision_gradient(reference):
    """precision="single" (rtol 1e-6, float32/complex64 integrand): the jacrev Jacobian
    against the double-precision central differences. Measured per column (x1 y1 z1 x2 y2
    z2 xs ys zs Re-eps Im-eps d z_top): 3.7e-7 3.9e-7 3.4e-7 1.0e-7 8.6e-8 6.4e-8 3.7e-7
    3.9e-7 3.6e-7 5.0e-8 4.4e-8 2.9e-7 1.1e-7 (rounding of the float32 integrand);
    tolerance 1e-5."""
    value, fd = reference
    with jax.enable_x64(True):
        J = np.asarray(jax.jacrev(lambda q: _ri(_green(q, "single", 1e-6)))(jnp.asarray(P0)))
    err = _column_errors(J, fd)
    print({k: f"{v:.1e}" for k, v in zip(NAMES, err)})
    assert np.all(err < 1e-5), dict(zip(NAMES, err))


def test_traced_stack_is_checked_on_concrete_values():
    """Under jax.grad the Stack keeps its tracers and checks their primal values: a lossy
    medium with Im eps < 0 and a negative thickness are refused as for plain numbers; the
    interfaces stay concrete (layer membership is no differentiable quantity) and the
    permittivities come back traced."""

    def film(eps, d):
        return Stack(eps=[1.0, eps, 2.25], thickness=[d])

    with pytest.raises(ConfigError, match=r"Stack.eps\[1\].*Im < 0"):
        jax.grad(lambda e: jnp.real(film(e - 0.1j, 0.2).permittivities(1.0)[1]))(2.0)
    with pytest.raises(ConfigError, match=r"Stack.thickness\[0\] must be > 0"):
        jax.grad(lambda d: film(2.0, d).thickness[0])(-0.2)

    def probe(d):
        st = film(2.0 + 0.1j, d)
        assert st.traced
        np.testing.assert_allclose(st.interfaces, [0.0, -0.2])
        return jnp.real(st.interfaces_traced()[1] + st.permittivities(1.0)[1])

    with jax.enable_x64(True):
        assert float(jax.grad(probe)(0.2)) == -1.0


def test_inside_jit_is_refused_with_a_clear_message():
    """Inside jax.jit the values are abstract and the quadrature nodes cannot be chosen:
    a ConfigError names the field and says to differentiate outside jit (no host crash)."""
    stack = Stack(eps=[1.0, 2.0, 2.25], thickness=[0.2])
    with pytest.raises(ConfigError, match=r"source is an abstract tracer.*outside jit"):
        jax.jit(lambda z: green_tensor(stack, WL, (0.0, 0.0, z), [(0.0, 0.0, 0.5)]))(0.3)
    with pytest.raises(ConfigError, match=r"Stack.thickness\[0\] is an abstract tracer"):
        jax.jit(
            lambda d: green_tensor(Stack(eps=[1.0, 2.0, 2.25], thickness=[d]), WL, (0, 0, 0.3), [(0, 0, 0.5)])
        )(0.2)


@pytest.mark.slow  # ~40 s on the 2-core box (compilation of the E-field integrands, FD)
def test_dipole_field_gradient_on_the_axis():
    """A user's quantity from ``dipole_fields``: |E|^2 at an observer in the glass straight
    below a tilted dipole p = (px + 0.3i, 0.4 - 0.2i, 1) (p traced too) at height zs over the film,
    differentiated with jax.grad w.r.t. zs, Re eps, Im eps, d, Re px and the observer's x, y
    (on the axis rho = 0, where the traced assembly uses J_n / rho^n), against central
    differences (step 1e-5, across the axis). Measured relative errors (zs, Re eps, Im eps, d,
    Re px, x, y): 8.8e-10 4.7e-11 2.3e-11 2.0e-10 3.6e-12 4.5e-10 4.5e-10; tolerance 1e-7."""

    def intensity(q):
        stack = Stack(eps=[1.0, q[1] + 1j * q[2], 2.25], thickness=[q[3]])
        if isinstance(q, jax.Array):
            p, src, obs = (
                jnp.stack([q[4] + 0.3j, 0.4 - 0.2j, 1 + 0j]),
                jnp.stack([0.0, 0.1, q[0]]),
                jnp.stack([q[5], q[6], -0.4])[None],
            )
        else:
            p, src, obs = np.array([q[4] + 0.3j, 0.4 - 0.2j, 1]), (0.0, 0.1, q[0]), [(q[5], q[6], -0.4)]
        E = dipole_fields(stack, WL, src, obs, p, fields="E").E
        return jnp.sum(jnp.abs(jnp.asarray(E)) ** 2)

    q0 = np.array([0.3, 2.0, 0.5, 0.2, 0.5, 0.0, 0.1])
    with jax.enable_x64(True):
        g = np.asarray(jax.grad(intensity)(jnp.asarray(q0)))
        fd = _fd(intensity, q0)
    err = np.abs(g - fd) / np.abs(fd)
    print({k: f"{v:.1e}" for k, v in zip(["zs", "Re eps", "Im eps", "d", "Re px", "x", "y"], err)})
    assert np.all(err < 1e-7), err


@pytest.mark.slow  # ~2-3 min on the 2-core box (compilation of the forward-mode program)
def test_jvp_matches_directional_difference(reference):
    """Forward mode (jax.jvp, the path of jacfwd) along a fixed random direction of all 13
    parameters, against the same direction of the central differences (a linear
    combination of the reference columns). Measured 1.2e-9; tolerance 1e-7."""
    _, fd = reference
    v = np.random.default_rng(7).normal(size=P0.size)
    with jax.enable_x64(True):
        _, t = jax.jvp(lambda q: _ri(_green(q)), (jnp.asarray(P0),), (jnp.asarray(v),))
    want = fd @ v
    err = np.linalg.norm(np.asarray(t) - want) / np.linalg.norm(want)
    print(f"jvp vs FD: {err:.1e}")
    assert err < 1e-7, err
