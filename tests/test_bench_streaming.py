"""`emjax bench` prints each case as it finishes, flushed: with stdout a pipe (a log, `tee`),
the first case's line arrives while the second case is still running. The benchmarks are
replaced by stand-ins (the second waits for the test's go-ahead), so only the printing is
measured; dda.bench.scaling_benchmark and layered.bench.scaling yield their rows one by one."""

import inspect
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[1] / "src")

STAND_IN = """
import sys, time
from pathlib import Path
import emjax.{module} as bench
from emjax.cli import main

go = Path(sys.argv[1])
calls = []


def fake(*args, **kwargs):
    calls.append(1)
    if len(calls) == 2:  # the second case waits until the first one's line has been read
        for _ in range(600):
            if go.exists():
                break
            time.sleep(0.05)
    return {row}


bench.{function} = fake
sys.exit(main({argv}))
"""

FDTD_ROW = dict(cells_per_s=1e9, bytes_per_cell=72, bandwidth_fraction=0.5, device="cpu")
LAYERED_ROW = dict(
    map="8x8", seconds=1.0, points_per_s=64.0, max_error_normwise=1e-9, max_error_estimate=1e-9, device="cpu"
)
CASES = {
    "fdtd": (
        "fdtd.bench",
        "fdtd_benchmark",
        FDTD_ROW,
        ["bench", "fdtd", "--boundary", "pec", "--size", "8", "--size", "12"],
    ),
    "layered": (
        "layered.bench",
        "layered_benchmark",
        LAYERED_ROW,
        ["bench", "layered", "--size", "8", "--size", "12"],
    ),
}


@pytest.mark.parametrize("method", sorted(CASES))
def test_each_case_is_printed_as_it_finishes(method, tmp_path):
    module, function, row, argv = CASES[method]
    script = tmp_path / "bench.py"
    script.write_text(textwrap.dedent(STAND_IN.format(module=module, function=function, row=row, argv=argv)))
    go = tmp_path / "go"
    env = dict(os.environ, PYTHONPATH=SRC, JAX_PLATFORMS="cpu")
    env.pop("PYTHONUNBUFFERED", None)  # stdout a pipe as in a log: block-buffered
    proc = subprocess.Popen(
        [sys.executable, str(script), str(go)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    first = []
    reader = threading.Thread(target=lambda: first.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout=60)
    arrived_early = bool(first and first[0]) and proc.poll() is None
    go.touch()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert arrived_early, "the first case's line came only when the run ended (not flushed)"
    lines = (first[0] + out).strip().splitlines()
    assert len(lines) == 2 and all(("FDTD" in ln) or ("layered" in ln) for ln in lines)


def test_scaling_sweeps_yield_rows_as_they_are_measured():
    from emjax.dda.bench import scaling_benchmark
    from emjax.layered.bench import scaling

    assert inspect.isgeneratorfunction(scaling_benchmark) and inspect.isgeneratorfunction(scaling)
