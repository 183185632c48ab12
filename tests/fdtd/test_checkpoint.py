"""Checkpoint and resume: a resumed run equals an uninterrupted one bit for bit."""

import numpy as np
import pytest

from emjax import ConfigError, fdtd


def _sim():
    g = fdtd.Grid((24, 20, 16), dx=0.1, boundary=fdtd.CPML(4))
    src = fdtd.PointDipole((12, 10, 8), 2, fdtd.Ricker(frequency=0.8))
    mon = fdtd.DFTPlane(2, 12, (0.5, 0.8))
    return fdtd.GridSimulation(g, sources=(src,), probes=(fdtd.Probe((15, 12, 9), 2),), monitors=(mon,))


def test_resume_is_bit_for_bit(tmp_path):
    sim = _sim()
    full = fdtd.run(sim, 300, chunk=50)
    ck = tmp_path / "run.npz"
    fdtd.run(sim, 150, chunk=50, checkpoint=ck)  # "interrupted" after 150 steps
    resumed = fdtd.run(sim, 300, chunk=50, checkpoint=ck)
    np.testing.assert_array_equal(np.asarray(resumed.E), np.asarray(full.E))
    np.testing.assert_array_equal(np.asarray(resumed.H), np.asarray(full.H))
    np.testing.assert_array_equal(resumed.probes, full.probes)
    np.testing.assert_array_equal(resumed.dft[0]["E"], full.dft[0]["E"])


def test_checkpoint_name_without_npz_suffix(tmp_path):
    """A checkpoint named without ".npz" is written under that name (NumPy would append the
    suffix to a path and leave an empty file behind), and nothing else is left there."""
    sim = _sim()
    ck = tmp_path / "run"
    first = fdtd.run(sim, 100, chunk=50, checkpoint=ck)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"] and ck.stat().st_size > 1000
    again = fdtd.run(sim, 100, chunk=50, checkpoint=ck)  # resumed at the end: no step run
    np.testing.assert_array_equal(np.asarray(again.E), np.asarray(first.E))


def test_checkpoint_of_another_simulation_is_refused(tmp_path):
    ck = tmp_path / "run.npz"
    fdtd.run(_sim(), 50, chunk=50, checkpoint=ck)
    other = fdtd.GridSimulation(fdtd.Grid((24, 20, 18), dx=0.1, boundary=fdtd.CPML(4)))
    with pytest.raises(
        ConfigError,
        match=r"different problem: grid differs \(shape \(24, 20, 16\) there, \(24, 20, 18\) here\)",
    ):
        fdtd.run(other, 100, checkpoint=ck)


def test_nan_is_detected():
    g = fdtd.Grid((10, 10, 10), dx=0.1, boundary=fdtd.PEC())
    src = fdtd.PointDipole((5, 5, 5), 2, lambda t: t * float("nan"))
    with pytest.raises(FloatingPointError, match="NaN"):
        fdtd.run(fdtd.GridSimulation(g, sources=(src,)), 20, chunk=10)
