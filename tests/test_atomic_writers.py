"""The benchmark sweep recorder (``emjax.bench.record``) and the ADDA text files
(``emjax.dda.adda_files``): the output path is checked before anything is computed, and a
write that fails half-way leaves the previous file whole and no temporary file behind."""

import json
import pathlib

import pytest

from emjax import ConfigError
from emjax.bench import record
from emjax.dda import adda_files


def _fail_half_way(monkeypatch):
    """Path.write_text writes half the text, then fails as a full disk would."""
    real = pathlib.Path.write_text

    def half(self, text, *a, **k):
        real(self, text[: len(text) // 2], *a, **k)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pathlib.Path, "write_text", half)


def _case(calls):
    def fn():
        calls.append(1)
        return {"n": len(calls), "seconds": 0.5}

    return fn


def test_record_appends_and_rewrites_the_list(tmp_path):
    out, rows, calls = tmp_path / "sub" / "results.json", [], []
    record(rows, out, {"n": 0}, _case(calls))
    record(rows, out, {"n": 0}, _case(calls))
    assert json.loads(out.read_text()) == [{"n": 1, "seconds": 0.5}, {"n": 2, "seconds": 0.5}]
    assert sorted(p.name for p in out.parent.iterdir()) == ["results.json"]


def test_record_keeps_going_past_a_failing_case(tmp_path, capsys):
    def boom():
        raise MemoryError("out of memory")

    rows = []
    row = record(rows, tmp_path / "r.json", {"grid": 512}, boom)
    assert row == {"grid": 512, "error": "MemoryError: out of memory"}
    assert "MemoryError" in capsys.readouterr().err


@pytest.mark.parametrize("bad", ["folder", "under_a_file"])
def test_record_checks_the_path_before_running_the_case(tmp_path, bad):
    if bad == "folder":
        out = tmp_path / "results.json"
        out.mkdir()
        message = r"out: .* is a folder; give a file name"
    else:
        (tmp_path / "afile").write_text("x")
        out = tmp_path / "afile" / "results.json"
        message = r"out: .* is a file, not a folder"
    calls = []
    with pytest.raises(ConfigError, match=message):
        record([], out, {}, _case(calls))
    assert calls == []  # nothing computed


def test_record_failing_write_leaves_the_old_file_whole(tmp_path, monkeypatch):
    out, rows = tmp_path / "results.json", []
    record(rows, out, {}, _case([]))
    before = out.read_text()
    _fail_half_way(monkeypatch)
    with pytest.raises(OSError, match="No space left"):
        record(rows, out, {}, _case([1]))
    assert out.read_text() == before and json.loads(before) == [{"n": 1, "seconds": 0.5}]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]  # no temporary left


def test_adda_files_folder_checked_before_anything_is_formatted(tmp_path):
    """``result`` is never touched when the folder cannot be used (None would fail)."""
    (tmp_path / "afile").write_text("x")
    with pytest.raises(ConfigError, match=r"folder: .*afile' is a file; give a folder"):
        adda_files.write_adda_outputs(None, tmp_path / "afile")
    with pytest.raises(ConfigError, match=r"folder: .* is a file; give a folder"):
        adda_files.write_adda_average_outputs(None, tmp_path / "afile")


def test_adda_files_are_written_atomically(tmp_path, monkeypatch):
    paths = adda_files._write_files(tmp_path, {"CrossSec-X": "Cext\t= 1\n", "log": "ok\n"})
    assert [p.name for p in paths] == ["CrossSec-X", "log"]
    assert (tmp_path / "CrossSec-X").read_text() == "Cext\t= 1\n"
    _fail_half_way(monkeypatch)
    with pytest.raises(OSError):
        adda_files._write_files(tmp_path, {"CrossSec-X": "Cext\t= 2\n" * 100})
    assert (tmp_path / "CrossSec-X").read_text() == "Cext\t= 1\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["CrossSec-X", "log"]
