"""2-D FDFD with perfect conductors (scene.PEC) and the scattering width of PEC and dielectric
cylinders against the exact Bessel series (scipy.special), written here.

Error measures (phi = 0..180 degrees in 1-degree steps, incidence along +x):

* ``lin``: max over phi of |sigma - sigma_ref| / max(sigma_ref) (smooth: used for slopes);
* ``dB``: max over phi of |10 log10(sigma / sigma_ref)| over the angles where sigma_ref is
  at least 1% of its peak (-20 dB; deeper nulls are left out, their dB error says little).
  For the PEC cylinders here sigma_ref never falls below that, so it is every angle.

The slope between 40 and 80 cells per wavelength is log2(lin_40 / lin_80).
"""

from functools import cache

import numpy as np
import pytest
from scipy.special import h1vp, hankel1, jv, jvp, yv, yvp

from emjax import ConfigError, fdfd, geometry, scene

PHI = np.linspace(0.0, 180.0, 181)


def _b(material, x, n, te):
    """Scattering coefficients b_n (E_s or H_s = sum b_n H_n(k rho) exp(i n phi)) of a
    cylinder of size parameter x in a unit plane wave exp(i k x): PEC E_z = 0 (TM) or
    dH_z/drho = 0 (TE) at the surface; a dielectric: E_z / H_z and (1 / eps) d/drho
    continuous."""
    if material == "pec":
        return -(1j**n) * (jvp(n, x) / h1vp(n, x) if te else jv(n, x) / hankel1(n, x))
    m = np.sqrt(material)
    mm = 1 / m if te else m
    num = mm * jv(n, x) * jvp(n, m * x) - jvp(n, x) * jv(n, m * x)
    den = h1vp(n, x) * jv(n, m * x) - mm * hankel1(n, x) * jvp(n, m * x)
    return 1j**n * num / den


def sigma_series(material, a, phi_deg, te, nmax=40):
    """sigma(phi) = (4 / k) |sum_n b_n (-i)^n exp(i n phi)|^2 at wavelength 1."""
    k, n = 2 * np.pi, np.arange(-nmax, nmax + 1)
    b = _b(material, k * a, n, te)
    return 4 / k * np.abs(np.exp(1j * np.outer(np.deg2rad(phi_deg), n)) @ (b * (-1j) ** n)) ** 2


@cache
def _errors(material, a, te, res, averaging="subpixel", stencil="compact"):
    """(lin, dB) of the cylinder (radius a) on a region 0.3 wider than it on each side."""
    mat = scene.PEC if material == "pec" else material
    sc = scene.Scene([scene.Object(geometry.Disk(), mat, size=2 * a)])
    solve = fdfd.solve_te if te else fdfd.solve_tm
    r = solve(
        (2 * a + 0.6,) * 2, res, 1.0, fdfd.PlaneWave2D(0.0), scene=sc, averaging=averaging, stencil=stencil
    )
    s, ref = fdfd.scattering_width(r, PHI), sigma_series(material, a, PHI, te)
    seen = ref >= 0.01 * ref.max()
    return np.abs(s - ref).max() / ref.max(), np.abs(10 * np.log10(s[seen] / ref[seen])).max()


def test_series_limits():
    """The series: the PEC coefficients are the limit of a lossy dielectric's (eps = 1e4 (1 +
    i): off by O(1 / |m|), measured 8e-3 (TM) and 1.0e-2 (TE), bound 2e-2), and a lossless
    PEC cylinder (ka = pi) obeys the optical theorem C_sca = (1 / 2 pi) int sigma dphi =
    -(4 / k) Re f(0), f(0) = sum_n b_n (-i)^n (to rounding)."""
    n = np.arange(-20, 21)
    for te in (False, True):
        np.testing.assert_allclose(_b(1e4 * (1 + 1j), 3.0, n, te), _b("pec", 3.0, n, te), atol=2e-2)
        phi = np.linspace(0, 360, 2001)[:-1]
        c_sca = sigma_series("pec", 0.5, phi, te).mean()
        c_ext = -4 / (2 * np.pi) * np.real(np.sum(_b("pec", np.pi, n, te) * (-1j) ** n))
        assert c_sca == pytest.approx(c_ext, rel=1e-9)


