"""FDTD inputs: the simulation spec and probes (validated before anything is allocated)."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import numpy as np

from ..backend import precision
from ..errors import ConfigError, is_one_of, require_int, require_length
from ..materials import Dispersive, DrudePole, LorentzPole
from .grid import CPML, PEC, Bloch, Grid, Periodic
from .monitors import DFTPlane
from .sheets import CurrentSheet
from .sources import PlaneSource, PointDipole
from .subpixel import SubpixelBox
from .tfsf import TFSF


def is_traced(value) -> bool:
    """True if ``value`` (any pytree) holds a JAX tracer: it is an input being differentiated
    or jitted, whose values cannot be inspected (validate its shape only)."""
    return any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(value))


def traced_inputs(sim, initial=None) -> tuple:
    """What a run differentiates: ``eps``, ``sigma``, a traced subpixel box's tensors,
    ``initial`` and the dispersive material's parameters (``eps_inf``, the poles'), for
    :func:`is_traced`."""
    params = ()
    if sim.dispersive is not None:
        mat = sim.dispersive[0]
        params = (mat.eps_inf, tuple(tuple(vars(p).values()) for p in mat.poles))
    return (*sim.traced_inputs, initial, params)


@dataclass(frozen=True)
class Probe:
    """Record ``field`` ("E" or "H") component ``component`` at node ``index`` every step."""

    index: tuple
    component: int
    field: str = "E"

    def __post_init__(self):
        require_length("Probe.index", self.index, 3, "(i, j, k)")
        require_int("Probe.component", self.component, 0, 2)
        if not is_one_of(self.field, ("E", "H")):
            raise ConfigError(f"Probe.field must be 'E' or 'H', got {self.field!r}")


@dataclass(frozen=True, eq=False)
class GridSimulation:
    """The cell-index spec: grid + per-cell materials + sources + monitors + probes (what
    :func:`run` steps; the physical-unit :class:`emjax.fdtd.Simulation` compiles to it).

    ``eps`` and ``sigma`` are scalars or per-cell arrays ``(nx, ny, nz)`` (relative
    permittivity, conductivity in units of 1/length with eps0 = c = 1); ``eps`` and ``pec``
    may also be per E node, ``(3, nx, ny, nz)`` (row c: at E_c's nodes). Per cell they apply to all
    three E components of a cell.

    Differentiable inputs: ``eps`` and ``sigma`` may be JAX tracers (``jax.grad``,
    ``jax.jvp`` or ``jax.jit`` over them): then only their shapes are validated, and
    :func:`run` steps the whole loop as one traced computation with rematerialized segments
    (see :func:`emjax.fdtd.run`). The masks (``dispersive``, ``pec``) and a ``subpixel`` box
    are NumPy-rasterized and must stay concrete, except a ``subpixel`` box whose ``eps_inv``
    is itself traced (a differentiated scene: :mod:`emjax.fdtd.scene_grad`).
    """

    grid: Grid
    eps: object = 1.0
    sigma: object = 0.0
    sources: tuple = ()
    probes: tuple = ()
    monitors: tuple = ()
    # (materials.Dispersive with Drude/Lorentz poles, bool mask or fill fractions in [0, 1]
    # per cell (nx, ny, nz) or per E component (3, nx, ny, nz))
    dispersive: tuple | None = None
    pec: object = None  # bool mask of perfectly conducting cells (all E nodes of a cell = 0)
    subpixel: SubpixelBox | None = None  # anisotropic inverse eps at interface nodes (a box)

    def __post_init__(self):
        if not isinstance(self.grid, Grid):
            raise ConfigError("grid must be an emjax.fdtd.Grid")
        # eps and sigma may be traced (jax.grad / jax.jit over them): their shapes are checked
        # always, their values only when concrete
        for name in ("eps", "sigma"):
            v = getattr(self, name)
            per_node = name == "eps" and np.shape(v) == (3,) + self.grid.shape
            if np.ndim(v) != 0 and np.shape(v) != self.grid.shape and not per_node:
                raise ConfigError(f"{name} must be a scalar or of shape {self.grid.shape}, got {np.shape(v)}")
            if is_traced(v):
                continue
            kind = np.asarray(v).dtype.kind
            if kind == "c":
                raise ConfigError(
                    f"{name} must be real, got a complex value: a lossy medium takes sigma "
                    "(conductivity, >= 0) or a dispersive material (materials.Drude/Lorentz)"
                )
            if kind not in "iuf":
                raise ConfigError(f"{name} must be a number or an array of numbers, got {v!r}"[:200])
            if np.ndim(v) == 0 and not np.isfinite(v):
                raise ConfigError(f"{name} must be finite, got {v!r}")
            if np.ndim(v) and not np.all(np.isfinite(v)):
                raise ConfigError(f"{name} must be finite everywhere (NaN or Inf found)")
        if not is_traced(self.eps) and np.any(np.asarray(self.eps) < 1):
            raise ConfigError("eps must be >= 1 (dispersive or metallic media: use poles/PEC)")
        if not is_traced(self.sigma) and np.any(np.asarray(self.sigma) < 0):
            raise ConfigError("sigma must be >= 0")
        for name in ("dispersive", "pec"):
            if is_traced(getattr(self, name)):
                raise ConfigError(f"{name} must be concrete (only eps and sigma may be traced inputs)")
        box_traced = isinstance(self.subpixel, SubpixelBox) and self.subpixel.traced
        if box_traced and is_traced(self.sigma):
            raise ConfigError("sigma must be concrete with a traced SubpixelBox (a differentiated scene)")
        if self.subpixel is not None and not box_traced and is_traced((self.eps, self.sigma)):
            raise ConfigError(
                "subpixel boxes are rasterized with NumPy: eps and sigma must be concrete with a "
                "SubpixelBox (differentiate a GridSimulation without one)"
            )
        kinds = {"sources": "PointDipole, PlaneSource or TFSF", "probes": "Probe", "monitors": "DFTPlane"}
        for name, kind in kinds.items():
            v = getattr(self, name)
            if isinstance(v, (str, bytes)) or not hasattr(v, "__iter__"):
                raise ConfigError(f"{name} must be {kind} objects in a list (or tuple), got {v!r}")
            object.__setattr__(self, name, tuple(v))
        for s in self.sources:
            if not isinstance(s, (PointDipole, PlaneSource, TFSF, CurrentSheet)):
                raise ConfigError(
                    f"sources must be PointDipole, PlaneSource, CurrentSheet or TFSF objects, got {s!r}"
                )
            s.check(self.grid.shape)
        for s in self.sources:
            if isinstance(s, TFSF) and any(
                m and isinstance(b, (Periodic, Bloch)) for m, b in zip(s.mirror, self.grid.boundary)
            ):
                raise ConfigError("a TFSF box mirrored through i = 0 needs a PEC or CPML wall on that axis")
        if sum(isinstance(s, TFSF) for s in self.sources) > 1:
            raise ConfigError("at most one TFSF source per simulation")
        if self.grid.is_complex and any(isinstance(s, TFSF) for s in self.sources):
            raise ConfigError(
                "TFSF sources and Bloch boundaries (k != 0) do not combine: use a PlaneSource with k"
            )
        if self.grid.order != 2 and any(isinstance(s, TFSF) for s in self.sources):
            raise ConfigError("TFSF sources need grid order=2 (its 1-D incident grid is 2nd order)")
        if self.dispersive is not None:
            if isinstance(self.dispersive, (str, bytes)) or not (
                hasattr(self.dispersive, "__len__") and len(self.dispersive) == 2
            ):
                raise ConfigError(
                    "dispersive must be (materials.Dispersive with Drude/Lorentz poles, mask), got "
                    f"{self.dispersive!r}"
                )
            mat, mask = self.dispersive
            if (
                not isinstance(mat, Dispersive)
                or not mat.poles
                or not all(isinstance(p, (DrudePole, LorentzPole)) for p in mat.poles)
            ):
                raise ConfigError("dispersive must be (materials.Dispersive with Drude/Lorentz poles, mask)")
            for p in mat.poles:
                if isinstance(p, LorentzPole) and not is_traced(p.omega_0) and p.omega_0 * self.grid.dt >= 2:
                    raise ConfigError(
                        f"Lorentz pole omega_0 = {p.omega_0} needs dt < 2 / omega_0 "
                        f"(dt = {self.grid.dt:.3g}): refine the grid"
                    )
            _check_pole_courant(mat, self.grid)
            if np.shape(mask) not in (self.grid.shape, (3,) + self.grid.shape):
                raise ConfigError(
                    f"dispersive mask must have shape {self.grid.shape} or {(3,) + self.grid.shape}"
                )
            w = np.asarray(mask)
            if w.dtype != bool and not (np.all(np.isfinite(w)) and np.all((w >= 0) & (w <= 1))):
                raise ConfigError("dispersive fill fractions must lie in [0, 1]")
            if mat.eps_inf < 1:
                raise ConfigError("dispersive eps_inf must be >= 1")
        if self.subpixel is not None:
            if not isinstance(self.subpixel, SubpixelBox):
                raise ConfigError(f"subpixel must be an emjax.fdtd.SubpixelBox, got {self.subpixel!r}")
            pml = [b.thickness if isinstance(b, CPML) else 0 for b in self.grid.boundary]
            periodic = [isinstance(b, (Periodic, Bloch)) for b in self.grid.boundary]
            bare = [
                isinstance(b, PEC) or (isinstance(b, CPML) and "lo" not in b.faces)
                for b in self.grid.boundary
            ]
            self.subpixel.check(self.grid.shape, pml, periodic, bare)
            if self.grid.order != 2:
                raise ConfigError("subpixel boxes need grid order=2 (the box recomputes a 2nd-order curl)")
            sl = self.subpixel.slices
            act = self.subpixel.active_mask

            def on_active(a) -> bool:
                a = np.asarray(a)
                if a.ndim == 0:
                    return bool(a != 0) and bool(act.any())
                box = a[(slice(None),) + sl] if a.ndim == 4 else np.broadcast_to(a[sl], act.shape)
                return bool(np.any((box != 0) & act))

            if on_active(self.sigma):
                raise ConfigError("subpixel: the tensor nodes must hold no conductivity (sigma = 0 there)")
            if self.dispersive is not None and on_active(self.dispersive[1]):
                raise ConfigError("subpixel: the tensor nodes must hold no dispersive medium")
            if self.pec is not None and on_active(self.pec):
                raise ConfigError("subpixel: the tensor nodes must not be PEC")
        if self.pec is not None and np.shape(self.pec) not in (self.grid.shape, (3,) + self.grid.shape):
            raise ConfigError(f"pec mask must have shape {self.grid.shape} or {(3,) + self.grid.shape}")
        for m in self.monitors:
            if not isinstance(m, DFTPlane):
                raise ConfigError(f"monitors must be DFTPlane objects, got {m!r}")
            m.check(self.grid.shape)
        for p in self.probes:
            if not isinstance(p, Probe):
                raise ConfigError(f"probes must be Probe objects, got {p!r}")
            for ax, (i, n) in enumerate(zip(p.index, self.grid.shape)):
                require_int(f"Probe.index[{ax}]", i, 0, n - 1)

    @property
    def traced_inputs(self) -> tuple:
        """The inputs that may hold JAX tracers (a traced run when any does)."""
        box = self.subpixel.eps_inv if self.subpixel is not None and self.subpixel.traced else None
        return (self.eps, self.sigma, box)

    def memory_bytes(self) -> int:
        arrays = 6 + (2 if np.ndim(self.eps) or np.ndim(self.sigma) else 0)
        if np.ndim(self.eps) == 4 or (self.dispersive is not None and np.ndim(self.dispersive[1]) == 4):
            arrays += 4  # ca and cb per component
        box = int(np.prod(self.subpixel.shape)) if self.subpixel is not None else 0
        return state_bytes(self.grid, arrays, box)


def check_run_arguments(progress, initial, checkpoint, out_of_core) -> None:
    """The types of :func:`emjax.fdtd.run`'s keyword arguments, one line naming the argument
    each, before the scene is rasterized or anything is allocated."""
    import os

    from .. import progress as progress_bars

    progress_bars.check(progress)
    if initial is not None and (
        isinstance(initial, (str, bytes)) or not hasattr(initial, "__len__") or len(initial) != 2
    ):
        raise ConfigError(
            f"initial must be None or the pair (E, H) of (3, nx, ny, nz) arrays, got {initial!r}"
        )
    if checkpoint is not None and not isinstance(checkpoint, (str, os.PathLike)):
        raise ConfigError(f"checkpoint must be None or a file path (str or pathlib.Path), got {checkpoint!r}")
    if out_of_core is not None and not isinstance(out_of_core, (bool, dict)):
        raise ConfigError(
            f"out_of_core must be None, True, False or a dict of the window's options, got {out_of_core!r}"
        )


def state_bytes(grid: Grid, arrays: int, box_cells: int = 0) -> int:
    """Device bytes of a run on ``grid``: ``arrays`` grid-sized arrays (fields and
    coefficients), the CPML's auxiliary fields and a subpixel box of ``box_cells`` cells."""
    item = np.dtype(precision(grid.precision).real).itemsize
    n = grid.n_cells
    psi = 0
    for ax, b in enumerate(grid.boundary):
        if isinstance(b, CPML):
            psi += 8 * len(b.faces) * b.thickness * n // grid.shape[ax]
    return (arrays * n + psi + 9 * box_cells) * item * 2  # x2: XLA's double buffering of the carry


def _check_pole_courant(material, grid) -> None:
    """Refuse a Courant number at which the Lorentz poles' explicit update is unstable
    (:mod:`.pole_stability`), naming the largest stable one."""
    from ..materials import has_tracer
    from .grid import courant_limit
    from .pole_stability import max_courant, stable

    if has_tracer(material) or not any(isinstance(p, LorentzPole) for p in material.poles):
        return
    limit = courant_limit(grid.order, grid.dimensions)
    if not stable(material, grid.dt, grid.courant / limit):
        best = max_courant(material, grid.dx, limit)
        raise ConfigError(
            f"courant = {grid.courant:.6g} is unstable for the dispersive medium's Lorentz poles (their "
            f"explicit update lowers the permittivity the grid sees): use courant <= {best:.4g} "
            "(the default is lowered so when a scene holds the medium), or refit the material over "
            "your band with fewer, lower poles"
        )
