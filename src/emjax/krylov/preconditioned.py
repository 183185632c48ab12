"""Krylov methods with a general (non-diagonal) preconditioner ``B ~ A^{-1}``.

``solve(Preconditioned(A, B), b, PCOCG(...))`` (or :func:`emjax.krylov.solve_batched`):
the operator argument is a :class:`Preconditioned` pair, and the method says how the pair
is used:

* :class:`PCOCG`: preconditioned conjugate orthogonal conjugate gradients (van der Vorst &
  Melissen, IEEE Trans. Magn. 26, 706 (1990)): CG with the bilinear form ``x^T y`` for a
  complex-symmetric ``A`` and a complex-symmetric ``B`` (one matvec and one application of
  ``B`` per iteration; the stopping rule on the true recursively updated residual
  ``b - A x``).
* :class:`RightBiCGStab`: BiCGStab on ``A B y = b``, ``x = B y`` (``B`` any fixed linear
  operator; two matvecs and two applications of ``B`` per iteration; the residual of the
  right-preconditioned system is ``b - A x``).

The methods plug into :mod:`emjax.krylov.core`'s device loop (their recurrences are added to
its table of methods), so the chunking, progress, batching and result objects are the same
as for QMR.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax

from . import core
from .core import _dot, _Method, _norm, _safe

__all__ = ["PCOCG", "RightBiCGStab", "Preconditioned"]


@jax.tree_util.register_pytree_node_class
class Preconditioned:
    """An operator ``A`` with its preconditioner ``B`` (both callables, ideally pytrees).
    Called, it applies ``A`` (so residual checks of the pair measure ``b - A x``)."""

    def __init__(self, A, B):
        self.A, self.B = A, B

    def tree_flatten(self):
        return (self.A, self.B), None

    @classmethod
    def tree_unflatten(cls, aux, leaves):
        return cls(*leaves)

    def __call__(self, x):
        return self.A(x)


@dataclass(frozen=True)
class PCOCG(_Method):
    """Preconditioned COCG for complex-symmetric ``A`` and ``B`` (see the module doc)."""

    name = "pcocg"
    matvecs_per_iteration = 1


@dataclass(frozen=True)
class RightBiCGStab(_Method):
    """BiCGStab on ``A B y = b``, returning ``x = B y`` (see the module doc)."""

    name = "bicgstab-right"
    matvecs_per_iteration = 2


def _pair(P):
    if not isinstance(P, Preconditioned):
        raise TypeError(
            "the preconditioned methods need a krylov.preconditioned.Preconditioned(A, B) operator"
        )
    return P.A, P.B


def _pcocg_init(P, b, x):
    A, B = _pair(P)
    r = b - A(x)
    z = B(r)
    rho = _dot(r, z)
    rnorm = _norm(r)
    return dict(x=x, r=r, p=z, rho=rho, rnorm=rnorm, breakdown=(rho == 0) & (rnorm > 0))


def _pcocg_step(P, s):
    A, B = _pair(P)
    q = A(s["p"])
    pq = _dot(s["p"], q)
    alpha = s["rho"] / _safe(pq)
    x = s["x"] + alpha * s["p"]
    r = s["r"] - alpha * q
    z = B(r)
    rho = _dot(r, z)
    p = z + (rho / _safe(s["rho"])) * s["p"]
    rnorm = _norm(r)
    return dict(x=x, r=r, p=p, rho=rho, rnorm=rnorm, breakdown=((pq == 0) | (rho == 0)) & (rnorm > 0))


class _AB:
    def __init__(self, A, B):
        self.A, self.B = A, B

    def __call__(self, y):
        return self.A(self.B(y))


def _rbicgstab_init(P, b, y):
    # the loop's iterate is the preconditioned system's y; x = B y at the end (finish)
    return core._bicgstab_init(_AB(*_pair(P)), b, y)


def _rbicgstab_step(P, s):
    return core._bicgstab_step(_AB(*_pair(P)), s)


core._METHODS.setdefault("pcocg", (_pcocg_init, _pcocg_step))
core._METHODS.setdefault("bicgstab-right", (_rbicgstab_init, _rbicgstab_step))


def finish(P: Preconditioned, method: _Method, x):
    """The solution from the loop's iterate: ``B y`` for :class:`RightBiCGStab`, else ``x``."""
    return P.B(x) if isinstance(method, RightBiCGStab) else x
