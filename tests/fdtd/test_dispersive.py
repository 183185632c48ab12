"""The discrete pole models against materials.permittivity(omega).

A uniform field in a one-cell periodic grid has no curl: eps_inf dE/dt = -dP/dt, so E
oscillates at the frequency where eps(omega) = 0 (the longitudinal/plasma resonance), about
a static value for a Lorentz medium (removed by differencing the series). The measured
frequency must approach the root of the material's own permittivity(omega) at second order
in dt: the ADEs' time discretization error."""

import math

import numpy as np
import pytest
from scipy.optimize import brentq

from emjax import fdtd, materials


def _free_oscillation(material, dx, steps=1000):
    g = fdtd.Grid((1, 1, 1), dx=dx, boundary=fdtd.Periodic(), precision="double")
    sim = fdtd.GridSimulation(
        g, dispersive=(material, np.ones((1, 1, 1), bool)), probes=(fdtd.Probe((0, 0, 0), 0),)
    )
    E = np.zeros((3, 1, 1, 1))
    E[0] = 1.0
    x = np.diff(fdtd.run(sim, steps, initial=(E, np.zeros_like(E))).probes[:, 0])
    cos_wdt = np.dot(x[2:] + x[:-2], 2 * x[1:-1]) / np.dot(2 * x[1:-1], 2 * x[1:-1])
    return math.acos(cos_wdt) / g.dt, g.dt


@pytest.mark.parametrize(
    "material",
    [
        materials.Drude(1.0, omega_p=2 * math.pi, gamma=0.0),
        materials.Drude(2.5, omega_p=2 * math.pi * 1.3, gamma=0.0),
        materials.Lorentz(1.5, 2.0, omega_0=2 * math.pi * 0.8, gamma=0.0),
    ],
    ids=["drude", "drude-eps_inf", "lorentz"],
)
def test_pole_model_oscillates_where_permittivity_vanishes(material):
    """Lossless Drude and Lorentz media: the free oscillation's frequency differs from the
    root of Re materials.permittivity(omega) by less than 0.15 (omega dt)^2 (measured 0.08
    and 0.04), and the difference falls 4x (3.5..4.5) when dt is halved."""
    errors = []
    for dx in (0.05, 0.025):
        w, dt = _free_oscillation(material, dx)
        root = brentq(lambda om: material.permittivity(np.array([om]))[0].real, 0.9 * w, 1.1 * w)
        assert abs(w / root - 1) < 0.15 * (root * dt) ** 2
        errors.append(abs(w / root - 1))
    assert 3.5 < errors[0] / errors[1] < 4.5
