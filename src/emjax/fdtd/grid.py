"""FDTD grid, boundaries and the simulation spec (natural units: eps0 = mu0 = c = 1).

Lengths in any unit; time in units of length / c. The grid is uniform with cell size ``dx``;
fields are component-first arrays ``(3, nx, ny, nz)`` on Yee's staggered grid:
``Ex`` at ``(i+1/2, j, k) dx``, ``Ey`` at ``(i, j+1/2, k) dx``, ``Ez`` at ``(i, j, k+1/2) dx``,
``Hx`` at ``(i, j+1/2, k+1/2) dx`` and so on. The domain is periodic with period ``n dx``
along each axis; a PEC wall is the plane ``i = 0`` (which is also ``i = n``), with a CPML
in front of it when asked.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..backend import precision
from ..errors import ConfigError, is_one_of, require_finite, require_int, require_positive, require_range


@dataclass(frozen=True)
class Periodic:
    """Periodic along the axis (the field wraps around)."""

    name = "periodic"


@dataclass(frozen=True)
class Bloch:
    """Bloch-periodic along the axis: ``F(x + L) = F(x) exp(i k L)`` with ``L`` the grid's
    extent along it and ``k`` the Bloch wavenumber (radians per length; ``k = 0`` is
    :class:`Periodic`). A nonzero ``k`` makes the fields complex (``exp(-i omega t)``: the
    DFT monitors at +f see the wave ``exp(i (k x - omega t))``); 2nd order only."""

    k: float = 0.0

    name = "bloch"

    def __post_init__(self):
        require_finite("Bloch.k", self.k)


@dataclass(frozen=True)
class PEC:
    """Perfect electric conductor walls (tangential E = 0 on the plane i = 0 = n)."""

    name = "pec"


@dataclass(frozen=True)
class CPML:
    """Convolutional PML of ``thickness`` cells backed by PEC, on both faces of its axis or,
    with ``sides = "low"`` or ``"high"``, on one face only (the other is a bare PEC wall:
    e.g. a ground plane below and open space above).

    ``wall = "pmc"`` (with ``sides = "high"``): the bare low face is a perfect magnetic
    conductor instead, on the H plane ``i = 1/2``: tangential H is zero there, and so is the
    normal E on it (the dual of a PEC wall's normal H). The E plane ``i = 0`` behind it stays
    the PEC that backs the CPML across the periodic wrap, outside the domain, which starts
    at ``i = 1/2``. (The PMC goes on an H plane because tangential H lives there, as the PEC
    goes on the E plane ``i = 0`` where tangential E lives; putting it on the E plane would
    need the H below it, which the wrap makes the CPML's far end.)

    Graded profiles with depth ``u`` in [0, 1]: ``sigma = sigma_max u**order``,
    ``kappa = 1 + (kappa_max - 1) u**order``, ``alpha = alpha_max (1 - u)``;
    ``sigma_max`` defaults to the usual optimum ``0.8 (order + 1) / dx`` (impedance 1).
    """

    thickness: int = 10
    order: float = 3.0
    sigma_max: float | None = None
    kappa_max: float = 1.0
    alpha_max: float = 0.05
    sides: str = "both"
    wall: str = "pec"

    name = "cpml"

    @property
    def faces(self) -> tuple:
        """("lo", "hi"), ("lo",) or ("hi",)."""
        return {"both": ("lo", "hi"), "low": ("lo",), "high": ("hi",)}[self.sides]

    def __post_init__(self):
        if not is_one_of(self.sides, ("both", "low", "high")):
            raise ConfigError(f"CPML.sides must be 'both', 'low' or 'high', got {self.sides!r}")
        if not is_one_of(self.wall, ("pec", "pmc")):
            raise ConfigError(f"CPML.wall must be 'pec' or 'pmc', got {self.wall!r}")
        if self.wall == "pmc" and self.sides != "high":
            raise ConfigError("CPML.wall = 'pmc' needs sides = 'high' (the PMC is the bare low face)")
        require_int("CPML.thickness", self.thickness, 1, 10_000)
        require_range("CPML.order", self.order, 1.0, 10.0)
        if self.sigma_max is not None:
            require_positive("CPML.sigma_max", self.sigma_max)
        require_range("CPML.kappa_max", self.kappa_max, 1.0, 100.0)
        require_range("CPML.alpha_max", self.alpha_max, 0.0, 10.0)


BOUNDARIES = {"periodic": Periodic, "pec": PEC, "cpml": CPML, "bloch": Bloch}
COURANT_LIMIT = {2: 1.0, 4: 6.0 / 7.0}  # times 1/sqrt(dims): 4th order's factor 1/(9/8+1/24)


def courant_limit(order: int, dimensions: int) -> float:
    """The largest stable ``c dt / dx``: ``1/sqrt(dims)`` for the 2nd-order stencil,
    ``(6/7)/sqrt(dims)`` for the 4th-order one (``dims`` the axes along which fields vary)."""
    return COURANT_LIMIT[order] / math.sqrt(max(dimensions, 1))


def courant_limit_text(order: int, dimensions: int) -> str:
    """How the limit is written in messages, e.g. ``1/sqrt(3) = 0.57735`` (2nd order, 3-D)."""
    dims = max(dimensions, 1)
    factor = "" if order == 2 else "(6/7)"
    form = f"{factor or '1'}/sqrt({dims})" if dims > 1 else (factor or "1")
    return f"{form} = {courant_limit(order, dims):.6g} ({dims}-D, order {order})"


@dataclass(frozen=True, eq=False)
class Grid:
    """A uniform Yee grid.

    Parameters
    ----------
    shape : cells (nx, ny, nz).
    dx : cell size.
    courant : ``c dt / dx``; default 0.99 of the stability limit ``1/sqrt(3)`` (2nd order)
        or ``(6/7)/sqrt(3)`` (4th order); ``1/sqrt(2)`` and ``(6/7)/sqrt(2)`` in 2-D.
    order : 2 or 4 (the 9/8, -1/24 staggered stencil).
    boundary : one of ``Periodic()``, ``PEC()``, ``CPML(...)``, or a 3-tuple (one per axis).
    precision : "single" (default) or "double".
    """

    shape: tuple
    dx: float
    courant: float | None = None
    order: int = 2
    boundary: object = field(default_factory=PEC)
    precision: str = "single"

    def __post_init__(self):
        if isinstance(self.shape, (str, bytes)) or np.ndim(self.shape) != 1 or len(self.shape) != 3:
            raise ConfigError(f"shape must be (nx, ny, nz), got {self.shape!r}")
        shape = tuple(require_int(f"shape[{i}]", n, 1, 2**31 - 1) for i, n in enumerate(self.shape))
        object.__setattr__(self, "shape", shape)
        if isinstance(self.dx, (str, bytes, bool)):
            raise ConfigError(f"dx must be a number > 0 (the cell size), got {self.dx!r}")
        object.__setattr__(self, "dx", require_positive("dx", self.dx))
        if not is_one_of(self.order, (2, 4)):
            raise ConfigError(f"order must be 2 or 4, got {self.order!r}")
        b = self.boundary if isinstance(self.boundary, tuple) else (self.boundary,) * 3
        if len(b) != 3 or not all(isinstance(x, (Periodic, PEC, CPML, Bloch)) for x in b):
            raise ConfigError("boundary must be Periodic(), Bloch(k), PEC(), CPML() or a tuple of three")
        if self.order != 2 and any(isinstance(x, Bloch) and x.k != 0 for x in b):
            raise ConfigError("Bloch boundaries with k != 0 need order=2")
        object.__setattr__(self, "boundary", b)
        for ax, (n, bd) in enumerate(zip(shape, b)):
            if isinstance(bd, CPML) and n < len(bd.faces) * bd.thickness + 2:
                raise ConfigError(
                    f"axis {'xyz'[ax]}: {n} cells cannot hold a {bd.thickness}-cell "
                    f"CPML on {bd.sides} faces (need >= {len(bd.faces) * bd.thickness + 2})"
                )
            if self.order == 4 and isinstance(bd, CPML) and bd.wall == "pmc":
                raise ConfigError(f"axis {'xyz'[ax]}: a PMC wall needs order=2")
            if self.order == 4 and not isinstance(bd, Periodic) and n < 4:
                raise ConfigError(f"axis {'xyz'[ax]}: order=4 next to a wall needs >= 4 cells, got {n}")
        limit = courant_limit(self.order, self.dimensions)
        if self.courant is None:
            object.__setattr__(self, "courant", 0.99 * limit)
        else:
            if isinstance(self.courant, (str, bytes, bool)):
                raise ConfigError(f"courant must be a number in (0, {limit:.6g}], got {self.courant!r}")
            c = require_finite("courant", self.courant)
            object.__setattr__(self, "courant", c)
            if not 0.0 < c <= limit:
                raise ConfigError(
                    f"courant must be in (0, {limit:.6g}] (the stability limit "
                    f"{courant_limit_text(self.order, self.dimensions)}), got {self.courant!r}"
                )
        precision(self.precision)

    @property
    def dimensions(self) -> int:
        """Axes along which fields vary: a periodic axis of one cell does not count (2-D)."""
        return sum(
            1
            for n, b in zip(self.shape, self.boundary)
            if not (n == 1 and (isinstance(b, Periodic) or (isinstance(b, Bloch) and b.k == 0)))
        )

    @property
    def bloch_phases(self) -> tuple:
        """Per axis: ``exp(i k L)`` of a Bloch boundary with k != 0, else None."""
        return tuple(
            complex(np.exp(1j * b.k * n * self.dx)) if isinstance(b, Bloch) and b.k != 0 else None
            for n, b in zip(self.shape, self.boundary)
        )

    @property
    def is_complex(self) -> bool:
        """Whether the fields are complex (a Bloch boundary with k != 0)."""
        return any(p is not None for p in self.bloch_phases)

    @classmethod
    def two_d(cls, shape: tuple, dx: float, boundary=None, **kw) -> Grid:
        """A 2-D grid in the xy plane: (nx, ny, 1) cells, periodic along z, so nothing varies
        along z. TM (Ez, Hx, Hy) or TE (Hz, Ex, Ey) follows from the sources' components;
        the Courant limit is the 2-D one, 1/sqrt(2)."""
        if len(shape) != 2:
            raise ConfigError(f"two_d needs shape (nx, ny), got {shape!r}")
        b = boundary if boundary is not None else PEC()
        bx, by = b if isinstance(b, tuple) else (b, b)
        return cls((shape[0], shape[1], 1), dx, boundary=(bx, by, Periodic()), **kw)

    @property
    def dt(self) -> float:
        return self.courant * self.dx

    @property
    def n_cells(self) -> int:
        return math.prod(self.shape)

    def coords(self, component: int, kind: str = "E"):
        """Positions (x, y, z) of a field component's nodes, 1-D arrays."""
        out = []
        for ax, n in enumerate(self.shape):
            half = (ax == component) if kind == "E" else (ax != component)
            out.append((np.arange(n) + (0.5 if half else 0.0)) * self.dx)
        return out
