"""``[[ports]]`` in the physical-unit TOML of ``emjax fdtd``: the S-matrix of a device
(examples/waveguide_straight.toml)::

    [[ports]]                       # one per waveguide end
    name = "in"
    center = [-1.2, 0, 0]
    size = [0, 2.0, 0.05]           # 0 along the normal (the waveguide's axis)
    direction = "+"                 # the way a wave enters the device through the port
    modes = [0]                     # mode indices, 0: the best guided

    [s_parameters]
    frequencies = [0.58, 0.645, 0.71]   # 1 / wavelength
    # until = 60 (length / c per run; default: the pulse plus four passes over the region)
    # bandwidth (the Gaussian pulse's), source_offset = 2 (cells behind the port plane),
    # excite = ["in"] (default: every port)

A config with ports has no [[sources]], [[monitors]] or [run]: each run's source and
monitors are the ports'. ``--out DIR`` gets ``s_parameters.nc`` and the Touchstone file
``s_parameters.sNp`` (frequencies in Hz from [simulation].unit, default um).
"""

from __future__ import annotations

import json
import time

import numpy as np

from ..config import Table
from ..errors import ConfigError
from ..modes.smatrix import UNITS

PORT_KEYS = {"name", "center", "size", "direction", "modes"}
SPAR_KEYS = {"frequencies", "until", "bandwidth", "source_offset", "excite"}


def build_ports(cfg: dict):
    """``(sim, ports, options, unit)`` of a config with ``[[ports]]``; ``options`` are
    :func:`emjax.fdtd.s_matrix`'s keyword arguments."""
    from .config import _resolution
    from .ports import Port
    from .scene_config import build_physical

    for key in ("sources", "monitors", "run"):
        if key in cfg:
            raise ConfigError(
                f"[{key}] does not combine with [[ports]]: each run's source and monitors are the "
                "ports' (run time: [s_parameters].until)"
            )
    if "s_parameters" not in cfg:
        raise ConfigError("[[ports]] needs an [s_parameters] table with frequencies (1 / wavelength)")
    rest = {k: v for k, v in cfg.items() if k not in ("ports", "s_parameters")}
    sim, *_ = build_physical({**rest, "run": {"until": 1.0}})
    unit = cfg.get("simulation", {}).get("unit", "um")
    if unit not in UNITS:
        raise ConfigError(
            f"[simulation].unit must be one of {', '.join(UNITS)} for the Touchstone file, got {unit!r}"
        )
    ports = []
    tables = cfg["ports"] if isinstance(cfg["ports"], list) else None
    if not tables:
        raise ConfigError("[[ports]] must be a list of tables (write [[ports]], one per port)")
    for i, raw in enumerate(tables):
        t = Table(raw, f"ports[{i}]", PORT_KEYS)
        name = t.string("name", what="a port name (a string)")
        center = t.reals("center", length=3)
        size = t.reals("size", length=3, lo=0)
        direction = t.choice("direction", ("+", "-"))
        modes = t.ints("modes", len(raw.get("modes", [0])), default=[0], lo=0)
        try:
            ports.append(Port(name, center, size, direction, tuple(modes)))
        except ConfigError as exc:
            raise ConfigError(f"ports[{i}]: {exc}") from None
    sp = Table(cfg["s_parameters"], "[s_parameters]", SPAR_KEYS)
    freqs = sp.reals("frequencies", lo=0, lo_open=True)
    n_max = 1.0  # the densest constant medium's index, for the resolution check
    for m in sim.scene.materials if sim.scene is not None else ():
        if isinstance(m, (int, float)):
            n_max = max(n_max, float(np.sqrt(m)))
    _resolution(max(freqs), sim.dx, n_max, sp.name("frequencies"))
    options = {
        "until": sp.real("until", default=None, lo=0, lo_open=True),
        "bandwidth": sp.real("bandwidth", default=None, lo=0, lo_open=True),
        "source_offset": sp.int("source_offset", default=2, lo=1, hi=100),
    }
    if sp.has("excite"):
        excite = sp.get("excite")
        names = [p.name for p in ports]
        if not isinstance(excite, list) or not all(e in names for e in excite):
            raise ConfigError(f"[s_parameters].excite must be a list of port names {names}, got {excite!r}")
        options["excite"] = excite
    return sim, ports, freqs, options, unit


def run_ports(args, command: str, cfg, method: str = "fdtd") -> int:
    """``emjax fdtd CONFIG.toml`` for a config with ``[[ports]]``: the S-matrix, written as
    NetCDF and Touchstone under ``--out``; a summary of ``|S|^2`` on stdout. ``command``:
    the command line as the user gave it; ``method``: the output folder's method name."""
    from ..outdir import OutputFolder, config_description
    from .ports import DECAYED, s_matrix
    from .scene_raster import check_memory

    sim, ports, freqs, options, unit = build_ports(cfg)
    check_memory(sim)
    if args.devices not in (None, 1):
        raise ConfigError("--devices: port runs (mode sources) run on one device")
    folder = OutputFolder(args.out, method=method, overwrite=args.overwrite).check()
    t0 = time.perf_counter()
    S = s_matrix(sim, ports, freqs, progress=False, **options)
    n = len(S.labels)
    summary = {
        "ports": list(S.labels),
        "frequency": list(map(float, S.frequencies)),
        "abs_s_squared": {
            f"S[{o},{i}]": np.abs(S.s[:, a, b]).__pow__(2).tolist()
            for a, o in enumerate(S.labels)
            for b, i in enumerate(S.labels)
        },
        "residual": [None if np.isnan(r) else float(r) for r in S.residual],
        "decayed": bool(np.nanmax(S.residual) <= DECAYED),
        "seconds": time.perf_counter() - t0,
    }
    with folder.writing(config_description(args.config, method), command) as stage:
        S.save(stage / "s_parameters.nc")
        S.write_touchstone(stage / f"s_parameters.s{n}p", unit=unit)
        (stage / "s_parameters.json").write_text(json.dumps(summary, indent=1))
    summary["out"] = str(folder.path)
    print(json.dumps(summary) if args.json else "\n".join(f"{k:14s} {v}" for k, v in summary.items()))
    return 0
