"""A traceable Krylov solve with adjoint gradients.

:func:`linear_solve` solves ``A x = b`` in one ``lax.while_loop`` (no host round trips, no
chunks, no history), so it runs under ``jit``, ``vmap``, ``grad`` and ``jvp``. It is wrapped
in ``jax.lax.custom_linear_solve``: derivatives never go through the iterations. Forward mode
solves ``A x' = b' - A' x``; reverse mode solves the transposed system ``A^T lambda = xbar``
and forms ``bbar = lambda``, ``thetabar = -(dA/dtheta x)^T lambda`` by the implicit-function
theorem, where ``theta`` is whatever the operator ``A`` closes over (arrays in a pytree
operator, e.g. the DDA's ``sqrt(alpha)``). One extra solve per reverse pass, memory
independent of the iteration count (nothing of the loop is kept).

``symmetric=True`` (default) says ``A = A^T`` (not Hermitian: complex-symmetric, as the DDA
interaction matrix), so the adjoint solve is the same solver with the same operator; QMR and
BiCG need that anyway. For a non-symmetric ``A`` pass ``symmetric=False`` and a
:class:`BiCGStab` solver: the adjoint solve then runs BiCGStab on ``A^T`` (JAX's transpose of
the matvec).

The stopping rule is :func:`emjax.krylov.solve`'s (``||r|| <= max(rtol ||b||, atol)`` or
``maxiter``); the reverse pass stops on the same rule for the cotangent, so a gradient is as
accurate as ``rtol`` lets it be. Convergence is not checked on the host (that would need
concrete values); ask for ``return_info=True`` and look at :class:`SolveInfo`.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from ..errors import ConfigError
from .core import _METHODS, QMR, _Method, _norm

__all__ = ["SolveInfo", "linear_solve"]


class SolveInfo(NamedTuple):
    """Of the forward solve: iterations, final relative residual (recursively updated, as
    :func:`emjax.krylov.solve`'s), converged flag; JAX scalars."""

    iterations: jax.Array
    residual: jax.Array
    converged: jax.Array


def _loop(method: str, rtol: float, atol: float, maxiter: int, matvec, b):
    """One ``lax.while_loop`` of ``method`` from x0 = 0; returns ``(x, SolveInfo)``."""
    init, step = _METHODS[method]
    bnorm = _norm(b)
    rdt = bnorm.dtype
    tol = jnp.maximum(rtol * bnorm, jnp.asarray(atol, rdt))
    state = init(matvec, b, jnp.zeros_like(b))
    state["it"] = jnp.zeros((), jnp.int32)

    def cond(s):
        return (s["it"] < maxiter) & (s["rnorm"] > tol) & ~s["breakdown"]

    def body(s):
        new = step(matvec, {k: v for k, v in s.items() if k != "it"})
        for key in ("x", "r", "rnorm"):  # a breakdown step: keep the last good iterate
            if key in new:
                new[key] = jnp.where(new["breakdown"], s[key], new[key])
        new["it"] = s["it"] + 1
        return new

    s = lax.while_loop(cond, body, state)
    rel = s["rnorm"] / jnp.where(bnorm == 0, jnp.ones_like(bnorm), bnorm)
    return s["x"], SolveInfo(s["it"], rel, jnp.isfinite(s["rnorm"]) & (s["rnorm"] <= tol))


def linear_solve(
    A,
    b,
    solver: _Method | None = None,
    *,
    M=None,
    symmetric: bool = True,
    return_info: bool = False,
):
    """``x = A^-1 b``, differentiable with respect to ``b`` and to what ``A`` closes over.

    Parameters
    ----------
    A : linear operator on arrays shaped like ``b`` (a function or a pytree operator); its
        parameters may be tracers (they are differentiated through ``A``'s matvec, never
        through the iterations).
    b : complex array, any shape (a real one is promoted to complex).
    solver : ``QMR()`` (default), ``BiCG()`` or ``BiCGStab()``; ``rtol``, ``atol`` and
        ``maxiter`` are used, ``chunk`` is not (one device loop).
    M : optional Jacobi preconditioner ``~ 1 / diag(A)`` shaped like ``b``, applied
        split-symmetrically as in :func:`emjax.krylov.solve`; treated as a constant (the
        solution does not depend on it).
    symmetric : ``A = A^T`` (complex-symmetric); False needs ``BiCGStab()``.
    return_info : also return a :class:`SolveInfo` of the forward solve.

    Returns ``x`` (or ``(x, info)``), a JAX array of ``b``'s shape and dtype.
    """
    solver = solver or QMR()
    if not isinstance(solver, _Method):
        raise ConfigError(f"solver must be QMR(), BiCG() or BiCGStab(), got {solver!r}")
    if not symmetric and solver.name != "bicgstab":
        raise ConfigError(
            f"symmetric=False needs BiCGStab(): {solver.name} assumes a complex-symmetric A (A = A^T)"
        )
    b = jnp.asarray(b)
    if not jnp.issubdtype(b.dtype, jnp.complexfloating):
        b = b.astype(jnp.result_type(b.dtype, jnp.complex64))
    d = None
    if M is not None:
        M = lax.stop_gradient(jnp.asarray(M, dtype=b.dtype))
        if M.shape != b.shape:
            raise ConfigError(f"M must have b's shape {b.shape}, got {M.shape}")
        d = jnp.sqrt(M)
    args = (solver.name, solver.rtol, solver.atol, solver.maxiter)

    def inner(matvec, rhs):
        if d is None:
            return _loop(*args, matvec, rhs)
        y, info = _loop(*args, lambda v: d * matvec(d * v), d * rhs)
        return d * y, info

    x, info = lax.custom_linear_solve(
        lambda v: A(v),
        b,
        inner,
        None if symmetric else inner,
        symmetric=symmetric,
        has_aux=True,
    )
    return (x, info) if return_info else x