@pytest.mark.parametrize("te", [False, True], ids=["TM", "TE"])
@pytest.mark.parametrize("a", [0.5, 1.0])
def test_pec_cylinder_scattering_width(a, te):
    """PEC cylinder (radius a = 0.5 and 1 wavelength), plane wave along +x, subpixel PEC
    (TM: Shortley-Weller; TE: Dey-Mittra; five-point rows next to the conductor, the
    compact stencil elsewhere), region 0.3 wavelength wider than the cylinder on each side,
    SC-PML 12 cells. Measured (lin / dB at 40, at 80 cells per wavelength; slope): TM a=0.5
    1.25e-3 / 0.022, 4.9e-4 / 0.005 (1.35; 1.57 from 80 to 160); TM a=1 2.6e-3 / 0.022,
    7.9e-4 / 0.005 (1.73; 1.82 from 80 to 160); TE a=0.5 7.1e-3 / 0.033, 1.6e-3 / 0.010
    (2.2); TE a=1 5.2e-3 / 0.064, 1.2e-3 / 0.016 (2.2). (The Yee stencil everywhere: 0.016
    - 0.057 dB at 40, TM slopes 1.6-1.85.) Bounds: twice the measured dB at 40 (far inside
    the 0.5 dB asked for), dB at 80 below 1/2.5 of it, slopes above 1.25 (TM) / 1.9 (TE).
    The staircase (first order: 0.23-5.5 dB at 40) stays >= 10 times worse at 80 (measured
    13-80 times)."""
    lin40, db40 = _errors("pec", a, te, 40)
    lin80, db80 = _errors("pec", a, te, 80)
    bound = {(0.5, False): 0.045, (1.0, False): 0.045, (0.5, True): 0.066, (1.0, True): 0.13}[a, te]
    assert db40 < bound and db80 < db40 / 2.5, (lin40, db40, lin80, db80)
    assert np.log2(lin40 / lin80) > (1.9 if te else 1.25), (lin40, lin80)
    stair80 = _errors("pec", a, te, 80, "staircase")[0]
    assert stair80 > 10 * lin80, (stair80, lin80)


@pytest.mark.parametrize("te", [False, True], ids=["TM", "TE"])
@pytest.mark.parametrize("a", [0.5, 1.0])
def test_dielectric_cylinder_scattering_width(a, te):
    """eps = 4 cylinder (radius 0.5 and 1 wavelength), subpixel averaging, as above: the
    target of 0.5 dB at 40 cells per (vacuum) wavelength, i.e. 20 per wavelength inside n = 2
    across 2-4 internal wavelengths. Measured dB at 40 / 80 (compact stencil): TM a=0.5 0.232
    / 0.054, TM a=1 0.123 / 0.029, TE a=0.5 0.169 / 0.036, TE a=1 0.095 / 0.040; lin 2.0e-3 /
    5.0e-4, 5.0e-3 / 1.2e-3, 1.24e-2 / 3.4e-3, 8.7e-3 / 1.6e-3 (slopes 2.0, 2.05, 1.86,
    2.4). The Yee stencil misses it: TM a=1 2.43 dB at 40, 0.53 at 80 (its phase error, 0.2-
    0.4% per wavelength at 20 per wavelength, accumulated: a clean h^2 term, slope 2.0),
    also checked here. Bounds: 0.5 dB and 1.3 times the measured dB at 40 and 80, slopes
    above 1.7."""
    lin40, db40 = _errors(4.0, a, te, 40)
    lin80, db80 = _errors(4.0, a, te, 80)
    db = {
        (0.5, False): (0.232, 0.054),
        (1.0, False): (0.123, 0.029),
        (0.5, True): (0.169, 0.036),
        (1.0, True): (0.095, 0.040),
    }
    ref40, ref80 = db[a, te]
    assert db40 < min(0.5, 1.3 * ref40) and db80 < 1.3 * ref80, (db40, db80)
    assert np.log2(lin40 / lin80) > 1.7, (lin40, lin80)
    if a == 1.0 and not te:
        assert _errors(4.0, a, te, 40, stencil="yee")[1] > 2.0


def _b_coated(a1, a2, eps, n, te, k=2 * np.pi):
    """b_n of a PEC core (radius a1) in a dielectric shell (eps, outer radius a2): in the
    shell F_n = J_n(k2 r) C_Y - Y_n(k2 r) C_J vanishes (TM) or has a zero derivative (TE) at
    a1; at a2, with R = p k2 F_n' / (k F_n) (p = 1 TM, 1 / eps TE), b_n = i^n (R J_n -
    J_n') / (H_n' - R H_n)."""
    k2 = np.sqrt(eps) * k
    cy, cj = (jvp(n, k2 * a1), yvp(n, k2 * a1)) if te else (jv(n, k2 * a1), yv(n, k2 * a1))
    F = jv(n, k2 * a2) * cj - yv(n, k2 * a2) * cy
    dF = jvp(n, k2 * a2) * cj - yvp(n, k2 * a2) * cy
    R = (1 / eps if te else 1.0) * k2 * dF / (k * F)
    x = k * a2
    return 1j**n * (R * jv(n, x) - jvp(n, x)) / (h1vp(n, x) - R * hankel1(n, x))


