"""A dielectric sphere by TF/SF + flux boxes + near-to-far field against the Mie series."""

import numpy as np
import pytest

from emjax import fdtd
from emjax.fdtd import monitors
from emjax.fdtd.tfsf import TFSF, incident_spectrum
from emjax.scattering import PlaneWave

try:
    import miepython
except ImportError:  # absent on the GPU machine: the Mie tests skip, the TF/SF ones run
    miepython = None

M, R = 1.5, 0.35
FREQS = 1 / np.linspace(1.25, 0.8, 9)
STEPS = 3000


@pytest.mark.parametrize(
    "direction, pol",
    [((0, 0, 1), (1, 0, 0)), ((0, 0, -1), (0, 1, 0)), ((-1, 0, 0), (0, 0, 1)), ((0, -1, 0), (1, 0, 1))],
)
def test_tfsf_box_does_not_leak(direction, pol):
    """Plane wave in an empty TF/SF box, forward and backward incidence: the field outside
    is zero to rounding (the 1-D auxiliary grid, mirrored for backward incidence, has the
    3-D grid's dispersion exactly); inside it is the pulse, arriving first at the entry
    face and one cell later per c dt / courant further on, as a wave along ``direction``."""
    g = fdtd.Grid((40, 40, 40), dx=0.05, boundary=fdtd.CPML(8), precision="double")
    wave = PlaneWave(direction, np.asarray(pol) / np.linalg.norm(pol))
    src = TFSF((12, 12, 12), (28, 28, 28), wave, fdtd.GaussianPulse(1.0, 0.5))
    a = int(np.argmax(np.abs(direction)))
    comp = int(np.argmax(np.abs(pol)))
    near, far = [20, 20, 20], [20, 20, 20]
    near[a], far[a] = (14, 26) if direction[a] > 0 else (26, 14)
    probes = (
        fdtd.Probe((20, 20, 20), comp),
        fdtd.Probe((20, 20, 32), comp),
        fdtd.Probe((20, 10, 20), comp),
        fdtd.Probe((20, 20, 9), comp),
        fdtd.Probe((31, 31, 31), 1),
        fdtd.Probe((8, 20, 20), comp),
        fdtd.Probe(tuple(near), comp),
        fdtd.Probe(tuple(far), comp),
    ) + tuple(fdtd.Probe((20, 20, 20), c) for c in range(3))  # the centre's E, for its polarization
    r = fdtd.run(fdtd.GridSimulation(g, sources=(src,), probes=probes), 400)
    peak = np.max(np.abs(r.probes), axis=0)
    assert peak[0] > 0.5
    assert np.all(peak[1:6] < 1e-12 * peak[0])
    # the pulse peak moves along the direction: 12 cells at the grid's group velocity
    t = np.arange(len(r.probes)) * g.dt
    t_near, t_far = (_arrival(r.probes[:, k] ** 2, t) for k in (6, 7))
    assert (t_far - t_near) == pytest.approx(12 * g.dx, rel=0.05)
    # polarization: E at the centre is pol times one time profile (the same run: one compile)
    centre = np.asarray(r.probes)[:, 8:].T
    ref = centre[comp] / pol[comp]
    for c in range(3):
        np.testing.assert_allclose(centre[c], pol[c] * ref, atol=1e-12 * np.abs(ref).max())


def _arrival(power, t):
    """Arrival time of a pulse: the centroid of its power (robust to the carrier's lobes)."""
    return float(np.sum(t * power) / np.sum(power))


THETA, PHI = np.radians(30.0), np.radians(20.0)
OBLIQUE = (np.sin(THETA) * np.cos(PHI), np.sin(THETA) * np.sin(PHI), np.cos(THETA))


