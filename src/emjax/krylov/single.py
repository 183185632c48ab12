"""Krylov solvers that run on the device: QMR (complex-symmetric), BiCG, BiCGStab.

The loops are ``lax.while_loop`` s on the device, run in chunks of ``chunk`` iterations so
that the host can report progress between chunks. Arguments and the stopping rule follow
SciPy: iterate until ``||b - A x|| <= max(rtol * ||b||, atol)`` (2-norms, the recursively
updated residual) or ``maxiter`` iterations. Every solve returns a :class:`KrylovResult`
with the convergence flag, iteration count and residual history; nothing is discarded.

``A`` is a callable on arrays of ``b``'s shape. To avoid re-tracing and baking large
operands into compiled code, pass an operator that is a JAX pytree (a registered class with
``__call__``, or ``jax.tree_util.Partial(f, *arrays)``); a plain function works too.

``M`` is an optional Jacobi (diagonal) preconditioner: an array of ``b``'s shape holding
approximately ``1 / diag(A)``. It is applied split-symmetrically,
``(D A D) y = D b, x = D y`` with ``D = sqrt(M)``, which keeps a complex-symmetric ``A``
complex-symmetric (needed by QMR and BiCG); the stopping rule then applies to that system.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from ..backend import precision_scope
from ..errors import ConfigError
from .core import QMR, KrylovResult, _as_pytree_operator, _chunk, _init, _message, _Method, _norm, _Scaled


def solve(
    A: Callable,
    b,
    solver: _Method | None = None,
    *,
    x0=None,
    M=None,
    progress: Callable[[int, float], None] | None = None,
) -> KrylovResult:
    """Solve ``A x = b`` with ``solver`` (default ``QMR()``) on ``b``'s device.

    Parameters
    ----------
    A : callable, linear operator on arrays shaped like ``b`` (a pytree operator avoids
        recompiling for every new operand).
    b : complex array, any shape.
    solver : QMR, BiCG or BiCGStab instance with ``rtol, atol, maxiter``.
    x0 : initial guess (default zeros).
    M : optional Jacobi preconditioner, an array ``~ 1/diag(A)`` shaped like ``b``.
    progress : called as ``progress(iterations, relative_residual)`` after every chunk.

    Runs with 64-bit types enabled (complex128 inputs stay complex128).
    """
    with precision_scope():
        return _solve(A, b, solver, x0, M, progress)


def _solve(A, b, solver, x0, M, progress) -> KrylovResult:
    solver = solver or QMR()
    if not isinstance(solver, _Method):
        raise ConfigError(f"solver must be QMR(), BiCG() or BiCGStab(), got {solver!r}")
    if isinstance(b, jax.core.Tracer):
        raise ConfigError(
            "krylov.solve runs a host-driven loop and cannot be traced (jit/grad/vmap); use "
            "krylov.linear_solve, the traceable solve with adjoint gradients"
        )
    b = jnp.asarray(b)
    if not jnp.issubdtype(b.dtype, jnp.complexfloating):
        b = b.astype(jnp.result_type(b.dtype, jnp.complex64))
    A = _as_pytree_operator(A)
    d = None
    if M is not None:
        M = jnp.asarray(M, dtype=b.dtype)
        if M.shape != b.shape:
            raise ConfigError(f"M must have b's shape {b.shape}, got {M.shape}")
        d = jnp.sqrt(M)
        A = _Scaled(A, d)
        b = d * b
    x0 = jnp.zeros_like(b) if x0 is None else jnp.asarray(x0, dtype=b.dtype)
    if x0.shape != b.shape:
        raise ConfigError(f"x0 must have b's shape {b.shape}, got {x0.shape}")
    if d is not None:
        x0 = x0 / d
    t0 = time.perf_counter()
    bnorm = float(_norm(b))
    rdt = jnp.real(b).dtype
    eps = float(jnp.finfo(rdt).eps)
    if solver.rtol and solver.rtol < 10 * eps and solver.atol == 0:
        warnings.warn(
            f"rtol = {solver.rtol:g} is below 10 x the machine epsilon of {b.dtype} "
            f"({eps:.1e}); the solve will stagnate",
            RuntimeWarning,
            stacklevel=3,
        )
    if bnorm == 0:
        x = jnp.zeros_like(b)
        return KrylovResult(x, True, 0, 0, 0.0, np.zeros(1), "b = 0: x = 0", 0.0, solver.name)
    tol = max(solver.rtol * bnorm, solver.atol)
    hist = jnp.full((solver.maxiter + 1,), jnp.nan, rdt)
    state = _init(solver.name, A, b, x0, hist)
    it = 0
    while True:
        stop = min(it + solver.chunk, solver.maxiter)
        state = _chunk(solver.name, A, state, jnp.int32(stop), jnp.asarray(tol, rdt))
        it = int(state["it"])
        rnorm = float(state["rnorm"])
        if progress is not None:
            progress(it, rnorm / bnorm)
        if not np.isfinite(rnorm) or rnorm <= tol or bool(state["breakdown"]) or it >= solver.maxiter:
            break
    seconds = time.perf_counter() - t0
    x = state["x"] if d is None else d * state["x"]
    history = np.asarray(state["hist"][: it + 1]) / bnorm
    converged = bool(np.isfinite(rnorm) and rnorm <= tol)
    msg = _message(solver, converged, it, rnorm, bnorm, bool(state["breakdown"]))
    n_mv = it * solver.matvecs_per_iteration + 1
    return KrylovResult(x, converged, it, n_mv, rnorm / bnorm, history, msg, seconds, solver.name)


def jacobi(diagonal) -> jax.Array:
    """Jacobi preconditioner ``1 / diag(A)`` for :func:`solve`'s ``M``."""
    diagonal = jnp.asarray(diagonal)
    return 1.0 / diagonal
