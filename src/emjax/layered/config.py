"""The TOML config of ``emjax layered``, mapped onto emjax.layered's arguments (every key
with its type, range and default: docs/toml.md).

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

from ..config import Table
from ..errors import ConfigError

__all__ = ["MAX_POINTS", "PLANES", "build_layered"]

PLANES = {"xy": ("x", "y"), "xz": ("x", "z"), "yz": ("y", "z")}
#: points per map axis at most
MAX_POINTS = 4096
TOP_KEYS = {"wavelength", "part", "rtol", "precision", "stack", "dipole", "map"}


def build_layered(cfg: dict):
    """(kwargs for dipole_fields, map shape, map axes) from a parsed TOML config. Every key
    is checked (type, range, required; unknown keys refused) before any integral: a
    :class:`ConfigError` naming the field (``[map].size[1]``) and what is allowed."""
    from .stack import Stack

    top = Table(cfg, "", TOP_KEYS)
    wavelength = top.positive("wavelength")
    part = top.choice("part", ("total", "scattered"), default="total")
    precision = top.choice("precision", ("double", "single"), default="double")
    rtol = top.real("rtol", default=1e-8, lo=1e-13, hi=0.1)
    if precision == "single" and rtol < 1e-6:
        raise ConfigError(f"rtol = {rtol:g} is below what single precision can reach; allowed >= 1e-6")

    st = top.sub("stack", {"eps", "n", "thickness", "z_top"}, required=True)
    if st.has("eps") == st.has("n"):
        raise ConfigError("[stack]: give exactly one of eps or n (one entry per medium, top first)")
    if st.has("eps"):
        eps = st.complexes("eps", min_length=2, lossy=True)
        for i, e in enumerate(eps):
            if e == 0:
                raise ConfigError(f"[stack].eps[{i}] must not be 0")
    else:
        n = st.complexes("n", min_length=2, lossy=True)
        for i, v in enumerate(n):
            if v.real <= 0:
                raise ConfigError(f"[stack].n[{i}] must have Re n > 0, got {v}")
        eps = tuple(v**2 for v in n)
    layers = len(eps) - 2
    thickness = st.get("thickness", [])
    if thickness != []:
        thickness = st.reals("thickness", lo=0, lo_open=True)
    if len(thickness) != layers:
        raise ConfigError(
            f"[stack].thickness needs one value per finite layer: {layers} for {len(eps)} media, "
            f"got {len(thickness)}"
        )
    z_top = st.real("z_top", default=0.0)
    stack = Stack(eps=list(eps), thickness=list(thickness), z_top=z_top)

    dp = top.sub("dipole", {"position", "moment"}, required=True)
    source = dp.reals("position", length=3)
    moment = dp.complexes("moment", length=3, default=[0, 0, 1])
    if all(m == 0 for m in moment):
        raise ConfigError("[dipole].moment must not be zero (allowed: any non-zero [px, py, pz])")

    mp = top.sub("map", {"plane", "center", "size", "points"}, required=True)
    plane = mp.choice("plane", tuple(sorted(PLANES)), default="xz")
    center = mp.reals("center", length=3, default=[0.0, 0.0, 0.0])
    size = mp.reals("size", length=2)
    for i, s in enumerate(size):
        if s <= 0:
            raise ConfigError(f"[map].size[{i}] must be > 0, got {s!r}")
    npts = mp.ints("points", 2, default=[64, 64], lo=1, hi=MAX_POINTS)
    axes = PLANES[plane]
    idx = {"x": 0, "y": 1, "z": 2}
    u = center[idx[axes[0]]] + (np.linspace(-0.5, 0.5, npts[0]) if npts[0] > 1 else np.zeros(1)) * size[0]
    v = center[idx[axes[1]]] + (np.linspace(-0.5, 0.5, npts[1]) if npts[1] > 1 else np.zeros(1)) * size[1]
    U, V = np.meshgrid(u, v, indexing="ij")
    pts = np.tile(np.asarray(center, float), (U.size, 1))
    pts[:, idx[axes[0]]] = U.ravel()
    pts[:, idx[axes[1]]] = V.ravel()
    if part == "total":
        hit = np.nonzero(np.all(pts == np.asarray(source), axis=1))[0]
        if len(hit):
            raise ConfigError(
                f"[map]: point {int(hit[0])} coincides with [dipole].position {list(source)} (the total "
                'field is singular there): shift [map].center or use part = "scattered"'
            )
    kwargs = dict(
        stack=stack,
        wavelength=wavelength,
        source=list(source),
        points=pts,
        p=list(moment),
        part=part,
        rtol=rtol,
        precision=precision,
    )
    return kwargs, tuple(npts), axes
