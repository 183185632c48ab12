"""Regenerate tmatrix_spheroids.json: T-matrix reference data for spheroids (not part of emjax).

Independent reference for emjax's DDA orientation averaging.  Uses pytmatrix
(J. Leinonen's Python wrapper of M. Mishchenko's Fortran T-matrix code
ampld.lp.f) and does NOT import emjax.

Environment (pytmatrix must be built from source with gfortran and numpy.distutils,
so it lives in its own venv, never in the project venv):

    apt-get install -y gfortran
    python3.11 -m venv /work/tmatrix_venv
    /work/tmatrix_venv/bin/pip install "numpy<1.26" "setuptools<60" wheel "scipy<1.14"
    /work/tmatrix_venv/bin/pip install --no-build-isolation pytmatrix==0.3.2
    /work/tmatrix_venv/bin/python tests/data/make_tmatrix_reference.py

(pytmatrix 0.3.3, the newest on PyPI, cannot be built: its sdist lacks
pytmatrix/fortran_tm/pytmatrix.pyf.  0.3.2 has the same Fortran code; the two differ
only in the non-equal-volume radius conversions and the PSD integrator, neither used
here.  scipy<1.14 only so that pytmatrix.psd, which imports scipy.integrate.trapz, and
pytmatrix's own test suite import; this script does not need it.
Compiler-free alternative, same results to all stored digits: the binary-wheel fork
`pip install --pre pytmatrixc` (0.3.4.dev0, cp311 manylinux, numpy 2), which installs
the same `pytmatrix` module.)

Geometry: incidence along +z (thet0 = 0, phi0 = 0), scattering plane = xz plane
(phi = 0), so pytmatrix's phase matrix Z is the scattering (Mueller) matrix F relative
to the scattering plane.  Random orientation: the particle's symmetry axis is uniformly
distributed on the sphere; pytmatrix.orientation.orient_averaged_fixed averages S and Z
with n_alpha equispaced alpha points and n_beta Gaussian points for the weight
sin(beta) (orientation.uniform_pdf).

Self-checks (stored in the JSON "checks" block; the script fails if one fails):
  * near-sphere (axis_ratio 1.0001) orientation-averaged Cext, Csca, g and F_ij
    against a Mie code written here (Bohren & Huffman's BHMIE algorithm);
  * Rayleigh-size sphere: sign of F12 (degree of linear polarisation);
  * non-absorbing spheroid: averaged Cext (optical theorem) = averaged Csca
    (angular integral of F11);
  * absorbing m = 1.5+0.01j gives Cabs > 0 (exp(-i omega t), Im m > 0 absorbs);
  * pytmatrix's own orientation average vs an independent alpha/beta quadrature
    written here on pytmatrix's raw calcampl;
  * single-orientation Csca by this script's angular quadrature vs
    pytmatrix.scatter.sca_xsect (adaptive dblquad).
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np
from pytmatrix import orientation, scatter, tmatrix
from pytmatrix.fortran_tm import pytmatrix as fortran_tm

WAVELENGTH = 2.0 * np.pi  # k = 1: size parameter of the equal-volume sphere = eq_rad
M = complex(1.5, 0.01)
DDELT = 1e-8  # T-matrix convergence tolerance (pytmatrix default 1e-3)
DDELT_CHECKS = (1e-7, 1e-9)  # looser and tighter T-matrices to estimate truncation error
NDGS = 2
THETA_DEG = np.arange(0.0, 181.0, 5.0)
# (shape, aspect = long/short axis, eq_rad)
CASES = [
    ("prolate", 1.5, 2.0),
    ("prolate", 1.5, 3.0),
    ("prolate", 1.5, 5.0),
    ("oblate", 1.5, 2.0),
    ("oblate", 1.5, 3.0),
    ("prolate", 2.0, 2.0),
    ("prolate", 2.0, 3.0),
    ("oblate", 2.0, 2.0),
    ("oblate", 2.0, 3.0),
]
# Orientation-quadrature ladder: n_alpha = n_beta = N, refined until the change between
# consecutive levels is below the targets (or N_MAX is reached).
N_LADDER = [8, 12, 16, 24, 32, 40, 48, 64, 80, 96]
TARGET_XSECT = 1e-6  # relative change of Cext, Csca, g
TARGET_F = 1e-5  # relative change of F11, absolute change of Fij/F11


# --------------------------------------------------------------------------------------
# Mie theory (Bohren & Huffman, BHMIE), exp(-i omega t), Im m > 0 absorbing
# --------------------------------------------------------------------------------------
def mie(x: float, m: complex, theta_deg: np.ndarray):
    """Return (Qext, Qsca, g, S1, S2) of a sphere; S1, S2 as in Bohren & Huffman."""
    nstop = int(x + 4.0 * x ** (1.0 / 3.0) + 2.0)
    y = m * x
    nmx = int(max(nstop, abs(y))) + 15
    d = np.zeros(nmx + 1, dtype=complex)
    for n in range(nmx, 0, -1):
        d[n - 1] = n / y - 1.0 / (d[n] + n / y)
    mu = np.cos(np.radians(theta_deg))
    psi0, psi1 = np.cos(x), np.sin(x)
    chi0, chi1 = -np.sin(x), np.cos(x)
    xi1 = complex(psi1, -chi1)
    pi0, pi1 = np.zeros_like(mu), np.ones_like(mu)
    s1 = np.zeros(mu.shape, dtype=complex)
    s2 = np.zeros(mu.shape, dtype=complex)
    qext = qsca = gq = 0.0
    an_prev = bn_prev = 0.0
    for n in range(1, nstop + 1):
        psi = (2.0 * n - 1.0) * psi1 / x - psi0
        chi = (2.0 * n - 1.0) * chi1 / x - chi0
        xi = complex(psi, -chi)
        an = ((d[n] / m + n / x) * psi - psi1) / ((d[n] / m + n / x) * xi - xi1)
        bn = ((m * d[n] + n / x) * psi - psi1) / ((m * d[n] + n / x) * xi - xi1)
        qext += (2 * n + 1) * (an + bn).real
        qsca += (2 * n + 1) * (abs(an) ** 2 + abs(bn) ** 2)
        gq += (2 * n + 1) / (n * (n + 1)) * (an * np.conj(bn)).real
        if n > 1:
            gq += (n - 1) * (n + 1) / n * (an_prev * np.conj(an) + bn_prev * np.conj(bn)).real
        pi = pi1
        tau = n * mu * pi - (n + 1) * pi0
        fn = (2 * n + 1) / (n * (n + 1))
        s1 += fn * (an * pi + bn * tau)
        s2 += fn * (an * tau + bn * pi)
        pi0, pi1 = pi1, ((2 * n + 1) * mu * pi1 - (n + 1) * pi0) / n
        psi0, psi1 = psi1, psi
        chi0, chi1 = chi1, chi
        xi1 = complex(psi1, -chi1)
        an_prev, bn_prev = an, bn
    qext *= 2.0 / x**2
    qsca *= 2.0 / x**2
    g = 4.0 * gq / (x**2 * qsca)
    return qext, qsca, g, s1, s2


def mie_mueller(s1, s2):
    """Bohren & Huffman's S11, S12, S33, S34 (eq. 4.77)."""
    s11 = 0.5 * (abs(s2) ** 2 + abs(s1) ** 2)
    s12 = 0.5 * (abs(s2) ** 2 - abs(s1) ** 2)
    s33 = (s2 * np.conj(s1)).real
    s34 = (s2 * np.conj(s1)).imag
    return s11, s12, s33, s34


