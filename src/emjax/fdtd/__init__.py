"""Finite-difference time-domain solver (Yee grid, CPML, point sources, probes).

Natural units: eps0 = mu0 = c = 1; lengths in any unit, time in length / c.
"""

from .grid import CPML, PEC, Grid, Periodic
from .monitors import DFTPlane, box_flux, far_field, flux_box
from .simulation import FDTDResult, run
from .sources import ContinuousWave, GaussianPulse, PlaneSource, PointDipole, Ricker
from .spec import Probe, Simulation
from .tfsf import TFSF

__all__ = [
    "CPML",
    "PEC",
    "ContinuousWave",
    "FDTDResult",
    "GaussianPulse",
    "Grid",
    "Periodic",
    "DFTPlane",
    "TFSF",
    "box_flux",
    "far_field",
    "flux_box",
    "PlaneSource",
    "PointDipole",
    "Probe",
    "Ricker",
    "Simulation",
    "run",
]
