"""Differentiable 2-D TE FDFD (fdfd.te_field): the field equals solve_te's on the same
(staircase) permittivity, and jax.grad with respect to the edge permittivities equals central
finite differences (real and imaginary parts, plane wave and magnetic current sources)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from emjax import ConfigError, fdfd, geometry, scene
from emjax.backend import precision_scope
from emjax.fdfd import grid2d, permittivity2d

RES, F, PML = 20.0, 1.0, fdfd.SCPML(8)


def _edges(sc, shape, dx, origin):
    """eps on the E_x and E_y edges of solve_te's grid for a staircase scene."""
    inv_x, inv_y, _, _ = permittivity2d._inplane_inverse(sc, shape, dx, origin, 2 * np.pi * F, "staircase")
    return 1.0 / inv_x, 1.0 / inv_y


@pytest.mark.parametrize("stencil", ["compact", "yee"])
def test_field_equals_solve_te(stencil):
    """A plane wave on an eps = 3 + 0.2i square (staircase): te_field on solve_te's edge
    permittivities = solve_te's H_z. Measured 2026-11-24: ~1e-13 relative (same matrix,
    different assembly); tolerance 1e-9."""
    sc = scene.Scene([scene.Object(geometry.Box(1.0, 20.0), 3.0 + 0.2j, size=0.6)])
    r = fdfd.solve_te(
        (1.6, 1.6), RES, F, fdfd.PlaneWave2D(30.0), sc, PML, averaging="staircase", stencil=stencil
    )
    g = grid2d._grid((1.6, 1.6), RES, F, PML, (0.0, 0.0), "staircase", half=True)
    ex, ey = _edges(sc, g.shape, g.dx, g.origin)
    with precision_scope():
        h = np.asarray(
            fdfd.te_field(
                (ex, ey), RES, F, fdfd.PlaneWave2D(30.0), PML, stencil=stencil, origin=(g.x[0], g.y[0])
            )
        )
    ref = np.asarray(r.Ez)
    assert h.shape == ref.shape
    assert np.abs(h - ref).max() <= 1e-9 * np.abs(ref).max()


def _loss_factory(source_kind):
    n = 44
    rng = np.random.default_rng(3)
    eps_x = np.ones((n, n), complex)
    eps_y = np.ones((n, n), complex)
    eps_x[16:28, 16:28] += 1 + rng.random((12, 12)) + 0.1j * (1 + rng.random((12, 12)))
    eps_y[16:28, 16:28] += 1 + rng.random((12, 12))
    if source_kind == "plane":
        src = fdfd.PlaneWave2D(20.0)
    else:
        m = np.zeros((n, n), complex)
        m[12, 22] = 1.0
        src = m

    def loss(ex, ey):
        h = fdfd.te_field((ex, ey), RES, F, src, PML)
        return jnp.sum(jnp.abs(h[32, 14:30]) ** 2)

    return loss, eps_x, eps_y


@pytest.mark.parametrize("source_kind", ["plane", "current"])
def test_gradient_vs_central_differences(source_kind):
    """d loss / d eps (real and imaginary parts, both edge sets) along a random direction
    in the design region vs central differences (h = 1e-4). Measured 2026-11-24: 1.6e-9 to
    5.0e-9 relative; tolerance 1e-7."""
    loss, ex, ey = _loss_factory(source_kind)
    rng = np.random.default_rng(7)
    mask = np.zeros(ex.shape)
    mask[16:28, 16:28] = 1
    dxr, dxi, dyr = (rng.standard_normal(ex.shape) * mask for _ in range(3))
    with precision_scope():
        gx, gy = jax.grad(loss, argnums=(0, 1))(jnp.asarray(ex), jnp.asarray(ey))
        gx, gy = np.asarray(gx), np.asarray(gy)
        h = 1e-4
        for name, d_x, d_y, g in (
            ("Re eps_x", dxr, 0 * dyr, np.sum(gx.real * dxr)),
            ("Im eps_x", 1j * dxi, 0 * dyr, -np.sum(gx.imag * dxi)),
            ("Re eps_y", 0 * dxr, dyr, np.sum(gy.real * dyr)),
        ):
            fd = (float(loss(ex + h * d_x, ey + h * d_y)) - float(loss(ex - h * d_x, ey - h * d_y))) / (2 * h)
            assert abs(g - fd) <= 1e-7 * abs(fd), (name, g, fd)


def test_jit_and_bad_inputs():
    """jax.jit(jax.grad) equals the eager gradient; a zero permittivity, a plane wave with
    eps != 1 in the PML and mismatched shapes are refused, naming the field."""
    loss, ex, ey = _loss_factory("plane")
    with precision_scope():
        g0 = jax.grad(loss)(jnp.asarray(ex), jnp.asarray(ey))
        g1 = jax.jit(jax.grad(loss))(jnp.asarray(ex), jnp.asarray(ey))
        assert float(jnp.abs(g1 - g0).max()) <= 1e-12 * float(jnp.abs(g0).max())  # measured: 0
    bad = ex.copy()
    bad[20, 20] = 0
    with pytest.raises(ConfigError, match="eps_x"):
        fdfd.te_field((bad, ey), RES, F, fdfd.PlaneWave2D(0.0), PML)
    pmlbad = ey.copy()
    pmlbad[1, 1] = 2.0
    with pytest.raises(ConfigError, match="eps_y must be 1 in the PML"):
        fdfd.te_field((ex, pmlbad), RES, F, fdfd.PlaneWave2D(0.0), PML)
    with pytest.raises(ConfigError, match="one shape"):
        fdfd.te_field((ex, ey[:-1]), RES, F, fdfd.PlaneWave2D(0.0), PML)
