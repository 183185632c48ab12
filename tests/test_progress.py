"""emjax.progress.Reporter: the commands' progress lines (issue 12)."""

import io

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
