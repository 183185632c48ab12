"""Outputs: every command checks ``--out`` (and checkpoints) before it computes
anything, and writes its files atomically (a temporary file in the same folder, then a
rename). The computations are replaced by functions that fail the test if reached."""

import zipfile
from pathlib import Path

import numpy as np
import pytest

from emjax import ConfigError
from emjax.cli import main
from emjax.io import atomic_path, check_npz, check_output_file, prepare_output_dir, staged_outputs, write_text

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _never(*args, **kwargs):
    raise AssertionError("the computation started before the output path was checked")


@pytest.fixture
def blocked(tmp_path):
    """Two unusable --out folders: a regular file, and a path under a regular file."""
    f = tmp_path / "a_file"
    f.write_text("x")
    return [f, f / "sub"]


def _refused(capsys, argv, needle="--out"):
    rc = main([str(a) for a in argv])
    out = capsys.readouterr()
    assert rc == 1, out.err
    assert out.err.startswith(f"emjax: error: {needle}") and out.err.count("\n") == 1, out.err
    assert "Traceback" not in out.err and out.out == ""


def test_fdfd_out_checked_first(tmp_path, capsys, monkeypatch, blocked):
    import emjax.fdfd.rcs

    monkeypatch.setattr(emjax.fdfd.rcs, "solve_rcs", _never)
    for out in blocked:
        _refused(capsys, ["fdfd", EXAMPLES / "fdfd_cylinder.toml", "--out", out])


def test_layered_out_checked_first(tmp_path, capsys, monkeypatch, blocked):
    import emjax.layered.green

    monkeypatch.setattr(emjax.layered.green, "dipole_fields", _never)
    for out in blocked:
        _refused(capsys, ["layered", EXAMPLES / "layered_dipole.toml", "--out", out])


def test_fdtd_out_and_checkpoint_checked_first(tmp_path, capsys, monkeypatch, blocked):
    import emjax.fdtd
    import emjax.fdtd.physical

    monkeypatch.setattr(emjax.fdtd, "run", _never)
    monkeypatch.setattr(emjax.fdtd.physical, "run", _never)
    for cfg in ("fdtd_dipole_cells.toml", "fdtd_dipole.toml"):
        for out in blocked:
            _refused(capsys, ["fdtd", EXAMPLES / cfg, "--out", out])
    _refused(
        capsys, ["fdtd", EXAMPLES / "fdtd_dipole.toml", "--steps", "0"], "--steps must be an integer >= 1"
    )
    text = (
        (EXAMPLES / "fdtd_dipole.toml").read_text().replace("chunk = 100", 'chunk = 100\ncheckpoint = "{}"')
    )
    cfg = tmp_path / "ck.toml"
    cfg.write_text(text.format(tmp_path.as_posix()))  # a folder where the file belongs
    _refused(capsys, ["fdtd", cfg], "[run].checkpoint: ")
    corrupt = tmp_path / "corrupt.npz"
    corrupt.write_bytes(b"not a zip file at all")
    cfg.write_text(text.format(corrupt.as_posix()))
    _refused(capsys, ["fdtd", cfg], "[run].checkpoint: ")


def test_dda_out_and_checkpoint_checked_first(tmp_path, capsys, monkeypatch, blocked):
    import emjax.dda

    monkeypatch.setattr(emjax.dda, "solve", _never)
    monkeypatch.setattr(emjax.dda, "average", _never)
    base = ["dda", "--shape", "sphere", "--size", "2", "--grid", "8"]
    for out in blocked:
        _refused(capsys, [*base, "--out", out])
    _refused(capsys, [*base, "--orient", "avg", "--checkpoint", tmp_path], "--checkpoint")
    import emjax.dda.bench

    monkeypatch.setattr(emjax.dda.bench, "dda_benchmark", _never)
    _refused(capsys, ["bench", "dda", "--grid", "8", "--out", tmp_path], "--out")


def test_prepare_and_check(tmp_path):
    d = prepare_output_dir(tmp_path / "x" / "y")
    assert d.is_dir() and list(d.iterdir()) == []
    with pytest.raises(ConfigError, match=r"^--out: .* is a file"):
        prepare_output_dir(write_text(tmp_path / "f", "1"))
    with pytest.raises(ConfigError, match=r"^bench: .* is a folder; give a file name"):
        check_output_file(tmp_path, "bench")
    assert check_output_file(tmp_path / "new" / "r.json", "bench").parent.is_dir()


def test_atomic_writes_keep_the_old_file_on_failure(tmp_path):
    p = write_text(tmp_path / "r.txt", "old")
    with pytest.raises(RuntimeError), atomic_path(p) as tmp:
        tmp.write_text("half")
        raise RuntimeError("killed mid-write")
    assert p.read_text() == "old" and sorted(x.name for x in tmp_path.iterdir()) == ["r.txt"]
    with staged_outputs(tmp_path) as stage:
        (stage / "r.txt").write_text("new")
        (stage / "s.txt").write_text("s")
        assert p.read_text() == "old"  # nothing replaced before the block ends
    assert p.read_text() == "new" and sorted(x.name for x in tmp_path.iterdir()) == ["r.txt", "s.txt"]
    with pytest.raises(RuntimeError), staged_outputs(tmp_path) as stage:
        (stage / "r.txt").write_text("partial")
        raise RuntimeError
    assert p.read_text() == "new" and sorted(x.name for x in tmp_path.iterdir()) == ["r.txt", "s.txt"]


def test_save_dataset_is_atomic(tmp_path):
    xr = pytest.importorskip("xarray")
    pytest.importorskip("h5netcdf")
    from emjax.io import save_dataset

    ds = xr.Dataset({"a": ("x", np.arange(3.0) + 1j)})
    p = save_dataset(ds, tmp_path / "r.nc")
    assert [x.name for x in tmp_path.iterdir()] == ["r.nc"]
    other = tmp_path / "plain"
    other.write_text("")
    assert p.stat().st_mode & 0o777 == other.stat().st_mode & 0o777  # not mkstemp's 0600
    with xr.open_dataset(p) as back:
        assert np.allclose(back["a_imag"].values, 1.0)


def test_check_npz(tmp_path):
    good = tmp_path / "ck.npz"
    np.savez(good, fingerprint=np.array("x"), leaf0=np.zeros(3))
    assert check_npz(good, "ck") == good
    with pytest.raises(ConfigError, match=r"^ck: .* is not an emjax checkpoint \(no fingerprint\)"):
        np.savez(tmp_path / "other.npz", a=np.zeros(2))
        check_npz(tmp_path / "other.npz", "ck")
    trunc = tmp_path / "trunc.npz"
    trunc.write_bytes(good.read_bytes()[:-40])
    with pytest.raises(ConfigError, match=r"^ck: .* is not a readable checkpoint"):
        check_npz(trunc, "ck")
    assert zipfile.is_zipfile(good)
