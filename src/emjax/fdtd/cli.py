"""``emjax fdtd CONFIG.toml`` and ``emjax bench fdtd``: TOML -> fdtd objects -> run -> files
(the config's keys: :mod:`emjax.fdtd.config`)."""

from __future__ import annotations

import json
import math
import shlex
import time
from pathlib import Path

import numpy as np

from ..config import check_devices_option, load_toml
from ..errors import ConfigError
from ..io import check_npz, check_output_file
from ..outdir import OutputFolder, add_output_arguments, config_description
from .config import build_fdtd, kernel_option, out_of_core_option

__all__ = ["COMMAND", "add_bench", "add_command", "run", "run_bench"]

COMMAND = "fdtd"


def add_command(sub) -> None:
    """Register ``emjax fdtd`` in the subparsers ``sub``."""
    p = sub.add_parser("fdtd", help="finite-difference time domain run from a TOML config")
    p.add_argument(
        "config",
        type=Path,
        help="TOML file: physical units with a [simulation] table (examples/fdtd_sphere.toml) "
        "or cell indices with [grid] (examples/fdtd_dipole_cells.toml)",
    )
    p.add_argument("--steps", type=int, help="override [run].steps")
    add_output_arguments(
        p,
        "result.nc, fdtd.png (physical units: also spectra.json, and NAME.nc, NAME.png per field_plane "
        "monitor; cell indices: flux_boxes.json with [[flux_boxes]])",
    )
    p.add_argument("--json", action="store_true", help="one-line JSON summary on stdout")
    p.add_argument(
        "--devices", type=int, metavar="N", help="run on N devices, the grid split in slabs along x"
    )


def add_bench(bench) -> None:
    """Register ``emjax bench fdtd``."""
    b = bench.add_parser("fdtd", help="FDTD cell updates per second")
    b.add_argument(
        "--size", type=int, action="append", required=True, metavar="N", help="N^3 cells (repeatable)"
    )
    b.add_argument(
        "--steps",
        type=int,
        default=200,
        help="steps per device call: one untimed call that compiles, then three timed (200)",
    )
    b.add_argument(
        "--precision",
        default="single",
        choices=["single", "double"],
        help="float32 or float64 fields (single)",
    )
    b.add_argument(
        "--boundary",
        default="cpml",
        choices=["cpml", "pec", "periodic"],
        help="on all faces: a 10-cell CPML, PEC walls or periodic (cpml)",
    )
    b.add_argument("--order", type=int, default=2, choices=[2, 4], help="order of the spatial stencil (2)")
    b.add_argument(
        "--dx",
        type=float,
        default=1.0,
        help="cell size; lengths in its units and frequencies in 1 / its units, so that every "
        "--dx runs the same cells, pulse and media (1)",
    )
    b.add_argument(
        "--material",
        default="vacuum",
        choices=[
            "vacuum",
            "dielectric",
            "drude",
            "sphere",
            "sphere-subpixel",
            "sphere-diagonal",
            "sphere-drude",
        ],
        help="what fills the box: vacuum (scalar coefficients), dielectric (a per-cell eps array), "
        "drude (a one-pole Drude cube), an eps 2.25 sphere of radius N/4 staircased (sphere), "
        "subpixel-averaged (sphere-subpixel) or with the averaged tensor's diagonal per E node "
        "(sphere-diagonal, which the blocked kernel runs), a Drude sphere (sphere-drude) (vacuum)",
    )
    b.add_argument(
        "--devices",
        type=int,
        metavar="N",
        help="scaling over 1, 2, 4, ..., N devices (slabs along x): strong (the N^3 grid) and "
        "weak (N^3 cells per device); one JSON line per run with --json",
    )
    b.add_argument("--scaling", default="strong,weak", help="with --devices: strong, weak or both")
    b.add_argument(
        "--out-of-core",
        action="store_true",
        help="the calculation window (state in host memory): rate vs --th against the in-memory run",
    )
    b.add_argument("--th", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32, 64], help="steps per pass")
    b.add_argument("--slab", type=int, help="planes per slab (default: from --device-gb, else the grid)")
    b.add_argument("--device-gb", type=float, help="device budget that sets the slab")
    b.add_argument(
        "--kernel",
        default="auto",
        choices=["auto", "xla", "blocked"],
        help="the step: XLA's fused update, the temporally blocked CUDA kernel, or auto (auto)",
    )
    b.add_argument("--json", action="store_true", help="one JSON line per case on stdout")


