"""The dipole lattice: which cells of a cubic grid are occupied, and the dipole size.

Rules follow ADDA (make_particle.c), so that equal inputs give ADDA's lattice:

* ``size_x`` (extent along x) or ``eq_rad`` (volume-equivalent radius) sets the size; with
  ``eq_rad``, ``size_x = (4 pi / 3 / volume_ratio)**(1/3) * eq_rad``;
* the number of cells along x is ``grid`` if given, else
  ``ceil(size_x * dipoles_per_wavelength / wavelength)`` (default ``10 |m|_max`` dipoles per
  wavelength, and at least 16 cells when that default is used);
* ny, nz from the shape's aspect ratios; cells are centred as in :mod:`emjax.geometry`;
* volume correction: when the shape's volume is known, the dipole size ``d`` is chosen so
  that ``N d**3`` equals the particle volume (so ``a_eq`` is exact); otherwise
  ``d = size_x / nx``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError, require_int, require_positive
from ..geometry import MAX_CELLS_PER_AXIS, Shape, Voxels, voxelize

MIN_AUTO_GRID = 16


@dataclass(frozen=True, eq=False)
class Lattice:
    """Occupied cells and dipole size.

    Attributes
    ----------
    domains : int16 array (nx, ny, nz), domain index per cell, -1 = empty.
    d : dipole (cell) size, in the problem's length unit.
    size_x : particle extent along x used for the lattice.
    """

    domains: np.ndarray
    d: float
    size_x: float

    @property
    def shape(self) -> tuple[int, int, int]:
        return tuple(self.domains.shape)

    @property
    def n_dipoles(self) -> int:
        return int(np.count_nonzero(self.domains >= 0))

    @property
    def a_eq(self) -> float:
        """Volume-equivalent radius of the occupied cells."""
        return (3 * self.n_dipoles / (4 * math.pi)) ** (1 / 3) * self.d

    def positions(self) -> np.ndarray:
        """Centres of the occupied cells, ``(N, 3)``, relative to the lattice centre."""
        idx = np.argwhere(self.domains >= 0)
        return (idx + 0.5 - np.asarray(self.shape) / 2) * self.d


@dataclass(frozen=True)
class GridPlan:
    """What the inputs fix before voxelization: cells along x and one of size_x, eq_rad
    (voxel arrays) or the dipole size itself (no size given: ``d = wavelength / dpl``)."""

    nx: int
    size_x: float | None = None
    eq_rad: float | None = None
    d: float | None = None


def plan_grid(
    shape: Shape,
    wavelength: float,
    m_abs_max: float,
    *,
    size_x=None,
    eq_rad=None,
    dipoles_per_wavelength=None,
    grid=None,
) -> GridPlan:
    """Cells along x and the size rule from the user's inputs (cheap: nothing is allocated).

    ADDA's rules: a size (``size_x`` or ``eq_rad``) with ``grid`` or ``dipoles_per_wavelength``;
    or ``grid`` alone (then ``d = wavelength / dipoles_per_wavelength``, default ``10 |m|``).
    All three together are refused, as ADDA does ("too much information").
    """
    require_positive("wavelength", wavelength)
    if size_x is not None and eq_rad is not None:
        raise ConfigError("give either size_x (size along x) or eq_rad, not both")
    if size_x is not None:
        size_x = require_positive("size_x", size_x)
    if eq_rad is not None:
        eq_rad = require_positive("eq_rad", eq_rad)
    dpl = None
    if dipoles_per_wavelength is not None:
        dpl = require_positive("dipoles_per_wavelength", dipoles_per_wavelength)
    sized = size_x is not None or eq_rad is not None
    if sized and grid is not None and dpl is not None:
        raise ConfigError(
            "size, grid and dipoles_per_wavelength together over-determine the lattice: give two of them"
        )
    if isinstance(shape, Voxels):
        nx = shape.array.shape[0]
        if grid is not None and grid != nx:
            raise ConfigError(f"grid = {grid} conflicts with the voxel array's nx = {nx}")
        if sized:
            return GridPlan(nx, size_x=size_x, eq_rad=eq_rad)
        return GridPlan(nx, d=wavelength / (dpl or 10 * m_abs_max))
    if eq_rad is not None:
        if shape.volume_ratio is None:
            raise ConfigError(f"shape {shape.name!r} has no analytic volume: use size_x, not eq_rad")
        size_x = (4 * math.pi / 3 / shape.volume_ratio) ** (1 / 3) * eq_rad
    if grid is not None:
        nx = require_int("grid", grid, 1, MAX_CELLS_PER_AXIS)
        if size_x is None:
            return GridPlan(nx, d=wavelength / (dpl or 10 * m_abs_max))
        return GridPlan(nx, size_x=size_x)
    if size_x is None:
        raise ConfigError("give the particle size (size_x along x, or eq_rad) or the grid")
    if dpl is None:
        nx = max(math.ceil(size_x * 10 * m_abs_max / wavelength), MIN_AUTO_GRID)
    else:
        nx = math.ceil(size_x * dpl / wavelength)
    if nx > MAX_CELLS_PER_AXIS:
        raise ConfigError(
            f"the lattice would need {nx} cells along x (> {MAX_CELLS_PER_AXIS}); "
            "reduce size or dipoles_per_wavelength"
        )
    return GridPlan(max(nx, 1), size_x=size_x)


def build_lattice(shape: Shape, plan: GridPlan, *, volume_correction: bool = True) -> Lattice:
    """Voxelize and fix the dipole size (ADDA's volume correction when the size is given)."""
    domains = voxelize(shape, plan.nx)
    n = int(np.count_nonzero(domains >= 0))
    if n == 0:
        raise ConfigError("the particle has no dipoles on this lattice: increase grid or size")
    nx = domains.shape[0]
    vr = None if isinstance(shape, Voxels) else shape.volume_ratio
    if plan.d is not None:
        d = plan.d
    elif plan.eq_rad is not None and isinstance(shape, Voxels):
        d = plan.eq_rad * (4 * math.pi / (3 * n)) ** (1 / 3)
    elif volume_correction and vr is not None:
        d = (vr * plan.size_x**3 / n) ** (1 / 3)
    else:
        d = plan.size_x / nx
    size_x = plan.size_x if plan.size_x is not None else nx * d
    return Lattice(domains, float(d), float(size_x))
