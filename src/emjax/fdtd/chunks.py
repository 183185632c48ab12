"""The time loop of a concrete FDTD run in chunks of steps, one device call each.

Between chunks the host checks the fields for NaN/Inf, collects the probes' records, writes
the checkpoint and reports progress. Without a checkpoint the next chunk is dispatched
before the host waits for the last one: the host's work between calls (dispatching a
program to the devices costs milliseconds, 4.5 ms for the blocked kernel's slabs on 2
GPUs) runs while the devices step, instead of leaving them idle. A NaN/Inf is then seen
one dispatch later; the error names the chunk in which it appeared. The loop waits for a
chunk before the next where either is the first call of its length (that call compiles,
and it is counted as compile time, not stepping) and, with a checkpoint, after every chunk
(its state is needed on the host).

A chunk's seconds are those between the host seeing its result and seeing the last one's.
Where a dispatch returns only once most of its call has run (XLA drives some loops from the
host), part of a chunk's time shows in the one before; the sum over the stepping chunks
is still their wall time.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np


class Chunks:
    """The accounting of a chunked run: compile seconds (the first call of each chunk
    length, which compiles), run seconds and steps of the others, the probe records."""

    def __init__(self):
        self.compile_s = 0.0
        self.run_s = 0.0
        self.timed_steps = 0
        self.recs: list = []


def run_chunks(
    advance: Callable,
    state,
    done: int,
    steps: int,
    chunk: int,
    *,
    to_host: Callable = np.asarray,
    at_boundary: Callable | None = None,
    progress: Callable | None = None,
    recs: list | None = None,
) -> tuple:
    """Steps ``done`` .. ``steps`` in chunks of ``chunk``: ``advance(state, n) -> (state,
    rec, finite)`` (asynchronous), ``to_host`` brings a result to the host (the probe
    records, the finite flag). ``at_boundary(state, recs)``: called with each chunk's state
    (a checkpoint; the loop then waits for every chunk before the next); ``progress(done,
    steps)`` after each chunk. Returns (state, :class:`Chunks`)."""
    acc = Chunks()
    acc.recs = list(recs or [])
    seen: set = set()
    pending = None  # the dispatched chunk not yet waited for: (n, rec, finite, done, first)
    t_prev = time.perf_counter()

    def finish(p, state=None):
        nonlocal t_prev
        n, rec, finite, at, first = p
        ok = bool(to_host(finite))
        t = time.perf_counter()
        elapsed, t_prev = t - t_prev, t
        if first:
            acc.compile_s += elapsed
        else:
            acc.run_s += elapsed
            acc.timed_steps += n
        acc.recs.append(to_host(rec))
        if not ok:
            raise FloatingPointError(
                f"FDTD fields became NaN/Inf by step {at} (unstable: check courant, materials, "
                "sources); the last checkpoint, if any, holds the state before this chunk"
            )
        if at_boundary is not None:
            at_boundary(state, acc.recs)
        if progress is not None:
            progress(at, steps)
        if at_boundary is not None:  # the next chunk starts now (no call was in flight)
            t_prev = time.perf_counter()

    while done < steps:
        n = min(chunk, steps - done)
        first = n not in seen
        seen.add(n)
        # wait first where either call compiles (a new length): the compile and the first
        # call's run stay apart from the stepping time of the calls after them
        if pending is not None and (first or pending[4]):
            finish(pending)
            pending = None
        state, rec, finite = advance(state, n)
        done += n
        if pending is not None:
            finish(pending)
        pending = (n, rec, finite, done, first)
        if at_boundary is not None:
            finish(pending, state)
            pending = None
    if pending is not None:
        finish(pending)
    return state, acc
