"""Gradients of the public layered calls with respect to the wavelength (a traced length
scale: ``G(wl; x) = s G(wl0; s x)``, ``s = wl0 / wl``, every length x scaled), and the one-line
refusals where a gradient cannot be taken (a dispersive material's eps in the wavelength,
inside ``jax.jit``, a 32-bit session).

Set-up as tests/layered/test_gradients.py: a lossy film (eps = 2 + 0.1i, d = 0.2) on glass
(2.25) under vacuum, wavelength 1, a source at z = 0.3, observers above (direct + reflected)
and in the glass. Central differences of the same public calls on concrete values, step
1e-5 (truncation ~1e-10 relative; each evaluation re-chooses its quadrature nodes, which
moves G by far less than rtol = 1e-8). Measured relative errors on the 2-core box: below.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from emjax import materials
from emjax.backend import precision_scope
from emjax.errors import ConfigError
from emjax.layered import Stack, dipole_fields, green_tensor

SRC = (0.0, 0.0, 0.3)
PTS = [[0.2, 0.1, 0.5], [0.1, 0.0, -0.4]]


def _stack(d=0.2):
    return Stack(eps=[1.0, 2.0 + 0.1j, 2.25], thickness=[d])


def _fd(f, x0, h=1e-5):
    with precision_scope():
        return (np.asarray(f(x0 + h)) - np.asarray(f(x0 - h))) / (2 * h)


@pytest.mark.slow  # ~2 min on the loaded 2-core box (the traced integrands' compiles)
def test_green_tensor_and_dipole_fields_wavelength_gradient():
    """jax.jacrev of Re and Im of every G component at both observers, and of E and H of a
    tilted dipole, with respect to the wavelength, against central differences; the traced
    value equals the concrete call's. Measured: G 5.2e-10, E/H 8.2e-10 (relative, norm of
    the column); tolerance 1e-7."""

    def green(wl):
        G = jnp.asarray(green_tensor(_stack(), wl, SRC, PTS, progress=False))
        return jnp.concatenate([jnp.real(G).ravel(), jnp.imag(G).ravel()])

    def fields(wl):
        r = dipole_fields(_stack(), wl, SRC, PTS, p=(1.0, 0.3j, 1.0), progress=False)
        EH = jnp.concatenate([jnp.asarray(r.E).ravel(), jnp.asarray(r.H).ravel()])
        return jnp.concatenate([jnp.real(EH), jnp.imag(EH)])

    for f in (green, fields):
        with precision_scope():
            value, J = f(jnp.float64(1.0)), jax.jacrev(f)(jnp.float64(1.0))
            concrete = np.asarray(f(1.0))
        fd = _fd(f, 1.0)
        np.testing.assert_allclose(np.asarray(value), concrete, rtol=0, atol=1e-12 * np.abs(concrete).max())
        err = np.linalg.norm(np.asarray(J) - fd) / np.linalg.norm(fd)
        print(f.__name__, f"{err:.1e}")
        assert err < 1e-7, (f.__name__, err)


def test_wavelength_gradient_refusals():
    """One line each: a material whose eps is not traceable in the wavelength (names the
    medium and what to give), a traced wavelength inside jax.jit and a thickness under
    jax.vmap (the quadrature nodes need concrete values: differentiate outside, loop over a
    batch), any traced input in a 32-bit session (what to set)."""
    drude = Stack(eps=[1.0, materials.Drude(omega_p=10.0, gamma=0.1), 2.25], thickness=[0.2])
    with precision_scope(), pytest.raises(ConfigError, match=r"Stack.eps\[1\].*eps as a number"):
        jax.grad(lambda wl: jnp.real(green_tensor(drude, wl, SRC, PTS, progress=False)[0, 0, 0]))(1.0)
    with precision_scope(), pytest.raises(ConfigError, match="wavelength is an abstract tracer.*outside jit"):
        jax.jit(lambda wl: green_tensor(_stack(), wl, SRC, PTS, progress=False))(1.0)
    with precision_scope(), pytest.raises(ConfigError, match=r"thickness\[0\] is an abstract tracer.*vmap"):
        jax.vmap(lambda d: green_tensor(_stack(d), 1.0, SRC, PTS, progress=False))(jnp.array([0.1, 0.2]))
    assert not jax.config.jax_enable_x64  # the test session's default
    with pytest.raises(ConfigError, match="JAX_ENABLE_X64"):
        jax.grad(lambda d: jnp.real(green_tensor(_stack(d), 1.0, SRC, PTS, progress=False)[0, 0, 0]))(0.2)
