"""CPML reflection against a run in a domain large enough to have no reflection in the window."""

import numpy as np

from emjax import fdtd


def _run(n, steps=150, order=2):
    c = n // 2
    g = fdtd.Grid((n, n, n), dx=1.0, order=order, boundary=fdtd.CPML(10), precision="double")
    src = fdtd.PointDipole((c, c, c), 2, fdtd.Ricker(frequency=0.1))
    offsets = [(0, 8, 0), (8, 0, 0), (5, 5, 5), (0, 0, 8)]
    probes = tuple(fdtd.Probe((c + a, c + b, c + d), 2) for a, b, d in offsets)
    return fdtd.run(fdtd.Simulation(g, sources=(src,), probes=probes), steps).probes


def test_cpml_reflection_below_1e3():
    """z-dipole (Ricker, 10 cells per wavelength at its peak frequency) at the centre of a
    40^3 grid with a 10-cell CPML on all faces (order 3, kappa 1, alpha 0.05): probes 8 cells
    away, i.e. 2 cells from the PML. Reference: the same source in a 120^3 grid, where no
    reflection reaches the probes within the 150 steps. The difference, relative to the
    incident field's peak, is below 1e-3 (measured 5.7e-4 broadside, 7.8e-4 diagonal, and
    1.8e-3 of the weak near field on the dipole's axis, i.e. 2e-4 of the broadside peak)."""
    ref = _run(120)
    small = _run(40)
    peak = np.max(np.abs(ref[:, :3]), axis=0)
    err = np.max(np.abs(small - ref), axis=0)
    assert np.all(err[:3] / peak < 1e-3), err[:3] / peak
    assert err[3] / peak.max() < 1e-3


def test_cpml_reflection_4th_order():
    """The same with the 4th-order stencil (slab derivatives and wall planes continued by
    images across the PEC backing): below 1e-3 of the incident peak as well (measured
    1.2e-4 broadside, 2.2e-4 diagonal and on the axis; 2nd order: 5.7e-4, 7.8e-4, 7.1e-4)."""
    ref = _run(120, order=4)
    small = _run(40, order=4)
    peak = np.max(np.abs(ref[:, :3]), axis=0)
    err = np.max(np.abs(small - ref), axis=0)
    assert np.all(err[:3] / peak < 1e-3), err[:3] / peak
    assert err[3] / peak.max() < 1e-3
