"""Progress of layered maps: per group and per chunk of points, on stderr at most
every ~2 s with points/s and the time left; observing only (the numbers are unchanged)."""

import io

import numpy as np
import pytest

from emjax.layered import Stack
from emjax.layered.cli import BIG_MAP, Progress
from emjax.layered.groups import groups, reporting


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_progress_lines_are_throttled_and_carry_rate_and_eta():
    clock, out = Clock(), io.StringIO()
    p = Progress(1000, every=2.0, stream=out, clock=clock)
    info = dict(total=1000, group=1, groups=2)
    p(dict(info, done=0, stage="refine"))  # t = 0: too early
    clock.t = 2.5
    p(dict(info, done=0, stage="refine"))
    clock.t = 3.0
    p(dict(info, done=100, stage="integrate"))  # within 2 s of the last line: quiet
    clock.t = 5.0
    p(dict(info, done=250, stage="integrate", group=2))
    clock.t = 10.0
    p.close()
    lines = out.getvalue().splitlines()
    assert lines == [
        "layered: 0/1000 points (0.0%), group 1/2 (choosing its quadrature, compiling)",
        "layered: 250/1000 points (25.0%), group 2/2, 50 points/s, ~15 s left",
        "layered: 250 points in 10 s (25 points/s)",  # what was reported, not the total
    ]


def test_small_maps_are_quiet_and_big_ones_announce_themselves():
    out = io.StringIO()
    p = Progress(100, stream=out)
    p(dict(done=100, total=100, group=1, groups=1, stage="done"))
    p.close()
    assert out.getvalue() == ""
    Progress(BIG_MAP, stream=out)
    assert out.getvalue().startswith(f"layered: {BIG_MAP} points; progress every ~2 s")


def _ctx(pts):
    stack = Stack(eps=[2.25, 1.0])
    src = np.array([0.0, 0.0, 10.0])
    wavelength = 600.0
    return dict(
        stack=stack,
        src=src,
        pts=pts,
        s=int(stack.layer_of(src[2])),
        layer=stack.layer_of(pts[:, 2]),
        k0=2 * np.pi / wavelength,
        eps=stack.permittivities(wavelength),
        rtol=1e-8,
        wavelength=wavelength,
        cdtype=np.complex128,
        rdtype=np.float64,
        rng=np.random.default_rng(0),
        layout=None,
    )


def test_groups_report_each_group_and_keep_the_grouping():
    """A 140 x 140 map across the interface (>= 8192 points in a medium: several octaves of
    the decay distance): the groups are the same with and without a callback, and the
    reports count every point once, group by group, ending at the total."""
    x, z = np.meshgrid(np.linspace(-500, 500, 140), np.linspace(-400, 400, 140), indexing="ij")
    pts = np.stack([x.ravel(), np.zeros(x.size), z.ravel() + 0.5], 1)
    plain = [(g.m, g.idx) for g in groups(_ctx(pts), (2, 4))]
    seen = []
    with reporting(seen.append):
        watched = [(g.m, g.idx) for g in groups(_ctx(pts), (2, 4))]
    assert len(plain) > 2 and len(watched) == len(plain)
    assert all(a[0] == b[0] and np.array_equal(a[1], b[1]) for a, b in zip(plain, watched))
    done = [r for r in seen if r["stage"] == "done"]
    assert [r["group"] for r in done] == list(range(1, len(plain) + 1))
    assert {r["groups"] for r in seen} == {len(plain)} and done[-1]["done"] == len(pts)
    assert np.all(np.diff([r["done"] for r in done]) > 0)


@pytest.mark.slow
def test_reporting_leaves_the_fields_unchanged():
    from emjax.layered import dipole_fields

    pts = [[x, 0.0, z] for x in (-50.0, 0.0, 40.0) for z in (-20.0, 5.0)]
    args = (Stack(eps=[2.25, 1.0]), 600.0, (0, 0, 10.0), pts)
    a = dipole_fields(*args, part="scattered")
    seen = []
    with reporting(seen.append):
        b = dipole_fields(*args, part="scattered")
    assert np.array_equal(a.E, b.E) and np.array_equal(a.H, b.H)
    assert seen[-1]["stage"] == "done" and seen[-1]["done"] == len(pts)
    assert any(r["stage"] == "integrate" for r in seen)


def test_heartbeat_repeats_the_last_state_while_nothing_reports():
    import time

    out = io.StringIO()
    p = Progress(100, stream=out, heartbeat=0.05)
    time.sleep(0.3)
    p.close()
    lines = out.getvalue().splitlines()
    assert len(lines) >= 3 and lines[0].startswith("layered: 0/100 points (0.0%), group 1/1 (choosing")
    assert lines[0].endswith("s so far]") and lines[-1].startswith("layered: 0 points in")
    n = len(out.getvalue())
    time.sleep(0.15)
    assert len(out.getvalue()) == n  # stopped by close()
