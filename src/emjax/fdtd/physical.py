"""FDTD in physical units, set up as in Meep or Tidy3D: a region, a resolution, a scene of
objects, sources and monitors given by position and size; results normalized for the user.

:class:`Simulation` compiles to the cell-index :class:`~emjax.fdtd.GridSimulation` (what
:func:`emjax.fdtd.run` steps): the grid covers ``size`` around ``center`` plus the CPML on
each absorbing face; the scene is rasterized onto the Yee grid with subpixel averaging
(``averaging="subpixel"``, the default; ``"diagonal"``: its tensor's diagonal per E node)
or per node (``"staircase"``); sources and monitors
snap to the nearest nodes and planes.

Coordinates: cell ``(i, j, k)`` spans ``origin + (i, j, k) dx`` to ``origin + (i + 1, j + 1,
k + 1) dx`` with ``dx = 1 / resolution`` and ``origin = center - size / 2 - pml dx``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import ConfigError, is_one_of, require_positive
from ..scattering import PlaneWave
from .grid import CPML, PEC, Bloch, Grid, Periodic
from .monitors import DFTField, DFTPlane, flux_box
from .physical_parts import (
    AXIS,
    CrossSections,
    Dipole,
    FieldPlane,
    FluxBox,
    FluxPlane,
    PlaneCurrent,
    PlaneWaveSource,
    _check_box_vs_tfsf,
    _vec3,
)
from .physical_result import Result
from .sources import PlaneSource, PointDipole
from .spec import GridSimulation, Probe
from .tfsf import TFSF

AVERAGING = ("subpixel", "diagonal", "staircase")


@dataclass(frozen=True, eq=False)
class Simulation:
    """An FDTD problem in physical units.

    Parameters
    ----------
    size : extent (sx, sy, sz) of the simulated region, CPML excluded (lengths in any unit).
    resolution : cells per unit length (``dx = 1 / resolution``).
    scene : :class:`emjax.scene.Scene` (objects, background); None: vacuum.
    sources : :class:`PlaneWaveSource`, :class:`Dipole`, :class:`PlaneCurrent`,
        :class:`~emjax.fdtd.ModeSource`.
    monitors : :class:`FluxBox`, :class:`FluxPlane` (and :class:`FieldPlane`,
        :class:`~emjax.fdtd.ModeMonitor`), :class:`CrossSections`.
    boundary : ``CPML(thickness in cells)``, ``PEC()``, ``Periodic()``, ``Bloch(k)`` or one per
        axis; a CPML is added outside ``size``.
    center : centre of the region.
    averaging : "subpixel" (anisotropic averaging at interfaces, second order), "diagonal"
        (the same averaged tensor's diagonal as per-node eps: no off-diagonal corrections, so
        the blocked kernel can run it; exact where interfaces are axis-aligned, an
        approximation on oblique ones; dielectrics and PEC only) or "staircase".
    precision, courant, order : as :class:`emjax.fdtd.Grid`; the default Courant number is
        lowered where a Drude-Lorentz medium's poles need it (:mod:`.pole_stability`).
    symmetry : (sx, sy, sz), each 0, -1 or +1: a mirror plane through ``center`` normal to
        each axis with a nonzero entry, the sign tangential E takes under the reflection
        (Meep's phase): -1 (odd) makes the plane a PEC wall, +1 (even) a PMC wall; only the
        upper half along it is simulated, results are the whole domain's
        (:mod:`emjax.fdtd.symmetry`).
    """

    size: tuple
    resolution: float
    scene: object = None
    sources: tuple = ()
    monitors: tuple = ()
    boundary: object = field(default_factory=lambda: CPML(10))
    center: tuple = (0.0, 0.0, 0.0)
    averaging: str = "subpixel"
    precision: str = "single"
    courant: float | None = None
    order: int = 2
    probes: tuple = ()  # (position, component, "E" | "H")
    symmetry: tuple = (0, 0, 0)

    def __post_init__(self):
        if isinstance(self.size, Grid):
            raise ConfigError(
                "fdtd.Simulation takes physical units (size, resolution, scene, ...); the cell-index "
                "spec with a Grid is fdtd.GridSimulation(grid, eps=..., sources=...)"
            )
        object.__setattr__(self, "size", _vec3("size", self.size, positive=True))
        object.__setattr__(self, "center", _vec3("center", self.center))
        require_positive("resolution", self.resolution)
        if not is_one_of(self.averaging, AVERAGING):
            raise ConfigError(
                f"averaging must be 'subpixel', 'diagonal' or 'staircase', got {self.averaging!r}"
            )
        b = self.boundary if isinstance(self.boundary, tuple) else (self.boundary,) * 3
        if len(b) != 3 or not all(isinstance(x, (Periodic, PEC, CPML, Bloch)) for x in b):
            raise ConfigError("boundary must be CPML(), PEC(), Periodic(), Bloch(k) or a tuple of three")
        object.__setattr__(self, "boundary", b)
        kinds = {
            "sources": "PlaneWaveSource, PlaneCurrent or Dipole",
            "monitors": "FluxBox, FluxPlane or CrossSections",
        }
        for name, kind in kinds.items():
            v = getattr(self, name)
            if isinstance(v, (str, bytes)) or not hasattr(v, "__iter__"):
                raise ConfigError(f"{name} must be {kind} objects in a list (or tuple), got {v!r}")
            object.__setattr__(self, name, tuple(v))
        from .mode_source import ModeSource

        for s in self.sources:
            if not isinstance(s, (PlaneWaveSource, Dipole, PlaneCurrent, ModeSource)):
                raise ConfigError(
                    f"sources must be PlaneWaveSource, PlaneCurrent, ModeSource or Dipole objects, got {s!r}"
                )
            if isinstance(s, PlaneCurrent):
                a = AXIS[s.axis]
                if any(not isinstance(b, (Periodic, Bloch)) for ax, b in enumerate(self.boundary) if ax != a):
                    raise ConfigError("PlaneCurrent needs Periodic() or Bloch(k) boundaries along its plane")
        for m in self.monitors:
            if not isinstance(m, (FluxBox, FluxPlane, CrossSections)):
                raise ConfigError(f"monitors must be FluxBox, FluxPlane or CrossSections, got {m!r}")
        if sum(isinstance(s, PlaneWaveSource) for s in self.sources) > 1:
            raise ConfigError("at most one PlaneWaveSource per simulation")
        if any(isinstance(m, CrossSections) for m in self.monitors) and not self._plane_wave:
            raise ConfigError("CrossSections needs a PlaneWaveSource (the TF/SF box it measures around)")
        names = [m.name for m in self.monitors if not isinstance(m, CrossSections)]
        if len(set(names)) != len(names):
            raise ConfigError(f"monitor names must be distinct, got {names}")
        from . import symmetry

        object.__setattr__(self, "symmetry", symmetry.check_values(self.symmetry))
        if any(self.symmetry):
            symmetry.validate(self)
        self.grid  # noqa: B018  (validates the cell counts now, before anything is allocated)

    # ---- the grid ---------------------------------------------------------------------------
    @property
    def field_plane_names(self) -> tuple:
        """The names of the :class:`FieldPlane` monitors."""
        return tuple(m.name for m in self.monitors if isinstance(m, FieldPlane))

    @property
    def dx(self) -> float:
        return 1.0 / float(self.resolution)

    @property
    def pml_cells(self) -> tuple:
        """Per axis: CPML cells on the low and high faces."""
        out = []
        for b in self.boundary:
            if isinstance(b, CPML):
                out.append((b.thickness if "lo" in b.faces else 0, b.thickness if "hi" in b.faces else 0))
            else:
                out.append((0, 0))
        return tuple(out)

    @property
    def interior_cells(self) -> tuple:
        return tuple(max(1, int(round(s * self.resolution))) for s in self.size)

    @property
    def grid(self) -> Grid:
        shape = tuple(n + lo + hi for n, (lo, hi) in zip(self.interior_cells, self.pml_cells))
        g = Grid(shape, self.dx, self.courant, self.order, self.boundary, self.precision)
        if self.courant is None and self.scene is not None:  # the default, lowered for the poles
            from .pole_stability import default_courant

            c = default_courant(self.scene.materials, g)
            if c < g.courant:
                g = Grid(shape, self.dx, c, self.order, self.boundary, self.precision)
        return g

    @property
    def origin(self) -> tuple:
        """Position of the corner of cell (0, 0, 0)."""
        return tuple(
            c - n * self.dx / 2 - lo * self.dx
            for c, n, (lo, _) in zip(self.center, self.interior_cells, self.pml_cells)
        )

    @property
    def _plane_wave(self):
        return next((s for s in self.sources if isinstance(s, PlaneWaveSource)), None)

    def _cell(self, x, ax: int, shift: float = 0.0) -> int:
        """The nearest node index (half up, not to even: snapping must not depend on parity)."""
        return int(math.floor((x - self.origin[ax]) / self.dx - shift + 0.5))

    def _box_cells(self, center, size, what: str) -> tuple:
        """[lo, hi) cell indices of a box; it must lie in the region (outside the CPML)."""
        lo, hi = [], []
        for ax in range(3):
            a = self._cell(center[ax] - size[ax] / 2, ax)
            b = self._cell(center[ax] + size[ax] / 2, ax)
            plo, phi = self.pml_cells[ax]
            n = self.grid.shape[ax]
            if a < plo or b > n - phi or b <= a:
                raise ConfigError(
                    f"{what} along {'xyz'[ax]} spans cells {a}..{b}: it must lie inside the region "
                    f"(cells {plo}..{n - phi}, outside the CPML) and be at least one cell wide"
                )
            lo.append(a)
            hi.append(b)
        return tuple(lo), tuple(hi)

    # ---- compile to the cell-index spec --------------------------------------------------------
    def _run_physical(self, steps, *, until=None, **kw) -> Result:
        """What :func:`emjax.fdtd.run` calls for this simulation (:func:`run`)."""
        return run(self, steps, until=until, **kw)

    def to_grid(self) -> tuple[GridSimulation, dict]:
        """The cell-index :class:`GridSimulation` and a map from monitor names to the indices of
        their DFT planes (``{"box": range(...)}``, and ``"cross_sections"`` with its two)."""
        from . import scene_raster

        if any(self.symmetry):  # the half domain (emjax.fdtd.symmetry)
            from .symmetry import to_grid

            return to_grid(self)[:2]
        scene_raster.check_memory(self)  # before anything grid-sized exists
        g = self.grid
        tf = None
        sources = []
        for s in self.sources:
            if isinstance(s, PlaneWaveSource):
                lo, hi = self._box_cells(s.center, s.size, "PlaneWaveSource box")
                tf = TFSF(lo, hi, PlaneWave(s.direction, s.polarization), s.waveform)
                sources.append(tf)
            elif isinstance(s, PlaneCurrent):
                a = AXIS[s.axis]
                index = self._cell(s.position, a)
                plo, phi = self.pml_cells[a]
                if not plo <= index < g.shape[a] - phi:
                    raise ConfigError(
                        f"PlaneCurrent.position {s.position} lies outside the region (or in the CPML)"
                    )
                k = tuple(b.k if isinstance(b, Bloch) else 0.0 for b in self.boundary)
                for comp, amp in enumerate(s.polarization):
                    if comp != a and amp != 0:
                        sources.append(PlaneSource(a, index, comp, s.waveform, s.amplitude * amp, k=k))
            elif type(s).__name__ == "ModeSource":
                from .mode_source import sheets

                sources.extend(sheets(self, s))
            else:
                c = AXIS[s.component]
                idx = tuple(self._cell(s.position[ax], ax, 0.5 if ax == c else 0.0) for ax in range(3))
                for ax in range(3):
                    plo, phi = self.pml_cells[ax]
                    if not plo <= idx[ax] < g.shape[ax] - phi:
                        raise ConfigError(
                            f"Dipole.position {s.position} lies outside the region (or in the CPML) "
                            f"along {'xyz'[ax]}"
                        )
                sources.append(PointDipole(idx, c, s.waveform, s.amplitude))
        monitors, names = [], {}
        for m in self.monitors:
            first = len(monitors)
            if isinstance(m, CrossSections):
                lo, hi = np.array(tf.lo), np.array(tf.hi)
                outer = flux_box(tuple(lo - m.gap_out), tuple(hi + m.gap_out), m.frequencies)
                inner = flux_box(tuple(lo + m.gap_in), tuple(hi - m.gap_in), m.frequencies)
                for ax in range(3):
                    plo, phi = self.pml_cells[ax]
                    if lo[ax] - m.gap_out < plo + 1 or hi[ax] + m.gap_out > g.shape[ax] - phi - 1:
                        raise ConfigError(
                            f"CrossSections: the scattered-field box ({m.gap_out} cells outside the "
                            f"PlaneWaveSource box) reaches the CPML along {'xyz'[ax]}: enlarge size"
                        )
                    if hi[ax] - lo[ax] <= 2 * m.gap_in + 1:
                        raise ConfigError("CrossSections: the PlaneWaveSource box is too small for gap_in")
                monitors.extend(outer + inner)
                names["cross_sections"] = (range(first, first + 6), range(first + 6, first + 12))
                continue
            if isinstance(m, FluxBox):
                lo, hi = self._box_cells(m.center, m.size, f"FluxBox {m.name!r}")
                if tf is not None:
                    _check_box_vs_tfsf(lo, hi, tf, f"FluxBox {m.name!r}")
                monitors.extend(flux_box(lo, hi, m.frequencies))
                names[m.name] = range(first, first + 6)
            else:
                ax = m.axis
                size = list(m.size)
                size[ax] = 4 * self.dx  # for the checks; the plane is the E plane nearest the centre
                lo, hi = self._box_cells(m.center, size, f"FluxPlane {m.name!r}")
                index = self._cell(m.center[ax], ax)
                lo, hi = list(lo), list(hi)
                lo[ax], hi[ax] = index, index + 1
                lo, hi = tuple(lo), tuple(hi)
                if isinstance(m, FieldPlane):
                    field = DFTField(ax, index, m.frequencies, lo=lo, hi=hi, bloch=g.bloch_phases)
                    monitors.append(field)
                else:
                    if type(m).__name__ == "ModeMonitor":  # its modes are held fixed under jax.grad
                        from .mode_plane import check_fixed

                        check_fixed(self, ax, lo, hi, index)
                    monitors.append(DFTPlane(ax, index, m.frequencies, lo=lo, hi=hi))
                names[m.name] = range(first, first + 1)
        probes = []
        for i, p in enumerate(self.probes):
            pos = _vec3(f"probes[{i}] position", p[0])
            if len(p) < 2 or p[1] not in AXIS or (len(p) > 2 and p[2] not in ("E", "H")):
                raise ConfigError(f"probes[{i}] must be (position, 'x'|'y'|'z'[, 'E'|'H']), got {p!r}")
            cells = [self._cell(pos[ax], ax) for ax in range(3)]
            for ax, b in enumerate(self.grid.boundary):
                if isinstance(b, (Periodic, Bloch)):  # the node, wrapped into the cell
                    cells[ax] %= self.grid.shape[ax]
            for ax, c in enumerate(cells):
                plo, phi = self.pml_cells[ax]
                if not plo <= c < self.grid.shape[ax] - phi:
                    raise ConfigError(
                        f"probes[{i}] position {pos} lies outside the region along {'xyz'[ax]} "
                        f"(the CPML excluded)"
                    )
            probes.append(Probe(tuple(cells), AXIS[p[1]], p[2] if len(p) > 2 else "E"))
        probes = tuple(probes)
        if getattr(self.scene, "traced", False):  # jax.grad over scene parameters
            from . import scene_grad

            materials = scene_grad.materials(self, tf)
        else:
            materials = scene_raster.materials(self, tf)
        sim = GridSimulation(g, sources=tuple(sources), probes=probes, monitors=tuple(monitors), **materials)
        return sim, names


def run(sim: Simulation, steps: int | None = None, *, until: float | None = None, **kw) -> Result:
    """Run a physical :class:`Simulation` for ``steps`` time steps or ``until`` a time
    (length / c); keyword arguments as :func:`emjax.fdtd.run`."""
    from .simulation import run as run_grid

    if (steps is None) == (until is None):
        raise ConfigError("give steps or until (a time in length / c), not both")
    if until is not None:
        require_positive("until", until)
        steps = int(math.ceil(until / sim.grid.dt))
    if any(sim.symmetry):
        from .symmetry import run_reduced

        return run_reduced(sim, steps, run_grid, **kw)
    grid_sim, names = sim.to_grid()
    return Result(sim, grid_sim, run_grid(grid_sim, steps, **kw), names)
