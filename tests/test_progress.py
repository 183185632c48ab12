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
