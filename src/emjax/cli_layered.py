"""``emjax layered CONFIG.toml`` and ``emjax bench layered``.

Config (see examples/layered_dipole.toml)::

    wavelength = 600.0            # same length unit as everything else (here nm)
    part = "scattered"            # or "total"
    rtol = 1e-8
    precision = "double"
    [stack]
    eps = [2.25, 1.0]             # top ... bottom; numbers, "2.25+0.1j" or [re, im]
    # n = [1.5, 1.0]              # or refractive indices instead of eps
    thickness = []                # one per finite layer
    z_top = 0.0
    [dipole]
    position = [0.0, 0.0, 10.0]
    moment = [0.0, 0.0, 1.0]      # complex entries as above
    [map]
    plane = "xz"                  # "xy", "xz" or "yz"
    center = [0.0, 0.0, 0.0]
    size = [128.0, 128.0]         # extent along the plane's two axes
    points = [128, 128]
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from .errors import ConfigError, require_int, require_positive

PLANES = {"xy": ("x", "y"), "xz": ("x", "z"), "yz": ("y", "z")}


def _known(table: dict, allowed: set, where: str):
    unknown = set(table) - allowed
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)}; allowed: {sorted(allowed)}")


def _complex(value, field: str) -> complex:
    try:
        if isinstance(value, (list, tuple)):
            if len(value) != 2:
                raise ValueError
            return complex(float(value[0]), float(value[1]))
        return (
            complex(str(value).replace(" ", "").replace("i", "j"))
            if isinstance(value, str)
            else complex(value)
        )
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            f"{field} must be a number, a string like '2.25+0.1j' or [re, im], got {value!r}"
        ) from exc


def _vector(value, field: str, n: int = 3, cplx: bool = False):
    if not isinstance(value, (list, tuple)) or len(value) != n:
        raise ConfigError(f"{field} must be a list of {n} values, got {value!r}")
    return [(_complex(v, f"{field}[{i}]") if cplx else float(v)) for i, v in enumerate(value)]


def build_layered(cfg: dict):
    """(kwargs for dipole_fields, map shape, map axes) from a parsed TOML config."""
    from .layered import Stack

    _known(cfg, {"wavelength", "part", "rtol", "precision", "stack", "dipole", "map"}, "config")
    for key in ("wavelength", "stack", "dipole", "map"):
        if key not in cfg:
            raise ConfigError(f"config: '{key}' is required")
    st = dict(cfg["stack"])
    _known(st, {"eps", "n", "thickness", "z_top"}, "[stack]")
    if ("eps" in st) == ("n" in st):
        raise ConfigError("[stack]: give exactly one of eps or n (one entry per medium, top first)")
    if "eps" in st:
        eps = [_complex(e, f"[stack].eps[{i}]") for i, e in enumerate(st["eps"])]
    else:
        eps = [_complex(n, f"[stack].n[{i}]") ** 2 for i, n in enumerate(st["n"])]
    stack = Stack(eps=eps, thickness=st.get("thickness", []), z_top=st.get("z_top", 0.0))
    dp = dict(cfg["dipole"])
    _known(dp, {"position", "moment"}, "[dipole]")
    if "position" not in dp:
        raise ConfigError("[dipole].position is required")
    source = _vector(dp["position"], "[dipole].position")
    moment = _vector(dp.get("moment", [0, 0, 1]), "[dipole].moment", cplx=True)
    mp = dict(cfg["map"])
    _known(mp, {"plane", "center", "size", "points"}, "[map]")
    plane = mp.get("plane", "xz")
    if plane not in PLANES:
        raise ConfigError(f"[map].plane must be one of {sorted(PLANES)}, got {plane!r}")
    center = _vector(mp.get("center", [0, 0, 0]), "[map].center")
    size = [
        require_positive(f"[map].size[{i}]", s)
        for i, s in enumerate(_vector(mp.get("size"), "[map].size", 2))
    ]
    npts = [require_int(f"[map].points[{i}]", n, 1, 4096) for i, n in enumerate(mp.get("points", [64, 64]))]
    if len(npts) != 2:
        raise ConfigError(f"[map].points must be two integers, got {mp.get('points')!r}")
    axes = PLANES[plane]
    idx = {"x": 0, "y": 1, "z": 2}
    u = center[idx[axes[0]]] + (np.linspace(-0.5, 0.5, npts[0]) if npts[0] > 1 else np.zeros(1)) * size[0]
    v = center[idx[axes[1]]] + (np.linspace(-0.5, 0.5, npts[1]) if npts[1] > 1 else np.zeros(1)) * size[1]
    U, V = np.meshgrid(u, v, indexing="ij")
    pts = np.tile(np.asarray(center, float), (U.size, 1))
    pts[:, idx[axes[0]]] = U.ravel()
    pts[:, idx[axes[1]]] = V.ravel()
    kwargs = dict(
        stack=stack,
        wavelength=require_positive("wavelength", cfg["wavelength"]),
        source=source,
        points=pts,
        p=moment,
        part=cfg.get("part", "total"),
        rtol=cfg.get("rtol", 1e-8),
        precision=cfg.get("precision", "double"),
    )
    return kwargs, tuple(npts), axes


def add_parsers(sub, bench) -> None:
    p = sub.add_parser("layered", help="fields of a dipole in a planar multilayer (Sommerfeld integrals)")
    p.add_argument("config", type=Path, help="TOML file (see examples/layered_dipole.toml)")
    p.add_argument("--out", type=Path, help="write fields.nc and fields.png here")
    p.add_argument("--json", action="store_true", help="one-line JSON summary on stdout")
    b = bench.add_parser("layered", help="Quinto et al.'s dipole-near-interface maps: time and error")
    b.add_argument("--size", type=int, action="append", required=True, metavar="N", help="N x N points")
    b.add_argument("--precision", default="double", choices=["single", "double"])
    b.add_argument("--rtol", type=float, default=1e-8)
    b.add_argument("--json", action="store_true")


def cmd_layered(args, argv) -> int:
    from .backend import device_description
    from .cli_args import load_toml
    from .layered import dipole_fields

    kwargs, shape, axes = build_layered(load_toml(args.config))
    t0 = time.perf_counter()
    res = dipole_fields(**kwargs)
    summary = {
        "points": int(len(res.points)),
        "seconds": time.perf_counter() - t0,
        "max_error_estimate": float(np.max(res.error)),
        "max_abs_E": float(np.max(np.abs(res.E))),
        "device": device_description(),
    }
    if args.out is not None:
        from .io import layered_to_xarray, save_dataset
        from .plot import plot_layered_map

        args.out.mkdir(parents=True, exist_ok=True)
        save_dataset(layered_to_xarray(res, shape, axes), args.out / "fields.nc")
        comp = int(np.argmax(np.abs(res.p)))
        plot_layered_map(res, shape, axes, args.out / "fields.png", component=comp)
        summary["out"] = str(args.out)
    print(json.dumps(summary) if args.json else "\n".join(f"{k:20s} {v}" for k, v in summary.items()))
    return 0


def cmd_bench_layered(args) -> int:
    from .bench import layered_benchmark

    for n in args.size:
        n = require_int("size", n, 1, 4096)
        r = layered_benchmark(n, args.precision, args.rtol)
        if args.json:
            print(json.dumps(r))
        else:
            print(
                f"layered {r['map']} {args.precision} rtol {args.rtol:g}: {r['seconds']:.3f} s "
                f"({r['points_per_s']:.3g} points/s), error {r['max_error_normwise']:.2e} "
                f"(estimate {r['max_error_estimate']:.1e}) on {r['device']}"
            )
    return 0
