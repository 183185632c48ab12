"""FDTD: the XLA step against the blocked traversal (passes of TH steps over overlapped tiles,
emjax.fdtd.blocked), side by side in one run, float32 with a 10-cell CPML on every face and a
z-dipole at the centre; checks that both give the same fields.

PYTHONPATH=src python3 benchmarks/fdtd_blocked.py                       # 256^3 and 512^3
PYTHONPATH=src python3 benchmarks/fdtd_blocked.py --n 64 --steps 8      # a CPU smoke run
PYTHONPATH=src python3 benchmarks/fdtd_blocked.py --out results/h100-fdtd-blocked.jsonl

Rows (one JSON line each, stdout and --out): ``path`` "xla" (emjax.fdtd.step.advance),
"blocked-pallas-march" (one pallas_call per pass, each program marching along x with rings
of planes: the GPU-shaped kernel; compiled for the device, not interpreted),
"blocked-pallas" (the same without the march: whole windows as values; not in the default
paths) or "blocked-xla" (the passes in plain JAX, a loop over tiles: the traversal's
reference, not a fast path); ``compile_s`` (the first call: trace + compile + one run) apart from
``seconds`` (the second call, the rate's time), ``cells_per_s``, the model's bytes per cell
update (:func:`bytes_model`, also for XLA: 18 values per update) and ``rel_err`` against the
XLA fields after the same steps. A path that fails to compile or run gives a row with
``error`` (its first line) and the script goes on. The whole run stops starting new rows
after ``--budget`` seconds (default 200) so it ends within ~4 minutes on an H100.
"""

from __future__ import annotations

import argparse
import json
import math
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


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, nargs="+", default=[256, 512])
    ap.add_argument("--steps", type=int, default=40, help="steps per timed call (XLA and pallas)")
    ap.add_argument("--steps-ref", type=int, default=8, help="steps of the slow blocked-xla reference")
    ap.add_argument("--th", type=int, default=4)
    ap.add_argument(
        "--tile", type=int, nargs=3, default=None, help="x y z cells per tile (default: x whole, 16 16)"
    )
    ap.add_argument("--paths", nargs="+", default=["xla", "blocked-pallas-march", "blocked-xla"])
    ap.add_argument("--budget", type=float, default=200.0, help="start no new row after this many seconds")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)

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
    for n in a.n:
        sim = simulation(n)
        tile = tuple(a.tile) if a.tile else (n, 16, 16)
        ref = {}
        for path in a.paths:
            if time.perf_counter() - t_start > a.budget:
                emit({**labels, "n": n, "path": path, "skipped": "time budget spent"})
                continue
            steps = a.steps_ref if path == "blocked-xla" else a.steps
            row = {**labels, "n": n, "path": path, "steps": steps}
            if path == "xla":
                fn = engine.advance
                row["bytes_per_update"] = 18 * 4
            else:
                kernel = "xla" if path == "blocked-xla" else "pallas"
                march = path == "blocked-pallas-march"
                t = tile if kernel == "pallas" else (n, 64, 64)  # the reference: fewer, bigger tiles
                fn = lambda p, ar, s, k, kernel=kernel, t=t, m=march: blocked.advance(  # noqa: E731
                    p, ar, s, k, th=a.th, tile=t, kernel=kernel, interpret=False, march=m
                )
                row["tile"] = list(t)
                row["bytes_per_update"] = round(bytes_model(t, (n,) * 3, a.th), 2)
            try:
                compile_s, seconds, state = _timed(fn, sim, steps)
            except Exception as e:  # a path that does not lower/run on this device: say so, go on
                row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
                emit(row)
                continue
            row.update(compile_s=round(compile_s, 2), seconds=round(seconds, 4))
            row["cells_per_s"] = n**3 * steps / seconds
            E = np.stack([np.asarray(e) for e in state["E"]])
            if not np.all(np.isfinite(E)):
                row["error"] = "non-finite fields"
            ref.setdefault(steps, None)
            if path == "xla":
                ref[steps] = E
            elif steps in ref and ref[steps] is not None:
                row["rel_err"] = float(np.abs(E - ref[steps]).max() / max(np.abs(ref[steps]).max(), 1e-30))
                row["equal"] = row["rel_err"] <= 1e-5
            elif path == "blocked-xla":  # the XLA step for the reference's few steps
                try:
                    _, _, st = _timed(engine.advance, sim, steps)
                    Er = np.stack([np.asarray(e) for e in st["E"]])
                    row["rel_err"] = float(np.abs(E - Er).max() / max(np.abs(Er).max(), 1e-30))
                    row["equal"] = row["rel_err"] <= 1e-5
                except Exception as e:
                    row["rel_err_error"] = str(e).splitlines()[0][:200]
            emit(row)
            del state, E


if __name__ == "__main__":
    main()