# --------------------------------------------------------------------------------------
# pytmatrix helpers
# --------------------------------------------------------------------------------------
def semi_axes(axis_ratio: float, eq_rad: float):
    """(symmetry-axis semi-axis, equatorial semi-axis); axis_ratio = equatorial/symmetry."""
    return eq_rad * axis_ratio ** (-2.0 / 3.0), eq_rad * axis_ratio ** (1.0 / 3.0)


def new_scatterer(eq_rad: float, axis_ratio: float, m: complex, ddelt: float = DDELT):
    """Fresh Scatterer with its T-matrix computed NOW.

    The Fortran T-matrix lives in a COMMON block (global state): a Scatterer only knows
    whether *its own* parameters changed, so interleaving two Scatterer objects silently
    uses the wrong T-matrix.  Always use the most recently created scatterer only.
    """
    s = tmatrix.Scatterer(
        radius=eq_rad,
        radius_type=tmatrix.Scatterer.RADIUS_EQUAL_VOLUME,
        wavelength=WAVELENGTH,
        m=m,
        axis_ratio=axis_ratio,
        shape=tmatrix.Scatterer.SHAPE_SPHEROID,
        ddelt=ddelt,
        ndgs=NDGS,
    )
    s.set_geometry((0.0, 0.0, 0.0, 0.0, 0.0, 0.0))  # thet0, thet, phi0, phi, alpha, beta
    s._init_tmatrix()
    return s


