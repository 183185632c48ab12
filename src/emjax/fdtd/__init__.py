"""Finite-difference time-domain solver (Yee grid, CPML, TF/SF, dispersive media, monitors).

Natural units: eps0 = mu0 = c = 1; lengths in any unit, time in length / c.

The slice: grid -> spec (GridSimulation) -> sources, tfsf, pml, dispersive, terms, update ->
simulation (run) -> monitors; results, plot, bench, config and cli around them. Public
names load on first use (see ``emjax._lazy``).
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS = {
    "Bloch": ".grid",
    "CPML": ".grid",
    "PEC": ".grid",
    "Grid": ".grid",
    "Periodic": ".grid",
    "DFTPlane": ".monitors",
    "DFTField": ".monitors",
    "field_on_nodes": ".monitors",
    "box_flux": ".monitors",
    "far_field": ".monitors",
    "flux_box": ".monitors",
    "FDTDResult": ".results",
    "run": ".simulation",
    "ContinuousWave": ".sources",
    "GaussianPulse": ".sources",
    "PlaneSource": ".sources",
    "PointDipole": ".sources",
    "Ricker": ".sources",
    "Probe": ".spec",
    "Simulation": ".physical",
    "PlaneWaveSource": ".physical",
    "Dipole": ".physical",
    "PlaneCurrent": ".physical",
    "FluxBox": ".physical",
    "FluxPlane": ".physical",
    "FieldPlane": ".physical",
    "CrossSections": ".physical",
    "ModeSource": ".mode_source",
    "ModeMonitor": ".mode_monitor",
    "CurrentSheet": ".sheets",
    "Port": ".ports",
    "s_matrix": ".ports",
    "GridSimulation": ".spec",
    "SubpixelBox": ".subpixel",
    "TFSF": ".tfsf",
}
__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # for type checkers and IDEs; at run time the names load on first use
    from .grid import CPML, PEC, Bloch, Grid, Periodic
    from .mode_monitor import ModeMonitor
    from .mode_source import ModeSource
    from .monitors import DFTField, DFTPlane, box_flux, far_field, field_on_nodes, flux_box
    from .physical import (
        CrossSections,
        Dipole,
        FieldPlane,
        FluxBox,
        FluxPlane,
        PlaneCurrent,
        PlaneWaveSource,
        Simulation,
    )
    from .ports import Port, s_matrix
    from .results import FDTDResult
    from .sheets import CurrentSheet
    from .simulation import run
    from .sources import ContinuousWave, GaussianPulse, PlaneSource, PointDipole, Ricker
    from .spec import GridSimulation, Probe
    from .subpixel import SubpixelBox
    from .tfsf import TFSF
