"""Benchmark helpers shared by the methods' benchmarks (``emjax.<method>.bench``): compile
timed apart, ``block_until_ready``, the device's measured bandwidths, the commit measured,
and a sweep recorder that keeps going past a failing case."""

from __future__ import annotations

import subprocess
import time

import jax
import jax.numpy as jnp
import numpy as np

from .backend import precision_scope


def git_commit() -> str | None:
    """The short commit of the source tree measured ($EMJAX_COMMIT wins), else None."""
    import os

    if os.environ.get("EMJAX_COMMIT"):
        return os.environ["EMJAX_COMMIT"]
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            cwd=__file__.rsplit("/src/", 1)[0],
        )
        return out.stdout.strip() or None
    except Exception:  # noqa: BLE001
        return None


def time_call(fn, *args, repeats: int):
    """(first call incl. compile, best and median of ``repeats`` later calls) in seconds."""
    t0 = time.perf_counter()
    jax.block_until_ready(fn(*args))
    first = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t0)
    return first, min(times), float(np.median(times))


def copy_bandwidth(nbytes: int | None = None, repeats: int = 10) -> float:
    """Measured device copy bandwidth (bytes read + written per second) of ``y = x + 1``
    on a 2 GiB (GPU) or 256 MiB (CPU) float32 array."""
    if nbytes is None:
        nbytes = 1 << 28 if jax.default_backend() == "cpu" else 1 << 31
    with precision_scope():
        x = jnp.zeros(nbytes // 4, jnp.float32)
        f = jax.jit(lambda a: a + 1)
        _, best, _ = time_call(f, x, repeats=repeats)
    return 2 * x.nbytes / best


def stream_bandwidth(nbytes: int | None = None, repeats: int = 10) -> float:
    """Measured device bandwidth (bytes read + written per second) of ``z = x + y``: two
    reads per write, the read:write ratio of an FDTD half step (six fields read, three
    written). On an H100 it exceeds the copy's (1:1) by ~10%, which is why FDTD steps can
    run above 100% of ``copy_bandwidth``. Arrays of ``nbytes`` each (default as the copy's)."""
    if nbytes is None:
        nbytes = 1 << 28 if jax.default_backend() == "cpu" else 1 << 31
    with precision_scope():
        x = jnp.arange(nbytes // 4, dtype=jnp.float32)
        y = x * 0.5
        f = jax.jit(lambda a, b: a + b)
        _, best, _ = time_call(f, x, y, repeats=repeats)
    return 3 * x.nbytes / best


def record(rows: list, out, labels: dict, fn, *args, **kwargs) -> dict:
    """Run one benchmark case for a sweep: a failure (e.g. out of memory) is recorded with
    its labels instead of stopping the sweep; the row is printed as a JSON line and the
    whole list rewritten to ``out`` atomically (:func:`emjax.io.write_text`: a temporary
    file in the same folder, then ``os.replace``), so a kill never leaves half a file.
    ``out`` is checked (folder created, writable, not a folder) before the case runs: an
    unusable path fails at once, not after the computation."""
    import json
    import sys
    import traceback
    from pathlib import Path

    from .io import check_output_file, write_text

    out = check_output_file(Path(out), "out")
    try:
        row = fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - keep the sweep going, say what failed
        row = {**labels, "error": f"{type(exc).__name__}: {exc}"[:300]}
        traceback.print_exc(file=sys.stderr)
    print(json.dumps(row), flush=True)
    rows.append(row)
    write_text(out, json.dumps(rows, indent=1))
    return row
