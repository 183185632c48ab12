"""``emjax fdfd CONFIG.toml`` and ``emjax bench fdfd``: TOML -> FDFDProblem -> solve_rcs ->
files (the config's keys: :mod:`emjax.fdfd.config`).

Exit status: 0 done; 1 invalid input (one line ``emjax: error: ...`` naming the field and
its allowed values) or not enough memory; 2 an iterative solve that did not converge (the
results are still written; status and residual on stderr).
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path

from ..config import finite_or_none, load_toml
from ..errors import ResourceError
from ..io import check_output_file
from ..outdir import OutputFolder, add_output_arguments, config_description
from .config import build_fdfd, resolution_warnings

__all__ = ["COMMAND", "add_bench", "add_command", "run", "run_bench"]

COMMAND = "fdfd"
#: the 2-D grids of Zainud-Deen et al.'s Table 2 (N x N unknowns) and the 3-D default sweep
PAPER_SIZES_2D = (160, 310, 460, 610, 760, 910, 1060, 1210)
SIZES_3D = (32, 48, 64)


def add_command(sub) -> None:
    """Register ``emjax fdfd`` in the subparsers ``sub``."""
    p = sub.add_parser("fdfd", help="frequency-domain scattering: radar cross sections (2-D and 3-D)")
    p.add_argument("config", type=Path, help="TOML file (see examples/fdfd_cylinder.toml)")
    add_output_arguments(p, "rcs.nc, rcs.png, field.png (and 2-D: fields.nc)")
    p.add_argument("--json", action="store_true", help="one-line JSON summary on stdout")


def add_bench(bench) -> None:
    """Register ``emjax bench fdfd``."""
    b = bench.add_parser("fdfd", help="FDFD solve time: 2-D grids of Zainud-Deen et al., 3-D cubes")
    b.add_argument(
        "--dims",
        type=int,
        default=2,
        choices=[2, 3],
        help="2: an array of eps 4 cylinders, TM; 3: an eps 4 sphere (2)",
    )
    b.add_argument(
        "--size",
        type=int,
        action="append",
        metavar="N",
        help=f"N x N (x N) nodes, PML included (repeatable; default 2-D {PAPER_SIZES_2D}, 3-D {SIZES_3D})",
    )
    b.add_argument(
        "--solver",
        default="auto",
        choices=["auto", "direct", "qmr", "bicgstab", "multigrid"],
        help="auto: direct in 2-D, qmr in 3-D; multigrid: COCG with the shifted-Laplacian V-cycle (auto)",
    )
    b.add_argument(
        "--precision",
        default="double",
        choices=["single", "double"],
        help="arithmetic of the 3-D Krylov solve (double)",
    )
    b.add_argument("--out", type=Path, help="append the records to this JSON list")
    b.add_argument("--json", action="store_true", help="one JSON line per case on stdout")


def _text(summary: dict) -> str:
    lines = []
    for k, v in summary.items():
        if isinstance(v, list) and len(v) > 8:
            v = f"[{len(v)} values: {v[0]:.4g} .. max {max(v):.4g}]"
        lines.append(f"{k:22s} {v}")
    return "\n".join(lines)


def run(args, argv) -> int:
    """``emjax fdfd CONFIG.toml``."""
    from .rcs import solve_rcs

    problem = build_fdfd(load_toml(args.config), Path(args.config).parent)
    for w in resolution_warnings(problem):
        print(f"emjax: warning: {w}", file=sys.stderr)
    folder = OutputFolder(args.out, method=COMMAND, overwrite=args.overwrite).check()

    last = [time.perf_counter()]

    def progress(iterations, residual):  # at most one line per 2 s
        if time.perf_counter() - last[0] > 2.0:
            last[0] = time.perf_counter()
            print(f"iteration {iterations}, relative residual {residual:.3e}", file=sys.stderr, flush=True)

    result = solve_rcs(problem, progress=progress)
    summary = result.summary()
    from ..io import save_dataset
    from .plot import plot_field, plot_rcs

    with folder.writing(config_description(args.config, COMMAND), shlex.join(["emjax", *argv])) as stage:
        save_dataset(result.to_xarray(), stage / "rcs.nc")
        if problem.dims == 2:
            save_dataset(result.fields_to_xarray(), stage / "fields.nc")
        plot_rcs(result, stage / "rcs.png")
        plot_field(result, stage / "field.png")
    summary["out"] = str(folder.path)
    summary = {k: finite_or_none(v) for k, v in summary.items()}
    print(json.dumps(summary) if args.json else _text(summary))
    if not result.converged:
        st = result.stats
        where = f" (written to {folder.path})"
        print(
            f"\n*** NOT CONVERGED *** the {st['solver']} solve stopped at relative residual "
            f"{st.get('residual')} after {st['iterations']} iterations: {st.get('message', '')}"
            f"\n*** The results{where} are NOT reliable: raise [solver].maxiter, loosen rtol, "
            'or use type = "direct". ***',
            file=sys.stderr,
        )
        return 2
    return 0


def run_bench(args, argv) -> int:
    """``emjax bench fdfd``."""
    from ..config import append_json
    from .bench import fdfd_benchmark

    sizes = args.size or (PAPER_SIZES_2D if args.dims == 2 else SIZES_3D)
    if args.out is not None:
        check_output_file(args.out, "--out")
    for n in sizes:  # every size checked before the first case runs
        _check_bench_size(n, args)
    for n in sizes:
        try:
            r = fdfd_benchmark(n, dims=args.dims, solver=args.solver, precision=args.precision)
        except ResourceError as exc:
            raise ResourceError(f"--size {n}: {exc}") from None
        if args.out is not None:
            append_json(args.out, r)
        if args.json:
            print(json.dumps(r), flush=True)
        else:
            print(
                f"FDFD {args.dims}-D {r['grid']} ({r['unknowns']} unknowns), {r['solver']}: "
                f"{r['seconds']:.3f} s (set-up {r.get('setup_s', r.get('assemble_s', 0)):.3f}, "
                f"factor {r.get('factor_s', 0):.3f}, "
                f"solve {r.get('solve_s', 0):.3f}), {r['iterations']} iterations, "
                f"peak RSS {r['peak_rss_bytes'] / 2**30:.2f} GiB on {r['device']}",
                flush=True,
            )
    return 0


def _check_bench_size(n, args) -> None:
    """``--size N`` an integer the benchmark grid can take and, for the 2-D direct solve on
    the host, one whose factors fit the host's memory (named as typed)."""
    from ..errors import require_int
    from .bench import bench_config
    from .solve2d import jax_default_platform

    require_int("--size", n, 1, 100_000)
    bench_config(n, dims=args.dims, solver=args.solver, precision=args.precision)  # the minimum
    host = args.solver == "direct" or (args.solver == "auto" and jax_default_platform() == "cpu")
    if args.dims == 2 and host:
        from .direct import check_host_memory

        try:
            check_host_memory((n, n))
        except ResourceError as exc:
            raise ResourceError(f"--size {n}: {exc}") from None