@pytest.mark.parametrize("te", [False, True], ids=["TM", "TE"])
def test_coated_pec_cylinder(te):
    """A PEC core (radius 0.35) in an eps = 2.25 shell (radius 0.6): PEC and dielectric in
    one scene (the conductor's neighbours keep the shell's eps). The series (checked here
    against the bare PEC one for eps = 1) vs the solve at 40 / 80 cells per wavelength:
    measured lin 2.5e-3 / 7.5e-4 (TM, slope 1.7), 5.8e-3 / 1.28e-3 (TE, 2.2); dB (above
    -20 dB) 0.051 / 0.011 (TM), 0.073 / 0.025 (TE) (the Yee stencil: TM 1.06e-2 / 2.6e-3,
    0.078 / 0.017 dB; TE 3.4e-3 / 9.7e-4, 0.49 / 0.21 dB). Bounds 1.3 times."""
    n = np.arange(-30, 31)
    np.testing.assert_allclose(
        _b_coated(0.35, 0.6, 1.0, n, te), _b("pec", 2 * np.pi * 0.35, n, te), atol=1e-12
    )
    sc = scene.Scene(
        [scene.Object(geometry.Disk(), 2.25, size=1.2), scene.Object(geometry.Disk(), scene.PEC, size=0.7)]
    )
    b = _b_coated(0.35, 0.6, 2.25, n, te)
    ref = 4 / (2 * np.pi) * np.abs(np.exp(1j * np.outer(np.deg2rad(PHI), n)) @ (b * (-1j) ** n)) ** 2
    seen = ref >= 0.01 * ref.max()
    errs = []
    for res in (40, 80):
        r = (fdfd.solve_te if te else fdfd.solve_tm)((1.8, 1.8), res, 1.0, fdfd.PlaneWave2D(0.0), scene=sc)
        s = fdfd.scattering_width(r, PHI)
        errs.append((np.abs(s - ref).max() / ref.max(), np.abs(10 * np.log10(s[seen] / ref[seen])).max()))
    measured = [(2.5e-3, 0.051), (7.5e-4, 0.011)] if not te else [(5.8e-3, 0.073), (1.28e-3, 0.025)]
    for got, m in zip(errs, measured):
        assert got[0] < 1.3 * m[0] and got[1] < 1.3 * m[1], errs


@pytest.mark.parametrize("solve", [fdfd.solve_tm, fdfd.solve_te], ids=["TM", "TE"])
def test_pec_reciprocity(solve):
    """Reciprocity on a PEC triangle (no symmetry, turned and off-centre), 30 cells per
    wavelength: sigma for incidence along A = 30 deg seen at B = 135 deg equals sigma for
    incidence along B + 180 seen at A + 180 (one factorization, three waves). Measured
    relative differences 2.8e-3 (TM) and 3.4e-4 (TE) (2.0e-4 / 1.25e-3 at 60 per wavelength:
    the Shortley-Weller rows, the conformal cells and the seam between their five-point rows
    and the compact stencil are not exactly symmetric, so discrete reciprocity holds only to
    the discretization error); bound 6e-3. The non-reciprocal pairing (incidence B seen
    at A) differs by more than 10%, so the check has teeth."""
    tri = geometry.Polygon(vertices=[(0, 0), (1.0, 0.2), (0.3, 0.8)])
    sc = scene.Scene([scene.Object(tri, scene.PEC, center=(0.1, -0.05, 0), size=0.9, rotation=(20, 0, 0))])
    A, B = 30.0, 135.0
    waves = [fdfd.PlaneWave2D(A), fdfd.PlaneWave2D(B + 180), fdfd.PlaneWave2D(B)]
    r = solve((1.6, 1.6), 30, 1.0, waves, scene=sc)
    s_ab = fdfd.scattering_width(r[0], B)[0]
    s_ba = fdfd.scattering_width(r[1], A + 180)[0]
    wrong = fdfd.scattering_width(r[2], A)[0]
    assert abs(s_ab - s_ba) < 6e-3 * s_ab, (s_ab, s_ba)
    assert abs(wrong - s_ab) > 0.1 * s_ab, (wrong, s_ab)


