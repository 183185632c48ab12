"""The Courant number a Drude-Lorentz medium allows (emjax.fdtd.pole_stability) against runs:
a periodic box filled with fused silica (Malitson's Sellmeier poles: eps_inf = 1, strong
ultraviolet resonances) on a grid where every omega_0 dt < 2 is stable just below the
predicted Courant number and blows up just above it; the Simulation refuses the unstable
one in one line, and a physical Simulation lowers its default to a stable one."""

import numpy as np
import pytest

from emjax import ConfigError, geometry, materials, scene
from emjax.fdtd import GridSimulation, Periodic, run
from emjax.fdtd import spec as spec_module
from emjax.fdtd.grid import Grid, courant_limit
from emjax.fdtd.pole_stability import max_courant, stable

DX = 1 / 30  # um: SiO2's 0.068 um resonance has omega_0 dt = 1.8 at the vacuum limit
SHAPE = (8, 8, 1)  # 2-D periodic: the highest spatial frequency is on the grid


def _box(courant):
    silica = materials.library("SiO2")
    grid = Grid(SHAPE, DX, courant, boundary=Periodic())
    rng = np.random.default_rng(0)
    E = rng.standard_normal((3, *SHAPE)).astype(np.float32)
    H = np.zeros((3, *SHAPE), np.float32)
    return GridSimulation(grid, dispersive=(silica, np.ones(SHAPE, bool))), (E, H)


def test_predicted_limit_separates_stable_from_unstable_runs(monkeypatch):
    """At 0.97 of the predicted largest Courant number the fields stay bounded over 600
    steps; at 1.05 of it they grow (the pre-run refusal is switched off to see it)."""
    silica = materials.library("SiO2")
    limit = courant_limit(2, 2)
    best = max_courant(silica, DX, limit)
    assert 0.5 * limit < best < 0.95 * limit  # the poles do lower it
    assert all(p.omega_0 * best * DX < 2 for p in silica.poles)
    sim, initial = _box(0.97 * best)
    res = run(sim, 600, initial=initial, progress=False)
    assert np.abs(np.asarray(res.E)).max() < 10 * np.abs(initial[0]).max()
    monkeypatch.setattr(spec_module, "_check_pole_courant", lambda material, grid: None)
    sim, initial = _box(1.05 * best)
    with pytest.raises(FloatingPointError, match="NaN/Inf"):
        run(sim, 600, initial=initial, progress=False)


def test_unstable_courant_refused_and_physical_default_lowered():
    silica = materials.library("SiO2")
    best = max_courant(silica, DX, courant_limit(2, 2))
    with pytest.raises(
        ConfigError, match=rf"unstable for the dispersive medium's Lorentz poles.*courant <= {best:.4g}"
    ):
        _box(1.05 * best)
    assert not stable(silica, 1.05 * best * DX, 1.05 * best / courant_limit(2, 2))
    from emjax.fdtd import Simulation

    sphere = scene.Object(geometry.Sphere(), silica, size=0.2)
    sim = Simulation(size=(0.4, 0.4, 0.4), resolution=1 / DX, scene=scene.Scene([sphere]))
    limit3 = courant_limit(2, 3)
    assert sim.grid.courant == pytest.approx(0.99 * max_courant(silica, DX, limit3))
    assert sim.grid.courant < 0.99 * limit3