def _steps(args, steps):
    """``--steps`` over the config's (>= 1)."""
    if args.steps is None:
        return steps
    if args.steps < 1:
        raise ConfigError(f"--steps must be an integer >= 1, got {args.steps}")
    return args.steps


def _check_outputs(args, checkpoint) -> OutputFolder:
    """--out (or the fresh run folder) and [run].checkpoint writable, before the first step."""
    folder = OutputFolder(args.out, method=COMMAND, overwrite=args.overwrite).check()
    if checkpoint is not None:
        check_output_file(checkpoint, "[run].checkpoint", create_folder=False)
        if Path(checkpoint).exists():  # to resume from: readable, an emjax checkpoint
            check_npz(checkpoint, "[run].checkpoint")
    return folder


#: runs of at least this many cell updates say at once how big they are (~1 s at 32 G cell/s)
BIG_RUN = 3e10


def announce(grid, steps: int, memory_bytes=None, stream=None, bandwidth=None) -> str | None:
    """For a run of >= ``BIG_RUN`` cell updates, one line on stderr before the first step:
    the grid, the steps, the device memory and a floor on the time (the cell updates at the
    device's peak memory bandwidth, 18 values read or written per cell and step: the fields
    and their update coefficients); the time left then follows the first chunk. Returns the
    line (None for a small run)."""
    import sys

    from ..backend import peak_bandwidth, precision
    from ..progress import duration

    updates = float(grid.n_cells) * int(steps)
    if updates < BIG_RUN:
        return None
    shape = "x".join(str(n) for n in grid.shape)
    text = f"fdtd: {shape} = {grid.n_cells:.3g} cells x {steps} steps ({updates:.3g} cell updates)"
    if memory_bytes:
        text += f", ~{memory_bytes / 1e9:.3g} GB of fields and coefficients"
    bw = peak_bandwidth() if bandwidth is None else bandwidth
    if bw:
        item = np.dtype(precision(grid.precision).real).itemsize
        text += f"; at least {duration(updates * 18 * item / bw)} at this device's peak memory bandwidth"
    text += "; time left after the first chunk"
    print(text, file=sys.stderr if stream is None else stream, flush=True)
    return text


def _progress(total: int, checkpoint):
    """The ``progress(done, total)`` callback of a run: one line on stderr at most every
    2 s at chunk ends (steps, steps/s, time left), the last state repeated every 10 s while
    a chunk runs. The rate counts from the first chunk's end (that chunk compiles, or it is
    the first of a resumed run)."""
    from ..progress import Reporter, duration

    reporter = Reporter("fdtd", total, "steps", heartbeat=10.0)
    first = [True]

    def progress(done, total_):
        reporter.total = total_
        if first[0]:
            first[0] = False
            took = duration(reporter.clock() - reporter.began)
            fresh = checkpoint is None or done <= 0
            reporter.rebase(done, f"first chunk {took}" + (" (compiling included)" if fresh else ""))
            return
        reporter.update(done)

    progress.reporter = reporter
    return progress


def run(args, argv) -> int:
    """``emjax fdtd CONFIG.toml``."""
    from .. import fdtd
    from ..backend import device_description
    from .results import box_results

    check_devices_option(args.devices)
    cfg = load_toml(args.config)
    if "simulation" not in cfg and "grid" not in cfg:
        raise ConfigError(
            "[simulation] or [grid] is required: physical units (examples/fdtd_sphere.toml) or cell "
            "indices (examples/fdtd_dipole_cells.toml)"
        )
    if "ports" in cfg:  # a device's S-matrix
        from .port_config import run_ports

        return run_ports(args, _command(argv), cfg, COMMAND)
    if "simulation" in cfg:  # physical units: a scene
        return _run_physical(args, argv, cfg)
    sim, steps, chunk, checkpoint = build_fdtd(cfg)
    steps = _steps(args, steps)
    from . import ringdown  # imports JAX: only when a run asks for resonances

    wanted = ringdown.config_requests(cfg, sim.sources, sim.grid.dt, steps * sim.grid.dt)
    folder = _check_outputs(args, checkpoint)
    announce(sim.grid, steps, sim.memory_bytes())
    t0 = time.perf_counter()
    progress = _progress(steps, checkpoint)
    try:
        res = fdtd.run(
            sim,
            steps,
            chunk=chunk,
            checkpoint=checkpoint,
            progress=progress,
            layout=args.devices,
            out_of_core=out_of_core_option(cfg),
            kernel=kernel_option(cfg),
        )
    finally:
        progress.reporter.close()
    boxes = box_results(res, len(cfg.get("flux_boxes", [])))
    found = ringdown.find_all(res, wanted)
    summary = {
        "steps": steps,
        "cells": sim.grid.n_cells,
        "cells_per_s": res.cells_per_second,
        "seconds": time.perf_counter() - t0,
        "compile_s": res.compile_seconds,
        "device": device_description(),
        "kernel": res.kernel,
    }
    if len(sim.probes):
        summary["probes_max_abs"] = float(np.max(np.abs(np.asarray(res.probes))))
    from ..io import save_dataset
    from .plot import plot_fdtd
    from .results import fdtd_to_xarray

    with folder.writing(config_description(args.config, COMMAND), _command(argv)) as stage:
        save_dataset(fdtd_to_xarray(res, boxes), stage / "result.nc")
        plot_fdtd(res, stage / "fdtd.png", boxes)
        if boxes:
            (stage / "flux_boxes.json").write_text(json.dumps(boxes, indent=1))
        ringdown.write_csv(wanted, found, stage)
    summary["out"] = str(folder.path)
    if boxes:
        summary["flux_boxes"] = boxes
    ringdown.add_to_summary(summary, args.json, wanted, found)
    print(json.dumps(summary) if args.json else "\n".join(f"{k:12s} {v}" for k, v in summary.items()))
    return 0