def test_tfsf_oblique_leak_and_direction():
    """Oblique incidence (theta 30, phi 20 deg): the incident field is analytic with the
    grid's phase velocity along the direction at the carrier frequency, so the box leaks
    at the level of the grid's dispersion across the pulse's band: below 1e-2 of the peak
    at 20 cells per wavelength (measured 6.2e-3 at the worst probe); inside, the pulse
    travels along the direction (arrival delay between two points = d.(r2 - r1)/c within
    3%) with the polarization p (each component's share of the energy pol_c^2 within 1e-2)."""
    g = fdtd.Grid((40, 40, 40), dx=0.05, boundary=fdtd.CPML(8), precision="double")
    d = np.asarray(OBLIQUE)
    pol = np.cross(d, (0.0, 1.0, 0.0))
    pol /= np.linalg.norm(pol)
    src = TFSF((12, 12, 12), (28, 28, 28), PlaneWave(tuple(d), tuple(pol)), fdtd.GaussianPulse(1.0, 0.5))
    assert src.oblique
    outside = [(20, 20, 32), (20, 10, 20), (20, 20, 9), (31, 31, 31), (8, 20, 20)]
    a, b = (15, 16, 14), (25, 22, 26)
    probes = tuple(fdtd.Probe(p, 0) for p in outside) + tuple(
        fdtd.Probe(p, c) for p in (a, b) for c in range(3)
    )
    r = fdtd.run(fdtd.GridSimulation(g, sources=(src,), probes=probes), 400)
    peak = np.abs(r.probes[:, 5:]).max()
    assert np.abs(r.probes[:, :5]).max() < 1e-2 * peak
    Ea, Eb = r.probes[:, 5:8].T, r.probes[:, 8:11].T
    t = (np.arange(len(r.probes)) + 1) * g.dt
    ta, tb = (_arrival(np.sum(E**2, axis=0), t) for E in (Ea, Eb))
    assert (tb - ta) == pytest.approx(d @ (np.subtract(b, a) * g.dx), rel=0.03)
    # each component's energy is pol_c^2 of the whole (the components sit at staggered
    # nodes, so their time series are shifted against each other)
    energy = np.sum(Ea**2, axis=1)
    np.testing.assert_allclose(energy / energy.sum(), pol**2, atol=1e-2)


def _sphere(direction, polarization):
    """Sphere m = 1.5, radius 0.35, wavelengths 0.8..1.25 (x = 1.8..2.7) at 20 cells per
    wavelength in the material (dx = 0.0267, radius 13 cells), TF/SF plane wave, a flux box
    in the SF region and one inside the TF region."""
    if miepython is None:
        pytest.skip("needs miepython")
    dx = 0.8 / M / 20
    rc = R / dx
    n = 68
    c = n / 2
    tf_lo, tf_hi = 17, 51
    idx = np.arange(n) + 0.5
    X, Y, Z = np.meshgrid(idx, idx, idx, indexing="ij")
    eps = np.where((X - c) ** 2 + (Y - c) ** 2 + (Z - c) ** 2 <= rc**2, M**2, 1.0)
    g = fdtd.Grid((n, n, n), dx=dx, boundary=fdtd.CPML(10), precision="single")
    src = TFSF(
        (tf_lo,) * 3,
        (tf_hi,) * 3,
        PlaneWave(direction, polarization),
        fdtd.GaussianPulse(frequency=FREQS.mean(), bandwidth=0.4),
    )
    outer = monitors.flux_box((tf_lo - 3,) * 3, (tf_hi + 3,) * 3, FREQS)
    inner = monitors.flux_box((tf_lo + 2,) * 3, (tf_hi - 2,) * 3, FREQS)
    res = fdtd.run(fdtd.GridSimulation(g, eps=eps, sources=(src,), monitors=outer + inner), STEPS)
    e_inc = incident_spectrum(src, FREQS, STEPS, g.dt)
    return res, outer, e_inc


@pytest.fixture(scope="module")
def sphere_run():
    """The sphere lit along +z, polarized along x."""
    return _sphere((0, 0, 1), (1, 0, 0))


def _cross_sections(run):
    res, _, e_inc = run
    intensity = 0.5 * np.abs(e_inc) ** 2
    Csca = monitors.box_flux([res.flux(i) for i in range(6)]) / intensity
    Cabs = -monitors.box_flux([res.flux(i) for i in range(6, 12)]) / intensity
    return Csca, Cabs