def gauss_theta(nmax: int):
    n = 2 * nmax + 16
    mu, w = np.polynomial.legendre.leggauss(n)
    return np.degrees(np.arccos(mu)), mu, w


def averaged(s, n_alpha: int, n_beta: int, theta_out, theta_gl, mu_gl, w_gl):
    """Orientation-averaged quantities with pytmatrix's orient_averaged_fixed."""
    s.orient = orientation.orient_averaged_fixed
    s.or_pdf = orientation.uniform_pdf()
    s.n_alpha, s.n_beta = n_alpha, n_beta
    s.thet0, s.phi0, s.phi = 0.0, 0.0, 0.0

    def z_at(th):
        out = []
        for t in th:
            s.thet = float(t)
            out.append(np.array(s.get_Z()))
        return np.array(out)

    s.thet = 0.0
    cext_v = scatter.ext_xsect(s, h_pol=False)
    cext_h = scatter.ext_xsect(s, h_pol=True)
    z_gl = z_at(theta_gl)
    z_out = z_at(theta_out)
    f11_gl = z_gl[:, 0, 0]
    csca = 2.0 * np.pi * np.dot(w_gl, f11_gl)
    g = 2.0 * np.pi * np.dot(w_gl, mu_gl * f11_gl) / csca
    cext = 0.5 * (cext_v + cext_h)
    return dict(cext=cext, cext_v=cext_v, cext_h=cext_h, csca=csca, g=g, z=z_out, z_gl=z_gl)


def f_elements(z):
    f11 = z[:, 0, 0]
    return dict(
        F11=f11,
        F22_F11=z[:, 1, 1] / f11,
        F33_F11=z[:, 2, 2] / f11,
        F44_F11=z[:, 3, 3] / f11,
        F12_F11=z[:, 0, 1] / f11,
        F34_F11=z[:, 2, 3] / f11,
    )


def symmetry_residual(z):
    """max |F_ij|/F11 over elements that vanish for random orientation + mirror symmetry,
    and over the violations of F21 = F12, F43 = -F34."""
    f11 = z[:, 0, 0][:, None]
    zero = [(0, 2), (0, 3), (1, 2), (1, 3), (2, 0), (2, 1), (3, 0), (3, 1)]
    r = max(np.max(np.abs(z[:, i, j][:, None] / f11)) for i, j in zero)
    r = max(r, np.max(np.abs((z[:, 1, 0] - z[:, 0, 1]) / z[:, 0, 0])))
    r = max(r, np.max(np.abs((z[:, 3, 2] + z[:, 2, 3]) / z[:, 0, 0])))
    return float(r)


def change(a, b):
    """Max changes between two `averaged` results: (cross sections/g, F elements)."""
    dx = max(
        abs(a["cext"] - b["cext"]) / abs(b["cext"]),
        abs(a["csca"] - b["csca"]) / abs(b["csca"]),
        abs(a["g"] - b["g"]) / max(abs(b["g"]), 1e-3),
    )
    fa, fb = f_elements(a["z"]), f_elements(b["z"])
    df = float(np.max(np.abs(fa["F11"] - fb["F11"]) / fb["F11"]))
    for key in fa:
        if key != "F11":
            df = max(df, float(np.max(np.abs(fa[key] - fb[key]))))
    return float(dx), df


