"""emjax's 2-D FDFD next to ceviche's on this CPU: the same plane-wave problem, wall time and
the scattered field's error against the exact cylinder series.

    python benchmarks/fdfd_vs_ceviche.py [--n 400] [--repeats 2] [--json out.json]

Each code first solves a tiny problem untimed (imports, first use), unless ``--no-warmup``.

The problem: a dielectric cylinder (eps = 4, radius one wavelength) in vacuum under a unit TM
plane wave along +x, N x N nodes (PML of 20 cells included) at 40 nodes per wavelength.
Both codes get the same permittivity at the E_z nodes (emjax's subpixel average). emjax runs
its default compact stencil (fourth-order bulk dispersion, nine points) and its five-point
"yee" stencil (ceviche's operator: the comparison of the solvers alone: PML, assembly,
sparse LU), and the compact stencil once more on the coarsest grid that is as accurate as
ceviche on the N x N grid (``emjax_at_ceviche_accuracy``) and solve for the scattered field
with the same right side, ``omega^2 (eps - 1) E_inc`` on the cylinder's nodes. ceviche works
in SI units with fields ~ exp(+i omega t) (its PML stretch is 1 - i sigma / omega): its
incident wave is exp(-i k x) and its field the complex conjugate of emjax's (exp(-i omega t)),
which is what is compared. The error is max |E_s - E_series| / max |E_series| over the
annulus 1.2 a < rho < 2.5 a (cut 4 cells inside the region on small grids). ceviche's
difference operators wrap around (periodic / Bloch boundaries behind its PML), emjax's
are zero beyond the ends. ceviche solves with SuperLU here; emjax with its default host
solver (``--solver``: PARDISO when the optional py-mkl-pardiso is installed, then SuperLU is
timed as well, ``emjax_superlu_s``; else SuperLU).

ceviche (pip install ceviche) is not an emjax dependency: without it the script says so and
exits. ceviche solves with scipy's spsolve (SuperLU) unless pyMKL finds MKL's PARDISO.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np
from scipy.special import h1vp, hankel1, jv, jvp


def cylinder_series(eps, a, k, X, Y, nmax=40):
    """Scattered E_z of a unit TM plane wave exp(i k x) (exp(-i omega t)) on a cylinder of
    radius a: sum_n b_n H_n(k rho) exp(i n phi), b_n from E_z and dE_z/drho continuous."""
    m = np.sqrt(eps)
    n = np.arange(-nmax, nmax + 1)
    x = k * a
    b = 1j**n * (m * jv(n, x) * jvp(n, m * x) - jvp(n, x) * jv(n, m * x))
    b /= h1vp(n, x) * jv(n, m * x) - m * hankel1(n, x) * jvp(n, m * x)
    rho, phi = np.hypot(X, Y), np.arctan2(Y, X)
    return sum(b[i] * hankel1(n[i], k * rho) * np.exp(1j * n[i] * phi) for i in range(len(n)))


def best_time(fn, repeats):
    out, times = None, []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return out, min(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=400, help="nodes per axis, PML included")
    ap.add_argument("--resolution", type=float, default=40.0, help="nodes per wavelength")
    ap.add_argument("--pml", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--json", help="append the record to this JSON list")
    ap.add_argument("--no-warmup", action="store_true", help="time the first calls too (imports included)")
    ap.add_argument(
        "--solver",
        default="auto",
        choices=["auto", "superlu", "pardiso"],
        help="emjax's host solver (auto: PARDISO when py-mkl-pardiso is installed, else SuperLU)",
    )
    args = ap.parse_args(argv)
    try:
        import ceviche
        import ceviche.solvers
        from ceviche.constants import C_0, EPSILON_0
    except ImportError:
        print("ceviche is not installed: pip install ceviche (the comparison needs it)", file=sys.stderr)
        return 1

    from emjax import fdfd, geometry, scene
    from emjax.backend import device_description
    from emjax.bench import git_commit
    from emjax.fdfd.permittivity2d import node_permittivity

    wavelength, a, eps_cyl = 1.0, 1.0, 4.0
    n, L, res = args.n, args.pml, args.resolution
    side = (n - 1 - 2 * L) / res
    sc = scene.Scene([scene.Object(geometry.Disk(), eps_cyl, size=2 * a)])
    k = 2 * math.pi / wavelength

    def run_emjax(stencil="compact", res=res, side=side, solver=args.solver):
        return fdfd.solve_tm(
            (side, side),
            res,
            1 / wavelength,
            fdfd.PlaneWave2D(0.0),
            scene=sc,
            pml=fdfd.SCPML(L),
            stencil=stencil,
            solver=solver,
        )

    if not args.no_warmup:  # module imports and first-use costs out of the timings (both codes)
        run_emjax("compact", 10, 2.4)  # a 65^2 grid
        run_emjax("yee", 10, 2.4)
        small = np.ones((2 * L + 11, 2 * L + 11))
        ceviche.fdfd_ez(2 * math.pi * C_0 / 1e-6, 1e-7, small, [L, L]).solve(0j * small)
    r, t_emjax = best_time(run_emjax, args.repeats)
    r_yee, t_yee = best_time(lambda: run_emjax("yee"), args.repeats)
    superlu = None  # emjax with SciPy's SuperLU too, where the default backend is PARDISO
    if "SuperLU" not in r.stats["solver"]:
        _, t_s = best_time(lambda: run_emjax(solver="superlu"), args.repeats)
        _, t_sy = best_time(lambda: run_emjax("yee", solver="superlu"), args.repeats)
        superlu = {"compact_s": t_s, "yee_s": t_sy}
    assert r.Ez.shape == (n, n), r.Ez.shape
    X, Y = np.meshgrid(r.x, r.y, indexing="ij")
    ref = cylinder_series(eps_cyl, a, k, X, Y)
    rho = np.hypot(X, Y)
    ring = (rho > 1.2 * a) & (rho < min(2.5 * a, side / 2 - 4 * wavelength / res))

    def error(Es):
        return float(np.abs(Es[ring] - ref[ring]).max() / np.abs(ref[ring]).max())

    # ceviche, SI units: lengths in micrometres -> metres
    dx = wavelength / res
    eps = node_permittivity(sc, (n, n), dx, (r.x[0], r.y[0]), 2 * math.pi / wavelength)
    omega_si = 2 * math.pi * C_0 / (wavelength * 1e-6)
    einc = np.exp(-1j * k * X)  # exp(+i omega t): a wave along +x
    # A E_s = eps0 omega^2 (eps - 1) E_inc = i omega J  ->  J = -i eps0 omega (eps - 1) E_inc
    Jz = -1j * EPSILON_0 * omega_si * (eps - 1) * einc

    def run_ceviche():
        F = ceviche.fdfd_ez(omega_si, dx * 1e-6, eps, [L, L])
        return F.solve(Jz)[2]

    Ez_c, t_ceviche = best_time(run_ceviche, args.repeats)
    err_c = error(np.conj(Ez_c))
    # the compact stencil on the coarsest grid (same region, same PML) as accurate as ceviche
    matched = None
    for res_m in (8, 10, 12, 14, 16, 20, 24, 30, 40):
        side_m = math.floor(side * res_m) / res_m
        rm, tm_ = best_time(
            lambda res_m=res_m, side_m=side_m: run_emjax("compact", res_m, side_m), args.repeats
        )
        Xm, Ym = np.meshgrid(rm.x, rm.y, indexing="ij")
        rho_m = np.hypot(Xm, Ym)
        ring_m = (rho_m > 1.2 * a) & (rho_m < min(2.5 * a, side_m / 2 - 4 * wavelength / res_m))
        ref_m = cylinder_series(eps_cyl, a, k, Xm[ring_m], Ym[ring_m])
        err_m = float(np.abs(rm.Es[ring_m] - ref_m).max() / np.abs(ref_m).max())
        if err_m <= err_c:
            matched = {
                "nodes_per_wavelength": res_m,
                "grid": "x".join(str(v) for v in rm.Ez.shape),
                "seconds": tm_,
                "error": err_m,
                "speedup_vs_ceviche": t_ceviche / tm_,
            }
            break
    record = {
        "case": "fdfd_2d_dielectric_cylinder_vs_ceviche",
        "grid": f"{n}x{n}",
        "unknowns": n * n,
        "nodes_per_wavelength": res,
        "pml_cells": L,
        "cylinder": {"radius_wavelengths": a, "eps": eps_cyl},
        "emjax_s": t_emjax,
        "emjax_breakdown_s": {key: r.stats[key] for key in ("assemble_s", "factor_s", "solve_s")},
        "emjax_error": error(r.Es),
        "emjax_stencil": "compact",
        "emjax_solver": r.stats["solver"],
        "emjax_yee_s": t_yee,
        "emjax_yee_breakdown_s": {key: r_yee.stats[key] for key in ("assemble_s", "factor_s", "solve_s")},
        "emjax_yee_error": error(r_yee.Es),
        "emjax_at_ceviche_accuracy": matched,
        "emjax_superlu_s": superlu,
        "ceviche_s": t_ceviche,
        "ceviche_over_emjax": t_ceviche / t_emjax,
        "ceviche_over_emjax_yee": t_ceviche / t_yee,
        "ceviche_error": err_c,
        "ceviche_solver": "pyMKL PARDISO" if ceviche.solvers.HAS_MKL else "scipy spsolve (SuperLU)",
        "ceviche_version": getattr(ceviche, "__version__", "0.1.3"),
        "fields_max_difference": float(np.abs(np.conj(Ez_c) - r.Es)[ring].max() / np.abs(ref[ring]).max()),
        "repeats": args.repeats,
        "warmup": not args.no_warmup,
        "device": device_description(),
        "commit": git_commit(),
        "date": time.strftime("%Y-%m-%d"),
    }
    print(json.dumps(record, indent=1))
    if args.json:
        from pathlib import Path

        from emjax.config import append_json

        append_json(Path(args.json), record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
