"""A checkpoint resumes only the problem it was written for: change one kind of input
(eps, an object's size or place, a pole, a source's place, amplitude or waveform, a
monitor's plane or frequencies, a probe, the PML, the precision, the time step, the initial
fields) and the resume is refused with one line naming that kind; the same problem resumes
and equals an uninterrupted run. Through the Python API (cell-index and physical
simulations) and the ``emjax fdtd`` command. Tiny grids: fast."""

import json
import re
import shutil

import numpy as np
import pytest

from emjax import ConfigError, fdtd, materials
from emjax.fdtd import checkpoint as ckmod
from emjax.fdtd import fingerprint

N = 12


def _box(lo=4, size=3):
    m = np.zeros((N, N, N), bool)
    m[lo : lo + size, lo : lo + size, lo : lo + size] = True
    return m


def _grid_sim(
    eps_in=4.0,
    box=(4, 3),
    sigma=0.0,
    drude=None,
    src=(3, 6, 6),
    amp=1.0,
    freq=0.8,
    waveform=None,
    mon=(2, 9, (0.5, 0.8)),
    probe=(9, 6, 6),
    pml=3,
    precision="single",
    courant=None,
):
    kw = {} if courant is None else {"courant": courant}
    g = fdtd.Grid((N, N, N), dx=0.1, boundary=fdtd.CPML(pml), precision=precision, **kw)
    eps = np.where(_box(*box), eps_in, 1.0)
    wf = waveform or fdtd.Ricker(frequency=freq)
    disp = None if drude is None else (materials.Drude(1.0, omega_p=drude, gamma=0.1), _box(1, 2))
    return fdtd.GridSimulation(
        g,
        eps=eps,
        sigma=sigma,
        sources=(fdtd.PointDipole(src, 2, wf, amp),),
        probes=(fdtd.Probe(probe, 2),),
        monitors=(fdtd.DFTPlane(mon[0], mon[1], mon[2]),),
        dispersive=disp,
    )


MAT = r"materials and geometry \(eps/sigma, dispersive poles, PEC, subpixel averaging\) differ"
SRC = r"sources \(positions, components, amplitudes, waveforms, TF/SF box and plane wave\) differ"
MON = r"monitors and probes \(positions, planes, frequencies\) differ"
BND = r"boundaries \(PML, PEC walls, periodic/Bloch\) differ"

CHANGES = {
    "eps value": (dict(eps_in=12.0), MAT),
    "object size": (dict(box=(4, 4)), MAT),
    "object position": (dict(box=(5, 3)), MAT),
    "conductivity": (dict(sigma=0.5), MAT),
    "source position": (dict(src=(3, 6, 5)), SRC),
    "source amplitude": (dict(amp=2.0), SRC),
    "waveform frequency": (dict(freq=0.9), SRC),
    "waveform kind": (dict(waveform=fdtd.GaussianPulse(0.8, 0.3)), SRC),
    "monitor position": (dict(mon=(2, 8, (0.5, 0.8))), MON),
    "monitor frequencies": (dict(mon=(2, 9, (0.5, 0.9))), MON),
    "probe position": (dict(probe=(9, 6, 5)), MON),
    "pml thickness": (dict(pml=4), BND),
    "precision": (dict(precision="double"), r"precision differs \(single there, double here\)"),
    "time step": (dict(courant=0.4), r"grid differs \(dt [0-9.e-]+ there, [0-9.e-]+ here\)"),
}


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """A checkpoint of the base problem after 10 of 20 steps."""
    path = tmp_path_factory.mktemp("fp") / "run.npz"
    fdtd.run(_grid_sim(), 10, chunk=10, checkpoint=path)
    return path


@pytest.mark.parametrize("case", list(CHANGES))
def test_a_changed_input_is_refused_naming_its_kind(written, case):
    change, message = CHANGES[case]
    before = written.read_bytes()
    with pytest.raises(ConfigError, match=message) as e:
        fdtd.run(_grid_sim(**change), 20, chunk=10, checkpoint=written)
    text = str(e.value)
    assert "\n" not in text and text.startswith(
        f"checkpoint {str(written)!r} was written for a different problem: "
    )
    assert text.endswith("; delete it to start afresh, or name another file") and text.count("delete") == 1
    assert written.read_bytes() == before  # refused, never overwritten


