"""The 2-D FDFD's sources and result: :class:`LineSource`, :class:`PlaneWave2D` (checked on
construction) and :class:`TMResult` (the field of :func:`emjax.fdfd.solve_tm` /
:func:`emjax.fdfd.solve_te` with the grid facts the post-processing needs)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .._repr import concise_repr
from ..errors import ConfigError

__all__ = ["LineSource", "PlaneWave2D", "TMResult"]


@dataclass(frozen=True)
class LineSource:
    """A line current ``current`` (per unit length, along z) through ``position`` (x, y),
    placed at the nearest E_z node."""

    position: tuple = (0.0, 0.0)
    current: complex = 1.0

    def __post_init__(self):
        try:
            pos = tuple(float(v) for v in self.position)
        except (TypeError, ValueError):
            pos = ()
        if len(pos) != 2 or not all(math.isfinite(v) for v in pos):
            raise ConfigError(f"LineSource.position must be two finite numbers (x, y), got {self.position!r}")
        try:
            cur = complex(self.current)
        except (TypeError, ValueError):
            cur = complex("nan")
        if not (math.isfinite(cur.real) and math.isfinite(cur.imag)):
            raise ConfigError(f"LineSource.current must be a finite (complex) number, got {self.current!r}")
        object.__setattr__(self, "position", pos)


@dataclass(frozen=True)
class PlaneWave2D:
    """A unit plane wave E_z = exp(i k (x cos phi + y sin phi)), ``angle`` phi in degrees."""

    angle: float = 0.0

    def __post_init__(self):
        try:
            a = float(self.angle)
        except (TypeError, ValueError):
            a = math.nan
        if not math.isfinite(a):
            raise ConfigError(f"PlaneWave2D.angle must be a finite angle in degrees, got {self.angle!r}")
        object.__setattr__(self, "angle", a)


@dataclass(frozen=True, eq=False)
class TMResult:
    """E_z on the nodes (``x`` by ``y``): ``Ez`` the total field, ``Es`` the scattered one
    (plane waves; None for line sources), ``eps`` at the nodes, solve statistics,
    ``pml_cells`` the PML's thickness in cells (the post-processing reads it from here)."""

    __repr__ = concise_repr

    x: np.ndarray
    y: np.ndarray
    frequency: float
    Ez: np.ndarray
    Es: np.ndarray | None
    eps: np.ndarray
    stats: dict = field(default_factory=dict)
    pml_cells: int | None = None
    stencil: np.ndarray | None = None  # the operator's (nx, ny, 3, 3) rows: mode sources only

    def interior(self, pml: int | None = None) -> tuple:
        """Slices of the nodes outside a PML of ``pml`` cells (default: the result's own)."""
        pml = self.pml_cells if pml is None else pml
        return (slice(pml, len(self.x) - pml), slice(pml, len(self.y) - pml))
