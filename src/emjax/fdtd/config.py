"""The TOML config of ``emjax fdtd``, mapped onto emjax.fdtd's objects.

Config keys (see examples/fdtd_dipole_cells.toml): [grid] shape, dx, order, boundary
("cpml" | "pec" | "periodic" or one per axis), pml_thickness, pml_sides ("both" | "low" |
"high", or one per axis: a CPML face may be a bare PEC wall), courant, precision;
[run] steps, chunk, checkpoint; [[sources]] type "dipole" (index, component) or "plane"
(axis, index, component), waveform "gaussian" (frequency, bandwidth) | "ricker" (frequency)
| "cw" (frequency, ramp), amplitude; [[probes]] index, component, field; [[monitors]] axis,
index, frequencies; [[blocks]] lo, hi (cell indices, hi exclusive), eps, sigma.
"""

from __future__ import annotations

import numpy as np

from ..config import check_keys
from ..errors import ConfigError

__all__ = ["build_fdtd"]

AXES = {"x": 0, "y": 1, "z": 2, 0: 0, 1: 1, 2: 2}


def _axis(value, field):
    if value not in AXES:
        raise ConfigError(f"{field} must be x, y or z, got {value!r}")
    return AXES[value]


def waveform(src: dict, where: str):
    """The time profile of a source table: ``waveform`` gaussian (frequency, bandwidth),
    ricker (frequency) or cw (frequency, ramp); shared by both config forms."""
    from .. import fdtd

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
    """(GridSimulation, steps, chunk, checkpoint) from a parsed TOML config."""
    from .. import fdtd

    check_keys(cfg, {"grid", "run", "sources", "probes", "monitors", "blocks", "flux_boxes"}, "config")
    g = dict(cfg.get("grid", {}))
    check_keys(
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
        check_keys(b, {"lo", "hi", "eps", "sigma"}, f"blocks[{i}]")
        sl = tuple(slice(lo, hi) for lo, hi in zip(b["lo"], b["hi"]))
        eps[sl] = b.get("eps", 1.0)
        sigma[sl] = b.get("sigma", 0.0)
    sources = []
    for i, s in enumerate(cfg.get("sources", [])):
        where = f"sources[{i}]"
        check_keys(
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
        wf = waveform(s, where)
        if s.get("type") == "tfsf":
            from ..scattering import PlaneWave

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
        check_keys(b, {"lo", "hi", "frequencies"}, f"flux_boxes[{i}]")
        monitors.extend(fdtd.flux_box(tuple(b["lo"]), tuple(b["hi"]), tuple(b["frequencies"])))
    sim = fdtd.GridSimulation(
        grid,
        eps=eps if np.any(eps != 1) else 1.0,
        sigma=sigma if np.any(sigma) else 0.0,
        sources=tuple(sources),
        probes=tuple(probes),
        monitors=tuple(monitors),
    )
    run = dict(cfg.get("run", {}))
    check_keys(run, {"steps", "chunk", "checkpoint"}, "[run]")
    if "steps" not in run:
        raise ConfigError("[run].steps is required")
    return sim, run["steps"], run.get("chunk"), run.get("checkpoint")
