"""Reverse mode of a traced FDTD run with a hand-made adjoint (``jax.custom_vjp`` per segment).

JAX's own reverse mode through the checkpointed ``lax.scan`` (:func:`emjax.fdtd.simulation.
_advance_traced`) stores each step's residuals while it recomputes a segment and then
transposes every step with them: ~5.5 forward passes for a gradient on an H100. This module
uses the structure of the step instead:

* The step is affine in the state (Maxwell's equations are linear; sources, the TF/SF line and
  the DFT phases depend on the step number only), so its transpose needs no residuals: the
  backward step is ``jax.vjp`` of the step at a zero state with the right step number (XLA
  drops the unused primal), one pass like a forward step.
* The coefficients that carry the user's gradient (those built from a traced ``eps`` or
  ``sigma``: ``ca`` and ``cb`` of the E update, and the sources' ``dt / eps`` at their nodes)
  enter the E update diagonally: ``E_c' = P_c (ca E_c + cb (curl H + psi)_c) + sources``
  (``P`` the wall and PEC masks). While a segment is recomputed, the per-node sensitivities
  ``dE'/dcb`` and ``dE'/dca`` (``jax.jvp`` with a tangent of ones: exactly the diagonal) are
  kept for its steps; the backward step multiplies them by the cotangent of the updated E
  (taken through an additive zero input of the step, so the DFT monitors' and probes' parts
  are included). The sources' coefficients do not depend on the state: their cotangent comes
  out of the same ``jax.vjp``.

Cost per segment of K steps: the forward pass (1), the recomputation writing 3 sensitivity
arrays per step per traced coefficient (~1.3), the backward steps reading them (~1.5).
Memory: the state at every segment's start plus 3 K arrays (6 K with a lossy medium), as the
checkpointed form. Used by :func:`emjax.fdtd.run` for traced runs without subpixel
corrections, dispersive poles, Bloch boundaries (whose coefficients or complex fields this
adjoint does not cover); the others take JAX's reverse mode (same results to rounding:
tests/fdtd/test_fdtd_adjoint.py).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["applicable", "advance"]

DIAGONAL = ("ca", "cb")  # coefficients acting on E node by node
TRACEABLE = DIAGONAL + ("src_cb",)


def _traced(x) -> bool:
    return any(isinstance(v, jax.core.Tracer) for v in jax.tree_util.tree_leaves(x))


def applicable(plan, arrays) -> bool:
    """Whether the hand-made adjoint covers this run: no subpixel corrections, dispersive
    poles, Bloch boundaries or several devices, and the traced coefficients among
    ``ca``, ``cb`` and the sources' ``src_cb``."""
    if plan.subpixel is not None or plan.n_poles or plan.n_lorentz or plan.layout is not None:
        return False
    if any(b is not None for b in plan.bloch):
        return False
    return not any(_traced(v) for k, v in arrays.items() if k not in TRACEABLE)


def advance(plan, arrays, state, steps: int, segment: int):
    """``steps`` steps (segments of ``segment`` steps; ``segment <= 0``: one segment) with
    the hand-made reverse mode; returns ``(state, probe records)`` as
    :func:`emjax.fdtd.simulation._advance_traced` does."""
    diff_keys = tuple(k for k in TRACEABLE if k in arrays and _traced(arrays[k]))
    diff = {k: arrays[k] for k in diff_keys}
    const = {k: v for k, v in arrays.items() if k not in diff_keys}
    return _advance(plan, diff_keys, const, diff, state, steps, segment)


@partial(jax.jit, static_argnames=("plan", "diff_keys", "steps", "segment"))
def _advance(plan, diff_keys, const, diff, state, steps, segment):
    if segment <= 0 or segment >= steps:
        return _segment(plan, diff_keys, steps, const, diff, state)
    n_seg, rest = divmod(steps, segment)

    def outer(s, _):
        return _segment(plan, diff_keys, segment, const, diff, s)

    state, rec = jax.lax.scan(outer, state, None, length=n_seg)
    rec = rec.reshape((n_seg * segment,) + rec.shape[2:])
    if rest:
        state, tail = _segment(plan, diff_keys, rest, const, diff, state)
        rec = jnp.concatenate([rec, tail])
    return state, rec


