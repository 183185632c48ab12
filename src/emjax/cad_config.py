"""The TOML keys of shapes read from files, shared by every method's ``[[objects]]`` tables::

    [[objects]]
    shape = "stl"            # a closed surface mesh (STL, OBJ, PLY, ...: what trimesh reads)
    file = "part.stl"        # relative to the TOML file
    scale = 1.0              # multiplies the file's coordinates
    center = [0, 0, 0]       # optional: where the mesh's bounding-box centre goes
    size = 0.5               # optional: its extent along x (default: the file's, times scale)

    [[objects]]
    shape = "gds"            # the polygons of one GDSII layer, extruded along z
    file = "chip.gds"
    layer = 1
    datatype = 0
    z = [0.0, 0.22]          # z_min, z_max (2-D grids: leave out)
    cell = "TOP"             # optional: default the only top-level cell

A mesh's or a layout's own placement is kept unless ``center`` (or ``size``) says otherwise.
Nothing here imports JAX.
"""

from __future__ import annotations

from pathlib import Path

from .config import Table
from .errors import ConfigError

__all__ = ["FILE_KEYS", "FILE_SHAPES", "file_objects"]

#: shape names read from files
FILE_SHAPES = ("stl", "mesh", "gds")
#: the keys they take besides shape, center, size and the material's
FILE_KEYS = {"file", "scale", "layer", "datatype", "z", "cell", "sidewall_angle"}
_KEYS = {
    "stl": {"file", "scale"},
    "mesh": {"file", "scale"},
    "gds": {"file", "layer", "datatype", "z", "cell", "sidewall_angle"},
}


def _path(t: Table, base_dir) -> Path:
    name = t.string("file", what="a file path (a string)")
    path = Path(name)
    if not path.is_absolute() and base_dir is not None:
        path = Path(base_dir) / path
    if not path.is_file():
        raise ConfigError(f"{t.name('file')} = {name!r}: no such file ({path})")
    return path


def file_objects(t: Table, name: str, material, base_dir=None, *, dims: int = 3) -> list:
    """The ``scene.Object``s of one ``[[objects]]`` table of a file shape ``name``
    (:data:`FILE_SHAPES`) with ``material``; paths relative to ``base_dir`` (the TOML
    file's folder; None: the working directory). ``dims`` 2: a layout's polygons are
    z-invariant (``z`` must be left out)."""
    from . import geometry, scene

    name = name.lower()
    extra = sorted(k for k in FILE_KEYS if t.has(k) and k not in _KEYS[name])
    if extra:
        raise ConfigError(f"{t.where}: {', '.join(extra)} do not apply to shape {name!r}")
    path = _path(t, base_dir)
    center = t.reals("center", length=3, default=None) if t.has("center") else None
    rotation = t.reals("rotation", length=3, default=None) if t.has("rotation") else None
    try:
        if name in ("stl", "mesh"):
            mesh = geometry.Mesh.from_file(path, scale=t.positive("scale", default=1.0), center=center)
            size = t.positive("size") if t.has("size") else None
            return [scene.Object(mesh, material, size=size, rotation=rotation)]
        if t.has("size") or center is not None or rotation is not None:
            raise ConfigError(
                f"{t.where}: a layout is placed by its polygons; leave out size, center and rotation"
            )
        if dims == 2 and t.has("z"):
            raise ConfigError(f"{t.name('z')}: a 2-D grid's polygons are z-invariant; leave out z")
        z = None if dims == 2 else t.reals("z", length=2)
        shapes = geometry.from_gds(
            path,
            t.int("layer", lo=0, hi=65535),
            t.int("datatype", default=0, lo=0, hi=65535),
            z,
            t.real("sidewall_angle", default=0.0),
            cell=t.string("cell", default=None, what="a cell name (a string)"),
        )
    except ConfigError as exc:
        msg = str(exc)
        raise ConfigError(msg if msg.startswith(t.where) else f"{t.where}: {msg}") from None
    return [scene.Object(s, material) for s in shapes]
