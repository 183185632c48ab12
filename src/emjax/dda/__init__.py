"""Discrete Dipole Approximation (ADDA's method) on CPU and GPU.

>>> from emjax import dda, geometry
>>> prob = dda.DDAProblem(geometry.Sphere(), m=(1.5 + 0.01j,), eq_rad=0.5,
...                       wavelength=0.6283185307, dipoles_per_wavelength=15)
>>> res = dda.solve(prob)          # QMR to relative residual 1e-5, both polarizations
>>> res.Qext, res.Qabs, res.mueller.shape
>>> dda.efficiencies(prob).Qext   # traceable: jax.grad w.r.t. m or the size,
...                                # also on a substrate (its index, the height)
>>> # dda.solve / dda.average with traced m, size or height hand over to the traceable
>>> # twins (see DDAProblem): jax.grad(lambda n: dda.solve(problem_of(n)).Qext) works
>>> q = dda.OrientationAverage(eps=0, beta_levels=(2, 2), gamma_levels=(2, 2))
>>> dda.efficiencies_averaged(prob, q).mueller[:, 0, 0]   # traceable <S11>(theta)

The slice: lattice -> polarizability -> interaction (FFT) -> matvec -> problem (solve) and
orientation (average) -> observables; results, datasets, adda_files, plot, bench, options
and cli around them. Public names load on first use (see ``emjax._lazy``).
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS = {
    "AveragedResult": ".results",
    "AveragedTracedResult": ".differentiable_average",
    "BiCG": "..krylov",
    "BiCGStab": "..krylov",
    "CM": ".polarizability",
    "DDAProblem": ".problem",
    "DDAResult": ".results",
    "FCD": ".polarizability",
    "LDR": ".polarizability",
    "Lattice": ".lattice",
    "OrientationAverage": "..scattering",
    "POLARIZABILITIES": ".polarizability",
    "QMR": "..krylov",
    "RR": ".polarizability",
    "TracedResult": ".differentiable",
    "average": ".orientation",
    "efficiencies": ".differentiable",
    "efficiencies_averaged": ".differentiable_average",
    "orientation_nodes": ".differentiable_average",
    "solve": ".problem",
}
__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # for type checkers and IDEs; at run time the names load on first use
    from ..krylov import QMR, BiCG, BiCGStab
    from ..scattering import OrientationAverage
    from .differentiable import TracedResult, efficiencies
    from .differentiable_average import AveragedTracedResult, efficiencies_averaged, orientation_nodes
    from .lattice import Lattice
    from .orientation import average
    from .polarizability import CM, FCD, LDR, POLARIZABILITIES, RR
    from .problem import DDAProblem, solve
    from .results import AveragedResult, DDAResult
