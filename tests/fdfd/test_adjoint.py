"""Gradients through the 2-D TM FDFD (emjax.fdfd.tm_field, disk_permittivity) against central
differences, and the forward field against solve_tm. Objective everywhere: L = sum |E_z|^2 over
a block of nodes away from the scatterer (a real function of the field)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from emjax import ConfigError, fdfd, geometry, scene
from emjax.backend import precision_scope
from emjax.fdfd.adjoint import _square_line_fill

RES, SHAPE, CENTER = 20, (57, 57), (0.1, -0.05)  # the grid of solve_tm((1.6, 1.6), 20, ...)


def _objective(stencil, source=None):
    source = fdfd.PlaneWave2D(30.0) if source is None else source

    def L(e):
        E = fdfd.tm_field(e, RES, 1.0, source, stencil=stencil)
        return jnp.sum(jnp.abs(E[12:20, 30:40]) ** 2)

    return L


def test_forward_equals_solve_tm():
    """disk_permittivity equals the scene raster of a lone disk to 1.3e-8 (measured: the
    scene's cube formula tilts face-parallel cuts by 1e-4), and tm_field then equals
    solve_tm's field to 5e-10 of the peak (measured, both stencils; bound 1e-7)."""
    sc = scene.Scene([scene.Object(geometry.Disk(), 4.0, center=(*CENTER, 0), size=0.8)])
    with precision_scope():
        eps = fdfd.disk_permittivity(SHAPE, RES, CENTER, 0.4, 4.0)
        for stencil in ("compact", "yee"):
            r = fdfd.solve_tm((1.6, 1.6), RES, 1.0, fdfd.PlaneWave2D(30.0), scene=sc, stencil=stencil)
            assert r.Ez.shape == SHAPE
            np.testing.assert_allclose(np.asarray(eps), r.eps, rtol=0, atol=5e-8)
            E = fdfd.tm_field(eps, RES, 1.0, fdfd.PlaneWave2D(30.0), stencil=stencil)
            assert np.abs(np.asarray(E) - r.Ez).max() < 1e-7 * np.abs(r.Ez).max()


@pytest.mark.parametrize("stencil", ["compact", "yee"])
def test_permittivity_gradient(stencil):
    """d L / d eps (lossy disk, eps 4 + 0.5i) vs central differences (step 1e-6): one node's
    real and imaginary parts (measured relative differences <= 1e-5: the difference
    quotient's own error), a random direction over the whole interior (8e-9 / 5e-9 for
    compact / yee). JAX's convention: the gradient with respect to a complex eps is dL/dRe -
    i dL/dIm. Bounds 1e-4 and 1e-6."""
    L = _objective(stencil)
    with precision_scope():
        eps = fdfd.disk_permittivity(SHAPE, RES, CENTER, 0.4, 4.0 + 0.5j)
        g = jax.grad(L)(eps)
        g_re = jax.grad(lambda er: L(er + 1j * jnp.imag(eps)))(jnp.real(eps))
        h, (i, j) = 1e-6, (28, 27)
        d = jnp.zeros(SHAPE).at[i, j].set(h)
        fd_re = (L(eps + d) - L(eps - d)) / (2 * h)
        fd_im = (L(eps + 1j * d) - L(eps - 1j * d)) / (2 * h)
        assert abs(g_re[i, j] - fd_re) < 1e-4 * abs(fd_re)
        assert abs(g[i, j] - (fd_re - 1j * fd_im)) < 1e-4 * abs(fd_re - 1j * fd_im)
        v = np.zeros(SHAPE)
        v[12:-12, 12:-12] = np.random.default_rng(1).normal(size=(33, 33))
        v = jnp.asarray(v)
        fd_v = (L(eps + h * v) - L(eps - h * v)) / (2 * h)
        assert abs(jnp.sum(g_re * v) - fd_v) < 1e-6 * abs(fd_v)


def test_radius_gradient_is_smooth():
    """d L / d radius through the subpixel raster (a disk of eps 4, radius 0.4): the central
    differences converge to the adjoint gradient as h^2 (measured relative differences
    2.6e-5, 2.6e-7, 2.9e-9 at h = 1e-4, 1e-5, 1e-6) — smooth, unlike a staircase (zero
    almost everywhere). Bound 1e-7 at h = 1e-6; a staircase raster's derivative is 0."""

    def L(radius):
        e = fdfd.disk_permittivity(SHAPE, RES, CENTER, radius, 4.0)
        E = fdfd.tm_field(e, RES, 1.0, fdfd.PlaneWave2D(30.0))
        return jnp.sum(jnp.abs(E[12:20, 30:40]) ** 2)

    with precision_scope():
        g = jax.grad(L)(0.4)
        fd = (L(0.4 + 1e-6) - L(0.4 - 1e-6)) / 2e-6
        assert abs(g - fd) < 1e-7 * abs(fd) and abs(g) > 1.0


@pytest.mark.parametrize("stencil", ["compact", "yee"])
def test_current_source_gradients(stencil):
    """A current-density source (an array: differentiable too): d L / d eps and d L / d J_z
    vs central differences, measured within 1e-7 relative (bound 1e-5)."""
    with precision_scope():
        eps = fdfd.disk_permittivity(SHAPE, RES, CENTER, 0.4, 4.0 + 0.5j)
        J = jnp.zeros(SHAPE, jnp.complex128).at[20, 20].set(1.0)

        def L(e, J):
            return jnp.sum(jnp.abs(fdfd.tm_field(e, RES, 1.0, J, stencil=stencil)[30:35, 30:35]) ** 2)

        g_e = jax.grad(lambda er: L(er + 1j * jnp.imag(eps), J))(jnp.real(eps))
        g_j = jax.grad(lambda jr: L(eps, jr + 0j))(jnp.real(J))
        h = 1e-6
        d = jnp.zeros(SHAPE).at[28, 27].set(h)
        fd_e = (L(eps + d, J) - L(eps - d, J)) / (2 * h)
        dj = jnp.zeros(SHAPE).at[22, 25].set(h)
        fd_j = (L(eps, J + dj) - L(eps, J - dj)) / (2 * h)
        assert abs(g_e[28, 27] - fd_e) < 1e-5 * abs(fd_e)
        assert abs(g_j[22, 25] - fd_j) < 1e-5 * abs(fd_j)


def test_square_line_fill_and_checks():
    """The exact square-line area: 0.7 for an axis-parallel cut at 0.2, 1/2 through the
    centre at any angle, 0 / 1 far out (exactly, also for a normal 1e-13 off an axis), and the
    midpoint rule on 2000^2 points within 2e-5 (measured 1.4e-5) for random cuts."""
    rng = np.random.default_rng(0)
    with precision_scope():
        f = _square_line_fill(
            jnp.array([[1.0, 0.0], [0.6, 0.8], [1.0, 1e-13], [1.0, 1e-13]]), jnp.array([0.2, 0.0, -5.0, 5.0])
        )
        np.testing.assert_allclose(np.asarray(f), [0.7, 0.5, 0.0, 1.0], rtol=0, atol=1e-15)
        g = (np.arange(2000) + 0.5) / 2000 - 0.5
        X, Y = np.meshgrid(g, g)
        for th, t in zip(rng.uniform(0, 2 * np.pi, 8), rng.uniform(-0.8, 0.8, 8)):
            n = np.array([np.cos(th), np.sin(th)])
            ref = ((X * n[0] + Y * n[1]) <= t).mean()
            assert abs(float(_square_line_fill(jnp.asarray(n[None]), jnp.asarray([t]))[0]) - ref) < 2e-5
        eps = fdfd.disk_permittivity(SHAPE, RES, CENTER, 0.4, 4.0)
        with pytest.raises(ConfigError, match="eps must be 1 in the PML"):
            fdfd.tm_field(eps.at[2, 2].set(2.0), RES, 1.0, fdfd.PlaneWave2D())
        with pytest.raises(ConfigError, match="Im eps >= 0"):
            fdfd.tm_field(eps.at[30, 30].set(2.0 - 1j), RES, 1.0, fdfd.PlaneWave2D())
        with pytest.raises(ConfigError, match="current array of shape"):
            fdfd.tm_field(eps, RES, 1.0, jnp.zeros((3, 3)))


@pytest.mark.slow  # 4-8 s on 2 cores (fast-suite budget)
def test_inverse_design_example_improves():
    """examples/fdfd_inverse_design.py, coarse (10 cells per wavelength, 8 Adam steps): the
    focal intensity rises (measured at 20 per wavelength and 40 steps: 3.72 -> 6.04) and
    every step's gradient is finite; here the rise must exceed 20%."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "fdfd_inverse_design.py"
    spec = importlib.util.spec_from_file_location("fdfd_inverse_design", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    r = mod.design_problem(steps=8, res=10.0, pml=8)
    h = r["history"]
    assert np.all(np.isfinite(h)) and h[-1] > 1.2 * h[0], h
    assert r["eps_after"].real.min() >= 1.0 and r["eps_after"].real.max() <= 4.0


def test_gradient_under_jit_without_global_x64():
    """``jax.jit(jax.value_and_grad(...))`` of a TM objective equals the eager call (the
    SuperLU callbacks run on a runtime thread outside the caller's 64-bit scope; their
    complex128 results must survive it: measured 1.3e-15 relative, tolerance 1e-12)."""
    n = 60
    eps = np.ones((n, n))
    eps[25:35, 25:35] = 3.0

    def loss(e):
        E = fdfd.tm_field(e, 40.0, 1.0, fdfd.PlaneWave2D(0.0), fdfd.SCPML(10))
        return jnp.sum(jnp.abs(E[40, 15:45]) ** 2)

    with precision_scope():
        v1, g1 = jax.jit(jax.value_and_grad(loss))(jnp.asarray(eps))
        v0, g0 = jax.value_and_grad(loss)(jnp.asarray(eps))
        assert g1.dtype == jnp.float64
        assert abs(float(v1) - float(v0)) <= 1e-12 * abs(float(v0))
        assert float(jnp.abs(g1 - g0).max()) <= 1e-12 * float(jnp.abs(g0).max())