def fixed_orientation(s, alpha: float, beta: float, nmax: int):
    """Single-orientation Cext, Csca, g for both pytmatrix polarisations.

    Incidence along +z; v_pol: E along x (e_theta of the incident direction at phi0 = 0),
    h_pol: E along y (e_phi).  Csca by Gauss-Legendre (cos theta) x trapezoid (phi)."""
    s.orient = orientation.orient_single
    s.alpha, s.beta = alpha, beta
    s.thet0, s.phi0 = 0.0, 0.0
    s.thet, s.phi = 0.0, 0.0
    out = {"v_pol": {}, "h_pol": {}}
    for pol, h in (("v_pol", False), ("h_pol", True)):
        out[pol]["cext"] = float(scatter.ext_xsect(s, h_pol=h))
    th, mu, w = gauss_theta(nmax)
    nphi = 4 * nmax + 16
    phis = np.arange(nphi) * 360.0 / nphi
    csca = {"v_pol": 0.0, "h_pol": 0.0}
    cosint = {"v_pol": 0.0, "h_pol": 0.0}
    for t, mui, wi in zip(th, mu, w):
        for p in phis:
            _, z = fortran_tm.calcampl(nmax, WAVELENGTH, 0.0, t, 0.0, p, alpha, beta)
            for pol, sign in (("v_pol", 1.0), ("h_pol", -1.0)):
                i = z[0, 0] + sign * z[0, 1]
                csca[pol] += wi * i
                cosint[pol] += wi * mui * i
    for pol in out:
        c = csca[pol] * 2.0 * np.pi / nphi
        cext = out[pol]["cext"]
        out[pol] = {
            "cext": rnd(cext, 10),
            "csca": rnd(c, 10),
            "cabs": rnd(cext - c, 10),
            "g": rnd(cosint[pol] * 2.0 * np.pi / nphi / c, 10),
        }
    return out


def own_average_check(s, n: int, theta_deg):
    """Independent orientation quadrature on raw calcampl (Gauss-Legendre in cos beta,
    trapezoid in alpha); returns max relative difference of Z11, Z12, Z33, Z34 and
    forward Im S vs pytmatrix's orient_averaged_fixed at the same n."""
    cb, wb = np.polynomial.legendre.leggauss(n)
    betas = np.degrees(np.arccos(cb))
    alphas = np.arange(n) * 360.0 / n
    res = []
    for t in theta_deg:
        S = np.zeros((2, 2), complex)
        Z = np.zeros((4, 4))
        for b, wbi in zip(betas, wb):
            for a in alphas:
                s1, z1 = fortran_tm.calcampl(s.nmax, WAVELENGTH, 0.0, t, 0.0, 0.0, a, b)
                S += wbi * s1
                Z += wbi * z1
        res.append((S / (2.0 * n), Z / (2.0 * n)))
    s.orient = orientation.orient_averaged_fixed
    s.or_pdf = orientation.uniform_pdf()
    s.n_alpha = s.n_beta = n
    s.thet0 = s.phi0 = s.phi = 0.0
    diff = 0.0
    for t, (S, Z) in zip(theta_deg, res):
        s.thet = float(t)
        Sp, Zp = s.get_SZ()
        for i, j in ((0, 0), (0, 1), (2, 2), (2, 3)):
            diff = max(diff, abs(Z[i, j] - Zp[i, j]) / abs(Zp[0, 0]))
        if t == 0.0:
            diff = max(diff, abs(S[0, 0].imag - Sp[0, 0].imag) / abs(Sp[0, 0].imag))
    return float(diff)


def converge(s, theta_out, quiet=False):
    th_gl, mu_gl, w_gl = gauss_theta(s.nmax)
    history = []
    prev = None
    for n in N_LADDER:
        cur = averaged(s, n, n, theta_out, th_gl, mu_gl, w_gl)
        if prev is not None:
            dx, df = change(cur, prev)
            history.append({"n_alpha": n, "n_beta": n, "d_xsect_rel": dx, "d_F": df})
            if not quiet:
                print(f"    N={n:3d}  d_xsect={dx:.2e}  d_F={df:.2e}", flush=True)
            if dx < TARGET_XSECT and df < TARGET_F:
                return cur, n, history
        prev = cur
    raise RuntimeError(f"orientation average not converged at N={N_LADDER[-1]}: {history[-1]}")


