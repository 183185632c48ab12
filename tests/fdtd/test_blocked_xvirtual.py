"""The x-CPML's cells that no y or z window covers, marched along y on a small grid of their
own (emjax.fdtd.blocked.xvirtual, ``split.X_ENDS_VIRTUAL``): equal to the XLA step on the
CPU (the kernel emulated) and on a GPU."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_blocked import _compare, _setup

from emjax import fdtd
from emjax.fdtd.blocked import emulation
from emjax.fdtd.grid import CPML

emulated = pytest.mark.skipif(not emulation.available(), reason="no host C++ compiler")
gpu = pytest.mark.gpu


@pytest.mark.slow
@emulated
def test_emulated_x_ends_on_a_small_grid_marched_along_y(monkeypatch):
    """``split.X_ENDS_VIRTUAL``: the x-CPML's cells that no y or z window covers in marches
    along y on a small grid (both x ends side by side, x and y swapped), no short x marches;
    the fields, psi and probes equal the XLA step's, also with a dielectric block (per-cell
    coefficients) whose box misses the small grid's windows."""
    from emjax.fdtd.blocked import coef_box, cuda_advance
    from emjax.fdtd.blocked import split as cpml_split

    monkeypatch.setattr(cpml_split, "X_ENDS_VIRTUAL", True)
    monkeypatch.setattr(cpml_split, "ALIGNED", False)  # (the small grid is for one CPML kernel)
    shape = (24, 30, 26)
    g = fdtd.Grid(
        shape, 1.0, boundary=(CPML(thickness=2), CPML(thickness=2), CPML(thickness=2)), precision="double"
    )
    # dipoles just outside the small grid's windows (x < 6 or x >= 18 at TH = 2)
    src = (
        fdtd.PointDipole((8, 15, 13), 1, fdtd.GaussianPulse(frequency=0.15, bandwidth=0.5)),
        fdtd.PointDipole((15, 8, 9), 0, fdtd.GaussianPulse(frequency=0.12, bandwidth=0.5)),
    )
    probes = (fdtd.Probe((12, 15, 14), 2, "H"), fdtd.Probe((10, 3, 3), 0))
    sim = fdtd.GridSimulation(g, sources=src, probes=probes)
    plan, arrays, _ = _setup(sim, 5)
    spec = cuda_advance.make_spec(plan, arrays, jnp.float64, 2, (5, 4))
    xv = cpml_split.virtual(spec)
    assert xv is not None and (xv.y0, xv.y1, xv.z0, xv.z1) == (5, 25, 4, 22) and xv.spec.shape == (30, 12, 26)
    _, _, fixes, rows = cpml_split.split(spec)
    # every CPML row is a y or z face's window (none owns only interior y and z cells)
    assert all(
        rows[i][2] < 4 or rows[i][3] > 26 or rows[i][4] < 4 or rows[i][5] > 22
        for _, idx in fixes
        for i in idx
    )
    # with a dielectric block away from the x ends: its box misses the small grid's windows,
    # which take the backgrounds as literals (24 steps: the pulses into the CPML); one
    # that reaches an x end keeps the short marches
    eps = np.ones(shape)
    eps[8:16, 10:20, 9:17] = 2.0
    block = fdtd.GridSimulation(g, eps=eps, sources=src, probes=probes)
    _compare(block, 24, th=2, tile=(24, 5, 4), kernel="emulate")
    near = eps.copy()
    near[0:3, 12:16, 10:14] = 2.0  # the box now reaches the low x end's windows
    for e, applies in ((eps, True), (near, False)):
        plan, arrays, _ = _setup(fdtd.GridSimulation(g, eps=e, sources=src), 5)
        found = coef_box.find(plan, arrays)
        spec = cuda_advance.make_spec(plan, arrays, jnp.float64, 2, (5, 4), cbox=found)
        assert found is not None and (cpml_split.virtual(spec) is not None) == applies


@gpu
@pytest.mark.parametrize("precision", ["double", "single"])
def test_gpu_x_ends_on_a_small_grid(monkeypatch, precision):
    """``split.X_ENDS_VIRTUAL`` on a 64^3 vacuum grid with an 8-cell CPML on every face and
    dipoles just outside the small grid's windows, 120 steps in passes of 4: float64 to
    1e-12, float32 to 1e-5."""
    from emjax.fdtd.blocked import split as cpml_split

    monkeypatch.setattr(cpml_split, "X_ENDS_VIRTUAL", True)
    monkeypatch.setattr(cpml_split, "ALIGNED", False)  # (the aligned rows leave it no cells)
    g = fdtd.Grid((64, 64, 64), 1.0, boundary=CPML(thickness=8), precision=precision)
    src = (
        fdtd.PointDipole((17, 30, 33), 1, fdtd.GaussianPulse(frequency=0.12, bandwidth=0.5)),
        fdtd.PointDipole((46, 40, 20), 2, fdtd.GaussianPulse(frequency=0.1, bandwidth=0.5)),
    )
    sim = fdtd.GridSimulation(g, sources=src, probes=(fdtd.Probe((32, 32, 32), 2),))
    jax.clear_caches()
    try:
        tol = 1e-12 if precision == "double" else 1e-5
        _compare(sim, 120, th=4, tile=(64, 24, 24), kernel="cuda", tol=tol)
    finally:
        jax.clear_caches()