def test_sphere_cross_sections_vs_mie(sphere_run):
    """Csca = outward flux of the scattered field through the SF box / incident intensity,
    within 2% of Mie at every wavelength (measured <= 1.04%: the staircased surface and Yee
    dispersion; the target is 5%). Absorption (net inward flux through the TF box) of
    this lossless sphere is below 1% of Csca, so Cext = Csca + Cabs agrees with Mie too."""
    Csca, Cabs = _cross_sections(sphere_run)
    mie = np.array([miepython.efficiencies_mx(M, 2 * np.pi * f * R)[:2] for f in FREQS]) * np.pi * R**2
    np.testing.assert_array_less(np.abs(Csca / mie[:, 1] - 1), 0.02)
    np.testing.assert_array_less(np.abs(Cabs), 0.01 * Csca)
    np.testing.assert_array_less(np.abs((Csca + Cabs) / mie[:, 0] - 1), 0.03)


def test_sphere_far_field_vs_mie(sphere_run):
    """Near-to-far-field transform of the SF box: the differential cross section
    |F|^2/|E_inc|^2 in the xz plane (E-plane, BH |S2|^2/k^2) and the yz plane (H-plane,
    |S1|^2/k^2) vs Mie at x = 2.2, within 3.5% of the forward value at every angle
    (measured 0.6% and 2.2%; the forward value itself within 0.1%); and its integral over
    the sphere equals the flux-box Csca within 2%."""
    res, outer, e_inc = sphere_run
    fi = 4
    f = FREQS[fi]
    k = 2 * np.pi * f
    theta = np.arange(0, 181, 10.0)
    dfts = res.dft[:6]
    mu = np.cos(np.deg2rad(theta))
    S1, S2 = miepython.S1_S2(M, k * R, mu, norm="wiscombe")
    for phi, ref in ((0.0, np.abs(S2) ** 2 / k**2), (90.0, np.abs(S1) ** 2 / k**2)):
        Ft, Fp = monitors.far_field(dfts, outer, res.simulation.grid.dx, fi, theta, phi)
        dcs = (np.abs(Ft) ** 2 + np.abs(Fp) ** 2) / np.abs(e_inc[fi]) ** 2
        assert np.max(np.abs(dcs - ref)) < 0.035 * ref[0], (phi, dcs / ref)
    # integral over all directions (Gauss-Legendre x uniform phi)
    x, w = np.polynomial.legendre.leggauss(24)
    T, P = np.meshgrid(np.degrees(np.arccos(x)), np.arange(48) * 7.5, indexing="ij")
    Ft, Fp = monitors.far_field(dfts, outer, res.simulation.grid.dx, fi, T, P)
    dcs = (np.abs(Ft) ** 2 + np.abs(Fp) ** 2) / np.abs(e_inc[fi]) ** 2
    csca_ff = np.sum(w[:, None] * dcs) * (2 * np.pi / 48)
    csca_flux = monitors.box_flux([res.flux(i)[fi] for i in range(6)]) / (0.5 * np.abs(e_inc[fi]) ** 2)
    assert csca_ff == pytest.approx(csca_flux, rel=0.02)


@pytest.mark.slow
def test_sphere_oblique_incidence_vs_mie():
    """The same sphere lit obliquely (theta 30, phi 20 deg, polarization in the plane of
    incidence): a sphere's cross sections do not depend on the direction, so Csca must
    match Mie as at normal incidence: within 3% (measured 0.58% at worst; the leak of the
    analytic incident field shows as an apparent absorption of this lossless sphere, 1.1% of
    Csca at worst, limit 2%). 18 s on 2 CPU cores, hence slow."""
    d = np.asarray(OBLIQUE)
    pol = np.cross(d, (0.0, 1.0, 0.0))
    Csca, Cabs = _cross_sections(_sphere(tuple(d), tuple(pol / np.linalg.norm(pol))))
    mie = np.array([miepython.efficiencies_mx(M, 2 * np.pi * f * R)[:2] for f in FREQS]) * np.pi * R**2
    np.testing.assert_array_less(np.abs(Csca / mie[:, 1] - 1), 0.03)
    np.testing.assert_array_less(np.abs(Cabs), 0.02 * Csca)
