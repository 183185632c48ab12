"""Jacobi-QMR against the shifted-Laplacian multigrid preconditioner on the 3-D FDFD benchmark.

The scene of ``emjax bench fdfd --dims 3 --size N`` (an eps-4 sphere of radius 0.25
wavelength, 10 cells per wavelength, 8-cell SC-PML, rtol 1e-6; src/emjax/fdfd/bench.py),
solved through :func:`emjax.fdfd.solve_3d` with each solver. One JSON line per (size,
solver): iterations, convergence, seconds (the first call, compilation included, and the
best warm one), the solve's time per iteration, the operator's matvec time and the V-cycle's
measured alone on the same device, and the work per iteration in matvec-equivalents (time
per iteration / matvec time); multigrid lines also give the relative field difference from
the Jacobi-QMR solve of the same size when both ran.

    PYTHONPATH=src python3 benchmarks/fdfd_multigrid.py --sizes 32 48 64
    PYTHONPATH=src python3 benchmarks/fdfd_multigrid.py --sizes 64 128 256 --solvers jacobi-qmr mg-pcocg

The 2-core CPU's lines (a loaded box: times vary by tens of percent, iterations do not) are in
benchmarks/results/cpu-2core-fdfd-multigrid.jsonl.
"""

from __future__ import annotations

import argparse
import datetime
import json
import time

import numpy as np

SOLVERS = ("jacobi-qmr", "mg-pcocg", "mg-bicgstab")


def _solver(name: str, args):
    from emjax.fdfd import Iterative
    from emjax.fdfd.multigrid import Multigrid
    from emjax.krylov import QMR, BiCGStab

    mg = Multigrid(beta=args.beta, nu=args.nu, omega=args.omega, pml_scale=args.pml_scale, levels=args.levels)
    if name == "jacobi-qmr":
        return Iterative(QMR(rtol=args.rtol, maxiter=20_000, chunk=100))
    if name == "mg-pcocg":
        return Iterative(
            QMR(rtol=args.rtol, maxiter=20_000, chunk=50), preconditioner="multigrid", multigrid=mg
        )
    return Iterative(
        BiCGStab(rtol=args.rtol, maxiter=20_000, chunk=25), preconditioner="multigrid", multigrid=mg
    )


def _time(f, *a, repeats=5):
    import jax

    jax.block_until_ready(f(*a))
    t = time.perf_counter()
    for _ in range(repeats):
        y = f(*a)
    jax.block_until_ready(y)
    return (time.perf_counter() - t) / repeats


def run_case(n: int, name: str, args, reference=None) -> tuple[dict, np.ndarray]:
    import jax

    from emjax.backend import device_description
    from emjax.bench import git_commit
    from emjax.fdfd import PlaneWave3D, maxwell3d
    from emjax.fdfd.bench import bench_config
    from emjax.fdfd.config import build_fdfd
    from emjax.fdfd.multigrid import build_vcycle, work_estimate
    from emjax.fdfd.operators import SCPML

    p = build_fdfd(bench_config(n, 3))
    solver = _solver(name, args)
    seen = {}
    original = maxwell3d._iterative

    def recording(op, rhs, *rest, **kw):  # keep the operator for the matvec timing
        seen["op"], seen["b"] = op, rhs[0]
        return original(op, rhs, *rest, **kw)

    maxwell3d._iterative = recording
    try:

        def solve():
            return maxwell3d.solve_3d(
                p.size,
                p.cells_per_length,
                p.frequency,
                PlaneWave3D(p.direction, p.polarization),
                scene=p.scene,
                pml=SCPML(p.pml_cells),
                center=p.center,
                averaging=p.averaging,
                solver=solver,
            )

        t0 = time.perf_counter()
        res = solve()
        first = time.perf_counter() - t0
        for _ in range(args.repeats):
            r = solve()
            if r.stats["seconds"] < res.stats["seconds"]:
                res = r
    finally:
        maxwell3d._iterative = original
    st = res.stats
    from emjax.backend import precision_scope

    with precision_scope():
        op, b = seen["op"], seen["b"]
        matvec = _time(jax.jit(lambda o, x: o(x)), op, b)
        out = {
            "case": "fdfd_3d_sphere",
            "grid": f"{n}x{n}x{n}",
            "unknowns": st["unknowns"],
            "solver": name,
            "solver_detail": st["solver"],
            "iterations": st["iterations"],
            "converged": st["converged"],
            "residual": st["residual"],
            "seconds": st["seconds"],
            "first_call_s": first,
            "setup_s": st.get("setup_s"),
            "preconditioner_s": st.get("preconditioner_s"),
            "solve_s": st["solve_s"],
            "ms_per_iteration": 1e3 * st["solve_s"] / max(st["iterations"], 1),
            "matvec_ms": 1e3 * matvec,
        }
        out["matvec_equivalents_per_iteration"] = out["ms_per_iteration"] / out["matvec_ms"]
        if name != "jacobi-qmr":
            B = build_vcycle(op, solver.multigrid)
            out["vcycle_ms"] = 1e3 * _time(jax.jit(lambda B, x: B(x)), B, b)
            out["vcycle_matvec_equivalents"] = out["vcycle_ms"] / out["matvec_ms"]
            out["levels"] = [list(P.shape[1:]) for P in B.levels]
            out["vcycle_fine_stencil_applications"] = work_estimate(B)
            out["multigrid"] = dict(
                beta=solver.multigrid.beta,
                nu=solver.multigrid.nu,
                omega=solver.multigrid.omega,
                coarse_sweeps=solver.multigrid.coarse_sweeps,
                pml_scale=solver.multigrid.pml_scale,
            )
            if reference is not None:
                out["field_diff_vs_jacobi_qmr"] = float(
                    np.linalg.norm(res.Es - reference) / np.linalg.norm(reference)
                )
    out.update(device=device_description(), date=datetime.date.today().isoformat(), commit=git_commit())
    return out, res.Es


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[32, 48, 64])
    ap.add_argument("--solvers", nargs="+", choices=SOLVERS, default=["jacobi-qmr", "mg-pcocg"])
    ap.add_argument("--rtol", type=float, default=1e-6)
    ap.add_argument("--beta", type=float, default=1.0)
    ap.add_argument("--nu", type=int, default=2)
    ap.add_argument("--omega", type=float, default=0.8)
    ap.add_argument("--pml-scale", dest="pml_scale", type=float, default=1.0)
    ap.add_argument("--levels", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=1, help="warm runs after the first (best kept)")
    args = ap.parse_args(argv)
    for n in args.sizes:
        ref = None
        for name in args.solvers:
            rec, field = run_case(n, name, args, ref)
            if name == "jacobi-qmr":
                ref = field
            print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
