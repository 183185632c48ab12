"""The chunked time loop of a concrete FDTD run (emjax.fdtd.chunks): the next chunk is
dispatched before the host waits for the last one (not with a checkpoint, nor where either
call compiles), NaN/Inf names
the chunk it appeared in, records stay in order, and a new chunk length's compile time is
not counted as stepping time."""

import time

import numpy as np
import pytest

from emjax.fdtd.chunks import run_chunks


class Fake:
    """``advance`` and ``to_host`` that log the order of dispatches and waits; the chunk
    ending at step ``bad`` is not finite; a first call of a chunk length sleeps ``compile``
    seconds in its dispatch, each chunk ``step`` seconds on the "device"."""

    def __init__(self, bad=None, compile_s=0.0, step_s=0.0):
        self.log, self.bad, self.compile_s, self.step_s = [], bad, compile_s, step_s
        self.seen, self.free = set(), 0.0

    def advance(self, state, n):
        if n not in self.seen:
            self.seen.add(n)
            time.sleep(self.compile_s)
        done = state + n
        self.log.append(("dispatch", done))
        ready = self.free = max(time.perf_counter(), self.free) + self.step_s  # queued
        return done, ("rec", done, np.full(n, done)), ("finite", done, done != self.bad, ready)

    def to_host(self, x):
        if x[0] == "finite":
            self.log.append(("wait", x[1]))
            time.sleep(max(x[3] - time.perf_counter(), 0.0))
            return x[2]
        return x[2]


def test_next_chunk_dispatched_before_the_wait():
    f = Fake()
    seen = []
    state, acc = run_chunks(f.advance, 0, 0, 35, 10, to_host=f.to_host, progress=lambda d, s: seen.append(d))
    assert state == 35 and seen == [10, 20, 30, 35]
    assert f.log == [
        ("dispatch", 10),
        ("wait", 10),  # the first call of a length compiles: waited for alone
        ("dispatch", 20),
        ("dispatch", 30),
        ("wait", 20),
        ("wait", 30),  # the last chunk is of a new length: its dispatch compiles
        ("dispatch", 35),
        ("wait", 35),
    ]
    assert np.array_equal(np.concatenate(acc.recs), np.repeat([10, 20, 30, 35], [10, 10, 10, 5]))


def test_a_checkpoint_waits_for_each_chunk():
    f = Fake()
    saved = []
    run_chunks(
        f.advance, 0, 0, 30, 10, to_host=f.to_host, at_boundary=lambda st, recs: saved.append((st, len(recs)))
    )
    assert f.log == [
        ("dispatch", 10),
        ("wait", 10),
        ("dispatch", 20),
        ("wait", 20),
        ("dispatch", 30),
        ("wait", 30),
    ]
    assert saved == [(10, 1), (20, 2), (30, 3)]


def test_nan_names_its_chunk_and_reports_no_progress_past_it():
    f = Fake(bad=20)
    seen = []
    with pytest.raises(FloatingPointError, match="NaN/Inf by step 20"):
        run_chunks(f.advance, 0, 0, 40, 10, to_host=f.to_host, progress=lambda d, s: seen.append(d))
    assert seen == [10]


def test_compile_of_a_new_length_is_not_stepping_time():
    """Chunks of 10, 10, 10 and a last of 5 (a new length: the loop waits for the third
    chunk before its dispatch compiles): the run seconds are the second and third chunks'."""
    f = Fake(compile_s=0.3, step_s=0.05)
    _, acc = run_chunks(f.advance, 0, 0, 35, 10, to_host=f.to_host)
    assert acc.timed_steps == 20
    assert 0.09 <= acc.run_s < 0.2, acc.run_s
    assert acc.compile_s >= 0.6
    assert f.log[-3:] == [("wait", 30), ("dispatch", 35), ("wait", 35)]


def test_default_chunk_is_half_a_second_of_work_and_at_most_two(monkeypatch):
    """~5% of the run and at least 50 steps, raised to ~0.5 s of work at a typical rate per
    device and capped at ~2 s at a slow one: a 512^3 grid on 2 GPUs runs 223 steps per call
    in a 1000-step run (50 before), a 100^3 grid on a CPU 100."""
    import jax

    from emjax.fdtd import simulation

    assert simulation.default_chunk(1000, 100**3) == 100  # CPU: 0.5 s at 2e8
    assert simulation.default_chunk(10_000, 100**3) == 400  # 5% = 500, capped at 2 s
    assert simulation.default_chunk(30, 1000) == 30
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert simulation.default_chunk(1000, 512**3, devices=2) == 223
    assert simulation.default_chunk(1000, 512**3) == 111
    assert simulation.default_chunk(100_000, 1024**3) == 18  # 2 s at 1e10
