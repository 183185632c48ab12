"""Progress of long runs, shared by every method. Names no method; no JAX here.

The Python API: each long-running entry point takes ``progress=True`` (the default: a tqdm
bar with the time left, on stderr in a terminal, a widget in a notebook through
``tqdm.auto``), ``False`` (nothing) or a callable (called at the solver's chunk boundaries
instead of the bar; its arguments are the entry point's). A bar appears only once a run has
taken :data:`DELAY` seconds, so quick runs print nothing, and like tqdm's ``disable=None``
only where stderr is a terminal (logs and captured test output stay clean). Bars are updated
from the host between device calls (chunk boundaries), never per step, and never exist for
traced (``jax.grad``/``jit``/``vmap``) calls: :func:`shown` takes the caller's ``traced``.

The commands: :class:`Reporter` writes plain lines (at most one per ``every`` seconds, with
the work done, the rate and the time left; a heartbeat thread repeats the last state when
nothing has been reported for a while: a compilation, a long chunk); each command's ``cli``
says what it counts.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import threading
import time

from .errors import ConfigError

__all__ = [
    "DELAY",
    "Bar",
    "ResidualBar",
    "Reporter",
    "StepBar",
    "check",
    "duration",
    "shown",
    "status",
]

DELAY = 1.0  # seconds a run goes before its bar appears: shorter runs print nothing


def stream():
    """Where bars and status lines go: stderr at the time of the call."""
    return sys.stderr


def _shape(fp) -> dict:
    """tqdm's ``ncols``/``nrows``: the terminal's, 80 x 20 where it reports 0 x 0 (a fresh
    pseudo-terminal, e.g. a container's or ``script``'s: tqdm would draw nothing); empty to
    let tqdm decide (a stream that is not a terminal, a notebook)."""
    try:
        size = os.get_terminal_size(fp.fileno())
    except (AttributeError, OSError, ValueError):
        return {}
    return dict(ncols=size.columns if size.columns > 0 else 80, nrows=size.lines if size.lines > 1 else 20)


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


def check(progress) -> None:
    """Refuse anything but True, False, None or a callable (one line naming ``progress``)."""
    if progress is None or isinstance(progress, bool) or callable(progress):
        return
    raise ConfigError(
        f"progress must be True (a progress bar, the default), False (none) or a callable, got {progress!r}"
    )


@contextlib.contextmanager
def shown(progress, make, traced: bool = False):
    """The reporter of one run: ``progress`` True gives the bar ``make()`` (closed when the
    block ends; none at all when ``traced``), a callable itself, False/None None."""
    check(progress)
    if progress is not True:
        yield progress or None
        return
    if traced:
        yield None
        return
    bar = make()  # None where the run has nothing to count
    try:
        yield bar
    finally:
        if bar is not None:
            bar.close()


class Bar:
    """One ``tqdm.auto`` bar on stderr, shown after :data:`DELAY` s, only where stderr is a
    terminal (or in a notebook). ``to(n)`` moves it forward (at a chunk boundary). The bar
    starts at the first report, so set-up and compilation before it (another stage's own
    bar, e.g. a table) neither share the screen with it nor count in its rate."""

    bar_format = None

    def __init__(self, desc: str, total=None, unit: str = "it"):
        self.desc, self.total, self.unit = desc, total, unit
        self._tqdm = None

    @property
    def n(self):
        return 0 if self._tqdm is None else self._tqdm.n

    def _start(self, n):
        from tqdm.auto import tqdm

        self._tqdm = tqdm(
            desc=self.desc,
            total=self.total,
            unit=self.unit,
            initial=n,  # the rate counts from here
            delay=DELAY,
            file=stream(),
            disable=None,  # off where stderr is not a terminal (tqdm.notebook: always on)
            leave=True,
            **_shape(stream()),
            mininterval=0.5,
            bar_format=self.bar_format,
        )

    def to(self, n, total=None, postfix: str | None = None) -> None:
        """Move to ``n`` done (of ``total``, when it changed); never backwards."""
        if total is not None:
            self.total = total
        if self._tqdm is None:
            self._start(n)
        t = self._tqdm
        if self.total != t.total:
            t.total = self.total
        if postfix is not None:
            t.set_postfix_str(postfix, refresh=False)  # tqdm.update shows it, after the delay
        t.update(max(n - t.n, 0))

    def close(self) -> None:
        if self._tqdm is not None:
            self._tqdm.close()


class StepBar(Bar):
    """A bar of ``total`` steps (or points, orientations ...), called as ``bar(done, total)``."""

    def __call__(self, done: int, total: int | None = None) -> None:
        self.to(int(done), total)


class ResidualBar(Bar):
    """A Krylov solve's bar: the fraction of the way, in decades, from the starting relative
    residual 1 to ``rtol``; the iterations and the residual beside it. ``parts`` solves one
    after the other (e.g. two polarizations) share the bar. Called as ``bar(iterations,
    residual)``; :meth:`labelled` is the ``(label, iterations, residual)`` form, a new label
    starting the next part."""

    bar_format = "{desc}: {percentage:3.0f}%|{bar}| [{elapsed}<{remaining}{postfix}]"

    def __init__(self, desc: str, rtol: float, parts: int = 1):
        self.decades = max(-math.log10(max(float(rtol), 1e-300)), 1e-3)
        self.parts, self.part, self._label = max(int(parts), 1), 0, None
        super().__init__(desc, total=self.parts * self.decades, unit="decade")

    def __call__(self, iterations: int, residual: float) -> None:
        r = float(residual)
        if math.isnan(r):
            gained = 0.0
        elif r <= 0:
            gained = self.decades
        else:
            gained = min(max(-math.log10(r), 0.0), self.decades)
        self.to(self.part * self.decades + gained, postfix=f"{iterations} it, residual {r:.2e}")

    def labelled(self, label, iterations: int, residual: float) -> None:
        if self._label is not None and label != self._label:
            self.part = min(self.part + 1, self.parts - 1)
        self._label = label
        self(iterations, residual)


@contextlib.contextmanager
def status(message: str, enabled: bool = True):
    """Say ``message`` (e.g. ``"factorizing 160000 x 160000 (SuperLU)..."``) on stderr, with
    the time elapsed, if the block is still running after :data:`DELAY` s; nothing for a
    block that ends sooner, or when not ``enabled``. A thread refreshes the elapsed time
    while the block runs (a factorization reports nothing itself)."""
    if not enabled:
        yield
        return
    from tqdm.auto import tqdm

    bar = tqdm(
        desc=message,
        total=None,
        delay=DELAY,
        file=stream(),
        disable=None,
        leave=True,
        **_shape(stream()),
        mininterval=0,  # the thread below paces the refreshes
        bar_format="{desc} [{elapsed}]",
    )
    stop = threading.Event()

    def tick():
        if stop.wait(DELAY):
            return
        while True:
            bar.update(0)  # shows the line (tqdm's delay is over) with the time so far
            if stop.wait(1.0):
                return

    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        bar.close()
