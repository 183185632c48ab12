"""A dielectric sphere by TF/SF + flux boxes against the Mie series, and TF/SF leakage."""

import miepython
import numpy as np

from emjax import fdtd
from emjax.fdtd import monitors
from emjax.fdtd.tfsf import TFSF, incident_spectrum
from emjax.scattering import PlaneWave


def test_tfsf_box_does_not_leak():
    """Plane wave in an empty TF/SF box: the field outside is zero to rounding (the 1-D
    auxiliary grid has the 3-D grid's dispersion exactly), inside it is the pulse."""
    g = fdtd.Grid((40, 40, 40), dx=0.05, boundary=fdtd.CPML(8), precision="double")
    src = TFSF((12, 12, 12), (28, 28, 28), PlaneWave((0, 0, 1), (1, 0, 0)), fdtd.GaussianPulse(1.0, 0.5))
    probes = (
        fdtd.Probe((20, 20, 20), 0),
        fdtd.Probe((20, 20, 32), 0),
        fdtd.Probe((20, 10, 20), 0),
        fdtd.Probe((20, 20, 9), 0),
        fdtd.Probe((31, 31, 31), 1),
    )
    r = fdtd.run(fdtd.Simulation(g, sources=(src,), probes=probes), 400)
    peak = np.max(np.abs(r.probes), axis=0)
    assert peak[0] > 0.5
    assert np.all(peak[1:] < 1e-12 * peak[0])


def test_sphere_scattering_vs_mie():
    """Sphere m = 1.5, radius 0.35, wavelengths 0.8..1.25 (x = 1.8..2.7) at 20 cells per
    wavelength in the material (dx = 0.0267, radius 13 cells), TF/SF plane wave along +z.
    Csca = outward flux of the scattered field through a box in the SF region / incident
    intensity; within 2% of Mie at every wavelength (measured <= 1.04%, the staircased
    surface and Yee dispersion; the issue asks for 5%). Absorption (net inward flux through
    a box inside the TF region) vanishes for this lossless sphere: |Cabs| < 1% of Csca."""
    m, r = 1.5, 0.35
    dx = 0.8 / m / 20
    rc = r / dx
    n = 68
    c = n / 2
    tf_lo, tf_hi = 17, 51
    freqs = 1 / np.linspace(1.25, 0.8, 9)
    idx = np.arange(n) + 0.5
    X, Y, Z = np.meshgrid(idx, idx, idx, indexing="ij")
    eps = np.where((X - c) ** 2 + (Y - c) ** 2 + (Z - c) ** 2 <= rc**2, m**2, 1.0)
    g = fdtd.Grid((n, n, n), dx=dx, boundary=fdtd.CPML(10), precision="single")
    src = TFSF(
        (tf_lo,) * 3,
        (tf_hi,) * 3,
        PlaneWave((0, 0, 1), (1, 0, 0)),
        fdtd.GaussianPulse(frequency=freqs.mean(), bandwidth=0.4),
    )
    outer = monitors.flux_box((tf_lo - 3,) * 3, (tf_hi + 3,) * 3, freqs)
    inner = monitors.flux_box((tf_lo + 2,) * 3, (tf_hi - 2,) * 3, freqs)
    steps = 3000
    res = fdtd.run(fdtd.Simulation(g, eps=eps, sources=(src,), monitors=outer + inner), steps)
    intensity = 0.5 * np.abs(incident_spectrum(src, freqs, steps, g.dt)) ** 2
    Csca = monitors.box_flux([res.flux(i) for i in range(6)]) / intensity
    Cabs = -monitors.box_flux([res.flux(i) for i in range(6, 12)]) / intensity
    mie = np.array([miepython.efficiencies_mx(m, 2 * np.pi * f * r)[1] for f in freqs]) * np.pi * r**2
    np.testing.assert_array_less(np.abs(Csca / mie - 1), 0.02)
    np.testing.assert_array_less(np.abs(Cabs), 0.01 * Csca)
