"""Normal-incidence reflectance and transmittance of slabs vs the analytic (Airy) result."""

import numpy as np

from emjax import fdtd, materials

WL_MIN, WL_MAX = 0.8, 1.6
FREQS = 1 / np.linspace(WL_MAX, WL_MIN, 21)


def _airy(n, d, f):
    """R, T of a slab of index n (complex allowed, Im n >= 0) and thickness d in vacuum."""
    k0 = 2 * np.pi * f
    r12 = (1 - n) / (1 + n)
    e2 = np.exp(2j * n * k0 * d)
    r = r12 * (1 - e2) / (1 - r12**2 * e2)
    t = (1 - r12**2) * np.exp(1j * n * k0 * d) / (1 - r12**2 * e2)
    return np.abs(r) ** 2, np.abs(t) ** 2


def _run_pair(eps_slab=None, drude=None, dx=0.8 / 1.5 / 40, thickness=0.5, nz=800, steps=12000, pec=False):
    """Empty run and slab run; returns R, T spectra and the slab thickness used."""
    slab0, n_slab = 300, int(round(thickness / dx))
    g = fdtd.Grid(
        (1, 1, nz), dx=dx, boundary=(fdtd.Periodic(), fdtd.Periodic(), fdtd.CPML(20)), precision="double"
    )
    src = fdtd.PlaneSource(2, 60, 0, fdtd.GaussianPulse(frequency=FREQS.mean(), bandwidth=0.5))
    mons = (fdtd.DFTPlane(2, 100, tuple(FREQS)), fdtd.DFTPlane(2, 600, tuple(FREQS)))
    mask = np.zeros((1, 1, nz), bool)
    mask[..., slab0 : slab0 + n_slab] = True
    empty = fdtd.run(fdtd.GridSimulation(g, sources=(src,), monitors=mons), steps)
    if pec:
        sim = fdtd.GridSimulation(g, sources=(src,), monitors=mons, pec=mask)
    elif drude is not None:
        sim = fdtd.GridSimulation(g, sources=(src,), monitors=mons, dispersive=(drude, mask))
    else:
        sim = fdtd.GridSimulation(g, eps=np.where(mask, eps_slab, 1.0), sources=(src,), monitors=mons)
    full = fdtd.run(sim, steps)
    inc = empty.flux(1)
    return -full.flux_difference(empty, 0) / inc, full.flux(1) / inc, n_slab * dx


def test_dielectric_slab_vs_fresnel():
    """n = 1.5 slab, 0.5 thick, over wavelengths 0.8..1.6 at 40 cells per wavelength in the
    slab: R and T within 2e-3 of the Airy formula (measured 7e-4, Yee dispersion and the
    staircased interfaces), and R + T = 1 within 1e-4 (lossless)."""
    R, T, d = _run_pair(eps_slab=1.5**2)
    Ra, Ta = _airy(1.5, d, FREQS)
    assert np.max(np.abs(R - Ra)) < 2e-3
    assert np.max(np.abs(T - Ta)) < 2e-3
    assert np.max(np.abs(R + T - 1)) < 1e-4


def test_drude_slab_vs_analytic():
    """A Drude film (eps_inf 1, plasma frequency 1/length, damping 0.1 x 2 pi), 0.1 thick:
    metallic below f = 1 and transparent-ish above. R, T vs the Airy formula with
    materials.Drude's eps(omega) within 1e-3 (measured 1.4e-4 and 3.5e-4: the ADE's
    O((omega dt)^2) error plus Yee dispersion), and absorption 1 - R - T > 0 (lossy film)."""
    drude = materials.Drude(1.0, f_p=1.0, gamma=0.1)
    R, T, d = _run_pair(drude=drude, thickness=0.1)
    n = drude.refractive_index(1 / FREQS)
    Ra, Ta = _airy(n, d, FREQS)
    assert np.max(np.abs(R - Ra)) < 1e-3, np.abs(R - Ra)
    assert np.max(np.abs(T - Ta)) < 1e-3, np.abs(T - Ta)
    assert np.all(1 - R - T > 0)


def test_lorentz_slab_vs_analytic():
    """A Lorentz medium (eps_inf 1.5, delta_eps 1, resonance f0 = 0.9, damping 0.05 x 2 pi),
    slab 0.3 thick: R, T vs the Airy formula with materials.Lorentz's eps(omega) within 5e-3
    across the resonance (measured 3.4e-3 at worst, next to the resonance where eps varies
    fastest; the central-difference ADE replaces omega by (2/dt) sin(omega dt/2), an
    O((omega dt)^2) shift, and Yee dispersion adds its own)."""
    lor = materials.Lorentz(1.5, 1.0, f_0=0.9, gamma=0.05)
    R, T, d = _run_pair(drude=lor, thickness=0.3)
    Ra, Ta = _airy(lor.refractive_index(1 / FREQS), d, FREQS)
    assert np.max(np.abs(R - Ra)) < 5e-3, np.abs(R - Ra)
    assert np.max(np.abs(T - Ta)) < 5e-3, np.abs(T - Ta)
    assert np.all(1 - R - T > -1e-4)  # passive medium: no gain


def test_pec_slab_reflects_everything():
    """A PEC block: R = 1 and T = 0 (to 1e-3: the reflected flux is measured by subtraction
    of the empty run's DFT fields)."""
    R, T, _ = _run_pair(pec=True, thickness=0.1)
    np.testing.assert_allclose(R, 1.0, atol=1e-3)
    assert np.max(np.abs(T)) < 1e-6
