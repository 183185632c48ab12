"""The TOML config of ``emjax layered``, mapped onto emjax.layered's arguments.

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

import numpy as np

from ..config import check_keys, parse_complex
from ..errors import ConfigError, require_int, require_positive

__all__ = ["PLANES", "build_layered"]

PLANES = {"xy": ("x", "y"), "xz": ("x", "z"), "yz": ("y", "z")}


def _vector(value, field: str, n: int = 3, cplx: bool = False):
    if not isinstance(value, (list, tuple)) or len(value) != n:
        raise ConfigError(f"{field} must be a list of {n} values, got {value!r}")
    return [(parse_complex(v, f"{field}[{i}]") if cplx else float(v)) for i, v in enumerate(value)]


def build_layered(cfg: dict):
    """(kwargs for dipole_fields, map shape, map axes) from a parsed TOML config."""
    from .stack import Stack

    check_keys(cfg, {"wavelength", "part", "rtol", "precision", "stack", "dipole", "map"}, "config")
    for key in ("wavelength", "stack", "dipole", "map"):
        if key not in cfg:
            raise ConfigError(f"config: '{key}' is required")
    st = dict(cfg["stack"])
    check_keys(st, {"eps", "n", "thickness", "z_top"}, "[stack]")
    if ("eps" in st) == ("n" in st):
        raise ConfigError("[stack]: give exactly one of eps or n (one entry per medium, top first)")
    if "eps" in st:
        eps = [parse_complex(e, f"[stack].eps[{i}]") for i, e in enumerate(st["eps"])]
    else:
        eps = [parse_complex(n, f"[stack].n[{i}]") ** 2 for i, n in enumerate(st["n"])]
    stack = Stack(eps=eps, thickness=st.get("thickness", []), z_top=st.get("z_top", 0.0))
    dp = dict(cfg["dipole"])
    check_keys(dp, {"position", "moment"}, "[dipole]")
    if "position" not in dp:
        raise ConfigError("[dipole].position is required")
    source = _vector(dp["position"], "[dipole].position")
    moment = _vector(dp.get("moment", [0, 0, 1]), "[dipole].moment", cplx=True)
    mp = dict(cfg["map"])
    check_keys(mp, {"plane", "center", "size", "points"}, "[map]")
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
