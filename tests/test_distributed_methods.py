"""Each method on two processes (jax.distributed on localhost, gloo collectives on the CPU,
2 virtual CPU devices each: one layout over 4 devices in 2 processes) against the
one-device answer computed in the same process: FDTD (slabs along x, halos crossing the
process boundary), a DDA orientation average (each batch's right-hand sides split over
the 4 devices), one DDA lattice in slabs, a layered map (each chunk of points one SPMD
program). The command line started the same way writes one run folder (process 0's) and
prints its summary once. Also, without starting JAX: the launch settings' one-line
errors, and the writers of a process other than 0 writing nothing."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

SRC = Path(__file__).parents[1] / "src"

HEAD = """
import numpy as np, jax
from emjax.layout import Layout, initialize_distributed
assert initialize_distributed()
lay = Layout.all()
assert jax.process_count() == 2 and lay.n == 4 and not lay.local, (jax.process_count(), lay.n)

def rel(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))
"""

FDTD = """
from emjax import fdtd
# CPML, a dipole on process 0's slabs, probes on both processes, a DFT plane normal to x
g = fdtd.Grid((16, 10, 10), dx=0.05, boundary=fdtd.CPML(3))
sim = fdtd.GridSimulation(
    g,
    sources=(fdtd.PointDipole((5, 5, 5), 2, fdtd.Ricker(frequency=0.8)),),
    probes=(fdtd.Probe((3, 5, 5), 2), fdtd.Probe((12, 5, 5), 2)),
    monitors=(fdtd.DFTPlane(0, 10, (0.8,)),),
)
one = fdtd.run(sim, 12)
many = fdtd.run(sim, 12, layout=lay)
from emjax.errors import ConfigError
try:  # the first 2 devices would leave process 1 out of the layout
    fdtd.run(sim, 12, layout=2)
    raise AssertionError("a device count short of all the processes' devices was accepted")
except ConfigError as e:
    assert "with 2 processes a layout spans every process's devices: give 4" in str(e), e
assert isinstance(many.E, np.ndarray) and many.E.shape == (3, 16, 10, 10)
d = dict(E=rel(many.E, one.E), H=rel(many.H, one.H), probes=rel(many.probes, one.probes),
         flux=rel(many.flux(0), one.flux(0)))
