"""emjax.layered against empymod on Quinto et al.'s case, on this machine's CPU.

The case (emjax.layered.bench.paper_case_stack / paper_case_points): glass (eps 2.25) fills z > 0, air
z < 0; a vertical electric dipole at (0, 0, 10) nm, vacuum wavelength 600 nm; Ez of the
reflected (glass) and transmitted (air) field on n x n points of the XZ plane spaced 1 nm,
centred at the origin. Reference: emjax at rtol = 1e-12 (double precision). Error measures, as
in emjax.layered.bench.layered_benchmark: max |Ez - Ez_ref| / max |Ez_ref| (normwise) and the median of
|Ez - Ez_ref| / |Ez_ref| (pointwise).

empymod (https://empymod.emsig.xyz; SI units, z positive down, exp(+i omega t), unit source
I dl = 1 A m) is mapped onto emjax's convention as follows (checked at start-up against
emjax.layered.free_space in a homogeneous medium, where empymod's analytical full space agrees
to ~1e-15):

* geometry: z_empymod = -z_emjax * 1e-9 m; depth = [0], layer 0 (z_empymod < 0) is glass;
  ab = 33 (z source, z receiver; flipping both z axes leaves the zz component unchanged);
  one empymod.dipole call per receiver depth (a map row of n offsets), xdirect=None (the
  source-layer direct wave left out, so glass points give the reflected field and air points
  the transmitted field, as emjax's part="scattered"); receivers on the interface belong to
  the layer above (glass) in both codes.
* media: epermH = [2.25, 1], res = 1e20 Ohm m (sigma = 1e-20 S/m, Im eps ~ 4e-25: lossless to
  double precision; res = inf gives the same numbers but trips a NaN check in empymod);
  a lossy glass eps' + i eps'' is res = 1 / (omega eps0 eps'').
* field: a current moment I dl = 1 A m is a dipole moment p = i I dl / omega (exp(-i omega t)),
  and emjax's E is in p / (eps0 nm^3) for p = 1, so
  Ez_emjax = 1e-27 * eps0 * (-i omega) * conj(Ez_empymod)  (eps0 = 1 / (mu0 c^2), empymod's).
* offsets: empymod clamps offsets below min_off (default 1 mm!) up to min_off; it is set to
  1e-12 m (1e-3 nm) here, so the rho = 0 column is evaluated at rho = 1e-3 nm.

    PYTHONPATH=src .venv/bin/python benchmarks/layered_empymod.py [--sizes 32 64 128]

empymod is not a dependency of emjax: install it by hand (pip install empymod).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import io
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

try:
    import empymod
except ImportError:
    sys.exit(
        "layered_empymod.py needs empymod, which is not an emjax dependency: install it with "
        "`.venv/bin/pip install empymod` and run again."
    )

import jax

import emjax
from emjax.backend import device_description
from emjax.layered import Stack, dipole_fields
from emjax.layered.bench import paper_case_points, paper_case_stack
from emjax.layered.green import free_space

WAVELENGTH_NM = 600.0
Z_SOURCE_NM = 10.0
EPS_GLASS = 2.25
C0 = 299792458.0  # empymod's constants (empymod.utils.check_frequency)
MU0 = 4e-7 * np.pi
EPS0 = 1.0 / (MU0 * C0 * C0)
FREQ = C0 / (WAVELENGTH_NM * 1e-9)
OMEGA = 2 * np.pi * FREQ
RES_LOSSLESS = 1e20
MIN_OFF = 1e-12
NM = 1e-9

# (label, ht, htarg): empymod's Hankel transforms. quad's defaults (a = 1e-6, b = 0.1 1/m) are
# geophysical wavenumbers; "quad-scaled" gives it this problem's range instead (up to
# 50 / h_min with h_min = 10 nm, the closest image distance).
METHODS = [
    ("dlf key_201_2009 (default)", "dlf", {}),
    ("dlf key_401_2009", "dlf", {"dlf": "key_401_2009"}),
    ("dlf wer_2001_2018", "dlf", {"dlf": "wer_2001_2018"}),
    ("qwe (default htarg)", "qwe", {}),
    ("quad (default htarg)", "quad", {}),
    ("quad a=1 b=5e9 1/m", "quad", {"a": 1.0, "b": 5e9}),
]


def to_emjax(ez_empymod):
    """empymod's Ez (V/m for I dl = 1 A m, exp(+i omega t)) -> emjax's (p = 1, eps0 = 1, nm)."""
    return 1e-27 * EPS0 * (-1j * OMEGA) * np.conj(np.asarray(ez_empymod))


def res_of(eps: complex) -> float:
    return RES_LOSSLESS if eps.imag == 0 else 1.0 / (OMEGA * EPS0 * eps.imag)


def empymod_ez(pts, method, eps_glass=EPS_GLASS + 0j):
    """Ez at the points (emjax units), the seconds spent in empymod.dipole, and the number of
    calls in which empymod reported a non-converged Hankel quadrature."""
    _, ht, htarg = method
    out = np.empty(len(pts), complex)
    seconds, not_converged = 0.0, 0
    for z in np.unique(pts[:, 2]):
        sel = np.flatnonzero(pts[:, 2] == z)
        log = io.StringIO()
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(log):
            e = empymod.dipole(
                src=[0.0, 0.0, -Z_SOURCE_NM * NM],
                rec=[pts[sel, 0] * NM, pts[sel, 1] * NM, -z * NM],
                depth=[0.0],
                res=[res_of(eps_glass), RES_LOSSLESS],
                freqtime=FREQ,
                ab=33,
                epermH=[eps_glass.real, 1.0],
                xdirect=None,
                ht=ht,
                htarg=dict(htarg),
                verb=1,
            )
        seconds += time.perf_counter() - t0
        not_converged += "did not converge" in log.getvalue()
        out[sel] = np.asarray(e).reshape(-1)
    return to_emjax(out), seconds, not_converged


def errors(ez, ref, pts) -> dict:
    d = np.abs(ez - ref)
    scale = np.abs(ref).max()
    rel = d / np.maximum(np.abs(ref), 1e-300)
    axis = pts[:, 0] == 0
    glass = pts[:, 2] >= 0
    return {
        "max_error_normwise": float(d.max() / scale),
        "median_error_pointwise": float(np.median(rel)),
        "max_error_normwise_rho_gt0": float(d[~axis].max() / scale),
        "max_error_normwise_rho0": float(d[axis].max() / scale),
        "max_error_normwise_glass": float(d[glass].max() / scale),
        "max_error_normwise_air": float(d[~glass].max() / scale),
        "median_error_pointwise_glass": float(np.median(rel[glass])),
        "median_error_pointwise_air": float(np.median(rel[~glass])),
    }


def emjax_ez(stack, pts, rtol):
    r = dipole_fields(
        stack,
        WAVELENGTH_NM,
        (0.0, 0.0, Z_SOURCE_NM),
        pts,
        p=(0, 0, 1),
        part="scattered",
        fields="E",
        rtol=rtol,
        precision="double",
    )
    return r.E[:, 2]


def convention_check() -> dict:
    """empymod's analytical full space (xdirect=True) and its wavenumber-domain direct wave
    (xdirect=False, default DLF) against emjax.layered.free_space, glass, R of 1 ... 300 nm."""
    xs = np.array([1.0, 3.0, 7.0, 50.0, 300.0])
    dz = -5.0  # receiver 5 nm below the source (emjax z up)
    k0 = 2 * np.pi / WAVELENGTH_NM
    G, _ = free_space(np.sqrt(EPS_GLASS) * k0, k0, np.stack([xs, 0 * xs, dz + 0 * xs], 1))
    ref = k0**2 * G[:, 2, 2]
    out = {"case": "convention_check", "R_nm": np.hypot(xs, dz).tolist()}
    for xdirect in (True, False):
        with contextlib.redirect_stdout(io.StringIO()):
            e = empymod.dipole(
                [0.0, 0.0, 0.0],
                [xs * NM, 0 * xs, -dz * NM],
                [],
                [RES_LOSSLESS],
                FREQ,
                ab=33,
                epermH=[EPS_GLASS],
                xdirect=xdirect,
                verb=1,
            )
        rel = np.abs(to_emjax(e) / ref - 1)
        key = "analytic (xdirect=True)" if xdirect else "wavenumber-domain DLF (xdirect=False)"
        out[key] = rel.tolist()
    return out


def context() -> dict:
    import numba
    import scipy

    return {
        "date": datetime.date.today().isoformat(),
        "machine": device_description(),
        "versions": {
            "emjax": emjax.__version__,
            "empymod": empymod.__version__,
            "jax": jax.__version__,
            "numpy": np.__version__,
            "scipy": scipy.__version__,
            "numba": numba.__version__,
            "python": platform.python_version(),
        },
        "empymod_min_off_m": MIN_OFF,
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[32, 64, 128])
    ap.add_argument("--rtols", type=float, nargs="+", default=[1e-4, 1e-8], help="emjax rtols timed")
    ap.add_argument(
        "--budget",
        type=float,
        default=300.0,
        help="skip an empymod method at a size when its time, extrapolated as n^2 from the "
        "previous size, exceeds this many seconds",
    )
    ap.add_argument(
        "--loss",
        type=float,
        nargs="*",
        default=[1e-3, 1e-2, 1e-1],
        help="Im eps of the glass for the loss study (at the smallest size)",
    )
    ap.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parent / "results" / "cpu-2core-layered-empymod.json",
    )
    args = ap.parse_args(argv)
    empymod.set_minimum(min_off=MIN_OFF)
    ctx = context()
    rows = []

    def add(rec):
        rec = {**rec, **ctx}
        rows.append(rec)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(rows, indent=1) + "\n")
        if "seconds" in rec:
            print(
                f"{rec['code']:7s} {rec['ht']:28s} {rec.get('eps_glass', '2.25'):>10s} {rec['n']:5d} "
                f"{rec['seconds']:10.3f} {rec['max_error_normwise']:11.2e} "
                f"{rec['median_error_pointwise']:11.2e} {rec['max_error_normwise_rho_gt0']:11.2e} "
                f"{rec['max_error_normwise_glass']:11.2e} {rec['max_error_normwise_air']:11.2e} "
                f"{rec['loadavg_1min']:5.2f}",
                flush=True,
            )

    chk = convention_check()
    add(chk)
    print("convention check, |Ez_empymod / Ez_emjax - 1| in homogeneous glass at R =", chk["R_nm"])
    for k, v in chk.items():
        if k not in ("case", "R_nm"):
            print(f"  {k}: " + " ".join(f"{x:.1e}" for x in v))
    print(
        f"\n{'code':7s} {'ht / rtol':28s} {'eps glass':>10s} {'n':>5s} {'seconds':>10s} "
        f"{'err norm':>11s} {'median pt':>11s} {'norm rho>0':>11s} {'norm glass':>11s} "
        f"{'norm air':>11s} {'load':>5s}"
    )

    # warm-up: numba compiles empymod's kernels on their first calls (and caches them on
    # disk); emjax compiles on the first call of each shape, timed apart below
    warm = paper_case_points(min(args.sizes))
    for m in METHODS:
        empymod_ez(warm[warm[:, 2] == -1.0], m)

    last = {}
    stack = paper_case_stack()
    for n in sorted(args.sizes):
        pts = paper_case_points(n)
        t0 = time.perf_counter()
        ref = emjax_ez(stack, pts, 1e-12)
        ref_s = time.perf_counter() - t0
        base = {"case": "layered_quinto2011", "n": n, "points": n * n, "map": f"{n}x{n}"}
        for rtol in args.rtols:
            t0 = time.perf_counter()
            emjax_ez(stack, pts, rtol)
            first = time.perf_counter() - t0
            times, load = [], os.getloadavg()[0]
            for _ in range(2):
                t0 = time.perf_counter()
                ez = emjax_ez(stack, pts, rtol)
                times.append(time.perf_counter() - t0)
            add(
                {
                    **base,
                    "code": "emjax",
                    "ht": f"rtol {rtol:g}",
                    "precision": "double",
                    "seconds": min(times),
                    "seconds_all": times,
                    "first_call_s": first,
                    "reference_s": ref_s,
                    "loadavg_1min": load,
                    **errors(ez, ref, pts),
                }
            )
        for m in METHODS:
            label = m[0]
            if label in last:
                n0, s0 = last[label]
                if s0 * (n / n0) ** 2 > args.budget:
                    print(f"empymod {label:28s} {n:5d}  skipped: ~{s0 * (n / n0) ** 2:.0f} s expected")
                    continue
            load = os.getloadavg()[0]
            ez, secs, nconv = empymod_ez(pts, m)
            last[label] = (n, secs)
            add(
                {
                    **base,
                    "code": "empymod",
                    "ht": label,
                    "htarg": m[2],
                    "seconds": secs,
                    "calls": int(len(np.unique(pts[:, 2]))),
                    "calls_not_converged": int(nconv),
                    "loadavg_1min": load,
                    **errors(ez, ref, pts),
                }
            )

    # loss study: a lossy glass in both codes, empymod's DLF against emjax's lossy reference;
    # "effect_of_loss": how much the loss itself changes emjax's field
    n = min(args.sizes)
    pts = paper_case_points(n)
    ref0 = emjax_ez(stack, pts, 1e-12)
    for eps2 in args.loss:
        eps = complex(EPS_GLASS, eps2)
        lossy = Stack(eps=[eps, 1.0])
        ref = emjax_ez(lossy, pts, 1e-12)
        effect = float(np.abs(ref - ref0).max() / np.abs(ref0).max())
        base = {
            "case": "layered_quinto2011_lossy_glass",
            "eps_glass": f"2.25+{eps2:g}j",
            "n": n,
            "points": n * n,
            "effect_of_loss_normwise": effect,
        }
        emjax_ez(lossy, pts, 1e-8)
        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        ez = emjax_ez(lossy, pts, 1e-8)
        add(
            {
                **base,
                "code": "emjax",
                "ht": "rtol 1e-08",
                "seconds": time.perf_counter() - t0,
                "loadavg_1min": load,
                **errors(ez, ref, pts),
            }
        )
        for m in METHODS[:3]:
            load = os.getloadavg()[0]
            ez, secs, nconv = empymod_ez(pts, m, eps)
            add(
                {
                    **base,
                    "code": "empymod",
                    "ht": m[0],
                    "htarg": m[2],
                    "seconds": secs,
                    "calls_not_converged": int(nconv),
                    "loadavg_1min": load,
                    **errors(ez, ref, pts),
                }
            )
        print(f"  eps_glass = {eps}: the loss changes emjax's field by {effect:.2e} (normwise)")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