def rnd(a, sig=9):
    a = np.asarray(a, dtype=float)
    return [float(f"{v:.{sig}g}") for v in a] if a.ndim else float(f"{a:.{sig}g}")


# --------------------------------------------------------------------------------------
def run_checks():
    checks = {}
    thetas = THETA_DEG

    # 1. near-sphere vs Mie (also fixes the sign conventions of F12, F34)
    for req in (2.0, 3.0):
        s = new_scatterer(req, 1.0001, M)
        cur, n, _ = converge(s, thetas, quiet=True)
        qext, qsca, g, s1, s2 = mie(req, M, thetas)
        area = np.pi * req**2
        m11, m12, m33, m34 = mie_mueller(s1, s2)  # k = 1: dCsca/dOmega = S11_BH
        f = f_elements(cur["z"])
        checks[f"near_sphere_eq_rad{req:g}_vs_mie"] = {
            "axis_ratio": 1.0001,
            "n_alpha=n_beta": n,
            "cext_tmatrix": rnd(cur["cext"]),
            "cext_mie": rnd(qext * area),
            "rel_diff_cext": rnd(abs(cur["cext"] / (qext * area) - 1), 3),
            "rel_diff_csca": rnd(abs(cur["csca"] / (qsca * area) - 1), 3),
            "abs_diff_g": rnd(abs(cur["g"] - g), 3),
            "max_rel_diff_F11_vs_S11_BH": rnd(np.max(np.abs(f["F11"] / m11 - 1)), 3),
            "max_abs_diff_F12_F11_vs_BH_S12_S11": rnd(np.max(np.abs(f["F12_F11"] - m12 / m11)), 3),
            "max_abs_diff_F22_F11_vs_1": rnd(np.max(np.abs(f["F22_F11"] - 1.0)), 3),
            "max_abs_diff_F33_F11_vs_BH_S33_S11": rnd(np.max(np.abs(f["F33_F11"] - m33 / m11)), 3),
            "max_abs_diff_F34_F11_vs_BH_S34_S11": rnd(np.max(np.abs(f["F34_F11"] - m34 / m11)), 3),
            "max_abs_sum_F12_F11_and_BH_S12_S11_(large_if_same_sign)": rnd(
                np.max(np.abs(f["F12_F11"] + m12 / m11)), 3
            ),
            "max_abs_sum_F34_F11_and_BH_S34_S11_(large_if_same_sign)": rnd(
                np.max(np.abs(f["F34_F11"] + m34 / m11)), 3
            ),
        }
        c = checks[f"near_sphere_eq_rad{req:g}_vs_mie"]
        assert c["rel_diff_cext"] < 1e-4 and c["rel_diff_csca"] < 1e-4, c
        assert c["max_abs_diff_F12_F11_vs_BH_S12_S11"] < 1e-3, c
        assert c["max_abs_diff_F34_F11_vs_BH_S34_S11"] < 1e-3, c

    # 1b. amplitude matrix of an exact sphere vs Bohren & Huffman's S1, S2
    s = new_scatterer(3.0, 1.0, M)
    dev = 0.0
    for th in (10.0, 60.0, 90.0, 135.0):
        S, Z = fortran_tm.calcampl(s.nmax, WAVELENGTH, 0.0, th, 0.0, 0.0, 0.0, 0.0)
        _, _, _, s1, s2 = mie(3.0, M, np.array([th]))
        dev = max(dev, abs(S[0, 0] / (1j * s2[0]) - 1), abs(S[1, 1] / (1j * s1[0]) - 1))
        dev = max(dev, abs(Z[2, 3] - (S[0, 0] * np.conj(S[1, 1])).imag) / Z[0, 0])
    checks["sphere_eq_rad3_S_vv=i*S2_BH/k,S_hh=i*S1_BH/k,Z34=Im(S_vv*conj(S_hh))_max_rel_dev"] = rnd(dev, 3)
    assert dev < 1e-5

    # 2. Rayleigh sphere: F12/F11 at 90 deg
    s = new_scatterer(0.05, 1.0001, M)
    s.orient = orientation.orient_single
    s.set_geometry((0.0, 90.0, 0.0, 0.0, 0.0, 0.0))
    z = s.get_Z()
    checks["rayleigh_sphere_x0.05_F12/F11_at_90deg"] = rnd(z[0, 1] / z[0, 0], 6)
    assert z[0, 1] / z[0, 0] < -0.99

    # 3. non-absorbing spheroid: optical theorem vs angular integral
    s = new_scatterer(3.0, 0.5, complex(1.5, 0.0))
    cur, n, _ = converge(s, thetas, quiet=True)
    checks["nonabsorbing_prolate2_eq_rad3_m1.5"] = {
        "n_alpha=n_beta": n,
        "cext": rnd(cur["cext"]),
        "csca": rnd(cur["csca"]),
        "rel_diff": rnd(abs(cur["csca"] / cur["cext"] - 1), 3),
    }
    assert abs(cur["csca"] / cur["cext"] - 1) < 1e-5

    # 4. pytmatrix's averaging vs an independent quadrature on calcampl
    s = new_scatterer(3.0, 2.0, M)
    d = own_average_check(s, 24, [0.0, 30.0, 90.0, 150.0, 180.0])
    checks["oblate2_eq_rad3_pytmatrix_average_vs_own_quadrature_N24"] = rnd(d, 3)
    assert d < 1e-6

    # 5. single-orientation Csca: own quadrature vs pytmatrix.scatter.sca_xsect (dblquad)
    s = new_scatterer(2.0, 0.5, M)
    fo = fixed_orientation(s, 0.0, 90.0, s.nmax)
    s.orient = orientation.orient_single
    s.set_geometry((0.0, 0.0, 0.0, 0.0, 0.0, 90.0))
    ref = {p: scatter.sca_xsect(s, h_pol=(p == "h_pol")) for p in ("v_pol", "h_pol")}
    diff = max(abs(fo[p]["csca"] / ref[p] - 1) for p in ref)
    checks["prolate2_eq_rad2_beta90_csca_own_vs_sca_xsect"] = rnd(diff, 3)
    assert diff < 1e-6
    return checks


