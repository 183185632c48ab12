"""benchmarks/fdtd_settings.py: each setting in a process of its own, named on its rows; a
setting that names no module setting fails in one line before anything runs."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "fdtd_settings.py"


def _load():
    spec = importlib.util.spec_from_file_location("fdtd_settings", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_setting_that_names_nothing_fails_in_one_line():
    mod = _load()
    cases = (("cuda.NO_SUCH=1", "cuda has no setting NO_SUCH"), ("oops", "is not module.NAME=VALUE"))
    for bad, said in cases:
        try:
            mod.check(bad)
        except SystemExit as e:
            assert said in str(e)
        else:
            raise AssertionError(bad)
    mod.check("cuda.STEADY_LOOP=True; split.FACE_ALONG=16")


def test_each_setting_runs_apart_and_is_named_on_its_rows(tmp_path):
    """Two settings of the XLA step's bench (the blocked kernel's settings do not change it):
    one row each, in order, each naming its setting; the child evaluates the value over the
    modules (a name that is none of them gives that setting's row an error, not the others)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), JAX_PLATFORMS="cpu")
    out = tmp_path / "rows.jsonl"
    sets = ["cuda.STEADY={**cuda.STEADY, 'faces': {4: 1, 8: 1}}", "cuda.STEADY_LOOP=no_such_name"]
    args = [sys.executable, str(SCRIPT), "--out", str(out)]
    for s in sets:
        args += ["--set", s]
    bench = ["--", "--size", "22", "--steps", "2", "--kernel", "xla"]
    run = subprocess.run(args + bench, capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    rows = [json.loads(ln) for ln in out.read_text().splitlines()]
    assert [r["setting"] for r in rows] == sets
    assert rows[0]["size"] == 22 and rows[0]["cells_per_s"] > 0
    assert "no_such_name" in rows[1]["error"] and "cells_per_s" not in rows[1]
