"""layered.fields / green_tensor progress: a bar of the map's points by default (driven by
the groups' reports), nothing with progress=False, a callable given the reports, and no bar
of its own inside a command's reporting block."""

import numpy as np
import pytest

from emjax import ConfigError
from emjax.layered import Stack
from emjax.layered.groups import _PROGRESS, reporting, reporting_for


def _map_reports(total):
    """What a map of ``total`` points in two groups reports (groups.groups' order)."""
    report = _PROGRESS.get()
    for done, stage in ((0, "refine"), (total // 2, "done"), (total, "done")):
        if report is not None:
            report(dict(done=done, total=total, group=1 + (done > 0), groups=2, stage=stage))


def _clear(terminal):
    terminal.buffer.truncate(0)
    terminal.buffer.seek(0)


def test_a_bar_of_points_by_default(terminal):
    with reporting_for(True, 400):
        _map_reports(400)
    shown = terminal.text()
    assert "layered:" in shown and "400/400" in shown and "point/s" in shown
    _clear(terminal)
    with reporting_for(False, 400):
        _map_reports(400)
    assert terminal.text() == ""
    seen = []
    with reporting_for(seen.append, 400):
        _map_reports(400)
    assert [r["done"] for r in seen] == [0, 200, 400] and terminal.text() == ""
    with pytest.raises(ConfigError, match="progress"):
        with reporting_for("yes", 400):
            pass


def test_a_command_block_keeps_its_own_reporter(terminal):
    seen = []
    with reporting(seen.append), reporting_for(True, 400):
        _map_reports(400)
    assert len(seen) == 3 and terminal.text() == ""


@pytest.mark.slow
def test_fields_show_a_bar_by_default(terminal):
    from emjax.layered import dipole_fields

    pts = [[x, 0.0, z] for x in (-50.0, 0.0, 40.0) for z in (-20.0, 5.0)]
    args = (Stack(eps=[2.25, 1.0]), 600.0, (0, 0, 10.0), pts)
    a = dipole_fields(*args, part="scattered")
    assert "layered:" in terminal.text() and f"{len(pts)}/{len(pts)}" in terminal.text()
    _clear(terminal)
    b = dipole_fields(*args, part="scattered", progress=False)
    assert terminal.text() == ""
    assert np.array_equal(a.E, b.E)