def _run_physical(args, argv, cfg) -> int:
    from ..backend import device_description
    from .physical import run as run_physical
    from .scene_config import build_physical
    from .scene_raster import check_memory

    sim, steps, until, chunk, checkpoint = build_physical(cfg, Path(args.config).parent)
    check_memory(sim)  # the scene's rasterization and the run: refused before any allocation
    if args.steps is not None:
        steps, until = _steps(args, steps), None
    total = steps if steps is not None else int(math.ceil(until / sim.grid.dt))
    from . import ringdown  # imports JAX: only when a run asks for resonances

    wanted = ringdown.config_requests(cfg, sim.sources, sim.grid.dt, total * sim.grid.dt)
    folder = _check_outputs(args, checkpoint)
    t0 = time.perf_counter()
    announce(sim.grid, total)
    progress = _progress(total, checkpoint)
    try:
        res = run_physical(
            sim,
            steps,
            until=until,
            chunk=chunk,
            checkpoint=checkpoint,
            progress=progress,
            layout=args.devices,
            out_of_core=out_of_core_option(cfg),
            kernel=kernel_option(cfg),
        )
    finally:
        progress.reporter.close()
    raw = res.raw
    found = ringdown.find_all(raw, wanted)
    summary = {
        "steps": raw.total_steps,
        "cells": sim.grid.n_cells,
        "grid": list(sim.grid.shape),
        "cells_per_s": raw.cells_per_second,
        "seconds": time.perf_counter() - t0,
        "compile_s": raw.compile_seconds,
        "device": device_description(),
        "kernel": raw.kernel,
    }
    if any(sim.symmetry):  # mirror planes: the reduced grid ran, the results are the whole domain's
        summary.update(symmetry=list(sim.symmetry), grid_run=list(res.simulation.grid.shape))
    spectra = {}
    if "cross_sections" in res.monitor_planes:
        spectra["cross_sections"] = {k: v.tolist() for k, v in res.cross_sections().items()}
    fields = [n for n in res.monitor_planes if n in sim.field_plane_names]
    for name in res.monitor_planes:
        if name != "cross_sections" and name not in fields:
            spectra[name] = {"frequency": res.frequencies(name).tolist(), "flux": res.flux(name).tolist()}
    summary.update(spectra)
    from ..io import save_dataset
    from .plot import plot_field_plane, plot_physical
    from .results import physical_to_xarray

    with folder.writing(config_description(args.config, COMMAND), _command(argv)) as stage:
        save_dataset(physical_to_xarray(res), stage / "result.nc")
        plot_physical(res, stage / "fdtd.png")
        (stage / "spectra.json").write_text(json.dumps(spectra, indent=1))
        for name in fields:  # each FieldPlane: complex Ex .. Hz split into _real / _imag
            ds = res.field_plane(name)
            save_dataset(ds, stage / f"{name}.nc")
            plot_field_plane(ds, stage / f"{name}.png")
        ringdown.write_csv(wanted, found, stage)
    if fields:
        summary["field_planes"] = [str(folder.path / f"{name}.nc") for name in fields]
    summary["out"] = str(folder.path)
    ringdown.add_to_summary(summary, args.json, wanted, found)
    print(json.dumps(summary) if args.json else "\n".join(f"{k:12s} {v}" for k, v in summary.items()))
    return 0


def _command(argv) -> str:
    return shlex.join(["emjax", *argv])


