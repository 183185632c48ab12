"""``emjax fdtd CONFIG.toml`` and ``emjax bench fdtd``: TOML -> fdtd objects -> run -> files.

Config keys (see examples/fdtd_dipole.toml): [grid] shape, dx, order, boundary
("cpml" | "pec" | "periodic" or one per axis), pml_thickness, pml_sides ("both" | "low" |
"high", or one per axis: a CPML face may be a bare PEC wall), courant, precision;
[run] steps, chunk, checkpoint; [[sources]] type "dipole" (index, component) or "plane"
(axis, index, component), waveform "gaussian" (frequency, bandwidth) | "ricker" (frequency)
| "cw" (frequency, ramp), amplitude; [[probes]] index, component, field; [[monitors]] axis,
index, frequencies; [[blocks]] lo, hi (cell indices, hi exclusive), eps, sigma.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from .errors import ConfigError

AXES = {"x": 0, "y": 1, "z": 2, 0: 0, 1: 1, 2: 2}


def _axis(value, field):
    if value not in AXES:
        raise ConfigError(f"{field} must be x, y or z, got {value!r}")
    return AXES[value]


def _known(table: dict, allowed: set, where: str):
    unknown = set(table) - allowed
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)}; allowed: {sorted(allowed)}")


def _waveform(src: dict, where: str):
    from . import fdtd

    kind = src.get("waveform", "gaussian")
    if "frequency" not in src:
        raise ConfigError(f"{where}.frequency is required (1 / wavelength)")
    f = src["frequency"]
    if kind == "gaussian":
        return fdtd.GaussianPulse(f, src.get("bandwidth", 0.5 * f))
    if kind == "ricker":
        return fdtd.Ricker(f)
    if kind == "cw":
        return fdtd.ContinuousWave(f, src.get("ramp", 10.0 / f))
    raise ConfigError(f"{where}.waveform must be gaussian, ricker or cw, got {kind!r}")


def build_fdtd(cfg: dict):
    """(Simulation, steps, chunk, checkpoint) from a parsed TOML config."""
    from . import fdtd

    _known(cfg, {"grid", "run", "sources", "probes", "monitors", "blocks", "flux_boxes"}, "config")
    g = dict(cfg.get("grid", {}))
    _known(
        g,
        {"shape", "dx", "order", "boundary", "pml_thickness", "pml_sides", "courant", "precision"},
        "[grid]",
    )
    if "shape" not in g or "dx" not in g:
        raise ConfigError("[grid] needs shape = [nx, ny, nz] and dx")
    names = g.get("boundary", "cpml")
    names = names if isinstance(names, list) else [names] * 3
    sides = g.get("pml_sides", "both")
    sides = sides if isinstance(sides, list) else [sides] * 3
    if len(sides) != 3:
        raise ConfigError(f"[grid].pml_sides must be one value or three, got {sides!r}")
    bds = []
    for name, side in zip(names, sides):
        if name == "cpml":
            bds.append(fdtd.CPML(g.get("pml_thickness", 10), sides=side))
        elif name in ("pec", "periodic"):
            bds.append(fdtd.PEC() if name == "pec" else fdtd.Periodic())
        else:
            raise ConfigError(f"[grid].boundary must be cpml, pec or periodic, got {name!r}")
    grid = fdtd.Grid(
        tuple(g["shape"]),
        g["dx"],
        g.get("courant"),
        g.get("order", 2),
        tuple(bds),
        g.get("precision", "single"),
    )
    eps = np.ones(grid.shape)
    sigma = np.zeros(grid.shape)
    for i, b in enumerate(cfg.get("blocks", [])):
        _known(b, {"lo", "hi", "eps", "sigma"}, f"blocks[{i}]")
        sl = tuple(slice(lo, hi) for lo, hi in zip(b["lo"], b["hi"]))
        eps[sl] = b.get("eps", 1.0)
        sigma[sl] = b.get("sigma", 0.0)
    sources = []
    for i, s in enumerate(cfg.get("sources", [])):
        where = f"sources[{i}]"
        _known(
            s,
            {
                "type",
                "index",
                "axis",
                "component",
                "waveform",
                "frequency",
                "bandwidth",
                "ramp",
                "amplitude",
                "lo",
                "hi",
                "direction",
                "polarization",
            },
            where,
        )
        wf = _waveform(s, where)
        if s.get("type") == "tfsf":
            from .scattering import PlaneWave

            direction = s.get("direction", "+z")
            if isinstance(direction, list) and len(direction) == 3:
                d = np.asarray(direction, float)  # oblique: any vector (normalized)
                n = np.linalg.norm(d)
                if not np.isfinite(n) or n == 0:
                    raise ConfigError(f"{where}.direction must be a nonzero vector, got {direction!r}")
                d = d / n
                e = np.eye(3)[2 if abs(d[0]) > max(abs(d[1]), abs(d[2])) else 0]
                default_pol = list(e - (e @ d) * d)  # x (or z) projected across the direction
            elif direction in ("+x", "+y", "+z", "-x", "-y", "-z"):
                d = [0.0, 0.0, 0.0]
                d[AXES[direction[1]]] = 1.0 if direction[0] == "+" else -1.0
                default_pol = [1.0, 0.0, 0.0] if direction[1] != "x" else [0, 0, 1.0]
            else:
                raise ConfigError(
                    f"{where}.direction must be one of +x, +y, +z, -x, -y, -z or a vector "
                    f"[dx, dy, dz], got {direction!r}"
                )
            try:
                wave = PlaneWave(d, s.get("polarization", default_pol))
            except ValueError as exc:
                raise ConfigError(f"{where}: {exc}") from exc
            sources.append(fdtd.TFSF(tuple(s["lo"]), tuple(s["hi"]), wave, wf))
            continue
        comp = _axis(s.get("component", "z"), f"{where}.component")
        if s.get("type", "dipole") == "dipole":
            sources.append(fdtd.PointDipole(tuple(s["index"]), comp, wf, s.get("amplitude", 1.0)))
        elif s["type"] == "plane":
            sources.append(
                fdtd.PlaneSource(
                    _axis(s["axis"], f"{where}.axis"), s["index"], comp, wf, s.get("amplitude", 1.0)
                )
            )
        else:
            raise ConfigError(f"{where}.type must be dipole, plane or tfsf, got {s['type']!r}")
    probes = [
        fdtd.Probe(
            tuple(p["index"]), _axis(p.get("component", "z"), f"probes[{i}].component"), p.get("field", "E")
        )
        for i, p in enumerate(cfg.get("probes", []))
    ]
    monitors = [
        fdtd.DFTPlane(_axis(m["axis"], f"monitors[{i}].axis"), m["index"], tuple(m["frequencies"]))
        for i, m in enumerate(cfg.get("monitors", []))
    ]
    for i, b in enumerate(cfg.get("flux_boxes", [])):  # six more DFT planes each, after the monitors
        _known(b, {"lo", "hi", "frequencies"}, f"flux_boxes[{i}]")
        monitors.extend(fdtd.flux_box(tuple(b["lo"]), tuple(b["hi"]), tuple(b["frequencies"])))
    sim = fdtd.Simulation(
        grid,
        eps=eps if np.any(eps != 1) else 1.0,
        sigma=sigma if np.any(sigma) else 0.0,
        sources=tuple(sources),
        probes=tuple(probes),
        monitors=tuple(monitors),
    )
    run = dict(cfg.get("run", {}))
    _known(run, {"steps", "chunk", "checkpoint"}, "[run]")
    if "steps" not in run:
        raise ConfigError("[run].steps is required")
    return sim, run["steps"], run.get("chunk"), run.get("checkpoint")


def add_parsers(sub, bench) -> None:
    p = sub.add_parser("fdtd", help="finite-difference time domain run from a TOML config")
    p.add_argument("config", type=Path, help="TOML file (see examples/fdtd_dipole.toml)")
    p.add_argument("--steps", type=int, help="override [run].steps")
    p.add_argument("--out", type=Path, help="write result.nc and fdtd.png here")
    p.add_argument("--json", action="store_true", help="one-line JSON summary on stdout")
    b = bench.add_parser("fdtd", help="FDTD cell updates per second")
    b.add_argument("--size", type=int, action="append", required=True, metavar="N")
    b.add_argument("--steps", type=int, default=200)
    b.add_argument("--precision", default="single", choices=["single", "double"])
    b.add_argument("--boundary", default="cpml", choices=["cpml", "pec", "periodic"])
    b.add_argument("--order", type=int, default=2, choices=[2, 4])
    b.add_argument("--material", default="vacuum", choices=["vacuum", "dielectric", "drude"])
    b.add_argument("--json", action="store_true")


def cmd_fdtd(args, argv) -> int:
    from . import fdtd
    from .backend import device_description
    from .cli_args import load_toml

    sim, steps, chunk, checkpoint = build_fdtd(load_toml(args.config))
    steps = args.steps or steps
    t0 = time.perf_counter()

    def progress(done, total):
        print(f"step {done}/{total}", file=sys.stderr, flush=True)

    res = fdtd.run(sim, steps, chunk=chunk, checkpoint=checkpoint, progress=progress)
    boxes = _box_results(sim, res, steps, len(load_toml(args.config).get("flux_boxes", [])))
    summary = {
        "steps": steps,
        "cells": sim.grid.n_cells,
        "cells_per_s": res.cells_per_second,
        "seconds": time.perf_counter() - t0,
        "compile_s": res.compile_seconds,
        "device": device_description(),
    }
    if args.out is not None:
        from .io import fdtd_to_xarray, save_dataset
        from .plot import plot_fdtd

        args.out.mkdir(parents=True, exist_ok=True)
        save_dataset(fdtd_to_xarray(res, boxes), args.out / "result.nc")
        plot_fdtd(res, args.out / "fdtd.png", boxes)
        if boxes:
            (args.out / "flux_boxes.json").write_text(json.dumps(boxes, indent=1))
        summary["out"] = str(args.out)
    if boxes:
        summary["flux_boxes"] = boxes
    print(json.dumps(summary) if args.json else "\n".join(f"{k:12s} {v}" for k, v in summary.items()))
    return 0


def _box_results(sim, res, steps: int, n_boxes: int) -> list:
    """Outward flux of each flux box (the last 6 * n_boxes monitors) and, with a TF/SF
    source, the cross section it stands for (scattered outside, -absorbed inside the box)."""
    from . import fdtd
    from .fdtd.tfsf import incident_spectrum

    out = []
    first = len(sim.monitors) - 6 * n_boxes
    tf = next((s for s in sim.sources if isinstance(s, fdtd.TFSF)), None)
    for b in range(n_boxes):
        idx = range(first + 6 * b, first + 6 * b + 6)
        flux = fdtd.box_flux([res.flux(i) for i in idx])
        freqs = sim.monitors[first + 6 * b].frequencies
        entry = {"frequencies": list(freqs), "outward_flux": flux.tolist()}
        if tf is not None:
            intensity = 0.5 * np.abs(incident_spectrum(tf, freqs, steps, sim.grid.dt)) ** 2
            entry["flux_over_incident_intensity"] = (flux / intensity).tolist()
        out.append(entry)
    return out


def cmd_bench_fdtd(args) -> int:
    from .bench import fdtd_benchmark

    for n in args.size:
        r = fdtd_benchmark(n, args.steps, args.precision, args.boundary, args.order, args.material)
        if args.json:
            print(json.dumps(r))
        else:
            print(
                f"FDTD {n}^3 {args.precision} {args.boundary} order {args.order}: "
                f"{r['cells_per_s'] / 1e9:.2f} G cell/s, {r['bytes_per_cell']} B/cell, "
                f"{r['bandwidth_fraction']:.0%} of the stream bandwidth on {r['device']}"
            )
    return 0
