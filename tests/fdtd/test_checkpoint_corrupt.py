"""A checkpoint that is not one (garbage, truncated, bit-flipped, pickled, another program's
.npz, a folder) or one of another simulation: ``fdtd.run(..., checkpoint=path)`` (through
``checkpoint.load``) and ``checkpoint.load_host`` raise a ConfigError naming the file and
what is wrong, not NumPy's or zipfile's message. Tiny grids: fast."""

import numpy as np
import pytest

from emjax import ConfigError, fdtd
from emjax.fdtd import checkpoint as ckmod


def _sim(nz=10):
    g = fdtd.Grid((10, 10, nz), dx=0.1, boundary=fdtd.PEC())
    src = fdtd.PointDipole((5, 5, 5), 2, fdtd.Ricker(frequency=0.8))
    return fdtd.GridSimulation(g, sources=(src,), probes=(fdtd.Probe((6, 5, 5), 2),))


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    """A good checkpoint after 10 steps, its bytes, and the (template, fingerprint) that
    run() hands to checkpoint.load when resuming it."""
    path = tmp_path_factory.mktemp("ck") / "good.npz"
    fdtd.run(_sim(), 10, chunk=5, checkpoint=path)
    seen = {}
    original = ckmod.load

    def spy(p, template, fp):
        seen["args"] = (template, fp)
        return original(p, template, fp)

    ckmod.load = spy
    try:
        fdtd.run(_sim(), 10, chunk=5, checkpoint=path)  # resumes at step 10: nothing left to run
    finally:
        ckmod.load = original
    return path, path.read_bytes(), seen["args"]


def _rewrite(path, good, **change):
    """A copy of the good checkpoint with arrays replaced (None: removed)."""
    with np.load(good[0]) as f:
        data = {k: f[k] for k in f.files}
    for k, v in change.items():
        if v is None:
            del data[k]
        else:
            data[k] = v
    np.savez(path, **data)


