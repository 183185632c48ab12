"""FDFD progress: the 3-D Krylov solve shows a bar (the residual's way to rtol) by default,
the 2-D direct solve says it is factorizing, progress=False prints nothing, a callable is
still called, and jax.grad through fdfd.field_3d works with the default."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from emjax import ConfigError, fdfd, krylov

WAVE = fdfd.PlaneWave3D((0, 0, 1), (1, 0, 0))
SOLVER = fdfd.Iterative(krylov.QMR(rtol=1e-6, maxiter=2000, chunk=20))


def _solve_3d(**kw):
    from emjax import geometry, scene

    sc = scene.Scene([scene.Object(geometry.Sphere(), 2.25, size=0.3)])
    return fdfd.solve_3d((0.6,) * 3, 10, 1.0, WAVE, sc, pml=fdfd.SCPML(2), solver=SOLVER, **kw)


def test_3d_bar_by_default_none_when_off(terminal):
    """solve_3d: a bar by default, nothing with progress=False, a callable called with the
    residual."""
    _solve_3d()
    shown = terminal.text()
    assert "fdfd:" in shown and "100%" in shown and "it, residual" in shown
    terminal.buffer.truncate(0)
    terminal.buffer.seek(0)
    calls = []
    _solve_3d(progress=lambda it, res: calls.append((it, res)))
    _solve_3d(progress=False)
    assert terminal.text() == ""
    assert calls and calls[-1][1] <= 1e-6
    with pytest.raises(ConfigError, match="progress"):
        _solve_3d(progress="yes")


@pytest.mark.slow
def test_grad_through_field_3d_with_the_default_progress(terminal):
    """jax.grad through fdfd.field_3d with the default shows the forward and the adjoint
    solve's bars and equals the gradient without them (the fast suite differentiates
    field_3d with the default in tests/fdfd/test_adjoint3d.py)."""
    r = _solve_3d(progress=False)
    n = r.eps.shape[-1]
    origin = (r.x[0], r.y[0], r.z[0])

    def loss(eps, **kw):
        e = fdfd.field_3d(eps, 10.0, 1.0, WAVE, fdfd.SCPML(2), solver=SOLVER, origin=origin, **kw)
        return jnp.sum(jnp.abs(e[0, :, :, n - 3]) ** 2)

    with jax.enable_x64(True):
        g = jax.grad(loss)(jnp.asarray(r.eps))
        shown = terminal.text()
        g_off = jax.grad(lambda e: loss(e, progress=False))(jnp.asarray(r.eps))
    assert "fdfd forward" in shown and "fdfd adjoint" in shown
    assert np.abs(g).max() > 0
    np.testing.assert_array_equal(np.asarray(g), np.asarray(g_off))


def test_2d_direct_solve_says_it_factorizes(terminal):
    args = ((1.0, 1.0), 20, 1.0, fdfd.PlaneWave2D(0.0))
    fdfd.solve_tm(*args, solver="superlu")
    assert "fdfd: factorizing" in terminal.text() and "(SuperLU)" in terminal.text()
    terminal.buffer.truncate(0)
    terminal.buffer.seek(0)
    fdfd.solve_te(*args, solver="superlu", progress=False)
    assert terminal.text() == ""
