"""Krylov solvers that run on the device: QMR (complex-symmetric), BiCG, BiCGStab.

``solve(A, b, solver)`` for one system, ``solve_batched`` for many right-hand sides in one
device loop; both return :class:`KrylovResult` with the convergence flag, iteration count
and residual history. Stopping rule and argument names as SciPy's (see ``single.py``).
``linear_solve`` is the traceable one (one device loop, under jit/vmap/grad) with adjoint
gradients through ``jax.lax.custom_linear_solve`` (see ``adjoint.py``).
"""

from .adjoint import SolveInfo, linear_solve
from .batched import solve_batched
from .core import QMR, SOLVERS, BiCG, BiCGStab, KrylovResult, QMRLean, _Method
from .single import jacobi, solve

__all__ = [
    "SOLVERS",
    "QMR",
    "QMRLean",
    "BiCG",
    "BiCGStab",
    "KrylovResult",
    "SolveInfo",
    "linear_solve",
    "jacobi",
    "solve",
    "solve_batched",
    "_Method",
]