@pytest.mark.parametrize("te", [False, True], ids=["TM", "TE"])
def test_line_source_before_pec_wall(te):
    """A line source 0.61 wavelength before a flat PEC wall at x = 0.3137 (off the grid;
    the wall runs through the PML): the field is the source's plus its image's, E_z =
    (omega / 4) (H0(k r) - H0(k r')) (TM), H_z = -(omega / 4) (H0(k r) + H0(k r')) (TE).
    Max error relative to the max of the reference on x in (-0.9, wall - 0.02), |y| < 0.7,
    r > 0.3: measured TM 1.09e-3 / 2.1e-4 at 20 / 40 per wavelength, TE 2.1e-3 / 4.1e-4
    (slopes 2.4, 2.4; the PML's stretch included in the Shortley-Weller rows; the Yee
    stencil: 1.8e-2 / 4.5e-3 for both); the staircase wall is 0.20 / 0.065 (TM), 0.32 / 0.068
    (TE) and stalls. Bounds 1.3 times the measured subpixel errors."""
    xw = 0.3137
    wall = scene.Object(geometry.Rectangle(), scene.PEC, center=(xw + 2.0, 0.0, 0.0), size=4.0)
    solve = fdfd.solve_te if te else fdfd.solve_tm
    errs = {}
    for av in ("subpixel", "staircase"):
        errs[av] = []
        for res in (20, 40):
            r = solve(
                (2.0, 2.0), res, 1.0, fdfd.LineSource((-0.3, 0.0)), scene=scene.Scene([wall]), averaging=av
            )
            cx, cy = r.stats["source_node"]
            X, Y = np.meshgrid(r.x, r.y, indexing="ij")
            w = 2 * np.pi
            d1, d2 = np.hypot(X - cx, Y - cy), np.hypot(X - (2 * xw - cx), Y - cy)
            image = hankel1(0, w * d2) * (1 if te else -1)
            ref = (-1 if te else 1) * (w / 4) * (hankel1(0, w * np.maximum(d1, 1e-9)) + image)
            m = (d1 > 0.3) & (X < xw - 0.02) & (np.abs(Y) < 0.7) & (X > -0.9)
            errs[av].append(np.abs(r.Ez[m] - ref[m]).max() / np.abs(ref[m]).max())
    sub, stair = errs["subpixel"], errs["staircase"]
    assert sub[0] < 2.8e-3 and sub[1] < 5.4e-4, errs
    assert stair[1] > 100 * sub[1], errs


def test_pec_results_and_checks():
    """PEC nodes hold eps = inf (TM) and closed edges 1/eps = 0 (TE), the total field is 0
    inside (TM: the Dirichlet rows; TE: the decoupled cells), so the contour check of
    scattering_width and the PML check see the conductor."""
    sc = scene.Scene([scene.Object(geometry.Disk(), scene.PEC, size=1.6)])
    tm = fdfd.solve_tm((2.0, 2.0), 10, 1.0, fdfd.PlaneWave2D(0.0), scene=sc)
    te = fdfd.solve_te((2.0, 2.0), 10, 1.0, fdfd.PlaneWave2D(0.0), scene=sc)
    X, Y = np.meshgrid(tm.x, tm.y, indexing="ij")
    inside = np.hypot(X, Y) <= 0.8
    assert np.all(np.isinf(tm.eps[inside])) and np.all(np.isfinite(tm.eps[~inside]))
    np.testing.assert_allclose(tm.Ez[inside], 0, atol=1e-12)
    X, Y = np.meshgrid(te.x, te.y, indexing="ij")
    deep = np.hypot(X, Y) < 0.8 - 0.08
    np.testing.assert_allclose(te.Ez[deep], 0, atol=1e-12)
    assert np.all(te.eps[np.hypot(X, Y - 0.05) < 0.7] == 0)
    for r in (tm, te):
        with pytest.raises(ConfigError, match="contour crosses"):
            fdfd.scattering_width(r, [0.0])
    big = scene.Scene([scene.Object(geometry.Disk(), scene.PEC, size=2.4)])
    for solve in (fdfd.solve_tm, fdfd.solve_te):
        with pytest.raises(ConfigError, match="reaches the PML"):
            solve((2.0, 2.0), 10, 1.0, fdfd.PlaneWave2D(0.0), scene=big)


@pytest.mark.slow
def test_convergence_to_160_per_wavelength():
    """80 -> 160 cells per wavelength: the PEC cylinders keep converging (lin measured: TM
    a=1 7.9e-4 -> 2.24e-4, slope 1.82; TM a=0.5 4.9e-4 -> 1.64e-4, 1.57; TE a=1 1.17e-3 ->
    2.3e-4, 2.35), and the eps = 4, a = 1 TM cylinder, 0.029 dB at 80, reaches 0.0067 dB at
    160 (lin 1.21e-3 -> 3.1e-4, slope 1.96). Bounds: slopes above 1.45 (TM) / 1.9 (TE),
    0.009 dB."""
    for a, te, slope in ((1.0, False, 1.45), (0.5, False, 1.45), (1.0, True, 1.9)):
        lin80, lin160 = _errors("pec", a, te, 80)[0], _errors("pec", a, te, 160)[0]
        assert np.log2(lin80 / lin160) > slope, (a, te, lin80, lin160)
    lin80, _ = _errors(4.0, 1.0, False, 80)
    lin160, db160 = _errors(4.0, 1.0, False, 160)
    assert db160 < 0.009 and np.log2(lin80 / lin160) > 1.9, (lin80, lin160, db160)
