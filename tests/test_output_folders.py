"""Output folders: no command writes over or mixes another run's files, a run without --out
gets a fresh runNNN_<method>_<description> folder (as ADDA), and a run that is refused or
interrupted leaves nothing behind. The computations are replaced by stand-ins where the test
is about the folder, not the numbers."""

import json
import os
from pathlib import Path

import pytest

from emjax import ConfigError, ResourceError
from emjax.cli import main
from emjax.outdir import MANIFEST, OutputFolder, config_description, next_run_folder, results_in

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
DDA = ["dda", "--shape", "sphere", "--size", "2", "--grid", "4", "--ntheta", "3", "--no-integrate"]


def _never(*args, **kwargs):
    raise AssertionError("the computation started although the output folder is refused")


def _stop(exc):
    def stand_in(*args, **kwargs):
        raise exc

    return stand_in


def _tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


COMMANDS = {
    "dda": (DDA, [("emjax.dda", "solve")]),
    "fdtd": (
        ["fdtd", EXAMPLES / "fdtd_dipole.toml"],
        [("emjax.fdtd", "run"), ("emjax.fdtd.physical", "run")],
    ),
    "fdtd-cells": (["fdtd", EXAMPLES / "fdtd_dipole_cells.toml"], [("emjax.fdtd", "run")]),
    "fdfd": (["fdfd", EXAMPLES / "fdfd_cylinder.toml"], [("emjax.fdfd.rcs", "solve_rcs")]),
    "layered": (["layered", EXAMPLES / "layered_dipole.toml"], [("emjax.layered.green", "dipole_fields")]),
}


def _patch(monkeypatch, targets, stand_in):
    import importlib

    for module, name in targets:
        monkeypatch.setattr(importlib.import_module(module), name, stand_in)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_out_with_results_refused_without_overwrite(tmp_path, capsys, monkeypatch, command):
    """--out naming a folder with another run's results: one line naming --out and the
    folder and saying what to do, before anything is computed; the old files untouched."""
    argv, targets = COMMANDS[command]
    _patch(monkeypatch, targets, _never)
    out = tmp_path / "old run"
    out.mkdir()
    (out / "result.nc").write_text("earlier")
    rc = main([str(a) for a in [*argv, "--out", out]])
    err = capsys.readouterr().err
    assert rc == 1 and err.count("\n") == 1, err
    assert err.startswith(f"emjax: error: --out: {str(out)!r} already holds emjax results (result.nc)")
    assert "pass --overwrite" in err and "another folder" in err
    assert _tree(out) == ["result.nc"] and (out / "result.nc").read_text() == "earlier"
    # with --overwrite the run goes ahead (here: to the stand-in, which fails the test if reached)
    _patch(monkeypatch, targets, _stop(ResourceError("stand-in: not enough memory")))
    assert main([str(a) for a in [*argv, "--out", out, "--overwrite"]]) == 1
    assert "stand-in" in capsys.readouterr().err
    assert _tree(out) == ["result.nc"]