def run_case(shape, aspect, eq_rad, today, pyt_version):
    axis_ratio = 1.0 / aspect if shape == "prolate" else aspect
    t0 = time.time()
    s = new_scatterer(eq_rad, axis_ratio, M)
    nmax = s.nmax
    print(f"{shape} aspect={aspect} eq_rad={eq_rad}: nmax={nmax}", flush=True)
    cur, n, history = converge(s, THETA_DEG)
    f = f_elements(cur["z"])
    a1 = 4.0 * np.pi * f["F11"] / cur["csca"]
    sym = symmetry_residual(cur["z"])

    # fixed orientations (same T-matrix, still the current one)
    fixed = {}
    for name, beta in (("axis_along_incidence_beta0", 0.0), ("axis_perpendicular_beta90_alpha0", 90.0)):
        fixed[name] = fixed_orientation(s, 0.0, beta, nmax)

    # T-matrix truncation estimate: repeat the final average with other ddelt
    tm_check = []
    for dd in DDELT_CHECKS:
        s2 = new_scatterer(eq_rad, axis_ratio, M, ddelt=dd)
        th2, mu2, w2 = gauss_theta(s2.nmax)
        alt = averaged(s2, n, n, THETA_DEG, th2, mu2, w2)
        dx, df = change(alt, cur)
        tm_check.append(
            {"ddelt": dd, "nmax": int(s2.nmax), "rel_change_xsect_g": rnd(dx, 3), "change_F": rnd(df, 3)}
        )
    th_gl = gauss_theta(nmax)[0]

    b_sym, a_eq = semi_axes(axis_ratio, eq_rad)
    cabs = cur["cext"] - cur["csca"]
    print(
        f"    Cext={cur['cext']:.6f} Csca={cur['csca']:.6f} Cabs={cabs:.6f} g={cur['g']:.6f}"
        f"  ({time.time() - t0:.0f} s)",
        flush=True,
    )
    return {
        "name": f"{shape}_aspect{aspect:g}_eqrad{eq_rad:g}",
        "shape": shape,
        "aspect_ratio": aspect,
        "semi_axis_symmetry": rnd(b_sym, 12),
        "semi_axis_equatorial": rnd(a_eq, 12),
        "pytmatrix_axis_ratio": rnd(axis_ratio, 12),
        "eq_rad": eq_rad,
        "size_parameter": rnd(2 * np.pi * eq_rad / WAVELENGTH, 12),
        "m": [M.real, M.imag],
        "wavelength": WAVELENGTH,
        "orientation_averaged": {
            "Cext": rnd(cur["cext"]),
            "Csca": rnd(cur["csca"]),
            "Cabs": rnd(cabs),
            "g": rnd(cur["g"]),
            "Qext": rnd(cur["cext"] / (np.pi * eq_rad**2)),
            "Qsca": rnd(cur["csca"] / (np.pi * eq_rad**2)),
            "Cext_v_pol_minus_h_pol_rel": rnd((cur["cext_v"] - cur["cext_h"]) / cur["cext"], 2),
            "theta_deg": THETA_DEG.tolist(),
            "F11": rnd(f["F11"]),
            "a1": rnd(a1),
            "F22_F11": rnd(f["F22_F11"], 7),
            "F33_F11": rnd(f["F33_F11"], 7),
            "F44_F11": rnd(f["F44_F11"], 7),
            "F12_F11": rnd(f["F12_F11"], 7),
            "F34_F11": rnd(f["F34_F11"], 7),
        },
        "fixed_orientation": fixed,
        "averaging": {
            "method": "pytmatrix.orientation.orient_averaged_fixed, or_pdf=uniform_pdf()",
            "n_alpha": n,
            "n_beta": n,
            "theta_integration": f"Gauss-Legendre in cos(theta), {len(th_gl)} points, phi = 0",
            "convergence_history": [
                {k: (rnd(v, 3) if isinstance(v, float) else v) for k, v in h.items()} for h in history
            ],
            "est_rel_error_xsect_g": rnd(history[-1]["d_xsect_rel"], 3),
            "est_error_F": rnd(history[-1]["d_F"], 3),
            "symmetry_residual": rnd(sym, 3),
        },
        "tmatrix": {
            "ddelt": DDELT,
            "ndgs": NDGS,
            "nmax": int(nmax),
            "changes_vs_other_ddelt": tm_check,
        },
        "pytmatrix_version": pyt_version,
        "date": today,
    }


