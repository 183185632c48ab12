"""DDA progress: dda.solve shows one bar for both polarizations by default, the substrate
table's build its own, dda.average one bar for the whole average (not one per
orientation); progress=False prints nothing; a callable is still called."""

import numpy as np
import pytest

from emjax import dda, geometry, krylov

SOLVER = krylov.QMR(rtol=1e-6)


def _problem(**kw):
    base = dict(size_x=1.0, grid=4, integrate=False, theta=(0.0, 90.0))
    base.update(kw)
    return dda.DDAProblem(geometry.Sphere(), (1.5 + 0.01j,), **base)


def _clear(terminal):
    terminal.buffer.truncate(0)
    terminal.buffer.seek(0)


def test_solve_one_bar_for_both_polarizations(terminal):
    on = dda.solve(_problem(), SOLVER)
    shown = terminal.text()
    assert shown.count("\n") == 1, shown  # one bar, closed once
    assert "dda:" in shown and "100%" in shown and "it, residual" in shown
    _clear(terminal)
    calls = []
    off = dda.solve(_problem(), SOLVER, progress=False)
    dda.solve(_problem(), SOLVER, progress=lambda label, it, r: calls.append(label))
    assert terminal.text() == ""
    assert set(calls) == {"X", "Y"}
    np.testing.assert_array_equal(on.Cext_xy, off.Cext_xy)


@pytest.mark.slow  # ~45 s on the loaded 2-core box (the Sommerfeld kernels compile)
def test_substrate_table_says_what_it_builds(terminal):
    prob = _problem(substrate=1.5, height=0.55, prop=(0.5, 0.0, -0.8660254037844386), grid=3)
    dda.solve(prob, SOLVER)
    shown = terminal.text()
    assert "dda: building the substrate interaction table (" in shown and "entries)" in shown
    assert "dda:" in shown.split("interaction table")[-1]  # then the solve's bar
    _clear(terminal)
    dda.solve(prob, SOLVER, progress=False)
    assert terminal.text() == ""


def test_average_one_bar_for_the_whole_average(terminal):
    rule = dda.OrientationAverage(eps=0, beta_levels=(2, 2), gamma_levels=(1, 1), n_alpha=4)
    res = dda.average(_problem(theta=(0.0,)), rule, SOLVER)
    shown = terminal.text()
    n = len(res.beta)
    assert shown.count("\n") == 1, shown  # one bar for every orientation
    assert "dda average:" in shown and f"{n}/{n}" in shown and "orientation" in shown
    _clear(terminal)
    dda.average(_problem(theta=(0.0,)), rule, SOLVER, progress=False)
    assert terminal.text() == ""
