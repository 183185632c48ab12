"""Discrete Dipole Approximation (ADDA's method) on CPU and GPU.

>>> from emjax import dda, geometry
>>> prob = dda.DDAProblem(geometry.Sphere(), m=(1.5 + 0.01j,), eq_rad=0.5,
...                       wavelength=0.6283185307, dipoles_per_wavelength=15)
>>> res = dda.solve(prob)          # QMR to relative residual 1e-5, both polarizations
>>> res.Qext, res.Qabs, res.mueller.shape
"""

from ..krylov import QMR, BiCG, BiCGStab
from ..scattering import OrientationAverage
from .averaged import AveragedResult
from .lattice import Lattice
from .orientation import average
from .polarizability import CM, FCD, LDR, POLARIZABILITIES, RR
from .solve import DDAProblem, DDAResult, solve

__all__ = [
    "AveragedResult",
    "OrientationAverage",
    "average",
    "CM",
    "FCD",
    "LDR",
    "POLARIZABILITIES",
    "RR",
    "BiCG",
    "BiCGStab",
    "DDAProblem",
    "DDAResult",
    "Lattice",
    "QMR",
    "solve",
]
