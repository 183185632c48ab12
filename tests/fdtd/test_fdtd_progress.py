"""fdtd.run's progress: a bar by default (in a terminal), none with progress=False, a
callable still called at chunk boundaries, and jax.grad through the run unchanged by it."""

import jax
import jax.numpy as jnp
import numpy as np

from emjax import fdtd


def _sim(eps):
    g = fdtd.Grid((8, 8, 8), dx=0.1, boundary=fdtd.CPML(2), precision="single")
    src = fdtd.PointDipole((3, 4, 4), 2, fdtd.Ricker(frequency=0.8))
    return fdtd.GridSimulation(g, eps=eps, sources=(src,), probes=(fdtd.Probe((5, 4, 4), 2),))


def test_a_bar_by_default_and_none_when_off(terminal):
    eps = np.ones((8, 8, 8))
    fdtd.run(_sim(eps), 40, chunk=10)
    shown = terminal.text()
    assert "fdtd:" in shown and "40/40" in shown and "step/s" in shown
    terminal.buffer.truncate(0)
    terminal.buffer.seek(0)
    fdtd.run(_sim(eps), 40, chunk=10, progress=False)
    assert terminal.text() == ""
    calls = []
    fdtd.run(_sim(eps), 40, chunk=10, progress=lambda done, total: calls.append((done, total)))
    assert calls == [(10, 40), (20, 40), (30, 40), (40, 40)] and terminal.text() == ""


def test_grad_through_run_with_the_default_progress(terminal):
    """A traced run shows no bar and differentiates as before (tests/fdtd/test_fdtd_gradients.py
    checks such gradients against finite differences, with the same default)."""

    def loss(eps):
        g = fdtd.Grid((6, 6, 6), dx=0.1, boundary=fdtd.PEC(), precision="single")
        src = fdtd.PointDipole((2, 3, 3), 2, fdtd.Ricker(frequency=0.8))
        sim = fdtd.GridSimulation(g, eps=eps, sources=(src,), probes=(fdtd.Probe((4, 3, 3), 2),))
        return jnp.sum(jnp.asarray(fdtd.run(sim, 10, remat=0).probes) ** 2)

    grad = jax.grad(loss)(jnp.full((6, 6, 6), 1.5))
    assert terminal.text() == ""
    assert np.all(np.isfinite(grad)) and np.abs(grad).max() > 0
