"""``emjax layered CONFIG.toml`` and ``emjax bench layered`` (the config's keys:
:mod:`emjax.layered.config`)."""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path

import numpy as np

from ..config import check_devices_option, load_toml
from ..errors import require_int
from ..outdir import OutputFolder, add_output_arguments, config_description
from ..progress import Reporter
from .config import build_layered

__all__ = ["COMMAND", "add_bench", "add_command", "run", "run_bench"]

COMMAND = "layered"


#: maps with at least this many points announce themselves (and their progress) on stderr
BIG_MAP = 65536


class Progress(Reporter):
    """Progress of a map on stderr (a callback for :func:`emjax.layered.groups.reporting`):
    at most one line per ``every`` seconds, with the points done, the group, the rate in
    points per second and the time left at that rate; quiet for maps done within
    ``every``, but a map of >= ``BIG_MAP`` points says at once how big it is. With
    ``heartbeat`` (seconds) the last state is repeated when no report has come for that
    long (the first group's compilation and quadrature choice, a long chunk)."""

    def __init__(self, total: int, every: float = 2.0, stream=None, clock=time.perf_counter, heartbeat=None):
        super().__init__(
            "layered", total, "points", every=every, heartbeat=heartbeat, stream=stream, clock=clock
        )
        self.note = _where(dict(done=0, group=1, groups=1, stage="refine"))
        if self.total >= BIG_MAP:
            self.print(
                f"layered: {self.total} points; progress every ~{self.every:g} s (rate and time left "
                "once the first group, which compiles on first use, is integrated)"
            )

    def __call__(self, info: dict) -> None:
        self.update(info["done"], _where(info))


def _where(info: dict) -> str:
    where = f"group {info['group']}/{info['groups']}"
    if info["stage"] == "refine":
        where += " (choosing its quadrature" + (", compiling" if info["done"] == 0 else "") + ")"
    return where


def add_command(sub) -> None:
    """Register ``emjax layered`` in the subparsers ``sub``."""
    p = sub.add_parser("layered", help="fields of a dipole in a planar multilayer (Sommerfeld integrals)")
    p.add_argument("config", type=Path, help="TOML file (see examples/layered_dipole.toml)")
    add_output_arguments(p, "fields.nc and fields.png")
    p.add_argument("--json", action="store_true", help="one-line JSON summary on stdout")
    p.add_argument(
        "--devices", type=int, default=None, metavar="N", help="spread the points over the first N devices"
    )


def add_bench(bench) -> None:
    """Register ``emjax bench layered``."""
    b = bench.add_parser("layered", help="Quinto et al.'s dipole-near-interface maps: time and error")
    b.add_argument("--size", type=int, action="append", required=True, metavar="N", help="N x N points")
    b.add_argument(
        "--precision",
        default="double",
        choices=["single", "double"],
        help="arithmetic of the integrals (double)",
    )
    b.add_argument(
        "--rtol", type=float, default=1e-8, help="relative tolerance of the adaptive quadrature (1e-8)"
    )
    b.add_argument("--json", action="store_true", help="one JSON line per map on stdout")
    b.add_argument(
        "--devices", type=int, default=None, metavar="N", help="strong scaling over 1, 2, 4 .. N devices"
    )


def run(args, argv) -> int:
    """``emjax layered CONFIG.toml``."""
    from ..backend import device_description
    from .green import dipole_fields
    from .groups import reporting

    check_devices_option(args.devices)
    kwargs, shape, axes = build_layered(load_toml(args.config))
    # before the integrals: never lose a long map to a bad path
    folder = OutputFolder(args.out, method=COMMAND, overwrite=args.overwrite).check()
    t0 = time.perf_counter()
    if args.devices is not None:
        kwargs["layout"] = args.devices
    progress = Progress(len(kwargs["points"]), heartbeat=10.0)
    try:
        with reporting(progress):
            res = dipole_fields(**kwargs)
    finally:
        progress.close()
    summary = {
        "points": int(len(res.points)),
        "seconds": time.perf_counter() - t0,
        "max_error_estimate": float(np.max(res.error)),
        "max_abs_E": float(np.max(np.abs(res.E))),
        "device": device_description(),
    }
    from ..io import save_dataset
    from .plot import plot_layered_map
    from .results import layered_to_xarray

    with folder.writing(config_description(args.config, COMMAND), shlex.join(["emjax", *argv])) as stage:
        save_dataset(layered_to_xarray(res, shape, axes), stage / "fields.nc")
        comp = int(np.argmax(np.abs(res.p)))
        plot_layered_map(res, shape, axes, stage / "fields.png", component=comp)
    summary["out"] = str(folder.path)
    print(json.dumps(summary) if args.json else "\n".join(f"{k:20s} {v}" for k, v in summary.items()))
    return 0


def run_bench(args, argv) -> int:
    """``emjax bench layered``."""
    from .bench import layered_benchmark

    _check_bench_options(args)
    if args.devices is not None:  # strong scaling: JSON lines
        from .bench import scaling

        for n in args.size:
            for r in scaling(n, args.devices, args.precision, args.rtol):
                print(json.dumps(r), flush=True)
        return 0
    for n in args.size:
        r = layered_benchmark(n, args.precision, args.rtol)
        if args.json:
            print(json.dumps(r), flush=True)
        else:
            print(
                f"layered {r['map']} {args.precision} rtol {args.rtol:g}: {r['seconds']:.3f} s "
                f"({r['points_per_s']:.3g} points/s), error {r['max_error_normwise']:.2e} "
                f"(estimate {r['max_error_estimate']:.1e}) on {r['device']}",
                flush=True,
            )
    return 0


def _check_bench_options(args) -> None:
    """``emjax bench layered``'s options against their ranges, named as typed."""
    import jax

    from ..errors import require_range

    for n in args.size:
        require_int("--size", n, 1, 4096, why="an N x N map")
    if args.precision == "single":
        require_range("--rtol", args.rtol, 1e-6, 0.1, why="what single precision can reach")
    else:
        require_range("--rtol", args.rtol, 1e-13, 0.1)
    if args.devices is not None:
        require_int("--devices", args.devices, 1, len(jax.devices()), why="the devices JAX sees")
