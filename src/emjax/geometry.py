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

#: largest number of lattice cells along one axis that emjax accepts (as ADDA's limit)
MAX_CELLS_PER_AXIS = 65535


class Shape:
    """Base class. Subclasses set ``yx_ratio``, ``zx_ratio``, ``volume_ratio``, ``n_domains``."""

    name = "shape"
    n_domains = 1

    @property
    def yx_ratio(self) -> float:
        return 1.0

    @property
    def zx_ratio(self) -> float:
        return 1.0

    @property
    def volume_ratio(self) -> float | None:
        """Volume / size_x**3, or None if not known analytically."""
        return None

    def domain(self, x, y, z) -> np.ndarray:
        raise NotImplementedError

    def box_shape(self, nx: int) -> tuple[int, int, int]:
        """Lattice dimensions for ``nx`` cells along x (ADDA's rounding)."""
        ny = int(math.floor(self.yx_ratio * nx + 0.5))
        nz = int(math.floor(self.zx_ratio * nx + 0.5))
        for axis, n in (("y", ny), ("z", nz)):
            if n < 1:
                raise ConfigError(
                    f"the particle is too thin along {axis} for {nx} cells along x: increase the grid"
                )
        return nx, ny, nz


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


#: names used by the CLI and TOML configs
SHAPES = {
    "sphere": Sphere,
    "ellipsoid": Ellipsoid,
    "box": Box,
    "cylinder": Cylinder,
    "coated": CoatedSphere,
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
