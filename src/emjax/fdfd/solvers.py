"""FDFD solver strategies: a sparse direct solve on the host, or Krylov on the device.

:class:`Direct` factors the matrix once with SuperLU (SciPy) and solves every right side
with the factors; :class:`Iterative` runs an :mod:`emjax.krylov` method (QMR by default:
the 3-D operator is complex symmetric) matrix-free on JAX's default device, all right sides
in one batched device loop, with a Jacobi preconditioner.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import ConfigError
from ..krylov import QMR, _Method

__all__ = ["Direct", "Iterative", "check_solver"]


@dataclass(frozen=True)
class Direct:
    """Sparse LU (SuperLU through ``scipy.sparse.linalg.splu``) on the host CPU.

    Exact to rounding; memory and time grow quickly in 3-D (fill-in): meant for 2-D and for
    3-D grids up to a few 10^5 unknowns."""

    name = "direct"


@dataclass(frozen=True)
class Iterative:
    """Matrix-free Krylov solve on the device: ``method`` an emjax.krylov solver object
    (QMR, the default; QMRLean: QMR without the residual recurrences, the true residual
    checked every 32 iterations, 8% faster at 128^3 on the H100; BiCG or BiCGStab; with
    rtol, maxiter), ``jacobi`` the diagonal preconditioner,
    ``graddiv`` Shin and Fan's gradient-divergence term (3-D; it leaves the solution unchanged
    and cuts the iterations: see emjax.fdfd.operator3d)."""

    method: _Method = field(default_factory=lambda: QMR(rtol=1e-6, maxiter=20_000, chunk=100))
    jacobi: bool = True
    graddiv: bool = True

    name = "iterative"

    def __post_init__(self):
        if not isinstance(self.method, _Method):
            raise ConfigError(
                f"Iterative.method must be emjax.krylov.QMR(), BiCG() or BiCGStab(), got {self.method!r}"
            )


def check_solver(solver):
    """``solver`` if it is a Direct or Iterative instance, else a ConfigError."""
    if not isinstance(solver, (Direct, Iterative)):
        raise ConfigError(f"solver must be emjax.fdfd.Direct() or Iterative(...), got {solver!r}")
    return solver
