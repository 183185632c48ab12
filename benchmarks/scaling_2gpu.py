"""One device against two (or ``--devices 2 4``: two, then four), side by side in one
process: the DDA orientation average (orientations dealt out whole), one DDA lattice in
slabs, and a layered map (points dealt out whole). Each case: a warm-up call on one device
(compilation and first run), timed calls, then the same on k devices; a JSON line per case
with the devices, JAX version, commit, the compile (first call) and run times, the speed-up
and the largest difference between the two answers. Appended to ``$OUT/scaling_2gpu.json``
(a JSON list) as it goes, when ``$OUT`` is set. A case that fails prints its error and the run moves on.

    python benchmarks/scaling_2gpu.py                 # a 2-GPU host (about 5 minutes)
    XLA_FLAGS=--xla_force_host_platform_device_count=2 PYTHONPATH=src \\
        python benchmarks/scaling_2gpu.py --small     # the same on 2 virtual CPU devices

Sizes: ``--small`` shrinks every case to seconds on a CPU. The full run: a hexagonal ice
prism (m = 1.31, height = width, 64 and 96 dipoles across), 26 orientations (beta level 2,
gamma level 3, 6-fold symmetry), 13 orientations per device and batch; a 128^3 sphere in
slabs (matvec and QMR iteration, ``emjax.dda.bench.scaling_benchmark``); Quinto et al.'s
2048^2 map (4.2 M points, double, rtol 1e-8); ``fdfd3d`` (not in the default cases): one
256^3 FDFD 3-D solve, 200 QMR iterations, time per iteration. ``--budget`` seconds: cases not started by
then are skipped.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import sys
import time
import traceback
import warnings
from pathlib import Path

import jax
import numpy as np

if importlib.util.find_spec("emjax") is None:  # the checkout's, unless one is on the path (PYTHONPATH)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from emjax.backend import device_description  # noqa: E402
from emjax.bench import git_commit  # noqa: E402
from emjax.layout import Layout  # noqa: E402


def _meta(n_devices: int) -> dict:
    devs = jax.devices()[:n_devices]
    return {
        "devices": [device_description(d) for d in devs],
        "jax": jax.__version__,
        "commit": git_commit(),
        "date": datetime.date.today().isoformat(),
    }


def _timed(fn, repeats: int):
    """(first call's seconds, best of ``repeats`` further calls, last result)."""
    t0 = time.perf_counter()
    out = fn()
    first = time.perf_counter() - t0
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return first, best, out


def _rel(a, b) -> float:
    a, b = np.asarray(a), np.asarray(b)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def _side_by_side(one, several, k: int, repeats: int) -> tuple[dict, object, object]:
    """One device against ``k``: (row, result on one, result on k)."""
    f1, t1, r1 = _timed(one, repeats)
    f2, t2, r2 = _timed(several, repeats)
    row = {
        "devices": k,
        "one_device": {"first_call_s": f1, "run_s": t1, "compile_s_approx": max(f1 - t1, 0.0)},
        "several_devices": {"first_call_s": f2, "run_s": t2, "compile_s_approx": max(f2 - t2, 0.0)},
        "speedup": t1 / t2,
        "efficiency": t1 / t2 / k,
    }
    return row, r1, r2


def case_orientations(grid: int, small: bool, repeats: int, k: int = 2) -> dict:
    """The orientation average: one device with batches of B orientations against ``k`` with
    batches of k B (B each), so both solve the same sets of orientations together."""
    from emjax import dda, geometry
    from emjax.scattering import OrientationAverage

    gamma = (2, 2) if small else (3, 3)
    q = OrientationAverage(eps=0, beta_levels=(2, 2), gamma_levels=gamma, n_alpha=8, n_fold=6)
    prob = dda.DDAProblem(
        geometry.Prism(6, 1.0),
        m=(1.31 + 0.0j,),
        size_x=1.5,
        wavelength=1.0,
        grid=grid,
        theta=np.arange(0.0, 181.0, 10.0 if small else 2.0),
    )
    solver = dda.QMR(rtol=1e-5)
    n_orient = len(q.weights(q.beta_levels[1], q.gamma_levels[1]))
    B = -(-n_orient // k)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # non-convergence is reported below
        row, a1, a2 = _side_by_side(
            lambda: dda.average(prob, q, solver, batch=B),
            lambda: dda.average(prob, q, solver, batch=k * B, layout=k),
            k,
            repeats,
        )
    row.update(
        case="dda_orientation_average",
        grid=list(a1.lattice.shape),
        dipoles=int(a1.lattice.n_dipoles),
        orientations=n_orient,
        orientations_per_device_batch=B,
        precision=prob.precision,
        iterations_max=int(np.max(a1.iterations)),
        converged=bool(np.all(a1.converged) and np.all(a2.converged)),
        max_rel_diff_Cext=_rel(a2.Cext_xy, a1.Cext_xy),
        max_rel_diff_mueller=_rel(a2.mueller, a1.mueller),
        timings_one=a1.timings,
        timings_several=a2.timings,
    )
    return row


def case_slabs(grid: int, small: bool, repeats: int, k: int = 2) -> dict:
    """One lattice in x slabs (the distributed FFT): matvec and QMR iteration, 1 vs ``k``."""
    from emjax.dda.bench import scaling_benchmark

    rows = list(scaling_benchmark(grid, k, "slabs", "double", repeats=max(repeats, 2)))
    one, two = rows[0], rows[-1]
    keys = ("matvec_compile_s", "matvec_s", "iteration_s")
    return {
        "case": "dda_lattice_slabs",
        "grid": grid,
        "devices": k,
        "one_device": {key: one[key] for key in keys},
        "several_devices": {key: two[key] for key in keys},
        "speedup": one["iteration_s"] / two["iteration_s"],
        "speedup_matvec": one["matvec_s"] / two["matvec_s"],
        "efficiency": one["iteration_s"] / two["iteration_s"] / k,
        "precision": "double",
    }


def case_layered(n: int, small: bool, repeats: int, k: int = 2) -> dict:
    """Quinto et al.'s n x n map (a vertical dipole in glass 10 nm above air, 600 nm): Ez of
    the scattered field, points dealt out whole over the devices."""
    from emjax.layered import dipole_fields
    from emjax.layered.bench import paper_case_points, paper_case_stack

    stack, pts = paper_case_stack(), paper_case_points(n)
    kw = dict(p=(0, 0, 1), part="scattered", fields="E", rtol=1e-8, precision="double")

    def run(layout):
        return lambda: dipole_fields(stack, 600.0, (0.0, 0.0, 10.0), pts, layout=layout, **kw)

    row, r1, r2 = _side_by_side(run(None), run(k), k, repeats)
    row.update(
        case="layered_map",
        map=f"{n}x{n}",
        points=int(len(pts)),
        precision="double",
        rtol=1e-8,
        groups=len(r1.stats),
        second_passes=sum(bool(s["second_pass"]) for s in r1.stats),
        # where the time went (wall seconds per stage of the last timed call: set-up, the
        # groups' refinement, the integration pass, the second pass; per device the time
        # its host thread waited for results; see benchmarks/layered_2gpu.py)
        stages_s_one=r1.timings,
        stages_s_several=r2.timings,
        max_rel_diff_E=_rel(r2.E, r1.E),
        max_error_estimate=float(np.max(r1.error)),
    )
    return row


def case_fdfd3d(n: int, small: bool, repeats: int, k: int = 2) -> dict:
    """One FDFD 3-D solve of an n^3 grid (an eps = 4 sphere, a plane wave, 8-cell SC-PML,
    complex128, QMR with Jacobi) on one device and in slabs along x on k: a fixed number
    of iterations (``maxiter``, no convergence), so time per iteration compares."""
    from emjax import fdfd, geometry, scene
    from emjax.krylov import QMR

    res = n / 1.0  # the region is one unit across: n cells
    sc = scene.Scene([scene.Object(geometry.Sphere(), 4.0, size=0.3)])
    wave = fdfd.PlaneWave3D((0, 0, 1), (1, 0, 0))
    iters = 20 if small else 200
    solver = fdfd.Iterative(QMR(rtol=1e-14, maxiter=iters, chunk=iters))
    args = ((1.0, 1.0, 1.0), res, 2.0, wave, sc)

    def run(layout):
        return lambda: fdfd.solve_3d(*args, pml=fdfd.SCPML(8), solver=solver, progress=False, layout=layout)

    row, r1, r2 = _side_by_side(run(None), run(k), k, repeats)
    it1, it2 = r1.stats.get("iterations"), r2.stats.get("iterations")
    row.update(
        case="fdfd3d",
        grid=list(np.shape(r1.Es)[1:]),
        iterations=[it1, it2],
        iteration_s_one=row["one_device"]["run_s"] / max(it1, 1),
        iteration_s_several=row["several_devices"]["run_s"] / max(it2, 1),
        max_rel_diff_E=_rel(r2.Es, r1.Es),
        precision="double",
    )
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--small", action="store_true", help="tiny sizes (2 virtual CPU devices)")
    ap.add_argument("--cases", default="orient64,layered,orient96,slabs", help="comma-separated cases")
    ap.add_argument("--devices", type=int, nargs="+", default=[2], help="device counts against one (2)")
    ap.add_argument("--repeats", type=int, default=1, help="timed calls after the warm-up (best kept)")
    ap.add_argument("--budget", type=float, default=330.0, help="seconds; later cases are skipped")
    args = ap.parse_args(argv)
    if len(jax.devices()) < max(args.devices) or min(args.devices) < 2:
        print(
            json.dumps(
                {
                    "error": f"--devices {args.devices}: each 2 .. {len(jax.devices())} "
                    f"(JAX sees {jax.devices()})"
                }
            )
        )
        return 1
    s = args.small
    cases = {
        "orient64": lambda k: case_orientations(8 if s else 64, s, args.repeats, k),
        "orient96": lambda k: case_orientations(10 if s else 96, s, args.repeats, k),
        "slabs": lambda k: case_slabs(12 if s else 128, s, args.repeats, k),
        "layered": lambda k: case_layered(64 if s else 2048, s, max(args.repeats, 2), k),
        "fdfd3d": lambda k: case_fdfd3d(16 if s else 256, s, args.repeats, k),
    }
    out_dir = os.environ.get("OUT")
    out_file = Path(out_dir) / "scaling_2gpu.json" if out_dir else None
    rows, t_start = [], time.perf_counter()
    for name in [c.strip() for c in args.cases.split(",") if c.strip()]:
        for k in args.devices:
            Layout.of(k)  # the first k devices
            row = {"case_key": name, **_meta(k)}
            if name not in cases:
                row["error"] = f"unknown case {name!r}; known: {sorted(cases)}"
            elif time.perf_counter() - t_start > args.budget:
                row["skipped"] = f"over the budget of {args.budget:g} s"
            else:
                t0 = time.perf_counter()
                try:
                    row.update(cases[name](k))
                except Exception as e:  # noqa: BLE001  (report and go on to the next case)
                    row["error"] = f"{type(e).__name__}: {e}"
                    row["traceback"] = traceback.format_exc()[-2000:]
                row["case_s"] = time.perf_counter() - t0
            rows.append(row)
            print(json.dumps(row, default=str), flush=True)
            if out_file is not None:
                out_file.write_text(json.dumps(rows, indent=1, default=str))
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