def run_bench(args, argv) -> int:
    """``emjax bench fdtd``."""
    from .bench import fdtd_benchmark, fdtd_scaling

    _check_bench_options(args)
    if args.out_of_core:
        from .window_bench import fdtd_window_sweep

        for n in args.size:
            rows = fdtd_window_sweep(
                n,
                args.th,
                slab=args.slab,
                device_gb=args.device_gb,
                precision=args.precision,
                order=args.order,
                kernel=args.kernel,
            )
            for r in rows:
                if args.json:
                    print(json.dumps(r), flush=True)
                elif r["mode"] == "in_memory":
                    print(f"FDTD {n}^3 in memory: {r['rate'] / 1e9:.3f} G cell/s ({r['kernel']})", flush=True)
                else:
                    print(
                        f"FDTD {n}^3 window th {r['th']} slab {r['slab']}: {r['rate'] / 1e9:.3f} G cell/s "
                        f"(model {r.get('model', float('nan')) / 1e9:.3f}; {r['kernel']})",
                        flush=True,
                    )
        return 0
    if args.devices:
        modes = _scaling_modes(args.scaling)
        kw = dict(precision=args.precision, boundary=args.boundary, order=args.order, material=args.material)
        kw.update(kernel=args.kernel, dx=args.dx)
        for n in args.size:
            for r in fdtd_scaling(n, args.devices, args.steps, modes, **kw):
                if args.json:
                    print(json.dumps(r), flush=True)
                else:
                    print(
                        f"FDTD {r['mode']:6s} {'x'.join(map(str, r['shape']))} on {r['devices']} "
                        f"device(s): {r['cells_per_s'] / 1e9:.3f} G cell/s, efficiency "
                        f"{r['efficiency']:.0%} ({r['device']})",
                        flush=True,
                    )
        return 0
    for n in args.size:
        r = fdtd_benchmark(
            n,
            args.steps,
            args.precision,
            args.boundary,
            args.order,
            args.material,
            kernel=args.kernel,
            dx=args.dx,
        )
        if args.json:
            print(json.dumps(r), flush=True)
        else:
            print(
                f"FDTD {n}^3 {args.precision} {args.boundary} order {args.order}: "
                f"{r['cells_per_s'] / 1e9:.2f} G cell/s, {r['bytes_per_cell']} B/cell, "
                f"{r['bandwidth_fraction']:.0%} of the stream bandwidth on {r['device']}",
                flush=True,
            )
    return 0


#: Upper bounds of ``emjax bench fdtd``'s counts: steps of one timed chunk, steps per pass.
MAX_BENCH_STEPS = 1_000_000
MAX_TH = 1024


def _scaling_modes(text: str) -> tuple:
    modes = tuple(m.strip() for m in text.split(",") if m.strip())
    if not modes or any(m not in ("strong", "weak") for m in modes):
        raise ConfigError(f"--scaling must be strong, weak or strong,weak, got {text!r}")
    return modes


def _check_bench_options(args) -> None:
    """Every ``emjax bench fdtd`` option against its range, named as typed, before any grid
    exists (``--size`` against the largest grid the memory holds)."""
    import jax

    from ..errors import require_int, require_range
    from .bench import max_size, min_size

    require_int("--steps", args.steps, 1, MAX_BENCH_STEPS)
    require_range("--dx", args.dx, 0, 1e6, open_lo=True, why="the cell size")
    copies = 1
    if args.devices is not None:
        require_int("--devices", args.devices, 1, len(jax.devices()), why="the devices JAX sees")
        weak = "weak" in _scaling_modes(args.scaling)
        copies = args.devices if weak and jax.default_backend() == "cpu" else 1
    if args.out_of_core:
        for th in args.th:
            require_int("--th", th, 1, MAX_TH)
        if args.dx != 1.0:
            raise ConfigError(
                f"--dx applies to the in-memory runs, not --out-of-core (its grid's is 0.05), got {args.dx}"
            )
    hi, why = max_size(args.precision, args.boundary, args.order, args.material, copies, args.out_of_core)
    lo = min_size(args.boundary, args.material)
    for n in args.size:
        if n < lo:
            why = f"--boundary {args.boundary} with --material {args.material} needs >= {lo}"
        require_int("--size", n, lo, hi, why=why)
        if args.out_of_core and args.slab is not None:
            require_int("--slab", args.slab, 1, n, why="planes of the N^3 grid")
    if args.out_of_core and args.device_gb is not None:
        require_range("--device-gb", args.device_gb, 0, 100_000, open_lo=True, why="GB")
