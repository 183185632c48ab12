"""Finite-difference frequency-domain solver on the Yee grid (in progress, issue 14).

Natural units as the FDTD (eps0 = mu0 = c = 1, fields ~ exp(-i omega t), frequencies = 1 /
wavelength). Built so far: the 2-D TM problem (E_z, H_x, H_y) with stretched-coordinate PML,
a sparse direct solve (SuperLU through SciPy), line sources and plane-wave scattering in the
scattered-field formulation, on an :mod:`emjax.scene` rasterized with subpixel averaging.

The slice: operators (Yee differences, SC-PML) -> tm (assembly, solve) -> farfield (2-D
scattering width); public names load on first use (see ``emjax._lazy``).
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
    "PlaneWave3D": ".maxwell3d",
    "PointDipole3D": ".maxwell3d",
    "field_at": ".maxwell3d",
    "Result3D": ".maxwell3d",
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
}
__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # for type checkers and IDEs; at run time the names load on first use
    from .config import FDFDProblem, build_fdfd
    from .farfield import scattering_width
    from .farfield3d import cross_sections_3d, far_field_3d, rcs_3d
    from .maxwell3d import PlaneWave3D, PointDipole3D, Result3D, field_at, solve_3d
    from .operators import SCPML, UPML, derivatives
    from .rcs import solve_rcs
    from .results import RCSResult
    from .solvers import Direct, Iterative
    from .tm import LineSource, PlaneWave2D, TMResult, solve_te, solve_tm
