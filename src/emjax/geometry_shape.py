"""The base of emjax's particle shapes (:mod:`emjax.geometry`): :class:`Shape`, a shape
in coordinates normalised by its extent along x, and the lattice size limit."""

from __future__ import annotations

import math

import numpy as np

from .errors import ConfigError


def _has_tracer(v) -> bool:
    from .tracing import is_traced

    return is_traced(v) or (
        isinstance(v, np.ndarray) and v.dtype == object and any(is_traced(x) for x in v.flat)
    )


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

    @property
    def placement(self) -> tuple | None:
        """``(center, size)`` in the lab frame where the shape came from a file that places
        it (a mesh, a layout), else None (``scene.Object`` uses it when given neither)."""
        return self.__dict__.get("_placement")

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
