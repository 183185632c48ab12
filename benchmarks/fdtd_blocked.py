"""FDTD: the XLA step against the blocked traversal (passes of TH steps over overlapped tiles,
emjax.fdtd.blocked), side by side in one run, float32 with a 10-cell CPML on every face and a
z-dipole at the centre; checks that both give the same fields.

PYTHONPATH=src python3 benchmarks/fdtd_blocked.py                       # 256^3 and 512^3
PYTHONPATH=src python3 benchmarks/fdtd_blocked.py --n 24 --steps 6 --steps-ref 6 --interpret  # CPU
PYTHONPATH=src python3 benchmarks/fdtd_blocked.py --out results/h100-fdtd-blocked.jsonl

Rows (one JSON line each, stdout and --out): ``path`` "xla" (emjax.fdtd.step.advance),
"blocked-triton" (the default blocked path: one pallas_call per pass lowered to Triton,
each program marching along x through a y/z window of ``--window`` cells, 32 by default =
a tile of 24 + 2 x TH 4; the row names ``tile``, ``window`` and ``th``),
"blocked-pallas-march" (the x-march with rings as loop values: does not lower to Triton,
its windows are not powers of two),
"blocked-pallas" (the same without the march: whole windows as values; not in the default
paths) or "blocked-xla" (the passes in plain JAX, a loop over tiles: the traversal's
reference, not a fast path); ``compile_s`` (the first call: trace + compile + one run) apart from
``seconds`` (the second call, the rate's time), ``cells_per_s``, the model's bytes per cell
update (:func:`bytes_model`, also for XLA: 18 values per update) and ``rel_err`` against the
XLA fields after the same steps. A path that fails to compile or run gives a row with
``error`` (the last line of its message) and the script goes on. Each row runs in its own
process, killed after ``--row-limit`` seconds (default 120) or what is left of ``--budget``
(default 200 s for all rows), so the script ends within ~4 minutes whatever a compiler
does. The compared fields: E on the plane x = n/2 + 1 and on z = n/2 (rel_err: max
difference over max value; ``equal``: <= 1e-5).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np

from emjax import fdtd
from emjax.backend import device_description
from emjax.bench import git_commit
from emjax.fdtd import blocked
from emjax.fdtd import step as engine


def bytes_model(tile, shape, th, itemsize=4, coef=0) -> float:
    """Bytes per cell update of a blocked pass: windows of 6 components read, the tile's
    cells written, coefficient bytes per cell ``coef`` read with the window, over ``th``
    steps (see emjax.fdtd.blocked)."""
    ratio = math.prod((min(b, n) + (2 * th if b < n else 0)) / min(b, n) for b, n in zip(tile, shape))
    return (6 * itemsize * ratio + 6 * itemsize + coef * ratio) / th


def simulation(n: int, cpml: int = 10):
    g = fdtd.Grid((n, n, n), 1.0, boundary=fdtd.CPML(cpml))
    src = fdtd.PointDipole((n // 2,) * 3, 2, fdtd.GaussianPulse(frequency=0.05, bandwidth=0.5))
    return fdtd.GridSimulation(g, sources=(src,), probes=(fdtd.Probe((n // 2 + 3, n // 2, n // 2), 2),))


def _fresh(sim, steps):
    arrays, pml = engine.coefficients(sim, jnp.float32)
    plan = engine.make_plan(sim, steps, jnp.float32, arrays, pml)
    return plan, arrays, engine.initial_state(sim, plan, jnp.float32, None)


def _timed(fn, sim, steps):
    """(compile_s, seconds, state): a first call (compiles), then a timed second one."""
    plan, arrays, state = _fresh(sim, steps)
    t0 = time.perf_counter()
    out = fn(plan, arrays, state, steps)
    jax.block_until_ready(out)
    compile_s = time.perf_counter() - t0
    plan, arrays, state = _fresh(sim, steps)
    t0 = time.perf_counter()
    out = fn(plan, arrays, state, steps)
    jax.block_until_ready(out)
    return compile_s, time.perf_counter() - t0, out[0]


def _samples(state, n):
    """The fields compared between paths: the three E components on the plane x = n/2 + 1
    and on the plane z = n/2 (through the source, the CPML at the edges)."""
    E = [np.asarray(e) for e in state["E"]]
    return np.stack([e[n // 2 + 1] for e in E] + [e[:, :, n // 2] for e in E])


def run_row(n, path, steps, th, tile, samples_path, interpret=False, window=32):
    """One row in this process: (row fields, writes the compared fields to ``samples_path``)."""
    sim = simulation(n)
    row = {"n": n, "path": path, "steps": steps}
    if path == "xla":
        fn = engine.advance
        row["bytes_per_update"] = 18 * 4
    else:
        kernel = {"blocked-xla": "xla", "blocked-triton": "triton", "blocked-cuda": "cuda"}.get(
            path, "pallas"
        )
        march = path == "blocked-pallas-march"
        t = tile if kernel != "xla" else (n, 64, 64)  # the reference: fewer, bigger tiles
        if kernel == "triton":  # y/z windows of ``window`` cells: tiles of window - 2 th
            t = (tile[0], window - 2 * th, window - 2 * th)
            row["window"] = [min(t[0], n) + (2 * th if t[0] < n else 0), window, window]
        row["th"] = th
        fn = lambda p, ar, s, k: blocked.advance(  # noqa: E731
            p, ar, s, k, th=th, tile=t, kernel=kernel, interpret=interpret, march=march
        )
        row["tile"] = list(t)
        row["bytes_per_update"] = round(bytes_model(t, (n,) * 3, th), 2)
    compile_s, seconds, state = _timed(fn, sim, steps)
    row.update(compile_s=round(compile_s, 2), seconds=round(seconds, 4))
    row["cells_per_s"] = n**3 * steps / seconds
    out = {"fields": _samples(state, n)}
    del state
    if path == "blocked-xla":  # its few steps: the XLA step's fields here
        _, _, st = _timed(engine.advance, sim, steps)
        out["ref"] = _samples(st, n)
    np.savez(samples_path, **out)
    return row


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, nargs="+", default=[256, 512])
    ap.add_argument("--steps", type=int, default=40, help="steps per timed call (XLA and pallas)")
    ap.add_argument("--steps-ref", type=int, default=8, help="steps of the slow blocked-xla reference")
    ap.add_argument("--th", type=int, default=4)
    ap.add_argument(
        "--tile", type=int, nargs=3, default=None, help="x y z cells per tile (default: x whole, 16 16)"
    )
    ap.add_argument(
        "--window", type=int, default=32, help="blocked-triton: y/z window cells (a power of two)"
    )
    ap.add_argument("--paths", nargs="+", default=["xla", "blocked-triton"])
    ap.add_argument("--budget", type=float, default=200.0, help="seconds for all rows (each its own process)")
    ap.add_argument("--row-limit", type=float, default=120.0, help="seconds for one row (compile + runs)")
    ap.add_argument("--interpret", action="store_true", help="Pallas in interpret mode (a CPU smoke run)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--one", nargs=2, default=None, help=argparse.SUPPRESS)  # child: n path
    ap.add_argument("--samples", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.one is not None:  # a child: one row, its JSON as the last line of stdout
        n, path = int(a.one[0]), a.one[1]
        steps = a.steps_ref if path == "blocked-xla" else a.steps
        tile = tuple(a.tile) if a.tile else (n, 16, 16)
        print(json.dumps(run_row(n, path, steps, a.th, tile, a.samples, a.interpret, a.window)), flush=True)
        return

    def emit(row):
        print(json.dumps(row), flush=True)
        if a.out:
            with open(a.out, "a") as f:
                f.write(json.dumps(row) + "\n")

    t_start = time.perf_counter()
    labels = {
        "device": device_description(),
        "date": time.strftime("%Y-%m-%d"),
        "commit": git_commit(),
        "precision": "single",
        "boundary": "cpml10",
        "th": a.th,
    }
    passthrough = ["--steps", str(a.steps), "--steps-ref", str(a.steps_ref), "--th", str(a.th)]
    passthrough += ["--window", str(a.window)]
    if a.tile:
        passthrough += ["--tile", *map(str, a.tile)]
    if a.interpret:
        passthrough.append("--interpret")
        labels["interpret"] = True
    with tempfile.TemporaryDirectory() as tmp:
        for n in a.n:
            ref = {}  # steps -> the XLA step's compared fields
            for path in a.paths:
                row = {**labels, "n": n, "path": path}
                left = a.budget - (time.perf_counter() - t_start)
                if left <= 5:
                    emit({**row, "skipped": "time budget spent"})
                    continue
                samples = os.path.join(tmp, f"{n}-{path}.npz")
                cmd = [sys.executable, __file__, "--one", str(n), path, "--samples", samples, *passthrough]
                limit = min(left, a.row_limit)
                try:  # its own process: a compile that hangs or a crash costs one row
                    res = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
                except subprocess.TimeoutExpired:
                    emit({**row, "error": f"timed out after {limit:.0f} s"})
                    continue
                lines = res.stdout.strip().splitlines()
                if res.returncode != 0 or not lines:
                    err = [x.strip() for x in res.stderr.splitlines() if x.strip()]
                    exc = [x for x in err if re.match(r"^[\w.]*(Error|Exception)\b", x)]
                    emit({**row, "error": ((exc or err or [f"exit {res.returncode}"])[-1])[:300]})
                    continue
                row.update(json.loads(lines[-1]))
                got = np.load(samples)
                fields = got["fields"]
                if not np.all(np.isfinite(fields)):
                    row["error"] = "non-finite fields"
                reference = got["ref"] if "ref" in got else ref.get(row["steps"])
                if path == "xla":
                    ref[row["steps"]] = fields
                elif reference is not None:
                    rel = float(np.abs(fields - reference).max() / max(np.abs(reference).max(), 1e-30))
                    row.update(rel_err=rel, equal=rel <= 1e-5)
                emit(row)


if __name__ == "__main__":
    main()