CONVENTIONS = {
    "units": "lengths in the units of wavelength/(2*pi), i.e. k = 1; cross sections in length^2",
    "time_dependence": "exp(-i omega t); m = m' + i m'' with m'' > 0 absorbing",
    "geometry": (
        "incidence along +z; scattering direction (theta, phi = 0), scattering plane = xz plane "
        "(pytmatrix thet0 = 0, phi0 = 0, phi = 0). Random orientation: symmetry axis uniform on "
        "the sphere, incident direction fixed."
    ),
    "m": "[real part, imaginary part] of the refractive index relative to the host medium",
    "pytmatrix_axis_ratio": "equatorial semi-axis / symmetry semi-axis (< 1 prolate, > 1 oblate)",
    "aspect_ratio": "longer / shorter semi-axis (>= 1)",
    "F11": (
        "differential scattering cross section for unpolarized incidence, dCsca/dOmega (length^2/sr) "
        "= Mishchenko's F11 = pytmatrix Z[0,0] = Bohren & Huffman S11/k^2 (k = 1); "
        "2*pi * integral F11 sin(theta) dtheta = Csca"
    ),
    "a1": "phase function 4*pi*F11/Csca, normalized so (1/2) * integral a1 sin(theta) dtheta = 1",
    "Fij_F11": (
        "ratios of the 4x4 Stokes scattering matrix F (Stokes I, Q, U, V as in Bohren & Huffman and "
        "Mishchenko: Q = |E_par|^2 - |E_perp|^2 relative to the scattering plane). Verified against "
        "Mie: F12/F11 = S12/S11, F33/F11 = S33/S11, F34/F11 = S34/S11 of Bohren & Huffman "
        "(S12 = (|S2|^2-|S1|^2)/2, S33 = Re(S2 S1*), S34 = Im(S2 S1*)), same signs. So F12/F11 < 0 "
        "at 90 deg for Rayleigh scatterers (-1 for a small sphere); degree of linear polarization "
        "for unpolarized incidence = -F12/F11."
    ),
    "amplitude_matrix": (
        "pytmatrix/Mishchenko S = [[S_vv, S_vh], [S_hv, S_hh]] in length units, E_sca = exp(ikr)/r S E_inc, "
        "v = e_theta, h = e_phi. For a sphere (checked): S_vv = i S2/k, S_hh = i S1/k with Bohren & "
        "Huffman's S1, S2; F12 = (|S_vv|^2 - |S_hh|^2)/2, F33 = Re(S_vv S_hh*), F34 = Im(S_vv S_hh*)."
    ),
    "Cext": "orientation-averaged, from the optical theorem on the averaged forward amplitude matrix",
    "Cext_v_pol_minus_h_pol_rel": "(Cext(v) - Cext(h))/Cext of the average; 0 for random orientation",
    "Csca_g": "angular integrals of the averaged F11 (Gauss-Legendre in cos theta)",
    "Cabs": "Cext - Csca",
    "averaging_errors": (
        "est_rel_error_xsect_g / est_error_F: change between the last two (n_alpha = n_beta) levels "
        "(relative for Cext, Csca, g and F11, absolute for Fij/F11); the error of the stored, finer level "
        "is smaller. symmetry_residual: max over theta of |F13..F42|/F11, |F21-F12|/F11, |F43+F34|/F11 "
        "(all exactly 0 for random orientation)."
    ),
    "fixed_orientation": (
        "single orientation, incidence along +z. v_pol: incident E along x; h_pol: incident E along "
        "y. beta0: symmetry axis along z (both polarizations equal by symmetry). "
        "beta90_alpha0: symmetry axis along x, so v_pol = E parallel to the axis, h_pol = E "
        "perpendicular to it (k always perpendicular). g = <cos theta> for that polarization."
    ),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(Path(__file__).with_name("tmatrix_spheroids.json")))
    ap.add_argument("--skip-checks", action="store_true")
    args = ap.parse_args()
    today = datetime.date.today().isoformat()
    try:
        pyt_version = version("pytmatrix")
    except PackageNotFoundError:  # the binary-wheel fork installs the same `pytmatrix` module
        pyt_version = "pytmatrixc " + version("pytmatrixc")
    checks = {} if args.skip_checks else run_checks()
    if checks:
        print(json.dumps(checks, indent=1), flush=True)
    cases = [run_case(sh, asp, r, today, pyt_version) for sh, asp, r in CASES]
    data = {
        "description": (
            "T-matrix (pytmatrix / Mishchenko ampld.lp.f) reference for randomly oriented and two "
            "fixed orientations of homogeneous spheroids; generated by make_tmatrix_reference.py"
        ),
        "environment": [
            "apt-get install -y gfortran",
            "python3.11 -m venv /work/tmatrix_venv",
            "/work/tmatrix_venv/bin/pip install 'numpy<1.26' 'setuptools<60' wheel 'scipy<1.14'",
            "/work/tmatrix_venv/bin/pip install --no-build-isolation pytmatrix==0.3.2",
            "/work/tmatrix_venv/bin/python tests/data/make_tmatrix_reference.py",
        ],
        "pytmatrix_version": pyt_version,
        "numpy_version": np.__version__,
        "python_version": sys.version.split()[0],
        "date": today,
        "conventions": CONVENTIONS,
        "checks": checks,
        "cases": cases,
    }
    Path(args.out).write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
