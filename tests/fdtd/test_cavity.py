"""PEC cavity and periodic-box modes against the analytic and Yee-discrete dispersion."""

import math

import numpy as np
import pytest

from emjax import fdtd


def _recurrence_cos(series):
    """cos(omega dt) of a single-frequency series from E[n+1] + E[n-1] = 2 cos(omega dt) E[n]
    (least squares over the whole series: exact for one discrete eigenmode)."""
    a = series[2:] + series[:-2]
    b = 2 * series[1:-1]
    return float(np.dot(a, b) / np.dot(b, b))


def test_cavity_eigenmode_follows_yee_dispersion():
    """TM_110 mode of a PEC box (a, b, c) = (20, 16, 12) cells, initial Ez = sin(pi x/a)
    sin(pi y/b): its frequency must equal Yee's discrete dispersion relation
    sin^2(w dt/2) = (dt/dx)^2 [sin^2(kx dx/2) + sin^2(ky dx/2)] to rounding (double: 1e-12),
    and differ from the continuum w = c |k| by Yee's O((k dx)^2) dispersion error (5.2e-4
    at k dx = 0.16-0.2 and Courant 0.99/sqrt(3))."""
    shape, dx = (20, 16, 12), 0.05
    g = fdtd.Grid(shape, dx=dx, boundary=fdtd.PEC(), precision="double")
    i = np.arange(shape[0])[:, None, None]
    j = np.arange(shape[1])[None, :, None]
    E = np.zeros((3,) + shape)
    E[2] = np.sin(np.pi * i / shape[0]) * np.sin(np.pi * j / shape[1]) * np.ones(shape)
    sim = fdtd.GridSimulation(g, probes=(fdtd.Probe((7, 5, 3), 2),))
    r = fdtd.run(sim, 600, initial=(E, np.zeros_like(E)))
    cos_wdt = _recurrence_cos(r.probes[:, 0])
    kx, ky = math.pi / (shape[0] * dx), math.pi / (shape[1] * dx)
    s2 = (g.dt / dx) ** 2 * (math.sin(kx * dx / 2) ** 2 + math.sin(ky * dx / 2) ** 2)
    assert cos_wdt == pytest.approx(1 - 2 * s2, abs=1e-12)
    w = math.acos(cos_wdt) / g.dt
    w_exact = math.hypot(kx, ky)
    assert 1e-4 < abs(w / w_exact - 1) < 2e-3


@pytest.mark.parametrize("mode", [(1, 1, 0), (0, 2, 1)])
def test_cavity_mode_4th_order_with_pec_images(mode):
    """4th-order (9/8, -1/24) stencil in a PEC box: the stencil reaches two planes past
    the wall, where emjax uses the fields' images (E tangential odd, H tangential even).
    A cavity mode is its own image continuation, so it must be an exact eigenmode of the
    discrete operator: cos(w dt) = 1 - 2 s^2 with s^2 = (dt/dx)^2 sum_a [C1 sin(k_a dx/2)
    + C3 sin(3 k_a dx/2)]^2, to rounding (double); wrapped differences across the wall
    (no images) are off by 5e-4. Modes: (1, 1, 0) Ez = sin(pi x/a) sin(pi y/b) (x and
    y walls), (0, 2, 1) Ex = sin(2 pi y/b) sin(pi z/c) (y and z walls); both
    divergence-free, so no static part."""
    shape, dx = (16, 14, 12), 0.05
    g = fdtd.Grid(shape, dx=dx, order=4, boundary=fdtd.PEC(), precision="double")
    k = [q * math.pi / nq for q, nq in zip(mode, shape)]  # per cell
    i = np.arange(shape[0])[:, None, None]
    j = np.arange(shape[1])[None, :, None]
    l_ = np.arange(shape[2])[None, None, :]
    E = np.zeros((3,) + shape)
    comp = 2 if mode[2] == 0 else 0
    if comp == 2:
        E[2] = np.sin(k[0] * i) * np.sin(k[1] * j) * np.ones(shape)
    else:
        E[0] = np.sin(k[1] * j) * np.sin(k[2] * l_) * np.ones(shape)
    sim = fdtd.GridSimulation(g, probes=(fdtd.Probe((5, 4, 3), comp), fdtd.Probe((9, 6, 7), comp)))
    r = fdtd.run(sim, 400, initial=(E, np.zeros_like(E)))
    C1, C3 = 9 / 8, -1 / 24
    s2 = (g.dt / dx) ** 2 * sum((C1 * math.sin(kk / 2) + C3 * math.sin(3 * kk / 2)) ** 2 for kk in k)
    for c in range(2):
        assert _recurrence_cos(r.probes[:, c]) == pytest.approx(1 - 2 * s2, abs=1e-11)


