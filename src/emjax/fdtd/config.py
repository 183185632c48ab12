"""The TOML config of ``emjax fdtd``, mapped onto emjax.fdtd's objects.

Config keys (see examples/fdtd_dipole_cells.toml): [grid] shape, dx, order, boundary
("cpml" | "pec" | "periodic" or one per axis), pml_thickness, pml_sides ("both" | "low" |
"high", or one per axis: a CPML face may be a bare PEC wall), courant, precision;
[run] steps, chunk, checkpoint; [[sources]] type "dipole" (index, component) or "plane"
(axis, index, component), waveform "gaussian" (frequency, bandwidth) | "ricker" (frequency)
| "cw" (frequency, ramp), amplitude; [[probes]] index, component, field, resonances; [[monitors]] axis,
index, frequencies; [[blocks]] lo, hi (cell indices, hi exclusive), eps, sigma.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..config import Table
from ..errors import ConfigError, ResourceError

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

    t = Table(src, where)
    kind = t.choice("waveform", ("gaussian", "ricker", "cw"), default="gaussian")
    f = t.real("frequency", lo=0, lo_open=True)
    if kind == "gaussian":
        return fdtd.GaussianPulse(f, t.real("bandwidth", default=0.5 * f, lo=0, lo_open=True))
    if kind == "ricker":
        return fdtd.Ricker(f)
    return fdtd.ContinuousWave(f, t.real("ramp", default=10.0 / f, lo=0))


def _highest_frequency(wf) -> float:
    """The top of a waveform's band: a Gaussian's centre + bandwidth, a Ricker's 2 f (its
    spectrum is down to 2% there), a CW's f."""
    from .. import fdtd

    if isinstance(wf, fdtd.GaussianPulse):
        return wf.frequency + wf.bandwidth
    if isinstance(wf, fdtd.Ricker):
        return 2.0 * wf.frequency
    return wf.frequency


def _resolution(f_max: float, dx: float, n_max: float, where: str) -> None:
    """Cells per wavelength at the highest frequency in the densest medium: < 2 refused (the
    grid cannot carry the wave), < 5 warned (large dispersion error)."""
    cells = 1.0 / (f_max * n_max * dx)
    if cells < 2:
        raise ConfigError(
            f"{where}: frequency {f_max:g} gives {cells:.2g} cells per wavelength (dx = {dx:g}, "
            f"index up to {n_max:.3g}); needs >= 2 (>= 10 for accuracy): lower the frequency or dx"
        )
    if cells < 5:
        warnings.warn(
            f"{where}: only {cells:.2g} cells per wavelength at frequency {f_max:g} (index "
            f"{n_max:.3g}); FDTD's dispersion error is large below ~10",
            stacklevel=3,
        )


def _outside_pml(idx, shape, pml, where: str, what: str = "index") -> None:
    """Refuse a cell index inside a CPML slab (sources, TF/SF boxes, monitors belong in the
    interior: the PML would absorb what they emit and corrupt what they measure)."""
    for ax, (i, n, L) in enumerate(zip(idx, shape, pml)):
        lo, hi = L[0], n - L[1]
        if not lo <= i < hi:
            raise ConfigError(
                f"{where}.{what}[{ax}] = {i} lies in the CPML or outside the grid; "
                f"allowed along {'xyz'[ax]}: [{lo}, {hi - 1}]"
            )


#: [run] keys of the calculation window (both FDTD configs), and the step's kernel
OUT_OF_CORE_KEYS = frozenset({"out_of_core", "th", "device_gb", "kernel"})


def kernel_option(cfg: dict) -> str:
    """``[run].kernel``: "auto" (default), "xla" or "blocked" (:func:`emjax.fdtd.run`)."""
    kernel = Table(cfg.get("run"), "[run]").get("kernel", "auto")
    if kernel not in ("auto", "xla", "blocked"):
        raise ConfigError(f'[run].kernel must be "auto", "xla" or "blocked", got {kernel!r}')
    return kernel


def out_of_core_option(cfg: dict):
    """``[run].out_of_core`` ("auto", true or false), ``th`` and ``device_gb`` as
    :func:`emjax.fdtd.run`'s ``out_of_core``: None (auto: the window when the grid does not
    fit the GPU), False, True or ``{"th": .., "device_bytes": ..}``."""
    run = Table(cfg.get("run"), "[run]")
    mode = run.get("out_of_core", "auto")
    if not (isinstance(mode, bool) or mode == "auto"):  # 0 and 1 are not booleans here
        raise ConfigError(f'[run].out_of_core must be "auto", true or false, got {mode!r}')
    th = run.int("th", default=None, lo=1)
    gb = run.positive("device_gb", default=None)
    if (th is not None or gb is not None) and mode is False:
        raise ConfigError(
            "[run].th and [run].device_gb set the calculation window: not with out_of_core = false"
        )
    if mode is False:
        return False
    opts = {}
    if th is not None:
        opts["th"] = th
    if gb is not None:
        opts["device_bytes"] = int(gb * 1e9)
    if mode == "auto" and not opts:
        return None
    return opts if opts else True


