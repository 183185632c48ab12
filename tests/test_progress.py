"""emjax.progress: the commands' progress lines (Reporter) and the Python API's bars."""

import io

import pytest

from emjax import ConfigError
from emjax.progress import Reporter, duration


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_rate_counts_from_the_rebase_after_the_compiling_chunk():
    clock, out = Clock(), io.StringIO()
    r = Reporter("fdtd", 1000, "steps", stream=out, clock=clock)
    clock.t = 9.0
    r.rebase(100, "first chunk 9 s (compiling included)")
    clock.t = 10.0
    r.update(200)  # within 2 s of the last line: quiet
    clock.t = 11.0
    r.update(300)
    clock.t = 14.0
    r.update(1000)
    r.close()
    assert out.getvalue().splitlines() == [
        "fdtd: 100/1000 steps (10.0%), first chunk 9 s (compiling included)",
        "fdtd: 300/1000 steps (30.0%), 100 steps/s, ~7 s left",
        "fdtd: 1000/1000 steps (100.0%), 180 steps/s, ~0 s left",
        "fdtd: 1000 steps in 14 s (180 steps/s)",
    ]


def test_duration():
    assert [duration(s) for s in (4.2, 185, 7620)] == ["4 s", "3 min 05 s", "2 h 07 min"]


def test_fdtd_announces_big_runs_with_a_bandwidth_floor():
    """A big FDTD run says its size and a time floor before the first step; a small one is quiet."""
    import io

    from emjax.fdtd import Grid
    from emjax.fdtd.cli import announce

    g = Grid((400, 400, 400), dx=1.0, precision="single")
    out = io.StringIO()
    line = announce(g, 10000, memory_bytes=2.0e9, stream=out, bandwidth=3.35e12)
    # 6.4e7 cells x 1e4 steps x 18 x 4 B / 3.35e12 B/s = 13.8 s
    assert line is not None and out.getvalue().strip() == line
    assert "400x400x400" in line and "6.4e+11 cell updates" in line and "at least 14 s" in line
    assert "2 GB" in line
    assert announce(Grid((40, 40, 40), dx=1.0), 100, stream=out) is None


# The Python API's bars (emjax.progress.Bar and its kinds, shown, status)


def test_residual_bar_counts_decades_toward_rtol(terminal):
    """Two parts of 6 decades each (rtol 1e-6): the second part starts at half the bar; a
    residual above 1 counts as no progress, one below rtol as the whole part."""
    from emjax.progress import ResidualBar

    bar = ResidualBar("solve", 1e-6, parts=2)
    bar.labelled("X", 0, 1.0)
    assert bar.n == 0
    bar.labelled("X", 10, 1e-3)
    assert bar.n == pytest.approx(3.0)
    bar.labelled("X", 12, 10.0)  # a residual bump: the bar does not go back
    assert bar.n == pytest.approx(3.0)
    bar.labelled("Y", 0, 1.0)
    assert bar.n == pytest.approx(6.0)
    bar.labelled("Y", 30, 1e-9)
    assert bar.n == pytest.approx(12.0)
    bar.close()
    assert "solve: 100%" in terminal.text() and "30 it, residual 1.00e-09" in terminal.text()


def test_shown_gives_a_bar_a_callable_or_nothing(terminal):
    from emjax.progress import StepBar, shown

    with shown(True, lambda: StepBar("run", 10, "step")) as bar:
        bar(10, 10)
    assert "run: 100%" in terminal.text() and "10/10" in terminal.text()
    mine = lambda done, total: None  # noqa: E731
    with shown(mine, lambda: StepBar("run", 10, "step")) as report:
        assert report is mine
    for off in (False, None):
        with shown(off, lambda: StepBar("run", 10, "step")) as report:
            assert report is None
    with shown(True, lambda: StepBar("run", 10, "step"), traced=True) as report:
        assert report is None  # jax.grad / jit / vmap: never a bar
    with pytest.raises(ConfigError, match="progress must be True"):
        with shown(1, lambda: None):
            pass


def test_quick_runs_and_logs_stay_quiet(monkeypatch):
    """The default delay: a run that reports within it prints nothing; where stderr is not
    a terminal (a log, captured test output) nothing either, however long the run."""
    from emjax import progress

    term = _Tty()
    monkeypatch.setattr(progress, "stream", lambda: term)
    bar = progress.StepBar("run", 10, "step")
    for k in range(11):
        bar(k, 10)
    bar.close()
    with progress.status("factorizing"):
        pass
    assert term.getvalue() == ""
    log = io.StringIO()  # not a terminal
    monkeypatch.setattr(progress, "stream", lambda: log)
    monkeypatch.setattr(progress, "DELAY", 0.0)
    bar = progress.StepBar("run", 10, "step")
    bar(10, 10)
    bar.close()
    assert log.getvalue() == ""


def test_status_says_what_runs_once_it_takes_long(monkeypatch):
    import time

    from emjax import progress

    term = _Tty()
    monkeypatch.setattr(progress, "stream", lambda: term)
    monkeypatch.setattr(progress, "DELAY", 0.1)
    with progress.status("fdfd: factorizing 9 x 9 (SuperLU)..."):
        time.sleep(0.4)
    text = term.getvalue()
    assert "fdfd: factorizing 9 x 9 (SuperLU)... [00:00]" in text and text.endswith("\n")
    with progress.status("quiet", enabled=False):
        time.sleep(0.2)
    assert "quiet" not in term.getvalue()


class _Tty(io.StringIO):
    def isatty(self):
        return True