def test_only_the_kind_that_changed_is_named(written):
    with pytest.raises(ConfigError) as e:
        fdtd.run(_grid_sim(eps_in=12.0), 20, checkpoint=written)
    assert "materials" in str(e.value)
    for other in ("sources (", "monitors", "boundaries", "grid", "precision"):
        assert other not in str(e.value)


def _digests(sim, initial=None):
    """The digests a run of ``sim`` stores (without running it: no compilation)."""
    from emjax.fdtd import step

    arrays, pml = step.coefficients(sim, np.float32)
    return fingerprint.Fingerprint(step.make_plan(sim, 10, np.float32, arrays, pml), arrays, initial).digests


def _changed(a, b):
    return [k for k in a if a[k] != b[k]]


def test_dispersive_pole_parameters_are_covered():
    base = _digests(_grid_sim(drude=3.0))
    assert _changed(base, _digests(_grid_sim(drude=3.0))) == []
    assert _changed(base, _digests(_grid_sim(drude=4.0))) == ["materials"]
    assert _changed(base, _digests(_grid_sim())) == ["materials"]


def test_initial_fields_are_covered(tmp_path):
    path = tmp_path / "init.npz"
    E = np.zeros((3, N, N, N))
    E[2, 6, 6, 6] = 1.0
    sim = _grid_sim()
    fdtd.run(sim, 10, chunk=10, checkpoint=path, initial=(E, np.zeros_like(E)))
    with pytest.raises(ConfigError, match=r"initial fields differ"):
        fdtd.run(sim, 20, checkpoint=path, initial=(2 * E, np.zeros_like(E)))


def test_a_users_waveform_function_is_compared_by_its_values():
    import jax.numpy as jnp

    base = _digests(_grid_sim(waveform=lambda t: jnp.sin(5.0 * t)))
    assert _changed(base, _digests(_grid_sim(waveform=lambda t: jnp.sin(5.0 * t)))) == []
    assert _changed(base, _digests(_grid_sim(waveform=lambda t: jnp.sin(6.0 * t)))) == ["sources"]
    late = lambda t: jnp.sin(5.0 * t) + jnp.where(t > 1000.0, 1.0, 0.0)  # differs after 20000 steps
    assert _changed(base, _digests(_grid_sim(waveform=late))) == ["sources"]


def test_the_same_problem_resumes_bit_for_bit(tmp_path):
    path = tmp_path / "run.npz"
    full = fdtd.run(_grid_sim(), 20, chunk=10)
    fdtd.run(_grid_sim(), 10, chunk=10, checkpoint=path)
    resumed = fdtd.run(_grid_sim(), 20, chunk=10, checkpoint=path)  # a fresh, equal spec
    np.testing.assert_array_equal(np.asarray(resumed.E), np.asarray(full.E))
    np.testing.assert_array_equal(resumed.probes, full.probes)
    np.testing.assert_array_equal(resumed.dft[0]["E"], full.dft[0]["E"])


def test_an_old_format_checkpoint_is_refused(tmp_path, written):
    """A checkpoint whose fingerprint is the earlier repr of the grid only."""
    old = tmp_path / "old.npz"
    with np.load(written) as f:
        data = {k: f[k] for k in f.files}
    data["fingerprint"] = np.array(repr(((N, N, N), 0.1, 0.05, 2)))
    np.savez(old, **data)
    with pytest.raises(ConfigError, match=r"written by an earlier emjax .* cannot be checked") as e:
        fdtd.run(_grid_sim(), 20, checkpoint=old)
    assert str(old) in str(e.value) and "\n" not in str(e.value)
    data["fingerprint"] = np.array(json.dumps({"format": "emjax-fdtd-checkpoint/1"}))
    np.savez(old, **data)
    with pytest.raises(ConfigError, match=r"written by an earlier emjax"):
        fdtd.run(_grid_sim(), 20, checkpoint=old)