def test_dda_config_out_named_as_written(tmp_path, capsys, monkeypatch):
    """``out`` given in a DDA config file: the refusal names the key ``out``."""
    import emjax.dda

    monkeypatch.setattr(emjax.dda, "solve", _never)
    out = tmp_path / "r"
    out.mkdir()
    (out / MANIFEST).write_text(json.dumps({"files": ["CrossSec-X"]}))
    (out / "CrossSec-X").write_text("x")
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'shape = "sphere"\nsize = 2.0\ngrid = 4\nout = "{out.as_posix()}"\n')
    assert main(["dda", "--config", str(cfg)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"emjax: error: out: {str(out)!r} already holds emjax results (CrossSec-X)"), err


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("stop", ["refused", "interrupted"])
def test_refused_or_interrupted_run_leaves_nothing(tmp_path, capsys, monkeypatch, command, stop):
    """A run refused after its set-up (a grid too big for memory) or stopped by Ctrl-C
    leaves no folder: neither the --out folder nor its parents, nor a fresh run folder."""
    argv, targets = COMMANDS[command]
    exc = ResourceError("stand-in: grid too big") if stop == "refused" else KeyboardInterrupt()
    _patch(monkeypatch, targets, _stop(exc))
    rc = main([str(a) for a in [*argv, "--out", tmp_path / "new" / "deeper"]])
    assert rc == (1 if stop == "refused" else 130)
    assert _tree(tmp_path) == []
    assert main([str(a) for a in argv]) == rc  # without --out: no runNNN folder either
    assert os.listdir(".") == []
    capsys.readouterr()


def test_interrupted_while_writing_leaves_the_old_run_whole(tmp_path, capsys, monkeypatch):
    """Ctrl-C while the files are written: a new folder is not left half-written (removed
    with the parents this run made); an existing run's files stay as they were."""
    import emjax.io

    monkeypatch.setattr(emjax.io, "save_dataset", _stop(KeyboardInterrupt()))
    assert main([*DDA, "--out", str(tmp_path / "a" / "b")]) == 130
    assert _tree(tmp_path) == []
    out = tmp_path / "run"
    with OutputFolder(out, method="dda").check().writing() as stage:
        (stage / "result.nc").write_text("earlier")
        (stage / "log").write_text("earlier")
    before = {p: (out / p).read_bytes() for p in _tree(out)}
    assert sorted(before) == [MANIFEST, "log", "result.nc"]
    assert main([*DDA, "--out", str(out), "--overwrite"]) == 130
    assert {p: (out / p).read_bytes() for p in _tree(out)} == before  # no staging folder left
    capsys.readouterr()


def test_runs_without_out_get_fresh_numbered_folders(capsys):
    """Two DDA runs without --out: run000_dda_sphere_g4_m1.5 and run001_..., each with its
    own result.nc and the manifest naming the command and the files."""
    for _ in range(2):
        assert main(DDA) == 0
    names = sorted(os.listdir("."))
    assert names == ["run000_dda_sphere_g4_m1.5", "run001_dda_sphere_g4_m1.5"]
    for name in names:
        record = json.loads((Path(name) / MANIFEST).read_text())
        assert record["command"].startswith("emjax dda --shape sphere") and record["method"] == "dda"
        assert {"result.nc", "CrossSec-X", "mueller", "log"} <= set(record["files"])
        assert sorted(record["files"] + [MANIFEST]) == sorted(os.listdir(name))
    assert "outputs written to run001_dda_sphere_g4_m1.5" in capsys.readouterr().out


def test_next_run_folder_numbers(tmp_path):
    assert next_run_folder(tmp_path, "fdtd", "sphere").name == "run000_fdtd_sphere"
    (tmp_path / "run007_dda_x").mkdir()
    (tmp_path / "run1000_notes.txt").write_text("")
    (tmp_path / "running").mkdir()
    assert next_run_folder(tmp_path, "fdfd", "a b/c").name == "run1001_fdfd_a_b_c"
    assert config_description("examples/fdtd_sphere.toml", "fdtd") == "sphere"
    assert config_description("my.toml", "fdtd") == "my" and config_description(None, "x") == ""


def test_overwrite_replaces_the_previous_run_entirely(tmp_path):
    """--overwrite: the new run's files replace the old ones and the previous run's files
    that it does not write again go (no mixing); files emjax did not write stay."""
    out = tmp_path / "out"
    first = OutputFolder(out, method="fdtd").check()
    with first.writing(command="first") as stage:
        (stage / "result.nc").write_text("1")
        (stage / "plane_a.nc").write_text("a")
    assert first.path == out and sorted(os.listdir(out)) == [MANIFEST, "plane_a.nc", "result.nc"]
    (out / "notes.txt").write_text("mine")
    assert results_in(out) == [MANIFEST, "plane_a.nc", "result.nc"]
    held = r"^--out: .* already holds emjax results \(plane_a.nc, result.nc\)"
    with pytest.raises(ConfigError, match=held):
        OutputFolder(out, method="fdtd").check()
    second = OutputFolder(out, method="fdtd", overwrite=True).check()
    with second.writing(command="second") as stage:
        (stage / "result.nc").write_text("2")
        (stage / "plane_b.nc").write_text("b")
    assert sorted(os.listdir(out)) == [MANIFEST, "notes.txt", "plane_b.nc", "result.nc"]
    assert (out / "result.nc").read_text() == "2"
    assert json.loads((out / MANIFEST).read_text())["files"] == ["plane_b.nc", "result.nc"]


def test_empty_or_foreign_folder_is_used(tmp_path):
    """An existing folder without emjax results (empty, or the user's own files) is written
    into without --overwrite; the run folder's permissions are those of a new folder."""
    out = tmp_path / "mine"
    out.mkdir()
    (out / "readme.txt").write_text("x")
    with OutputFolder(out, method="layered").check().writing() as stage:
        (stage / "fields.nc").write_text("f")
    assert sorted(os.listdir(out)) == [MANIFEST, "fields.nc", "readme.txt"]
    fresh = OutputFolder(None, method="layered", parent=tmp_path).check()
    with fresh.writing("dipole") as stage:
        (stage / "fields.nc").write_text("f")
    assert fresh.path == tmp_path / "run000_layered_dipole"
    assert fresh.path.stat().st_mode & 0o777 == out.stat().st_mode & 0o777


def test_every_result_save_refuses_a_missing_folder(tmp_path):
    """``Result.save("nodir/x.nc")`` of every result type: one ConfigError naming the folder
    that does not exist (not the hidden temporary file), nothing created."""
    import types

    xr = pytest.importorskip("xarray")
    from emjax.dda.results import AveragedResult, DDAResult
    from emjax.fdfd.results import RCSResult
    from emjax.fdtd.physical import Result as PhysicalResult
    from emjax.fdtd.results import FDTDResult
    from emjax.layered.results import DipoleFields

    ds = xr.Dataset({"a": ("x", [1.0, 2.0])})
    fake = types.SimpleNamespace(to_xarray=lambda *a: ds)
    for cls in (DDAResult, AveragedResult, FDTDResult, PhysicalResult, RCSResult, DipoleFields):
        missing = tmp_path / "nodir"
        with pytest.raises(ConfigError, match=r"the folder .*nodir' does not exist") as info:
            cls.save(fake, missing / "x.nc")
        assert ".tmp" not in str(info.value) and str(info.value).count("\n") == 0, cls
        afile = tmp_path / "afile"
        afile.write_text("")
        with pytest.raises(ConfigError, match=r"the folder .*afile' is a file"):
            cls.save(fake, afile / "x.nc")
        assert _tree(tmp_path) == ["afile"], cls
    DDAResult.save(fake, tmp_path / "x.nc")
    assert (tmp_path / "x.nc").is_file()