def _bad_files(tmp_path, good):
    raw = good[1]
    files = {}
    p = tmp_path / "garbage.npz"
    p.write_bytes(b"this is not a checkpoint\n" * 10)
    files["garbage"] = (p, r"is not a readable emjax FDTD checkpoint \(corrupt, truncated")
    p = tmp_path / "empty.npz"
    p.write_bytes(b"")
    files["empty"] = (p, r"is not a readable emjax FDTD checkpoint")
    p = tmp_path / "truncated.npz"
    p.write_bytes(raw[: len(raw) // 2])
    files["truncated"] = (p, r"is not a readable emjax FDTD checkpoint")
    p = tmp_path / "flipped.npz"
    mid = bytearray(raw)
    start = raw.index(b"leaf0.npy") + 200  # inside the first array's data, past its header
    mid[start : start + 64] = bytes(255 - b for b in mid[start : start + 64])
    p.write_bytes(bytes(mid))
    files["bit-flipped"] = (p, r"is not a readable emjax FDTD checkpoint \(.*(CRC|corrupt)")
    p = tmp_path / "pickled.npz"
    np.savez(p, fingerprint=np.array([{"a": 1}], dtype=object))
    files["pickled"] = (p, r"not a NumPy .npz archive|is not a readable emjax FDTD checkpoint")
    p = tmp_path / "foreign.npz"
    np.savez(p, x=np.arange(3))
    files["foreign npz"] = (p, r"is not an emjax FDTD checkpoint \(no fingerprint, probes\)")
    p = tmp_path / "a_folder.npz"
    p.mkdir()
    files["folder"] = (p, r"is not a readable emjax FDTD checkpoint|is a folder; give a file name")
    p = tmp_path / "leafless.npz"
    _rewrite(p, good, leaf0=None)
    files["missing array"] = (p, r"holds \d+ state arrays, this run's state \d+ \(missing leaf0\)")
    p = tmp_path / "wrong_shape.npz"
    _rewrite(p, good, leaf0=np.zeros((3, 4)))
    files["wrong shape"] = (p, r"state array leaf0 has shape \(3, 4\), this run needs")
    p = tmp_path / "bad_fingerprint.npz"
    _rewrite(p, good, fingerprint=np.arange(4))
    files["bad fingerprint"] = (p, r"is not an emjax FDTD checkpoint \(a bad fingerprint\)")
    return files


CASES = [
    "garbage",
    "empty",
    "truncated",
    "bit-flipped",
    "pickled",
    "foreign npz",
    "folder",
    "missing array",
    "wrong shape",
    "bad fingerprint",
]


@pytest.mark.parametrize("case", CASES)
def test_run_refuses_a_bad_checkpoint_naming_the_file(tmp_path, good, case):
    path, message = _bad_files(tmp_path, good)[case]
    with pytest.raises(ConfigError, match=message) as e:
        fdtd.run(_sim(), 20, chunk=5, checkpoint=path)
    assert str(path) in str(e.value) and "\n" not in str(e.value)
    if case != "folder":  # run() refuses a folder before reading it (io.check_output_file)
        assert "delete it to start afresh" in str(e.value)


@pytest.mark.parametrize("case", CASES)
def test_load_host_refuses_a_bad_checkpoint_naming_the_file(tmp_path, good, case):
    path, message = _bad_files(tmp_path, good)[case]
    template, fp = good[2]
    with pytest.raises(ConfigError, match=message) as e:
        ckmod.load_host(path, template, fp)
    assert str(path) in str(e.value)


def test_the_good_checkpoint_loads(good):
    template, fp = good[2]
    state, recs = ckmod.load_host(good[0], template, fp)
    assert int(state["n"]) == 10 and recs and recs[0].shape[0] == 10


def test_checkpoint_of_another_grid_names_what_differs(good):
    with pytest.raises(
        ConfigError,
        match=r"for a different problem: grid differs \(shape \(10, 10, 10\) there, \(10, 10, 12\) here\)",
    ) as e:
        fdtd.run(_sim(nz=12), 20, checkpoint=good[0])
    assert str(good[0]) in str(e.value)


def test_checkpoint_of_another_plan_names_what_differs(good):
    g = fdtd.Grid((10, 10, 10), dx=0.1, boundary=fdtd.PEC())
    src = fdtd.PointDipole((5, 5, 5), 2, fdtd.Ricker(frequency=0.8))
    sim = fdtd.GridSimulation(g, sources=(src,))  # no probe
    with pytest.raises(ConfigError, match=r"different problem: monitors and probes \(.*\) differ;"):
        fdtd.run(sim, 20, checkpoint=good[0])
    sim = fdtd.GridSimulation(
        fdtd.Grid((10, 10, 10), dx=0.1, courant=0.5, boundary=fdtd.PEC()), sources=(src,)
    )
    with pytest.raises(ConfigError, match=r"different problem: grid differs \(dt .* there, 0.05 here\)"):
        fdtd.run(sim, 20, checkpoint=good[0])


def test_a_bad_checkpoint_is_left_in_place(tmp_path, good):
    """Refusing a file never overwrites it (the user may want to look at it)."""
    path, _ = _bad_files(tmp_path, good)["truncated"]
    before = path.read_bytes()
    with pytest.raises(ConfigError):
        fdtd.run(_sim(), 20, chunk=5, checkpoint=path)
    assert path.read_bytes() == before


def test_an_unwritable_checkpoint_path_is_a_config_error(tmp_path):
    """A checkpoint under a file (no such folder): a ConfigError naming the path, not
    NumPy's FileNotFoundError about a temporary name."""
    (tmp_path / "afile").write_text("x")
    path = tmp_path / "afile" / "run.npz"
    with pytest.raises(ConfigError, match=r"checkpoint: '.*afile' is a file, not a folder"):
        fdtd.run(_sim(), 10, chunk=5, checkpoint=path)  # refused before any step


def test_saving_leaves_no_temporary_files(tmp_path):
    path = tmp_path / "run.npz"
    fdtd.run(_sim(), 10, chunk=5, checkpoint=path)
    assert [p.name for p in tmp_path.iterdir()] == ["run.npz"]