assert np.abs(one.probes).max() > 0 and np.abs(one.E[:, 12:]).max() > 0  # the pulse crossed
# float32: XLA fuses the partitioned program differently (as on the devices of one process)
assert max(d.values()) <= 2e-5, d
"""

DDA = """
from emjax import dda, geometry
from emjax.dda import OrientationAverage, average
prob = dda.DDAProblem(geometry.Sphere(), m=(1.5 + 0.01j,), eq_rad=0.5, grid=4)
q = OrientationAverage(beta_levels=(2, 2), gamma_levels=(2, 2), eps=0, n_alpha=2)
one = average(prob, q, dda.QMR(rtol=1e-9), batch=64)
many = average(prob, q, dda.QMR(rtol=1e-9), batch=64, layout=lay)
d = dict(Cext=rel(many.Cext_xy, one.Cext_xy), mueller=rel(many.mueller, one.mueller))
assert d["Cext"] <= 1e-12 and d["mueller"] <= 1e-12, d
"""

DDA_SLABS = """
from emjax import dda, geometry
# one lattice in x slabs over the 4 devices (7 planes: padded to 8), the distributed FFT's
# all-to-alls crossing the process boundary
prob = dda.DDAProblem(geometry.Sphere(), m=(1.5 + 0.01j,), eq_rad=0.5, wavelength=0.6283185307, grid=7)
one = dda.solve(prob, dda.QMR(rtol=1e-10))
many = dda.solve(prob, dda.QMR(rtol=1e-10), layout=lay)
d = dict(Cext=rel(many.Cext_xy, one.Cext_xy), S=rel(many.S, one.S))
assert d["Cext"] <= 1e-8 and d["S"] <= 1e-8, d  # the in-process slab test's bound
"""

LAYERED = """
from emjax.layered import Stack, green_tensor
st = Stack(eps=[2.25, 1.0])
pts = np.random.default_rng(1).uniform(-0.4, 0.4, (13, 3))
pts[:, 2] = np.where(pts[:, 2] > 0, pts[:, 2] + 0.05, pts[:, 2] - 0.05)  # both media
one = green_tensor(st, 0.6, (0.0, 0.0, 0.08), pts, rtol=1e-6, progress=False)
many = green_tensor(st, 0.6, (0.0, 0.0, 0.08), pts, rtol=1e-6, layout=lay, batch=2, progress=False)
assert np.array_equal(many, one), abs(many - one).max()  # bit for bit
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def _env(port: int, rank: int, slurm: bool = False) -> dict:
    """Process ``rank`` of two: the emjax variables, or (``slurm``) what ``srun -n 2`` sets
    on one node (JAX's Slurm detection; the coordinator's port given by JAX's variable)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EMJAX_", "JAX_", "MASTER_", "SLURM_"))}
    for k in ("WORLD_SIZE", "RANK"):
        env.pop(k, None)
    env.update(
        XLA_FLAGS="--xla_force_host_platform_device_count=2",
        JAX_PLATFORMS="cpu",
        OPENBLAS_NUM_THREADS="1",
        EMJAX_COMPILATION_CACHE="0",
        PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    )
    if slurm:
        env.update(
            SLURM_JOB_ID="4242",
            SLURM_STEP_NODELIST="localhost",
            SLURM_NTASKS="2",
            SLURM_PROCID=str(rank),
            SLURM_LOCALID=str(rank),
            JAX_COORDINATOR_PORT=str(port),
        )
    else:
        env.update(EMJAX_COORDINATOR=f"localhost:{port}", EMJAX_NUM_PROCESSES="2", EMJAX_PROCESS_ID=str(rank))
    return env


def launch(args, timeout: float = 300, cwd=None, slurm: bool = False) -> list[tuple[str, str]]:
    """``python ARGS`` as processes 0 and 1 of two; (stdout, stderr) of each. Fails with
    both processes' output if either fails or runs past ``timeout`` (both are killed)."""
    port = _free_port()
    procs = [
        subprocess.Popen(
            [sys.executable, *args],
            env=_env(port, rank, slurm),
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank in range(2)
    ]
    outs, failed = [], None
    for rank, p in enumerate(procs):
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            out, err = p.communicate()
            failed = failed or f"process {rank} ran past {timeout} s"
        outs.append((out, err))
        if p.returncode and not failed:
            failed = f"process {rank} exited with {p.returncode}"
    if failed:
        shown = "\n".join(
            f"--- process {r} stdout:\n{o[-2000:]}\n--- stderr:\n{e[-5000:]}" for r, (o, e) in enumerate(outs)
        )
        raise AssertionError(f"{failed}\n{shown}")
    return outs


def _run_code(body: str):
    outs = launch(["-c", HEAD + body + '\nprint("rank", jax.process_index(), "ok")\n'])
    for rank, (out, _) in enumerate(outs):
        assert f"rank {rank} ok" in out, out


def test_slurm_tasks_join_without_settings():
    """Inside ``srun`` with 2 tasks and no emjax settings: JAX's Slurm detection starts the
    processes (ids from SLURM_PROCID), and a layout spans both."""
    code = HEAD + 'print("rank", jax.process_index(), "of", jax.process_count(), "ok")\n'
    for rank, (out, _) in enumerate(launch(["-c", code], timeout=120, slurm=True)):
        assert f"rank {rank} of 2 ok" in out, out


def test_fdtd_over_two_processes_equals_one_device():
    _run_code(FDTD)


@pytest.mark.slow
def test_dda_orientations_over_two_processes_equal_one_device():
    _run_code(DDA)


@pytest.mark.slow
def test_dda_lattice_in_slabs_over_two_processes_equals_one_device():
    _run_code(DDA_SLABS)


@pytest.mark.slow
def test_layered_map_over_two_processes_equals_one_device():
    _run_code(LAYERED)


CONFIG = """
[grid]
shape = [16, 12, 12]
dx = 0.05
boundary = "cpml"
pml_thickness = 3

[run]
steps = 20

[[sources]]
type = "dipole"
index = [6, 6, 6]
component = "z"
waveform = "gaussian"
frequency = 1.0
bandwidth = 0.5

[[probes]]
index = [11, 6, 6]
component = "z"
"""


@pytest.mark.slow
def test_command_on_two_processes_writes_once(tmp_path):
    """``emjax fdtd`` started as two processes: one run folder (process 0 writes it), the
    JSON summary printed once and alone on stdout, the probes of a one-process run."""
    import xarray as xr

    (tmp_path / "c.toml").write_text(CONFIG)
    cmd = ["-m", "emjax.cli", "fdtd", "c.toml", "--json"]
    outs = launch([*cmd, "--out", "two"], cwd=tmp_path)
    summary = json.loads(outs[0][0])  # nothing else on process 0's stdout (gloo's lines: stderr)
    assert summary["out"] == "two" and outs[1][0] == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.toml", "two"]  # no stray folder
    env = _env(0, 0)
    for k in ("EMJAX_COORDINATOR", "EMJAX_NUM_PROCESSES", "EMJAX_PROCESS_ID"):
        env.pop(k)
    subprocess.run(
        [sys.executable, *cmd, "--out", "one"], cwd=tmp_path, env=env, check=True, capture_output=True
    )
    with (
        xr.open_dataset(tmp_path / "two" / "result.nc") as a,
        xr.open_dataset(tmp_path / "one" / "result.nc") as b,
    ):
        pa, pb = (np.asarray(ds[name]) for ds, name in ((a, _probe_var(a)), (b, _probe_var(b))))
    assert np.abs(pb).max() > 0
    assert np.abs(pa - pb).max() <= 2e-5 * np.abs(pb).max()
    with pytest.raises(AssertionError, match="--devices: with 2 processes the run spans every"):
        launch([*cmd, "--out", "three", "--devices", "2"], cwd=tmp_path)
    assert not (tmp_path / "three").exists()


def _probe_var(ds) -> str:
    names = [n for n in ds.data_vars if "probe" in ds[n].dims]
    assert names, list(ds.data_vars)
    return names[0]


# ---- without starting JAX ------------------------------------------------------------

LAUNCH_ENV = (
    "EMJAX_COORDINATOR",
    "JAX_COORDINATOR_ADDRESS",
    "MASTER_ADDR",
    "MASTER_PORT",
    "EMJAX_NUM_PROCESSES",
    "WORLD_SIZE",
    "EMJAX_PROCESS_ID",
    "RANK",
    "SLURM_STEP_NODELIST",
)


def _clear_launch_env(monkeypatch):
    for k in LAUNCH_ENV:
        monkeypatch.delenv(k, raising=False)


@pytest.mark.parametrize(
    "env, message",
    [
        (
            dict(EMJAX_COORDINATOR="localhost", EMJAX_NUM_PROCESSES="2", EMJAX_PROCESS_ID="0"),
            "EMJAX_COORDINATOR must be HOST:PORT (a port in [1, 65535]), got 'localhost'",
        ),
        (
            dict(EMJAX_COORDINATOR="h:1", EMJAX_NUM_PROCESSES="two", EMJAX_PROCESS_ID="0"),
            "EMJAX_NUM_PROCESSES must be an integer >= 1, got 'two'",
        ),
        (
            dict(EMJAX_COORDINATOR="h:1", EMJAX_NUM_PROCESSES="2", EMJAX_PROCESS_ID="2"),
            "EMJAX_PROCESS_ID must be an integer in [0, 1], got '2'",
        ),
        (
            dict(EMJAX_COORDINATOR="h:1", EMJAX_NUM_PROCESSES="2"),
            "a coordinator (EMJAX_COORDINATOR) needs process_id (or EMJAX_PROCESS_ID) too",
        ),
        (dict(EMJAX_NUM_PROCESSES="2"), "EMJAX_NUM_PROCESSES = 2 needs a coordinator HOST:PORT"),
        (
            dict(MASTER_ADDR="n1", MASTER_PORT="x", WORLD_SIZE="2", RANK="1"),
            "MASTER_ADDR/MASTER_PORT must be HOST:PORT",
        ),
    ],
)
def test_launch_settings_refused_in_one_line(monkeypatch, env, message):
    from emjax.errors import ConfigError
    from emjax.layout import initialize_distributed

    _clear_launch_env(monkeypatch)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(ConfigError) as e:
        initialize_distributed()
    assert message in str(e.value) and "\n" not in str(e.value)


def test_one_process_settings_start_nothing(monkeypatch):
    from emjax.layout import initialize_distributed

    _clear_launch_env(monkeypatch)
    assert initialize_distributed() is False
    monkeypatch.setenv("WORLD_SIZE", "4")  # another launcher's names without its coordinator
    monkeypatch.setenv("RANK", "x")
    assert initialize_distributed() is False
    assert initialize_distributed("localhost:1234", 1, 0) is False


@pytest.mark.parametrize(
    "flags, message",
    [
        (
            ["--coordinator", "h:1", "--num-processes", "0", "--process-id", "0"],
            "--num-processes must be an integer >= 1",
        ),
        (
            ["--coordinator", "h:1", "--num-processes", "2", "--process-id", "-1"],
            "--process-id must be an integer in [0, 1]",
        ),
        (
            ["--coordinator", "h:x", "--num-processes", "2", "--process-id", "0"],
            "--coordinator must be HOST:PORT",
        ),
        (["--num-processes", "2", "--process-id", "0"], "--num-processes = 2 needs a coordinator HOST:PORT"),
    ],
)
def test_command_process_flags_refused_in_one_line(tmp_path, monkeypatch, capsys, flags, message):
    from emjax.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EMJAX_COMPILATION_CACHE", "0")
    _clear_launch_env(monkeypatch)
    (tmp_path / "c.toml").write_text(CONFIG)
    assert main(["fdtd", "c.toml", *flags]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("emjax: error: ") and message in err and "\n" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.toml"]


def test_other_processes_write_nothing(tmp_path, monkeypatch):
    """A process other than 0: save_dataset, a command's output folder and an orientation
    average's checkpoint write nothing (process 0 writes the same files)."""
    import xarray as xr

    from emjax import io
    from emjax.outdir import OutputFolder

    monkeypatch.setattr(io, "main_process", lambda: False)
    ds = xr.Dataset({"a": ("x", np.arange(3.0))})
    assert io.save_dataset(ds, tmp_path / "r.nc") == tmp_path / "r.nc"
    folder = OutputFolder(tmp_path / "out", method="fdtd").check()
    with folder.writing("x") as stage:
        io.write_text(stage / "notes.txt", "hello")
        assert stage.parent != tmp_path and not str(stage).startswith(str(tmp_path))
    assert folder.files == ["notes.txt"]
    folder = OutputFolder(None, method="fdtd", parent=tmp_path).check()
    with folder.writing("x") as stage:
        (stage / "b.txt").write_text("b")
    assert list(tmp_path.iterdir()) == []
    from emjax.dda import average_checkpoint

    average_checkpoint.save(tmp_path / "avg.npz", "fingerprint", {})
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setattr(io, "main_process", lambda: True)  # process 0 (or the only one) writes
    assert io.save_dataset(ds, tmp_path / "r.nc").is_file()
