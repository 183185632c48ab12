"""GPU-only: the calculation window's asynchronous pipeline on a real device (uploads issued
ahead of the step loop, the next pass's first ring taken partly from the device, copies back
to pinned memory while the next slab runs) gives the same numbers as the NumPy host path,
which copies synchronously, bit for bit, and the in-memory run to float32 rounding; a run
stopped at a checkpoint and resumed equals the uninterrupted one bit for bit; the slabs on the
blocked kernel equal the in-memory XLA run to rounding. The pipeline passed on an H100
(2026-11-25, 27 s: `PYTHONPATH=src python3 -m pytest -m gpu tests/fdtd/test_gpu_window.py`)."""

import jax
import numpy as np
import pytest

from emjax import fdtd
from emjax.fdtd import window
from emjax.materials import Dispersive, DrudePole
from emjax.scattering import PlaneWave


def _sim():
    g = fdtd.Grid((150, 48, 52), dx=0.05, boundary=fdtd.CPML(6), precision="single")
    tf = fdtd.TFSF((20, 10, 12), (130, 38, 40), PlaneWave((0, 0, 1), (1, 0, 0)), fdtd.GaussianPulse(1.0, 0.5))
    mask = np.zeros(g.shape, bool)
    mask[60:90, 18:30, 20:32] = True
    mat = Dispersive(eps_inf=2.0, poles=(DrudePole(omega_p=3.0, gamma=0.5),))
    probes = (fdtd.Probe((30, 24, 26), 0), fdtd.Probe((120, 24, 26), 0))
    mons = fdtd.flux_box((15, 8, 8), (135, 40, 44), (1.0,))
    return fdtd.GridSimulation(g, sources=(tf,), dispersive=(mat, mask), probes=probes, monitors=mons)


@pytest.mark.gpu
def test_window_pipeline_on_the_gpu(tmp_path):
    if jax.default_backend() != "gpu":
        pytest.skip("needs a GPU")
    sim = _sim()
    steps, kw = 40, dict(th=6, slab=33)  # 5 slabs, passes of 6 (the last of 4)
    ref = fdtd.run(sim, steps, out_of_core=False)
    stats = {}
    a = window.run_window(sim, steps, host_memory="pinned", stats=stats, **kw)
    assert stats["ahead"] and stats["slabs"] == 5
    b = window.run_window(sim, steps, host_memory="numpy", **kw)
    for x, y in ((a.E, b.E), (a.H, b.H), (a.probes, b.probes)):
        assert np.array_equal(x, y)
    for x, y in zip(a.dft, b.dft, strict=True):
        assert all(np.array_equal(x[f], y[f]) for f in "EH")
    scale = np.abs(np.asarray(ref.E)).max()
    assert scale > 1e-3
    err = np.abs(np.asarray(ref.E) - a.E).max() / scale
    assert err < 1e-5, err  # float32 rounding: the slabs' programs fuse differently
    ck = tmp_path / "w.npz"

    class Stop(Exception):
        pass

    def stop(done, total):
        if done >= 20:
            raise Stop

    with pytest.raises(Stop):
        window.run_window(sim, steps, checkpoint=ck, chunk=20, progress=stop, **kw)
    c = window.run_window(sim, steps, checkpoint=ck, chunk=20, **kw)
    assert np.array_equal(a.E, c.E) and np.array_equal(a.probes, c.probes)


@pytest.mark.gpu
@pytest.mark.parametrize("precision,tol", [("double", 1e-12), ("single", 1e-5)])
def test_window_slabs_on_the_blocked_kernel(precision, tol):
    """The slabs on the CUDA blocked kernel (interior slabs walled at their seams, edge slabs
    with the grid's x-CPML), pinned pipeline: equal to the in-memory XLA run to rounding."""
    if jax.default_backend() != "gpu":
        pytest.skip("needs a GPU")
    g = fdtd.Grid((150, 48, 52), dx=0.05, boundary=fdtd.CPML(6), precision=precision)
    rng = np.random.default_rng(2)
    eps = 1.0 + rng.random(g.shape)
    srcs = (fdtd.PointDipole((75, 24, 26), 2, fdtd.Ricker(frequency=2.0, delay=0.0)),)
    probes = (fdtd.Probe((60, 24, 26), 2), fdtd.Probe((95, 20, 26), 0))
    sim = fdtd.GridSimulation(g, eps=eps, sources=srcs, probes=probes)
    steps, kw = 40, dict(th=6, slab=33)  # 5 slabs, passes of 6 (the last of 4)
    ref = fdtd.run(sim, steps, kernel="xla", progress=False)
    a = window.run_window(sim, steps, kernel="blocked", **kw)
    assert a.kernel.startswith("blocked (TH = ")
    for x, y in ((ref.E, a.E), (ref.H, a.H), (ref.probes, a.probes)):
        x, y = np.asarray(x), np.asarray(y)
        scale = np.abs(x).max()
        assert scale > 0 and np.abs(x - y).max() <= tol * scale, np.abs(x - y).max() / scale
