"""Progress lines for the commands (stderr): at most one per ``every`` seconds, with the work
done, the rate and the time left at that rate; a heartbeat thread repeats the last state when
nothing has been reported for a while (a compilation, a long chunk). Names no method; each
command's ``cli`` says what it counts. No JAX here.
"""

from __future__ import annotations

import sys
import threading
import time

__all__ = ["Reporter", "duration"]


def duration(s: float) -> str:
    """``42 s``, ``3 min 05 s``, ``2 h 07 min``."""
    if s < 60:
        return f"{s:.0f} s"
    if s < 3600:
        return f"{s // 60:.0f} min {s % 60:02.0f} s"
    return f"{s // 3600:.0f} h {s % 3600 / 60:02.0f} min"


class Reporter:
    """``Reporter("fdtd", 2000, "steps")``; ``update(done, note)`` from the computation,
    ``close()`` at the end. Lines look like ``fdtd: 200/2000 steps (10.0%), NOTE, 55.1
    steps/s, ~33 s left``; quiet for work done within ``every`` seconds. ``start`` is the
    count the run began at (a resumed run's rate counts only the new work)."""

    def __init__(
        self,
        label: str,
        total: int,
        unit: str,
        *,
        every: float = 2.0,
        heartbeat: float | None = None,
        stream=None,
        clock=time.perf_counter,
        start: int = 0,
    ):
        self.label, self.total, self.unit = label, int(total), unit
        self.every, self.clock = float(every), clock
        self.stream = sys.stderr if stream is None else stream
        self.t0 = self.last = self.began = clock()
        self.start = int(start)
        self.done, self.note = self.start, ""
        self.lines = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None
        if heartbeat is not None:
            self._thread = threading.Thread(target=self._beat, args=(float(heartbeat),), daemon=True)
            self._thread.start()

    def print(self, text: str) -> None:
        print(text, file=self.stream, flush=True)
        self.lines += 1

    def line(self, now: float) -> str:
        pct = 100.0 * self.done / max(self.total, 1)
        text = f"{self.label}: {self.done}/{self.total} {self.unit} ({pct:.1f}%)"
        if self.note:
            text += f", {self.note}"
        new = self.done - self.start
        if new > 0:
            rate = new / max(now - self.t0, 1e-9)
            text += f", {rate:.3g} {self.unit}/s, ~{duration((self.total - self.done) / rate)} left"
        return text

    def update(self, done: int, note: str = "") -> None:
        with self._lock:
            self.done, self.note = int(done), note
            now = self.clock()
            if now - self.last < self.every:
                return
            self.last = now
            self.print(self.line(now))

    def rebase(self, done: int, note: str = "") -> None:
        """Measure the rate from here (``done`` so far): after a compilation, or the first
        report of a resumed run. Prints the state (with ``note``) if a line is due."""
        with self._lock:
            now = self.clock()
            self.start = self.done = int(done)
            self.t0 = now
            self.note = note
            if now - self.last >= self.every:
                self.last = now
                self.print(self.line(now))
            self.note = ""

    def _beat(self, period: float) -> None:
        while not self._stop.wait(min(period, 1.0)):
            with self._lock:
                now = self.clock()
                if now - self.last >= period:
                    self.last = now
                    self.print(self.line(now) + f" [{duration(now - self.t0)} so far]")

    def close(self) -> None:
        """Stop the heartbeat; a last line with the overall rate if any line was printed."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.lines:
            now = self.clock()
            rate = (self.done - self.start) / max(now - self.t0, 1e-9)
            took = duration(now - self.began)
            self.print(f"{self.label}: {self.done} {self.unit} in {took} ({rate:.3g} {self.unit}/s)")