def _step(plan, arrays, state, z=None):
    from .simulation import _step as step

    return step(plan, arrays, state, None, z=z)


def _scan(plan, arrays, state, K):
    return jax.lax.scan(lambda s, _: _step(plan, arrays, s), state, None, length=K)


def _zeros_like_state(state, n):
    """A zero state of ``state``'s structure at step ``n`` (the point where the affine step
    is linearized: its transpose does not depend on the point)."""
    z = jax.tree_util.tree_map(jnp.zeros_like, state)
    return {**z, "n": n}


def _float0(x):
    return np.zeros(np.shape(x), jax.dtypes.float0)


def _contract(gE, sens, like):
    """The cotangent of a coefficient shaped ``like`` from the per-component products."""
    prods = [g * s for g, s in zip(gE, sens)]
    nd = jnp.ndim(like)
    if nd == 4:
        return jnp.stack(prods)
    if nd == 3:
        return prods[0] + prods[1] + prods[2]
    return jnp.sum(prods[0] + prods[1] + prods[2]).reshape(jnp.shape(like))


def _segment(plan, diff_keys, K, const, diff, state):
    @jax.custom_vjp
    def seg(const, diff, state):
        return _scan(plan, {**const, **diff}, state, K)

    def fwd(const, diff, state):
        return seg(const, diff, state), (const, diff, state)

    def bwd(res, ct):
        const, diff, state0 = res
        g_state, g_rec = ct
        arrays = {**const, **diff}
        diag = [k for k in diff_keys if k in DIAGONAL]
        other = [k for k in diff_keys if k not in DIAGONAL]

        def recompute(s, _):  # the forward step, and dE'/dc for the diagonal coefficients
            if not diag:
                return _step(plan, arrays, s)[0], ((), s["n"])

            def full(p):
                return _step(plan, {**arrays, **p}, s)

            p = {k: arrays[k] for k in diag}
            (new, _rec), lin = jax.linearize(full, p)
            sens = []
            for k in diag:  # one linear map, evaluated per coefficient (primal shared)
                t = {j: (jnp.ones_like if j == k else jnp.zeros_like)(p[j]) for j in diag}
                sens.append(lin(t)[0]["E"])
            return new, (tuple(sens), s["n"])

        _, (sens, ns) = jax.lax.scan(recompute, state0, None, length=K)

        def back(carry, xs):
            g_s, g_d = carry
            sens_k, n_k, g_rec_k = xs
            point = _zeros_like_state(state0, n_k)
            zE = tuple(jnp.zeros_like(e) for e in state0["E"])

            def f(s, z, o):
                return _step(plan, {**arrays, **o}, s, z)

            o = {k: arrays[k] for k in other}
            _, vjp = jax.vjp(f, point, zE, o)
            g_prev, gE, g_o = vjp((g_s, g_rec_k))
            g_d = dict(g_d)
            for k, s_k in zip(diag, sens_k):
                g_d[k] = g_d[k] + _contract(gE, s_k, arrays[k])
            for k in other:
                g_d[k] = jax.tree_util.tree_map(jnp.add, g_d[k], g_o[k])
            g_prev = {**g_prev, "n": _float0(n_k)}
            return (g_prev, g_d), None

        g0 = {k: jax.tree_util.tree_map(jnp.zeros_like, v) for k, v in diff.items()}
        g_s = {**g_state, "n": _float0(state0["n"])}
        (g_s, g_d), _ = jax.lax.scan(back, (g_s, g0), (sens, ns, g_rec), reverse=True)
        return None, g_d, g_s  # const: no cotangent (applicable() checked it is not traced)

    seg.defvjp(fwd, bwd)
    return seg(const, diff, state)