def test_a_checkpoint_in_a_missing_folder_is_refused_before_the_run(tmp_path):
    path = tmp_path / "nodir" / "run.npz"
    with pytest.raises(ConfigError, match=r"^checkpoint: the folder '.*nodir' of .* does not exist"):
        fdtd.run(_grid_sim(), 10, checkpoint=path)
    assert not (tmp_path / "nodir").exists()


def test_digests_are_those_of_the_engine_inputs():
    """Equal specs built twice give equal digests; eps changed at one cell by 1e-6 changes
    the materials digest only."""
    a = _digests(_grid_sim())
    assert a == _digests(_grid_sim())
    sim = _grid_sim()
    eps = np.array(sim.eps)
    eps[5, 5, 5] += 1e-6
    other = fdtd.GridSimulation(
        sim.grid, eps=eps, sources=sim.sources, probes=sim.probes, monitors=sim.monitors
    )
    assert _changed(a, _digests(other)) == ["materials"]


# -- physical units: the scene (objects' eps, size, centre), sources, monitors, PML --------

TOML = """
[simulation]
size = [1.0, 1.0, 1.0]
resolution = 10
averaging = "{avg}"
pml_thickness = {pml}
precision = "{precision}"
[[objects]]
shape = "box"
size = {osize}
center = {ocenter}
eps = {eps}
[[sources]]
type = "dipole"
position = {spos}
component = "z"
frequency = {freq}
bandwidth = 0.6
[[monitors]]
type = "flux_box"
name = "box"
center = [0, 0, 0]
size = [0.4, 0.4, 0.4]
frequencies = {mfreq}
[run]
steps = {steps}
chunk = 5
checkpoint = "{ck}"
"""
BASE = dict(
    avg="subpixel",
    pml=3,
    precision="single",
    osize=0.2,
    ocenter="[0, 0, 0]",
    eps=4.0,
    spos="[0.1, 0.1, 0.1]",
    freq=0.5,
    mfreq="[0.4, 0.5]",
    steps=10,
)
PHYSICAL = {
    "eps": (dict(eps=12.0), MAT),
    "object size": (dict(osize=0.3), MAT),
    "object size within a cell": (dict(osize=0.22), MAT),  # subpixel averaging sees it
    "object centre": (dict(ocenter="[0.1, 0, 0]"), MAT),
    "averaging": (dict(avg="staircase"), MAT),
    "source position": (dict(spos="[0.1, 0.1, -0.1]"), SRC),
    "source frequency": (dict(freq=0.6), SRC),
    "monitor frequencies": (dict(mfreq="[0.4, 0.6]"), MON),
    "pml": (dict(pml=4), r"grid differs \(shape \(16, 16, 16\) there, \(18, 18, 18\) here\)"),
    "precision": (dict(precision="double"), r"precision differs \(single there, double here\)"),
}


def _toml(tmp_path, ck, name="run.toml", **change):
    p = tmp_path / name
    p.write_text(TOML.format(**{**BASE, **change, "ck": str(ck)}))
    return p


def _cli(args, capsys):
    from emjax.cli import main

    code = main(args)
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return code, out


@pytest.fixture(scope="module")
def cli_checkpoint(tmp_path_factory):
    """The physical config's checkpoint after 10 steps, written by ``emjax fdtd``."""
    from emjax.cli import main

    d = tmp_path_factory.mktemp("cli")
    ck = d / "run.npz"
    p = d / "run.toml"
    p.write_text(TOML.format(**{**BASE, "ck": str(ck)}))
    assert main(["fdtd", str(p), "--json", "--out", str(d / "out")]) == 0  # module scope: not the cwd
    assert ck.exists()
    return ck


@pytest.mark.parametrize("case", list(PHYSICAL))
def test_cli_refuses_a_changed_config_naming_what_differs(tmp_path, cli_checkpoint, capsys, case):
    change, message = PHYSICAL[case]
    ck = tmp_path / "run.npz"
    shutil.copy(cli_checkpoint, ck)
    code, out = _cli(["fdtd", str(_toml(tmp_path, ck, steps=20, **change))], capsys)
    assert code == 1 and out.out == ""
    lines = [line for line in out.err.splitlines() if not line.startswith("emjax: warning:")]
    assert len(lines) == 1 and lines[0].startswith("emjax: error: checkpoint "), out.err
    assert re.search(message, lines[0]), lines[0]


