"""``emjax bench fdtd --dx``: the benchmark's grid at another cell size runs the same cells,
pulse and media (lengths in units of dx, rates and frequencies in 1 / dx), so that its fields
step for step equal those at dx = 1 but for the dipole's scale; bad values are refused by
name."""

import re

import numpy as np
import pytest
from test_blocked import _setup

from emjax.backend import precision_scope
from emjax.cli import main
from emjax.fdtd import step as engine
from emjax.fdtd.bench import benchmark_simulation


@pytest.mark.parametrize("material", ["vacuum", "sphere-diagonal", "drude"])
def test_bench_grid_at_another_cell_size_steps_alike(material):
    out = {}
    for dx in (1.0, 0.05):
        sim, _ = benchmark_simulation(16, "double", "cpml", 2, material, 4, None, dx)
        assert sim.grid.dx == dx
        with precision_scope():
            plan, arrays, state = _setup(sim, 12)
            fields, rec, _ = engine.advance(plan, arrays, state, 12)
            out[dx] = np.stack(fields["E"]), np.asarray(rec)
    (e1, r1), (e2, r2) = out[1.0], out[0.05]
    # the point dipole's field at a cell scales with dx (its moment is fixed); the rest is
    # the same numbers (the sphere's subpixel fractions to rounding of its scaled geometry)
    e1, r1 = 0.05 * e1, 0.05 * r1
    assert np.abs(e1).max() > 0
    assert np.abs(e2 - e1).max() <= 1e-9 * np.abs(e1).max()
    assert np.abs(r2 - r1).max() <= 1e-9 * np.abs(r1).max()


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--dx", "0"], r"--dx must be in \(0, 1000000.0\] \(the cell size\), got 0.0"),
        (["--dx", "-1"], r"--dx must be in \(0, "),
        (["--dx", "0.5", "--out-of-core"], r"--dx applies to the in-memory runs"),
    ],
)
def test_bench_dx_refused_by_name(extra, message, capsys):
    assert main(["bench", "fdtd", "--size", "16", "--steps", "2", *extra]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.search(message, err[0]), err
