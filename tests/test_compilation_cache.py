"""The emjax command's persistent compilation cache (emjax.backend.enable_compilation_cache):
the first run fills the cache, the second loads every kernel from it (no new entries) and
prints the same result; EMJAX_COMPILATION_CACHE=0 turns it off. Measured on this 2-core CPU
(the DDA sphere below, grid 16): 9.4 s cold, 2.6 s with the cache (8.4 s with it off); the
wall times are not asserted (the machine's load varies), the cache entries are."""

import json
import os
import subprocess
import sys

import pytest

CMD = [
    sys.executable,
    "-m",
    "emjax.cli",
    "dda",
    "--shape",
    "sphere",
    "--grid",
    "8",
    "--m",
    "1.5",
    "--size",
    "2",
]


def _run(env):
    out = subprocess.run(CMD + ["--json"], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_second_run_loads_every_kernel(tmp_path):
    cache = tmp_path / "cache"
    env = {**os.environ, "EMJAX_COMPILATION_CACHE": "1", "EMJAX_COMPILATION_CACHE_DIR": str(cache)}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    first = _run(env)
    entries = sorted(p.name for p in cache.iterdir())
    assert len(entries) >= 3, entries  # the solver's chunk, its set-up, the far field at least
    second = _run(env)
    assert sorted(p.name for p in cache.iterdir()) == entries  # nothing compiled anew
    assert second["Qext"] == first["Qext"] and second["Qabs"] == first["Qabs"]


def test_turned_off(tmp_path, monkeypatch):
    """EMJAX_COMPILATION_CACHE=0 (set for the whole test session by conftest.py): nothing is
    configured and no folder is made (checked in this process: it returns before touching
    JAX's configuration)."""
    from emjax.backend import enable_compilation_cache

    monkeypatch.setenv("EMJAX_COMPILATION_CACHE_DIR", str(tmp_path / "cache"))
    for off in ("0", "off", "false"):
        monkeypatch.setenv("EMJAX_COMPILATION_CACHE", off)
        assert enable_compilation_cache() is None
    assert not (tmp_path / "cache").exists()


@pytest.mark.slow  # one more subprocess run (~8 s)
def test_unwritable_folder_warns_and_runs(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    env = {**os.environ, "EMJAX_COMPILATION_CACHE": "1", "EMJAX_COMPILATION_CACHE_DIR": str(blocker / "sub")}
    out = subprocess.run(CMD + ["--json"], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "compilation cache off" in out.stderr, out.stderr