def test_cavity_spectrum_peaks_match_modes():
    """A broadband dipole in the PEC box: the three lowest spectral peaks of a probe sit at
    the Yee-discrete frequencies of the modes TM110, TE/TM 101-type and 011-type
    (f = (1/2) sqrt((m/a)^2 + (n/b)^2 + (p/c)^2) in the continuum) to 3e-4 relative: the
    resolution of a Hann-windowed spectrum over 12000 steps with parabolic peak fitting."""
    shape, dx = (20, 16, 12), 0.05
    g = fdtd.Grid(shape, dx=dx, boundary=fdtd.PEC(), precision="double")
    src = fdtd.PointDipole((3, 5, 4), 2, fdtd.GaussianPulse(frequency=1.0, bandwidth=1.0))
    sim = fdtd.GridSimulation(g, sources=(src,), probes=(fdtd.Probe((13, 9, 7), 2),))
    steps = 12000
    r = fdtd.run(sim, steps)
    x = r.probes[:, 0] * np.hanning(steps)
    nfft = 1 << 18
    spec = np.abs(np.fft.rfft(x, nfft))
    freqs = np.fft.rfftfreq(nfft, g.dt)

    def yee(m, n, p):
        k = [m * math.pi / (shape[0] * dx), n * math.pi / (shape[1] * dx), p * math.pi / (shape[2] * dx)]
        s = (g.dt / dx) * math.sqrt(sum(math.sin(kk * dx / 2) ** 2 for kk in k))
        return 2 * math.asin(s) / (2 * math.pi * g.dt)

    # Ez probe sees modes with Ez != 0: TM_mn0 (p = 0) and others with p >= 1; test the
    # lowest TM_mn0 modes, which are well separated.
    for m, n in ((1, 1), (2, 1), (1, 2)):
        f0 = yee(m, n, 0)
        sel = np.abs(freqs - f0) < 0.02 * f0
        k = np.argmax(spec[sel]) + np.flatnonzero(sel)[0]
        y0, y1, y2 = np.log(spec[k - 1 : k + 2])
        f_peak = freqs[k] + 0.5 * (y0 - y2) / (y0 - 2 * y1 + y2) * (freqs[1] - freqs[0])
        assert f_peak == pytest.approx(f0, rel=3e-4), (m, n)