@pytest.mark.filterwarnings("ignore:.* cells per wavelength")
@pytest.mark.parametrize("case", ["eps", "object centre", "source position", "monitor frequencies"])
def test_python_refuses_a_changed_physical_simulation(tmp_path, cli_checkpoint, case):
    """The same refusals through fdtd.run on the physical Simulation the config builds."""
    import tomllib

    from emjax.fdtd.scene_config import build_physical

    change, message = PHYSICAL[case]
    cfg = tomllib.loads(TOML.format(**{**BASE, **change, "ck": "x"}))
    sim = build_physical(cfg)[0]
    with pytest.raises(ConfigError, match=message):
        fdtd.run(sim, 20, checkpoint=cli_checkpoint)


def test_cli_resumes_the_same_config_to_the_uninterrupted_answer(tmp_path, capsys):
    ck = tmp_path / "run.npz"
    code, out = _cli(["fdtd", str(_toml(tmp_path, ck, steps=30)), "--json"], capsys)  # "interrupted"
    assert code == 0
    half = json.loads(out.out.strip().splitlines()[-1])
    code, out = _cli(["fdtd", str(_toml(tmp_path, ck, steps=60)), "--json"], capsys)
    assert code == 0
    resumed = json.loads(out.out.strip().splitlines()[-1])
    full_ck = tmp_path / "full.npz"
    code, out = _cli(["fdtd", str(_toml(tmp_path, full_ck, name="full.toml", steps=60)), "--json"], capsys)
    full = json.loads(out.out.strip().splitlines()[-1])
    assert resumed["steps"] == full["steps"] == 60
    assert np.all(np.abs(np.subtract(full["box"]["flux"], half["box"]["flux"])) > 1e-9)  # steps 30-60 count
    assert resumed["box"] == full["box"]  # the flux spectrum, exactly


def test_cli_refuses_a_checkpoint_in_a_missing_folder(tmp_path, capsys):
    ck = tmp_path / "nodir" / "run.npz"
    code, out = _cli(["fdtd", str(_toml(tmp_path, ck))], capsys)
    assert code == 1 and out.out == ""
    lines = [line for line in out.err.splitlines() if not line.startswith("emjax: warning:")]
    assert len(lines) == 1 and lines[0].startswith("emjax: error: [run].checkpoint: the folder ")
    assert "nodir" in lines[0] and "does not exist" in lines[0]
    assert not (tmp_path / "nodir").exists()


def test_load_host_takes_the_fingerprint(written):
    """checkpoint.load_host compares against a Fingerprint (the sharded runs' reader)."""
    from emjax.fdtd import step as sm

    sim = _grid_sim(eps_in=5.0)
    arrays, pml = sm.coefficients(sim, np.float32)
    plan = sm.make_plan(sim, 20, np.float32, arrays, pml)
    template = sm.initial_state(sim, plan, np.float32, None)
    with pytest.raises(ConfigError, match=MAT):
        ckmod.load_host(written, template, fingerprint.Fingerprint(plan, arrays))


def test_the_window_run_refuses_another_problems_checkpoint(tmp_path, written):
    """The out-of-core window reads the same fingerprint: a changed eps or source is refused
    before any pass."""
    from emjax.fdtd import window

    ck = tmp_path / "run.npz"
    for change, message in ((dict(eps_in=12.0), MAT), (dict(src=(3, 6, 5)), SRC)):
        shutil.copy(written, ck)
        with pytest.raises(ConfigError, match=message):
            window.run_window(_grid_sim(**change), 20, th=2, slab=6, checkpoint=ck, chunk=10)
    with pytest.raises(ConfigError, match=r"^checkpoint: the folder .* does not exist"):
        window.run_window(_grid_sim(), 20, th=2, slab=6, checkpoint=tmp_path / "nodir" / "w.npz")


