"""Finite-difference frequency-domain solver on the Yee grid.

Natural units as the FDTD (eps0 = mu0 = c = 1, fields ~ exp(-i omega t), frequencies = 1 /
wavelength). 2-D TM (E_z) and TE (H_z) with SuperLU, 3-D with QMR/BiCGStab on the device
(or SuperLU), stretched-coordinate PML (3-D: UPML too), plane waves in the scattered-field
formulation and point sources, on an :mod:`emjax.scene` with subpixel averaging and
conformal perfect conductors; radar cross sections from near-to-far-field transforms, 3-D
cross sections from the grid's Poynting fluxes.

The slice: operators (Yee differences, SC-PML) -> specs2d, grid2d, permittivity2d,
stencil2d, pec2d, solve2d, tm (2-D) | operator3d, pec3d, grid3d, solvers, linear3d, maxwell3d (3-D) ->
farfield, farfield3d, flux3d (RCS, cross sections) -> config, rcs, results, plot, cli,
bench; symmetry folds a solve onto half the grid per mirror plane; public names load on
first use (see ``emjax._lazy``).
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS = {
    "SCPML": ".operators",
    "UPML": ".operators",
    "derivatives": ".operators",
    "TMResult": ".tm",
    "solve_tm": ".tm",
    "solve_te": ".tm",
    "LineSource": ".tm",
    "PlaneWave2D": ".tm",
    "scattering_width": ".farfield",
    "PlaneWave3D": ".grid3d",
    "PointDipole3D": ".grid3d",
    "field_at": ".grid3d",
    "Result3D": ".grid3d",
    "solve_3d": ".maxwell3d",
    "rcs_3d": ".farfield3d",
    "cross_sections_3d": ".farfield3d",
    "far_field_3d": ".farfield3d",
    "Direct": ".solvers",
    "Iterative": ".solvers",
    "FDFDProblem": ".config",
    "build_fdfd": ".config",
    "RCSResult": ".results",
    "solve_rcs": ".rcs",
    "tm_field": ".adjoint",
    "disk_permittivity": ".adjoint",
    "te_field": ".adjoint_te",
    "field_3d": ".adjoint3d",
    "ModeSource2D": ".modes2d",
    "mode_amplitudes": ".modes2d",
}
__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # for type checkers and IDEs; at run time the names load on first use
    from .adjoint import disk_permittivity, tm_field
    from .adjoint3d import field_3d
    from .adjoint_te import te_field
    from .config import FDFDProblem, build_fdfd
    from .farfield import scattering_width
    from .farfield3d import cross_sections_3d, far_field_3d, rcs_3d
    from .grid3d import PlaneWave3D, PointDipole3D, Result3D, field_at
    from .maxwell3d import solve_3d
    from .modes2d import ModeSource2D, mode_amplitudes
    from .operators import SCPML, UPML, derivatives
    from .rcs import solve_rcs
    from .results import RCSResult
    from .solvers import Direct, Iterative
    from .tm import LineSource, PlaneWave2D, TMResult, solve_te, solve_tm
