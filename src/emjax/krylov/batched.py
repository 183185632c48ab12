"""Many right-hand sides in one device loop: :func:`solve_batched` (re-exported by
:mod:`emjax.krylov`). The single-system loop of :mod:`emjax.krylov`, vmapped over the batch."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ..backend import precision_scope
from ..errors import ConfigError
from .core import QMR, KrylovResult, _as_pytree_operator, _chunk, _init, _message, _Method, _norm


def _flat_axes(A, in_axes):
    """Per-leaf vmap axes (0 or None) of the operator ``A`` from a prefix like jax.vmap's."""
    treedef = jax.tree_util.tree_structure(A)
    if in_axes in (0, None):
        return treedef, (in_axes,) * treedef.num_leaves
    axes, axes_def = jax.tree_util.tree_flatten(in_axes, is_leaf=lambda a: a is None)
    if axes_def.num_leaves != treedef.num_leaves or any(a not in (0, None) for a in axes):
        raise ConfigError("in_axes must be 0, None, or the operator's structure with leaves 0 / None")
    return treedef, tuple(axes)


@partial(jax.jit, static_argnames=("method", "treedef", "axes"))
def _init_many(method, treedef, axes, leaves, b, x0, hist):
    def one(lv, bi, xi, hi):
        return _init(method, jax.tree_util.tree_unflatten(treedef, lv), bi, xi, hi)

    return jax.vmap(one, in_axes=(list(axes), 0, 0, None))(leaves, b, x0, hist)


@partial(jax.jit, static_argnames=("method", "treedef", "axes"), donate_argnames=("state",))
def _chunk_many(method, treedef, axes, leaves, state, it_stop, tol):
    # vmap of a while_loop runs until every system has stopped; systems that stopped earlier
    # keep their state (their iteration count and residual stay where they stopped)
    def one(lv, s, t):
        return _chunk(method, jax.tree_util.tree_unflatten(treedef, lv), s, it_stop, t)

    return jax.vmap(one, in_axes=(list(axes), 0, 0))(leaves, state, tol)


def solve_batched(
    A,
    b,
    solver: _Method | None = None,
    *,
    in_axes=None,
    progress: Callable[[int, float], None] | None = None,
) -> tuple[KrylovResult, ...]:
    """Solve ``A_i x_i = b_i`` for a batch of right-hand sides ``b`` (leading axis) at once.

    ``A`` is a pytree operator acting on one right-hand side; ``in_axes`` says which of its
    leaves carry a batch axis (jax.vmap's prefix convention: ``None`` for leaves shared by all
    systems, e.g. an interaction tensor, ``0`` for per-system leaves; the default ``None``
    shares the whole operator). Every matvec then applies to the whole batch (batched FFTs on
    a GPU). Each system stops by the rule of :func:`solve` with its own ``||b_i||``; the loop
    runs until all have stopped. ``progress(iterations, worst_relative_residual)`` is called
    between chunks. Returns one :class:`KrylovResult` per right-hand side.
    """
    with precision_scope():
        solver = solver or QMR()
        if not isinstance(solver, _Method):
            raise ConfigError(f"solver must be QMR(), BiCG() or BiCGStab(), got {solver!r}")
        b = jnp.asarray(b)
        if b.ndim < 2:
            raise ConfigError(f"b must have a leading batch axis, got shape {b.shape}")
        if not jnp.issubdtype(b.dtype, jnp.complexfloating):
            b = b.astype(jnp.result_type(b.dtype, jnp.complex64))
        A = _as_pytree_operator(A)
        treedef, axes = _flat_axes(A, in_axes)
        leaves = jax.tree_util.tree_leaves(A)
        nb = b.shape[0]
        for leaf, ax in zip(leaves, axes):
            if ax == 0 and (jnp.ndim(leaf) == 0 or jnp.shape(leaf)[0] != nb):
                raise ConfigError(
                    f"a batched operator leaf has shape {jnp.shape(leaf)}, expected ({nb}, ...)"
                )
        t0 = time.perf_counter()
        rdt = jnp.real(b).dtype
        bnorm = np.asarray(jax.vmap(_norm)(b), dtype=float)
        tol = np.maximum(solver.rtol * bnorm, solver.atol)
        hist = jnp.full((solver.maxiter + 1,), jnp.nan, rdt)
        state = _init_many(solver.name, treedef, axes, leaves, b, jnp.zeros_like(b), hist)
        safe_b = np.where(bnorm == 0, 1.0, bnorm)
        it = 0
        while True:
            it = min(it + solver.chunk, solver.maxiter)
            state = _chunk_many(
                solver.name, treedef, axes, leaves, state, jnp.int32(it), jnp.asarray(tol, rdt)
            )
            rnorm = np.asarray(state["rnorm"], dtype=float)
            stopped = ~np.isfinite(rnorm) | (rnorm <= tol) | np.asarray(state["breakdown"])
            if progress is not None:
                progress(int(np.max(state["it"])), float(np.max(np.where(bnorm == 0, 0, rnorm / safe_b))))
            if stopped.all() or it >= solver.maxiter:
                break
        seconds = time.perf_counter() - t0
        iters = np.asarray(state["it"])
        hists = np.asarray(state["hist"])
        out = []
        for i in range(nb):
            r, n = float(rnorm[i]), int(iters[i])
            if bnorm[i] == 0:
                out.append(
                    KrylovResult(
                        jnp.zeros_like(b[i]),
                        True,
                        0,
                        0,
                        0.0,
                        np.zeros(1),
                        "b = 0: x = 0",
                        seconds,
                        solver.name,
                    )
                )
                continue
            conv = bool(np.isfinite(r) and r <= tol[i])
            msg = _message(solver, conv, n, r, bnorm[i], bool(state["breakdown"][i]))
            rel = r / bnorm[i]
            n_mv = n * solver.matvecs_per_iteration + 1
            out.append(
                KrylovResult(
                    state["x"][i], conv, n, n_mv, rel, hists[i, : n + 1] / bnorm[i], msg, seconds, solver.name
                )
            )
        return tuple(out)