def test_tfsf_and_bloch_inputs_are_covered():
    """A TF/SF box's place, its plane wave's direction and polarization and its waveform are
    sources; a Bloch wavenumber is a boundary."""
    from emjax.scattering import PlaneWave

    def sim(lo=3, pol=(1.0, 0.0, 0.0), direction=(0.0, 0.0, 1.0), f=0.8):
        g = fdtd.Grid((N, N, N), dx=0.1, boundary=fdtd.CPML(2))
        tf = fdtd.TFSF((lo, 3, 4), (9, 9, 8), PlaneWave(direction, pol), fdtd.Ricker(frequency=f))
        return fdtd.GridSimulation(g, sources=(tf,))

    base = _digests(sim())
    assert _changed(base, _digests(sim())) == []
    assert _changed(base, _digests(sim(lo=4))) == ["sources"]
    assert _changed(base, _digests(sim(pol=(0.0, 1.0, 0.0)))) == ["sources"]
    assert _changed(base, _digests(sim(direction=(0.0, 0.0, -1.0)))) == ["sources"]
    assert _changed(base, _digests(sim(f=0.9))) == ["sources"]

    def cell(k=0.5):
        g = fdtd.Grid((N, N, N), dx=0.1, boundary=(fdtd.Bloch(k), fdtd.Periodic(), fdtd.CPML(2)))
        src = fdtd.PlaneSource(2, 3, 0, fdtd.Ricker(frequency=0.8), k=(k, 0.0, 0.0))
        return fdtd.GridSimulation(g, sources=(src,))

    base = _digests(cell())
    assert _changed(base, _digests(cell())) == []
    assert _changed(base, _digests(cell(0.6))) == ["sources", "boundaries"]  # the sheet's phase too


CELLS = """
[grid]
shape = [14, 14, 14]
dx = 0.1
pml_thickness = 3
[run]
steps = {steps}
chunk = 5
checkpoint = "{ck}"
[[sources]]
type = "dipole"
index = [5, 7, 7]
component = "z"
waveform = "ricker"
frequency = 0.5
[[blocks]]
lo = [7, 5, 5]
hi = [10, 9, 9]
eps = {eps}
[[probes]]
index = [11, 7, 7]
component = "z"
"""


@pytest.mark.slow  # one more compilation (~6 s); the physical config's CLI tests are fast
def test_cli_cell_index_config_refuses_a_changed_block_eps(tmp_path, capsys):
    """The ``[grid]`` form: written by one command, refused for another block eps by the
    next, resumed by a third with the same config to the uninterrupted probes."""
    ck = tmp_path / "cells.npz"

    def cfg(eps, steps, name="cells.toml", path=ck):
        p = tmp_path / name
        p.write_text(CELLS.format(eps=eps, steps=steps, ck=path))
        return str(p)

    assert _cli(["fdtd", cfg(4.0, 10), "--json"], capsys)[0] == 0
    code, out = _cli(["fdtd", cfg(9.0, 20)], capsys)
    lines = [line for line in out.err.splitlines() if not line.startswith("emjax: warning:")]
    assert code == 1 and len(lines) == 1 and re.search(MAT, lines[0]), out.err
    code, out = _cli(["fdtd", cfg(4.0, 20), "--json"], capsys)
    resumed = json.loads(out.out.strip().splitlines()[-1])
    code, out = _cli(["fdtd", cfg(4.0, 20, "full.toml", tmp_path / "full.npz"), "--json"], capsys)
    full = json.loads(out.out.strip().splitlines()[-1])
    assert resumed["probes_max_abs"] == full["probes_max_abs"] > 0


@pytest.mark.parametrize("lossy", [False, True])
def test_window_and_in_memory_runs_share_the_fingerprint(lossy):
    """The window's host copies of the coefficients (NumPy) digest like the in-memory run's
    (JAX arrays; a lossless ca is a 0-d array in one and the other): each resumes the
    other's checkpoint."""
    from emjax.fdtd import window

    sim = _grid_sim(sigma=0.2 if lossy else 0.0, drude=3.0)
    plan, arrays, _ = window._global_setup(sim, 20, np.float32, None)
    assert fingerprint.Fingerprint(plan, arrays).digests == _digests(sim)