def build_fdtd(cfg: dict):
    """(GridSimulation, steps, chunk, checkpoint) from a parsed TOML config. Every key is
    checked (type, range, required) before anything grid-sized is allocated; sources,
    probes, monitors and TF/SF boxes must lie in the grid and outside the CPML."""
    from .. import fdtd
    from ..backend import host_available_bytes

    Table(cfg, "config", {"grid", "run", "sources", "probes", "monitors", "blocks", "flux_boxes"})
    g = Table(
        cfg.get("grid"),
        "[grid]",
        {"shape", "dx", "order", "boundary", "pml_thickness", "pml_sides", "courant", "precision"},
    )
    shape = g.ints("shape", 3, lo=1)
    dx = g.real("dx", lo=0, lo_open=True)
    order = g.choice("order", (2, 4), default=2)
    precision = g.choice("precision", ("single", "double"), default="single")
    courant = g.real("courant", default=None, lo=0, lo_open=True, hi=1.0)
    names = g.table.get("boundary", "cpml")
    names = names if isinstance(names, list) else [names] * 3
    sides = g.table.get("pml_sides", "both")
    sides = sides if isinstance(sides, list) else [sides] * 3
    if len(names) != 3:
        raise ConfigError(f"[grid].boundary must be one value or three, got {names!r}")
    if len(sides) != 3:
        raise ConfigError(f"[grid].pml_sides must be one value or three, got {sides!r}")
    thick = g.int("pml_thickness", default=10, lo=1)
    bds, pml = [], []
    for ax, (name, side) in enumerate(zip(names, sides)):
        if name == "cpml":
            if side not in ("both", "low", "high"):
                raise ConfigError(f"[grid].pml_sides must be both, low or high, got {side!r}")
            bds.append(fdtd.CPML(thick, sides=side))
            pml.append((thick if side in ("both", "low") else 0, thick if side in ("both", "high") else 0))
        elif name in ("pec", "periodic"):
            bds.append(fdtd.PEC() if name == "pec" else fdtd.Periodic())
            pml.append((0, 0))
        else:
            raise ConfigError(f"[grid].boundary must be cpml, pec or periodic, got {name!r}")
        if sum(pml[-1]) >= shape[ax]:
            raise ConfigError(
                f"[grid].shape[{ax}] = {shape[ax]} leaves no interior inside a {thick}-cell CPML; "
                f"needs > {sum(pml[-1])}"
            )
    if courant is not None:  # the grid's stability limit, named as a config key
        from .grid import courant_limit, courant_limit_text

        dims = sum(1 for n, b in zip(shape, bds) if not (n == 1 and isinstance(b, fdtd.Periodic)))
        limit = courant_limit(order, dims)
        if courant > limit:
            raise ConfigError(
                f"[grid].courant must be a number in (0, {limit:.6g}] (the stability limit "
                f"{courant_limit_text(order, dims)}), got {courant!r}"
            )
    ncells = shape[0] * shape[1] * shape[2]
    blocks = [
        Table(b, f"blocks[{i}]", {"lo", "hi", "eps", "sigma"}) for i, b in enumerate(_tables(cfg, "blocks"))
    ]
    if blocks and 16 * ncells > 0.8 * host_available_bytes():  # eps and sigma, float64, on the host
        raise ResourceError(
            f"[grid].shape {list(shape)}: the permittivity and conductivity arrays need "
            f"{16 * ncells / 1e9:.1f} GB of host memory, more than is available; use a smaller grid"
        )
    grid = fdtd.Grid(shape, dx, courant, order, tuple(bds), precision)
    eps = sigma = None
    n_max = 1.0
    for b in blocks:
        lo = b.ints("lo", 3, lo=0, hi=[n - 1 for n in shape])
        hi = b.ints("hi", 3, lo=1, hi=list(shape))
        for ax in range(3):
            if hi[ax] <= lo[ax]:
                raise ConfigError(
                    f"{b.where}: hi[{ax}] = {hi[ax]} must exceed lo[{ax}] = {lo[ax]} (hi exclusive)"
                )
        e = b.real("eps", default=1.0, lo=1.0)
        sg = b.real("sigma", default=0.0, lo=0.0)
        if eps is None:
            eps, sigma = np.ones(grid.shape), np.zeros(grid.shape)
        sl = tuple(slice(a, c) for a, c in zip(lo, hi))
        eps[sl], sigma[sl] = e, sg
        n_max = max(n_max, math.sqrt(e))
    sources = []
    source_keys = {
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
    }
    for i, src in enumerate(_tables(cfg, "sources")):
        where = f"sources[{i}]"
        s = Table(src, where, source_keys)
        kind = s.choice("type", ("dipole", "plane", "tfsf"), default="dipole")
        wf = waveform(src, where)
        f_max = _highest_frequency(wf)
        _resolution(f_max, dx, n_max, where)
        amplitude = s.real("amplitude", default=1.0)
        if kind == "tfsf":
            sources.append(_tfsf(s, wf, shape, pml))
            continue
        comp = _axis(s.choice("component", ("x", "y", "z", 0, 1, 2), default="z"), f"{where}.component")
        if kind == "dipole":
            idx = s.ints("index", 3, lo=0, hi=[n - 1 for n in shape])
            _outside_pml(idx, shape, pml, where)
            sources.append(fdtd.PointDipole(idx, comp, wf, amplitude))
        else:
            ax = _axis(s.choice("axis", ("x", "y", "z", 0, 1, 2)), f"{where}.axis")
            k = s.int("index", lo=pml[ax][0], hi=shape[ax] - 1 - pml[ax][1])
            sources.append(fdtd.PlaneSource(ax, k, comp, wf, amplitude))
    probes = []
    for i, p in enumerate(_tables(cfg, "probes")):
        t = Table(p, f"probes[{i}]", {"index", "component", "field", "resonances"})
        idx = t.ints("index", 3, lo=0, hi=[n - 1 for n in shape])
        comp = _axis(t.choice("component", ("x", "y", "z", 0, 1, 2), default="z"), f"{t.where}.component")
        probes.append(fdtd.Probe(idx, comp, t.choice("field", ("E", "H"), default="E")))
    monitors = []
    for i, m in enumerate(_tables(cfg, "monitors")):
        t = Table(m, f"monitors[{i}]", {"axis", "index", "frequencies"})
        ax = _axis(t.choice("axis", ("x", "y", "z", 0, 1, 2)), f"{t.where}.axis")
        k = t.int("index", lo=pml[ax][0], hi=shape[ax] - 1 - pml[ax][1])
        monitors.append(fdtd.DFTPlane(ax, k, t.reals("frequencies", lo=0, lo_open=True)))
    for i, b in enumerate(_tables(cfg, "flux_boxes")):  # six more DFT planes each, after the monitors
        t = Table(b, f"flux_boxes[{i}]", {"lo", "hi", "frequencies"})
        lo, hi = t.ints("lo", 3, lo=0), t.ints("hi", 3, lo=0)
        _outside_pml(lo, shape, pml, t.where, "lo")
        _outside_pml([h - 1 for h in hi], shape, pml, t.where, "hi")
        monitors.extend(fdtd.flux_box(lo, hi, t.reals("frequencies", lo=0, lo_open=True)))
    sim = fdtd.GridSimulation(
        grid,
        eps=eps if eps is not None and np.any(eps != 1) else 1.0,
        sigma=sigma if sigma is not None and np.any(sigma) else 0.0,
        sources=tuple(sources),
        probes=tuple(probes),
        monitors=tuple(monitors),
    )
    run = Table(cfg.get("run"), "[run]", {"steps", "chunk", "checkpoint"} | OUT_OF_CORE_KEYS)
    out_of_core_option(cfg)
    steps = run.int("steps", lo=1)
    chunk = run.int("chunk", default=None, lo=1)
    ck = run.table.get("checkpoint")
    if ck is not None and not isinstance(ck, str):
        raise ConfigError(f"[run].checkpoint must be a file path (a string), got {ck!r}")
    return sim, steps, chunk, ck


def _tables(cfg: dict, key: str) -> list:
    v = cfg.get(key, [])
    if not isinstance(v, list) or not all(isinstance(x, dict) for x in v):
        raise ConfigError(f"{key} must be an array of tables ([[{key}]] sections), got {v!r}")
    return v


def _tfsf(s: Table, wf, shape, pml):
    """A TF/SF source from its table: the box [lo, hi) inside the grid, outside the CPML."""
    from .. import fdtd
    from ..scattering import PlaneWave

    where = s.where
    lo = s.ints("lo", 3, lo=0)
    hi = s.ints("hi", 3, lo=1)
    for ax in range(3):
        if hi[ax] <= lo[ax]:
            raise ConfigError(f"{where}: hi[{ax}] = {hi[ax]} must exceed lo[{ax}] = {lo[ax]}")
    _outside_pml(lo, shape, pml, where, "lo")
    _outside_pml([h - 1 for h in hi], shape, pml, where, "hi")
    direction = s.table.get("direction", "+z")
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
        wave = PlaneWave(d, s.table.get("polarization", default_pol))
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{where}.polarization: {exc}") from exc
    return fdtd.TFSF(lo, hi, wave, wf)
