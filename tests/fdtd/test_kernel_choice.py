"""Which step runs: ``kernel="auto" | "xla" | "blocked"`` on fdtd.run, ``[run] kernel`` in
TOML, ``emjax bench fdtd --kernel``; the result names the step and why."""

import json
from pathlib import Path

import jax
import numpy as np
import pytest

from emjax import ConfigError, fdtd
from emjax.cli import main
from emjax.fdtd.grid import CPML, PEC

ROOT = Path(__file__).resolve().parents[2]


def _sim(boundary=PEC()):
    g = fdtd.Grid((12, 10, 10), 1.0, boundary=boundary, precision="single")
    src = fdtd.PointDipole((6, 5, 5), 2, fdtd.GaussianPulse(frequency=0.1, bandwidth=0.5))
    return fdtd.GridSimulation(g, sources=(src,), probes=(fdtd.Probe((7, 5, 5), 2),))


def test_bad_kernel_one_line():
    with pytest.raises(ConfigError, match="kernel must be 'auto', 'xla' or 'blocked', got 'fast'"):
        fdtd.run(_sim(), 4, kernel="fast", progress=False)


@pytest.mark.skipif(jax.default_backend() == "gpu", reason="the CPU's answer")
def test_cpu_auto_says_why_and_blocked_refused():
    r = fdtd.run(_sim(), 4, progress=False)
    assert r.kernel.startswith("xla (the blocked kernel not taken: no GPU")
    assert fdtd.run(_sim(), 4, kernel="xla", progress=False).kernel == "xla (asked for)"
    with pytest.raises(ConfigError, match="kernel='blocked' cannot run this simulation: no GPU"):
        fdtd.run(_sim(), 4, kernel="blocked", progress=False)


def test_toml_kernel_key(tmp_path, capsys):
    cfg = tmp_path / "c.toml"
    text = (ROOT / "examples" / "fdtd_dipole_cells.toml").read_text()
    cfg.write_text(text.replace("[run]", '[run]\nkernel = "sideways"'))
    assert main(["fdtd", str(cfg), "--steps", "4"]) == 1
    assert '[run].kernel must be "auto", "xla" or "blocked", got \'sideways\'' in capsys.readouterr().err
    cfg.write_text(text.replace("[run]", '[run]\nkernel = "xla"'))
    assert main(["fdtd", str(cfg), "--steps", "4", "--json", "--out", str(tmp_path / "o")]) == 0
    assert json.loads(capsys.readouterr().out.strip())["kernel"] == "xla (asked for)"


def test_bench_kernel_flag(capsys):
    assert main(["bench", "fdtd", "--size", "24", "--steps", "4", "--kernel", "xla", "--json"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["kernel"] == "xla (asked for)"


@pytest.mark.gpu
def test_gpu_blocked_equals_xla_and_auto_takes_it():
    a = fdtd.run(_sim(), 40, kernel="xla", progress=False)
    b = fdtd.run(_sim(), 40, kernel="blocked", progress=False)
    assert b.kernel.startswith("blocked")
    assert (
        np.abs(np.asarray(a.probes) - np.asarray(b.probes)).max() <= 1e-5 * np.abs(np.asarray(a.probes)).max()
    )
    assert fdtd.run(_sim(), 8, progress=False).kernel.startswith("blocked")
    why = fdtd.run(_sim(CPML(3)), 8, progress=False).kernel
    assert why.startswith("xla (the blocked kernel not taken: its CPML")


def test_no_room_for_the_second_copy_is_a_reason(monkeypatch):
    """The blocked kernel needs a second copy of the fields on the device: where it does not
    fit, "auto" keeps XLA saying so (checked with the GPU and its memory stood in for)."""
    from emjax import backend
    from emjax.fdtd import step as engine
    from emjax.fdtd.blocked import choice, cuda

    sim = _sim()
    arrays, pml = engine.coefficients(sim, np.float32)
    plan = engine.make_plan(sim, 4, np.float32, arrays, pml)
    monkeypatch.setattr(choice.jax, "default_backend", lambda: "gpu")
    monkeypatch.setattr(cuda, "nvrtc", lambda: object())
    monkeypatch.setattr(backend, "device_memory_bytes", lambda: 1000)
    assert "does not fit the 0.0 GB free on the device" in choice.why_not(plan, np.float32)
    monkeypatch.setattr(backend, "device_memory_bytes", lambda: 10**9)
    assert choice.why_not(plan, np.float32) is None


def test_auto_keeps_xla_with_monitors_blocked_takes_them(monkeypatch):
    """DFT planes: the blocked kernel carries them (why_not is None) but "auto" keeps XLA,
    measured faster there; the reason names the monitors (GPU stood in for)."""
    from emjax import backend
    from emjax.fdtd import monitors as M
    from emjax.fdtd import step as engine
    from emjax.fdtd.blocked import choice, cuda

    base = _sim()
    sim = fdtd.GridSimulation(base.grid, sources=base.sources, monitors=(M.DFTPlane(0, 3, (0.1,)),))
    arrays, pml = engine.coefficients(sim, np.float32)
    plan = engine.make_plan(sim, 4, np.float32, arrays, pml)
    monkeypatch.setattr(choice.jax, "default_backend", lambda: "gpu")
    monkeypatch.setattr(cuda, "nvrtc", lambda: object())
    monkeypatch.setattr(backend, "device_memory_bytes", lambda: 10**9)
    assert choice.why_not(plan, np.float32) is None
    _, name, why = choice.select(plan, np.float32, "auto")
    assert name == "xla" and "DFT monitors" in why
    _, name, _ = choice.select(plan, np.float32, "blocked")
    assert name == "blocked"


def test_default_tiling_by_precision_and_window_passes():
    """The measured best tilings: float32 TH = 4 (24 x 24, 2 rows per thread); float64 TH = 3
    (10 x 26, one row), or TH = 2 (20 x 20) where a window's passes of th steps need a
    divisor of th."""
    from emjax.fdtd.blocked import choice

    assert choice.default_tiling(np.float32) == (4, (1 << 30, 24, 24), 2)
    assert choice.default_tiling(np.float64) == (3, (1 << 30, 10, 26), 1)
    assert choice.default_tiling(np.float64, within=6) == (3, (1 << 30, 10, 26), 1)
    assert choice.default_tiling(np.float64, within=32) == (2, (1 << 30, 20, 20), 1)
    assert choice.default_tiling(np.float64, within=5)[0] == 3  # none divides: the best