@pytest.mark.parametrize("order, slope", [(2, 2.0), (4, 4.0)])
def test_phase_velocity_error_converges_with_order(order, slope):
    """A plane wave cos(k x) in a periodic box. From the measured cos(w dt) the spatial
    wavenumber K = (2/dt) sin(w dt/2) (leapfrog in time removed exactly) is compared with k:
    the error falls as dx^2 (2nd order) or dx^4 (the 9/8, -1/24 stencil); fitted slope
    within 0.15 of the promise over 8, 16 and 32 cells per wavelength."""
    errors, dxs = [], []
    for ppw in (8, 16, 32):
        n = 2 * ppw  # two wavelengths in the box
        dx = 1.0 / ppw
        g = fdtd.Grid((n, 4, 4), dx=dx, order=order, boundary=fdtd.Periodic(), precision="double")
        k = 2 * math.pi
        x = np.arange(n)[:, None, None] * dx
        E = np.zeros((3, n, 4, 4))
        E[2] = np.cos(k * x) * np.ones((n, 4, 4))
        sim = fdtd.GridSimulation(g, probes=(fdtd.Probe((1, 0, 0), 2),))
        r = fdtd.run(sim, 200, initial=(E, np.zeros_like(E)))
        w = math.acos(_recurrence_cos(r.probes[:, 0])) / g.dt
        K = 2 / g.dt * math.sin(w * g.dt / 2)
        errors.append(abs(K / k - 1))
        dxs.append(dx)
    fitted = np.polyfit(np.log(dxs), np.log(errors), 1)[0]
    assert fitted == pytest.approx(slope, abs=0.15), errors


def test_energy_conserved_in_closed_cavity():
    """Lossless PEC box, random initial fields (tangential E zero on the walls): Yee's
    discrete energy (1/2) sum(eps E^n.E^n + H^(n-1/2).H^(n+1/2)) stays constant to
    rounding (double: 1e-12 relative) over 500 steps, including a dielectric block."""
    shape = (14, 12, 10)
    rng = np.random.default_rng(3)
    eps = np.ones(shape)
    eps[4:9, 3:8, 2:7] = 4.0
    g = fdtd.Grid(shape, dx=0.1, boundary=fdtd.PEC(), precision="double")
    sim = fdtd.GridSimulation(g, eps=eps)
    E = rng.normal(size=(3,) + shape)
    H = rng.normal(size=(3,) + shape)
    E[0][:, 0, :] = E[0][:, :, 0] = 0
    E[1][0, :, :] = E[1][:, :, 0] = 0
    E[2][0, :, :] = E[2][:, 0, :] = 0

    def energy(E0, H0):
        r1 = fdtd.run(sim, 1, initial=(E0, H0))  # H^(n+1/2) from (E^n, H^(n-1/2))
        Hn1 = np.asarray(r1.H)
        return 0.5 * (np.sum(eps * np.sum(E0**2, axis=0)) + np.sum(H0 * Hn1))

    w0 = energy(E, H)
    r = fdtd.run(sim, 500, initial=(E, H))
    w1 = energy(np.asarray(r.E), np.asarray(r.H))
    assert w1 == pytest.approx(w0, rel=1e-12)


def test_2d_tm_cavity_mode():
    """2-D PEC square (24 x 18 cells), TM_21 mode Ez = sin(2 pi x/a) sin(pi y/b): frequency
    from Yee's 2-D dispersion to rounding, at a Courant number above the 3-D limit (0.65 >
    1/sqrt(3)), which a 2-D grid allows (limit 1/sqrt(2))."""
    shape, dx = (24, 18), 0.05
    g = fdtd.Grid.two_d(shape, dx, courant=0.65, precision="double")
    assert g.dimensions == 2
    i = np.arange(shape[0])[:, None, None]
    j = np.arange(shape[1])[None, :, None]
    E = np.zeros((3, shape[0], shape[1], 1))
    E[2] = np.sin(2 * np.pi * i / shape[0]) * np.sin(np.pi * j / shape[1])
    r = fdtd.run(
        fdtd.GridSimulation(g, probes=(fdtd.Probe((5, 7, 0), 2),)), 500, initial=(E, np.zeros_like(E))
    )
    kx, ky = 2 * math.pi / (shape[0] * dx), math.pi / (shape[1] * dx)
    s2 = (g.dt / dx) ** 2 * (math.sin(kx * dx / 2) ** 2 + math.sin(ky * dx / 2) ** 2)
    assert _recurrence_cos(r.probes[:, 0]) == pytest.approx(1 - 2 * s2, abs=1e-12)
