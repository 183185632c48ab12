"""FDFD solver strategies: a sparse direct solve on the host, or Krylov on the device.

:class:`Direct` factors the matrix once with SuperLU (SciPy) and solves every right side
with the factors; :class:`Iterative` runs an :mod:`emjax.krylov` method (QMR by default:
the 3-D operator is complex symmetric) matrix-free on JAX's default device, all right sides
in one batched device loop, with a Jacobi preconditioner or (3-D) a shifted-Laplacian
multigrid V-cycle (:mod:`emjax.fdfd.multigrid`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError
from ..krylov import QMR, BiCGStab, _Method
from ..krylov.preconditioned import PCOCG, RightBiCGStab
from .multigrid import Multigrid

__all__ = ["Direct", "Iterative", "PRECONDITIONERS", "check_solver"]


@dataclass(frozen=True)
class Direct:
    """Sparse LU (SuperLU through ``scipy.sparse.linalg.splu``) on the host CPU.

    Exact to rounding; memory and time grow quickly in 3-D (fill-in): meant for 2-D and for
    3-D grids up to a few 10^5 unknowns."""

    name = "direct"


#: the preconditioners of :class:`Iterative`
PRECONDITIONERS = ("jacobi", "multigrid", None)


@dataclass(frozen=True)
class Iterative:
    """Matrix-free Krylov solve on the device: ``method`` an emjax.krylov solver object
    (with rtol, maxiter), ``preconditioner`` "jacobi" (the default), "multigrid" (3-D: one
    V-cycle of the complex-shifted Laplacian per iteration, :mod:`emjax.fdfd.multigrid`,
    settings in ``multigrid``, a :class:`~emjax.fdfd.multigrid.Multigrid`) or None,
    ``graddiv`` Shin and Fan's gradient-divergence term (3-D; it leaves the solution
    unchanged and cuts the iterations: see emjax.fdfd.operator3d).

    ``method`` (None: the default of the preconditioner). Jacobi or none: QMR (the default,
    rtol 1e-6, maxiter 20,000; QMRLean: QMR without the residual recurrences, the true
    residual checked every 32 iterations, 8% faster at 128^3 on the H100), BiCG or BiCGStab.
    Multigrid: :class:`~emjax.krylov.preconditioned.PCOCG` (the default: one matvec and one
    V-cycle per iteration; the V-cycle is complex symmetric like the operator) or
    :class:`~emjax.krylov.preconditioned.RightBiCGStab`; QMR, QMRLean or BiCG given with
    multigrid become PCOCG, BiCGStab becomes RightBiCGStab (same rtol, atol, maxiter, chunk).

    ``jacobi``: kept for compatibility: ``jacobi=False`` with the default preconditioner
    means none (after construction ``jacobi`` is True exactly when the preconditioner is
    Jacobi's)."""

    method: _Method | None = None
    jacobi: bool = True
    graddiv: bool = True
    preconditioner: str | None = "jacobi"
    multigrid: Multigrid | None = None

    name = "iterative"

    def __post_init__(self):
        prec = self.preconditioner
        if prec not in PRECONDITIONERS:
            raise ConfigError(f'Iterative.preconditioner must be "jacobi", "multigrid" or None, got {prec!r}')
        if not isinstance(self.jacobi, (bool, np.bool_)):
            raise ConfigError(f"Iterative.jacobi must be True or False, got {self.jacobi!r}")
        if prec == "jacobi" and not self.jacobi:
            prec = None
        object.__setattr__(self, "preconditioner", prec)
        object.__setattr__(self, "jacobi", prec == "jacobi")
        method = self.method
        if method is None:
            method = (
                PCOCG(rtol=1e-6, maxiter=20_000, chunk=50)
                if prec == "multigrid"
                else QMR(rtol=1e-6, maxiter=20_000, chunk=100)
            )
        if not isinstance(method, _Method):
            raise ConfigError(
                f"Iterative.method must be emjax.krylov.QMR(), BiCG() or BiCGStab(), got {self.method!r}"
            )
        preconditioned = isinstance(method, (PCOCG, RightBiCGStab))
        if prec == "multigrid" and not preconditioned:
            kind = RightBiCGStab if isinstance(method, BiCGStab) else PCOCG
            method = kind(rtol=method.rtol, atol=method.atol, maxiter=method.maxiter, chunk=method.chunk)
        elif prec != "multigrid" and preconditioned:
            raise ConfigError(
                f'Iterative.method {method.name} needs preconditioner="multigrid", '
                f"got preconditioner={prec!r}"
            )
        object.__setattr__(self, "method", method)
        if prec == "multigrid":
            mg = Multigrid() if self.multigrid is None else self.multigrid
            if not isinstance(mg, Multigrid):
                raise ConfigError(
                    f"Iterative.multigrid must be an emjax.fdfd.multigrid.Multigrid, got {mg!r}"
                )
            object.__setattr__(self, "multigrid", mg)
        elif self.multigrid is not None:
            raise ConfigError('Iterative.multigrid settings need preconditioner="multigrid"')


def check_solver(solver):
    """``solver`` if it is a Direct or Iterative instance, else a ConfigError."""
    if not isinstance(solver, (Direct, Iterative)):
        raise ConfigError(f"solver must be emjax.fdfd.Direct() or Iterative(...), got {solver!r}")
    return solver
