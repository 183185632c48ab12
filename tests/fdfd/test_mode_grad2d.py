"""jax.grad through the 2-D TM FDFD's mode amplitudes (a ModeSource2D-driven solve_tm of a
scene with traced parameters), checked against central finite differences."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from emjax import fdfd, geometry, scene
from emjax.backend import precision_scope
from emjax.errors import ConfigError

F0 = 1 / 1.55
RES = 10
DX = 1 / RES
SRC = fdfd.ModeSource2D((-0.7, 0), 1.6, "x", "+")


def _scene(eps, at=(0, 0.3, 0)):
    """A 0.5 um Si strip along x in SiO2 and a 3 x 3-node design region above it, each node
    its own (traced) permittivity."""
    v = np.array([[-10, -0.25], [10, -0.25], [10, 0.25], [-10, 0.25]])
    core = scene.Object(geometry.Polygon(vertices=v), 3.476**2, size=20.0)
    vox = geometry.Voxels(array=np.arange(9).reshape(3, 3, 1))
    design = scene.Object(vox, tuple(eps[i] for i in range(9)), center=at, size=3 * DX)
    return scene.Scene([core, design], background=1.444**2)


def _solve(eps, **kw):
    sc = _scene(eps, **kw)
    return fdfd.solve_tm((2.0, 1.8), RES, F0, SRC, scene=sc, pml=fdfd.SCPML(10), progress=False)


def test_grad_of_mode_powers_matches_finite_differences():
    """Set-up: the strip's TM mode launched past the design region; the objective the
    transmitted power (forward mode past the region) minus 5 times the reflected power
    (backward mode between the source and the region). The traced solve's amplitudes equal
    the concrete solve's to rounding (the same operator and right side); its gradient (one
    adjoint solve) equals central differences with step 1e-4 in eps (measured ~1e-9
    relative; tolerance 1e-6), with or without jax.jit. A sign error or a missing term fails
    by O(1)."""
    eps0 = np.linspace(2.5, 9.0, 9)

    def amplitudes(eps):
        r = _solve(eps)
        return fdfd.mode_amplitudes(r, (0.7, 0), 1.6), fdfd.mode_amplitudes(r, (-0.5, 0), 1.6)

    def f(eps):
        out, back = amplitudes(eps)
        return jnp.abs(out[0, 0]) ** 2 - 5 * jnp.abs(back[0, 1]) ** 2

    with precision_scope():
        value, g = jax.value_and_grad(f)(jnp.asarray(eps0))
        out, back = amplitudes(eps0)  # concrete: the NumPy path
        assert float(value) == pytest.approx(abs(out[0, 0]) ** 2 - 5 * abs(back[0, 1]) ** 2, rel=1e-12)
        g = np.asarray(g)
        assert np.max(np.abs(g)) > 0
        # under jax.jit (permittivities abstract: the mode lines' rows from the scene's
        # untraced part) the same gradient, to the finite differences' tolerance (measured:
        # equal to 6e-8 of the largest entry, XLA's rounding through the adjoint solve)
        gj = np.asarray(jax.jit(jax.grad(f))(jnp.asarray(eps0)))
        np.testing.assert_allclose(gj, g, rtol=0, atol=1e-6 * np.max(np.abs(g)))
        h = 1e-4
        for i in (0, 4, 8):
            d = np.zeros(9)
            d[i] = h
            fd = (float(f(eps0 + d)) - float(f(eps0 - d))) / (2 * h)
            assert g[i] == pytest.approx(fd, rel=1e-6, abs=1e-6 * np.max(np.abs(g)))


def test_a_design_on_a_mode_line_is_refused():
    # the modes are held fixed: a traced object within two nodes of a mode line is refused
    def amp(eps, x):
        return jnp.abs(fdfd.mode_amplitudes(_solve(eps), (x, 0), 1.6)[0, 0]) ** 2

    with pytest.raises(ConfigError, match="mode_amplitudes: the line at x = 0.1 .*held fixed"):
        jax.grad(amp)(jnp.full(9, 4.0), 0.1)
    with pytest.raises(ConfigError, match="ModeSource2D: the line at x = -0.7 .*held fixed"):
        jax.grad(lambda e: jnp.abs(_solve(e, at=(-0.6, 0.3, 0)).Ez[0, 0]))(jnp.full(9, 4.0))
