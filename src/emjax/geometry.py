"""Particle shapes and their voxelization onto a cubic lattice.

A shape is described in coordinates normalised by its extent along x (``size_x``), with
its centre at the origin, as in ADDA: a point ``(x, y, z)`` (in units of ``size_x``) lies in
domain ``shape.domain(x, y, z)`` (``-1`` outside). Each shape knows the ratios of its
extent along y and z to that along x, and its volume in units of ``size_x**3`` (used for the
volume correction of DDA's dipole size).

Voxelization follows ADDA: a box of ``nx`` cells along x, ``ny = round(nx * y/x)`` and
``nz = round(nx * z/x)``; cell ``(i, j, k)`` has its centre at
``((i + 1/2 - nx/2), (j + 1/2 - ny/2), (k + 1/2 - nz/2))`` cells from the box centre and
belongs to the domain containing that centre (boundaries included).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .errors import ConfigError, require_int, require_positive, require_range
from .geometry_polygon import Polygon, PolygonPrism  # noqa: F401 (names of emjax.geometry)
from .geometry_shape import MAX_CELLS_PER_AXIS, Shape  # noqa: F401 (names of emjax.geometry)


@dataclass(frozen=True)
class Sphere(Shape):
    """A sphere of diameter ``size_x``."""

    name = "sphere"

    @property
    def volume_ratio(self):
        return math.pi / 6

    def domain(self, x, y, z):
        return np.where(x * x + y * y + z * z <= 0.25, 0, -1)


@dataclass(frozen=True)
class Ellipsoid(Shape):
    """An ellipsoid with semi-axes ``(1, y_over_x, z_over_x) * size_x / 2``."""

    y_over_x: float = 1.0
    z_over_x: float = 1.0
    name = "ellipsoid"

    def __post_init__(self):
        require_positive("y_over_x", self.y_over_x)
        require_positive("z_over_x", self.z_over_x)

    @property
    def yx_ratio(self):
        return self.y_over_x

    @property
    def zx_ratio(self):
        return self.z_over_x

    @property
    def volume_ratio(self):
        return math.pi / 6 * self.y_over_x * self.z_over_x

    def domain(self, x, y, z):
        r2 = x * x + (y / self.y_over_x) ** 2 + (z / self.z_over_x) ** 2
        return np.where(r2 <= 0.25, 0, -1)


@dataclass(frozen=True)
class Box(Shape):
    """A rectangular box ``size_x * (1, y_over_x, z_over_x)`` (a cube by default)."""

    y_over_x: float = 1.0
    z_over_x: float = 1.0
    name = "box"

    def __post_init__(self):
        require_positive("y_over_x", self.y_over_x)
        require_positive("z_over_x", self.z_over_x)

    @property
    def yx_ratio(self):
        return self.y_over_x

    @property
    def zx_ratio(self):
        return self.z_over_x

    @property
    def volume_ratio(self):
        return self.y_over_x * self.z_over_x

    def domain(self, x, y, z):
        inside = (np.abs(y) <= self.y_over_x / 2) & (np.abs(z) <= self.z_over_x / 2)
        inside &= np.abs(x) <= 0.5
        return np.where(inside, 0, -1)


@dataclass(frozen=True)
class Cylinder(Shape):
    """A circular cylinder along z, diameter ``size_x``, height/diameter ``aspect``."""

    aspect: float = 1.0
    name = "cylinder"

    def __post_init__(self):
        require_positive("aspect", self.aspect)

    @property
    def zx_ratio(self):
        return self.aspect

    @property
    def volume_ratio(self):
        return math.pi / 4 * self.aspect

    def domain(self, x, y, z):
        inside = (x * x + y * y <= 0.25) & (np.abs(z) <= self.aspect / 2)
        return np.where(inside, 0, -1)


@dataclass(frozen=True)
class CoatedSphere(Shape):
    """A sphere of diameter ``size_x`` with a concentric core of diameter ``core_ratio*size_x``.

    Domain 0 is the coating (shell), domain 1 the core (ADDA's order: the first refractive
    index is the shell's).
    """

    core_ratio: float = 0.5
    name = "coated"
    n_domains = 2

    def __post_init__(self):
        require_range("core_ratio", self.core_ratio, 0.0, 1.0)

    @property
    def volume_ratio(self):
        return math.pi / 6

    def domain(self, x, y, z):
        r2 = x * x + y * y + z * z
        return np.where(r2 <= 0.25 * self.core_ratio**2, 1, np.where(r2 <= 0.25, 0, -1))


@dataclass(frozen=True, eq=False)
class Voxels(Shape):
    """An explicit voxel array: integer domain indices (``-1`` or ``False`` = empty).

    The lattice is the array itself; ``size_x`` is the extent of the array along x.
    """

    array: np.ndarray = None  # type: ignore[assignment]
    name = "voxels"

    def __post_init__(self):
        a = np.asarray(self.array)
        if a.ndim != 3 or min(a.shape) < 1:
            raise ConfigError(f"Voxels.array must be 3-D and non-empty, got shape {a.shape}")
        if a.dtype == bool:
            a = np.where(a, 0, -1)
        if not np.issubdtype(a.dtype, np.integer):
            raise ConfigError("Voxels.array must hold integers (domain index, -1 empty) or bools")
        if a.max() < 0:
            raise ConfigError("Voxels.array is empty (no cell >= 0)")
        object.__setattr__(self, "array", a.astype(np.int16))

    @property
    def n_domains(self):  # type: ignore[override]
        return int(self.array.max()) + 1

    @property
    def yx_ratio(self):
        return self.array.shape[1] / self.array.shape[0]

    @property
    def zx_ratio(self):
        return self.array.shape[2] / self.array.shape[0]

    def box_shape(self, nx):
        return tuple(self.array.shape)


@dataclass(frozen=True)
class Prism(Shape):
    """A right prism with a regular ``sides``-gon base in the xy plane, axis along z, as
    ADDA's ``-shape prism <sides> <aspect>``: ``size_x`` is the base's extent along x (for
    even ``sides`` the distance between two opposite faces, one face normal along +x),
    ``aspect`` = height / size_x. A hexagonal column (aspect > 1) or plate (aspect < 1) is
    ``Prism(6, aspect)``."""

    sides: int = 6
    aspect: float = 1.0
    name = "prism"

    def __post_init__(self):
        require_int("sides", self.sides, 3, 1000)
        require_positive("aspect", self.aspect)

    def _geometry(self):
        half = math.pi / self.sides
        rc = 0.5 / math.sin(half)  # circumradius for a unit side
        ri = rc * math.cos(half)  # inradius (apothem)
        if self.sides % 2:
            dx, dy, shift = rc + ri, 2 * rc * math.sin((self.sides - 1) * half / 2), (rc - ri) / 2
        else:
            dx, shift = 2 * ri, 0.0
            dy = 2 * rc if self.sides % 4 == 2 else dx
        return ri / dx, dy / dx, shift / dx

    @property
    def yx_ratio(self):
        return self._geometry()[1]

    @property
    def zx_ratio(self):
        return self.aspect

    @property
    def volume_ratio(self):
        ri = self._geometry()[0]
        return self.aspect * self.sides * ri**2 * math.tan(math.pi / self.sides)

    def domain(self, x, y, z):
        ri, _, shift = self._geometry()
        xs = x - shift
        inside = np.abs(z) <= self.aspect / 2
        for j in range(self.sides):  # inside every face's half-plane (face normals at 2 pi j / sides)
            a = 2 * math.pi * j / self.sides
            inside = inside & (xs * math.cos(a) + y * math.sin(a) <= ri * (1 + 1e-12))
        return np.where(inside, 0, -1)


@dataclass(frozen=True)
class BulletRosette(Shape):
    """Six bullets along +-x, +-y, +-z joined at the centre (the paper's Fig. 6 rosette).

    Each bullet is a hexagonal column of width ``width`` (across flats, in units of the
    tip-to-tip size D = size_x) ending in a hexagonal pyramid whose length is ``tip`` times
    the arm length D/2. The defaults (width 0.068 D, tip 0.29) give 4720 dipoles in a 76^3
    grid (the paper's rosette: 4746; its exact bullet dimensions are not given). The volume
    is not known in closed form (``volume_ratio`` None: give size_x, not eq_rad).
    """

    width: float = 0.068
    tip: float = 0.29
    name = "rosette"

    def __post_init__(self):
        require_range("width", self.width, 0.0, 1.0, open_lo=True)
        require_range("tip", self.tip, 0.0, 1.0)

    def domain(self, x, y, z):
        x, y, z = np.broadcast_arrays(x, y, z)
        inside = np.zeros(x.shape, bool)
        ri = self.width / 2
        for axial, u, v in ((x, y, z), (y, z, x), (z, x, y)):
            t = np.abs(axial)
            # hexagon across flats 2 ri in the (u, v) plane, shrinking linearly along the tip
            scale = np.clip((0.5 - t) / (0.5 * self.tip), 0, 1) if self.tip > 0 else (t <= 0.5) * 1.0
            r = ri * scale
            hexagon = np.ones(x.shape, bool)
            for j in range(6):
                a = math.pi * j / 3
                hexagon &= u * math.cos(a) + v * math.sin(a) <= r * (1 + 1e-12)
            inside |= hexagon & (t <= 0.5) & (r > 0)
        return np.where(inside, 0, -1)


@dataclass(frozen=True)
class Disk(Shape):
    """A 2-D disk of diameter ``size_x`` in the xy plane, invariant along z (for 2-D grids:
    an infinitely long circular cylinder). Not a DDA particle."""

    name = "disk"

    @property
    def zx_ratio(self):
        return 1e9  # unbounded along z

    def domain(self, x, y, z):
        return np.where(x * x + y * y + 0 * z <= 0.25, 0, -1)


@dataclass(frozen=True)
class Rectangle(Shape):
    """A 2-D rectangle ``size_x * (1, y_over_x)`` in the xy plane, invariant along z (for 2-D
    grids). Not a DDA particle."""

    y_over_x: float = 1.0
    name = "rectangle"

    def __post_init__(self):
        require_positive("y_over_x", self.y_over_x)

    @property
    def yx_ratio(self):
        return self.y_over_x

    @property
    def zx_ratio(self):
        return 1e9  # unbounded along z

    def domain(self, x, y, z):
        inside = (np.abs(x) <= 0.5) & (np.abs(y) <= self.y_over_x / 2) & (0 * z == 0)
        return np.where(inside, 0, -1)


#: shapes invariant along z, for 2-D grids (scenes only; not DDA particles)
SHAPES_2D = {"disk": Disk, "rectangle": Rectangle, "polygon": Polygon}


def read_adda_geometry(path) -> Voxels:
    """An ADDA geometry file (``-shape read``; what ``-save_geom`` writes): ``#`` comments,
    an optional ``Nmat=N`` line, then ``x y z`` or ``x y z mat`` per occupied cell (0-based
    integer positions, 1-based domain). The box is the comment's "box size" if given, else
    the extent of the cells."""
    from pathlib import Path

    path = Path(path)
    box = None
    rows = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        t = line.strip()
        if not t:
            continue
        if t.startswith("#"):
            if "box size:" in t:
                box = tuple(int(v) for v in t.split("box size:")[1].strip().split("x"))
            continue
        if t.lower().startswith("nmat"):
            continue
        parts = t.split()
        if len(parts) not in (3, 4):
            raise ConfigError(f"{path}:{n}: expected 'x y z' or 'x y z mat', got {t!r}")
        try:
            rows.append([int(v) for v in parts] + ([1] if len(parts) == 3 else []))
        except ValueError as exc:
            raise ConfigError(f"{path}:{n}: non-integer entry in {t!r}") from exc
    if not rows:
        raise ConfigError(f"{path}: no occupied cells")
    a = np.asarray(rows)
    if a[:, :3].min() < 0 or a[:, 3].min() < 1:
        raise ConfigError(f"{path}: positions must be >= 0 and domains >= 1")
    shape = tuple(a[:, :3].max(0) + 1)
    if box is not None:
        if any(b < s for b, s in zip(box, shape)):
            raise ConfigError(f"{path}: cells lie outside the stated box size {box}")
        shape = box
    out = np.full(shape, -1, np.int16)
    out[a[:, 0], a[:, 1], a[:, 2]] = a[:, 3] - 1
    return Voxels(out)


def write_adda_geometry(domains, path, shape_name: str = "emjax") -> None:
    """Write a domain array (-1 empty, 0, 1, ...) as an ADDA geometry file (readable by
    ADDA's ``-shape read`` and :func:`read_adda_geometry`)."""
    from pathlib import Path

    a = np.asarray(domains)
    idx = np.argwhere(a >= 0)
    nmat = int(a.max()) + 1
    lines = ["#generated by emjax", f"#shape: '{shape_name}'", "#box size: " + "x".join(map(str, a.shape))]
    if nmat > 1:
        lines.append(f"Nmat={nmat}")
        lines += [f"{i} {j} {k} {a[i, j, k] + 1}" for i, j, k in idx]
    else:
        lines += [f"{i} {j} {k}" for i, j, k in idx]
    Path(path).write_text("\n".join(lines) + "\n")


#: names used by the CLI and TOML configs
SHAPES = {
    "sphere": Sphere,
    "ellipsoid": Ellipsoid,
    "box": Box,
    "cylinder": Cylinder,
    "coated": CoatedSphere,
    "prism": Prism,
    "rosette": BulletRosette,
}


def voxelize(shape: Shape, nx: int) -> np.ndarray:
    """Domain index of every lattice cell, shape ``(nx, ny, nz)``, ``-1`` for empty cells."""
    if isinstance(shape, Voxels):
        return shape.array.copy()
    nx = require_int("grid (cells along x)", nx, 1, MAX_CELLS_PER_AXIS)
    nx, ny, nz = shape.box_shape(nx)
    for name, n in (("ny", ny), ("nz", nz)):
        if n > MAX_CELLS_PER_AXIS:
            raise ConfigError(f"lattice {name} = {n} exceeds {MAX_CELLS_PER_AXIS}")
    x = (np.arange(nx) + 0.5 - nx / 2) / nx
    y = (np.arange(ny) + 0.5 - ny / 2) / nx
    z = (np.arange(nz) + 0.5 - nz / 2) / nx
    out = np.empty((nx, ny, nz), dtype=np.int16)
    for i in range(nx):  # slab by slab keeps the temporaries small
        out[i] = shape.domain(x[i], y[:, None], z[None, :])
    return out


def __getattr__(name):  # shapes read from CAD files (trimesh, gdstk: optional packages)
    if name == "Mesh":
        from .geometry_mesh import Mesh

        return Mesh
    if name == "from_gds":
        from .geometry_gds import from_gds

        return from_gds
    raise AttributeError(f"module 'emjax.geometry' has no attribute {name!r}")
