"""Layouts: the polygons of one GDSII layer (read with gdstk), extruded along z.

Each polygon becomes one shape: a :class:`~emjax.geometry.PolygonPrism` between ``z[0]``
and ``z[1]``, or, with ``z=None``, a z-invariant :class:`~emjax.geometry.Polygon` (2-D
grids). Each carries its placement (``shape.placement``: the centre of its bounding box and
its extent along x, in the file's user unit), so ``scene.Object(shape, material)`` puts it
where the layout does. Polygons of one layer that overlap are united (later objects of the
same material change nothing), as GDSII means them; a hole drawn as a keyhole (a polygon
whose outline runs out to the hole and back along the same cut, what layout tools and
gdstk's boolean operations write) stays a hole, by the even-odd rule. Paths (FlexPath,
RobustPath) and references to other cells are flattened to polygons first.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .errors import ConfigError, require_int
from .geometry_polygon import Polygon, PolygonPrism

__all__ = ["from_gds", "load_gdstk"]

INSTALL = "pip install emjax[cad]"


def load_gdstk():
    """The gdstk module, or one ConfigError naming the extra to install."""
    try:
        import gdstk
    except ModuleNotFoundError:
        raise ConfigError(f"reading GDSII layouts needs the gdstk package: {INSTALL}") from None
    return gdstk


def _top_cell(lib, cell, where: str):
    cells = {c.name: c for c in lib.cells}
    if cell is not None:
        if cell not in cells:
            raise ConfigError(f"{where}: no cell named {cell!r}; the file has {', '.join(sorted(cells))}")
        return cells[cell]
    top = lib.top_level()
    if len(top) != 1:
        names = ", ".join(sorted(c.name for c in top)) or "none"
        raise ConfigError(f"{where}: {len(top)} top-level cells ({names}): name the one to read with cell")
    return top[0]


def from_gds(
    path,
    layer: int,
    datatype: int = 0,
    z=(0.0, 1.0),
    sidewall_angle: float = 0.0,
    *,
    cell: str | None = None,
) -> tuple:
    """The polygons of ``(layer, datatype)`` in a GDSII file, as shapes placed where the
    layout puts them (module docstring), lengths in the file's user unit (usually um).

    ``z``: ``(z_min, z_max)`` of the extrusion (PolygonPrism), or None for z-invariant
    Polygons (2-D grids). ``sidewall_angle`` (degrees from vertical) must be 0: tapered
    sidewalls are not supported. ``cell``: the cell to read (default: the only top-level
    one). A ConfigError names what is missing: the file, the cell, polygons on the layer."""
    if not (isinstance(sidewall_angle, (int, float)) and sidewall_angle == 0):
        raise ConfigError(
            f"sidewall_angle = {sidewall_angle!r}: only vertical sidewalls (0) are supported; "
            "give 0 (the layout's polygons extruded straight along z)"
        )
    layer = require_int("layer", layer, 0, 65535)
    datatype = require_int("datatype", datatype, 0, 65535)
    if z is not None:
        try:
            z0, z1 = (float(v) for v in z)
        except (TypeError, ValueError):
            raise ConfigError(f"z must be (z_min, z_max) or None, got {z!r}") from None
        if not (math.isfinite(z0) and math.isfinite(z1) and z1 > z0):
            raise ConfigError(f"z must be two finite numbers with z_min < z_max, got {z!r}")
    gdstk = load_gdstk()
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"GDS file {str(path)!r} does not exist")
    try:
        lib = gdstk.read_gds(str(path))
    except Exception as exc:  # gdstk raises RuntimeError, OSError ... for unreadable files
        raise ConfigError(f"cannot read GDS file {str(path)!r}: {exc}") from None
    top = _top_cell(lib, cell, str(path))
    polys = top.get_polygons(layer=layer, datatype=datatype)
    if not polys:
        have = sorted({(p.layer, p.datatype) for p in top.get_polygons()})
        raise ConfigError(
            f"{path}: cell {top.name!r} has no polygons on layer {layer}, datatype {datatype}; "
            f"it has (layer, datatype) {have}"
        )
    return tuple(extruded(np.asarray(p.points, float), z) for p in polys)


def extruded(vertices: np.ndarray, z=None):
    """One outline ``vertices`` (n, 2, lab frame) as a placed shape: a PolygonPrism over
    ``z = (z_min, z_max)`` or, with ``z`` None, a Polygon."""
    lo, hi = vertices.min(0), vertices.max(0)
    size = float(hi[0] - lo[0])
    if z is None:
        shape = Polygon(vertices=vertices)
        center = (float(lo[0] + hi[0]) / 2, float(lo[1] + hi[1]) / 2, 0.0)
    else:
        z0, z1 = (float(v) for v in z)
        shape = PolygonPrism(vertices=vertices, aspect=(z1 - z0) / size)
        center = (float(lo[0] + hi[0]) / 2, float(lo[1] + hi[1]) / 2, (z0 + z1) / 2)
    object.__setattr__(shape, "_placement", (center, size))
    return shape
