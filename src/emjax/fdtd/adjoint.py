"""Reverse mode of a traced FDTD run with a hand-made adjoint (``jax.custom_vjp`` per segment).

JAX's own reverse mode through the checkpointed ``lax.scan`` (:func:`emjax.fdtd.simulation.
_advance_traced`) stores each step's residuals while it recomputes a segment and transposes
every step with them; on the H100 its transposed step runs 3-4x slower than a forward step
for the same bytes (XLA fuses the transposed curls into a few multi-output loops that
recompute the inner stencil): ~5.5 forward passes per gradient. This module uses the
structure of the step instead:

* The step is affine in the state (Maxwell's equations are linear; sources and the DFT
  phases depend on the step number only), so its transpose needs no residuals. For the 2nd
  order without a TF/SF line it is written out (:func:`_step_T`): the transpose of the
  forward difference is minus the backward one, so the adjoint step is a Yee step of the
  cotangents (the E half, then the H half) with the CPML psi transposed slab by slab; the
  monitors', probes' and sources' small transposes come from ``jax.vjp``. Otherwise (4th
  order, TF/SF) it is ``jax.vjp`` of the step at a zero state.
* The coefficients that carry the user's gradient (built from a traced ``eps`` or
  ``sigma``: ``ca`` and ``cb`` of the E update, and the sources' ``dt / eps`` at their nodes)
  enter the E update diagonally: ``E_c' = P_c (ca E_c + cb (curl H + psi)_c) + sources``
  (``P`` the wall and PEC masks). The per-node sensitivities ``dE'/dcb`` (and ``dE'/dca``
  when lossy) of every step are kept (``jax.linearize`` of the step in the coefficient,
  evaluated on ones: exactly the diagonal) and multiplied by the cotangent of the updated E
  in the backward step; the sources' coefficients come out of their own small ``jax.vjp``.

Segments (``remat`` steps, default sqrt(steps)): the forward pass keeps only each segment's
starting state; the backward recomputes the segment keeping the sensitivities (3 arrays per
step and coefficient), then runs the adjoint steps. ``remat=0``: the forward pass keeps the
sensitivities of every step (memory O(steps), no recomputation). H100, 128^3 x 500 steps,
float32 (BENCHMARKS.md): gradient / forward 4.9 with segments, 3.8 with ``remat=0``, against
5.6 through JAX's reverse mode. Used by :func:`emjax.fdtd.run` for traced runs without
subpixel corrections, dispersive poles, Bloch boundaries (``simulation.ADJOINT =
"autodiff"`` or ``EMJAX_FDTD_ADJOINT=autodiff`` selects JAX's); the same gradient to rounding
(tests/fdtd/test_fdtd_adjoint.py).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from . import step as engine

__all__ = ["applicable", "advance"]

DIAGONAL = ("ca", "cb")  # coefficients acting on E node by node
TRACEABLE = DIAGONAL + ("src_cb",)


def applicable(plan) -> bool:
    """Whether this adjoint covers the run: no subpixel corrections, dispersive poles, Bloch
    boundaries or several devices. Then only ``ca``, ``cb`` and the sources' ``src_cb``
    depend on ``eps`` and ``sigma``; the other coefficients (CPML profiles, PEC masks) are
    functions of the grid alone and get no cotangent. (Which arrays are differentiated cannot
    be told from their types: inside ``jax.jit`` every one is a tracer.)"""
    if (
        plan.subpixel is not None
        or plan.n_poles
        or plan.n_lorentz
        or plan.layout is not None
        or any(plan.pmc)
    ):
        return False
    return all(b is None for b in plan.bloch)


def hand_written(plan) -> bool:
    """Whether the transposed step is the hand-written one (2nd order, no TF/SF line);
    otherwise ``jax.vjp`` of the step at a zero state."""
    return plan.order == 2 and plan.aux_len == 0


def advance(plan, arrays, state, steps: int, segment: int, lossy: bool = True):
    """``steps`` steps (segments of ``segment`` steps; ``segment <= 0``: one segment) with
    this reverse mode; returns ``(state, probe records)`` as
    :func:`emjax.fdtd.simulation._advance_traced` does. ``lossy`` False: ``ca`` is the
    constant 1 (sigma = 0 and concrete), no sensitivity kept for it."""
    diff_keys = tuple(k for k in TRACEABLE if k in arrays and (k != "ca" or lossy))
    diff = {k: arrays[k] for k in diff_keys}
    const = {k: v for k, v in arrays.items() if k not in diff_keys}
    return _advance(plan, diff_keys, const, diff, state, steps, segment)


@partial(jax.jit, static_argnames=("plan", "diff_keys", "steps", "segment"))
def _advance(plan, diff_keys, const, diff, state, steps, segment):
    if segment <= 0 or segment >= steps:  # one segment; 0: no recomputation
        return _segment(plan, diff_keys, steps, const, diff, state, store=segment <= 0)
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
    return engine.step(plan, arrays, state, None, z=z)


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


def _sens_scan(plan, arrays, diag, state0, K):
    """K forward steps keeping dE'/dc of each diagonal coefficient c (``jax.linearize`` of
    the step in c, evaluated on ones: exactly the diagonal); returns (state, records,
    sensitivities, step numbers)."""

    def body(s, _):
        if not diag:
            new, rec = _step(plan, arrays, s)
            return new, (rec, (), s["n"])

        def full(p):
            return _step(plan, {**arrays, **p}, s)

        p = {k: arrays[k] for k in diag}
        (new, rec), lin = jax.linearize(full, p)
        sens = []
        for k in diag:  # one linear map, evaluated per coefficient (primal shared)
            t = {j: (jnp.ones_like if j == k else jnp.zeros_like)(p[j]) for j in diag}
            sens.append(lin(t)[0]["E"])
        return new, (rec, tuple(sens), s["n"])

    state, (rec, sens, ns) = jax.lax.scan(body, state0, None, length=K)
    return state, rec, sens, ns


def _segment(plan, diff_keys, K, const, diff, state, store: bool = False):
    """K steps as one custom_vjp. ``store``: the forward pass keeps the sensitivities (no
    recomputation in the backward; memory 3 arrays per step and coefficient)."""
    diag = [k for k in diff_keys if k in DIAGONAL]
    other = [k for k in diff_keys if k not in DIAGONAL]

    @jax.custom_vjp
    def seg(const, diff, state):
        return _scan(plan, {**const, **diff}, state, K)

    def fwd(const, diff, state):
        if store:
            new, rec, sens, ns = _sens_scan(plan, {**const, **diff}, diag, state, K)
            return (new, rec), (const, diff, state, sens, ns)
        return seg(const, diff, state), (const, diff, state, None, None)

    def bwd(res, ct):
        const, diff, state0, sens, ns = res
        g_state, g_rec = ct
        arrays = {**const, **diff}
        if sens is None:  # recompute the segment, keeping the sensitivities
            _, _, sens, ns = _sens_scan(plan, arrays, diag, state0, K)

        def back(carry, xs):
            g_s, g_d = carry
            sens_k, n_k, g_rec_k = xs
            o = {k: arrays[k] for k in other}
            if hand_written(plan):
                dtype = state0["E"][0].dtype
                g_prev, gE, g_src = _step_T(plan, arrays, n_k, g_s, g_rec_k, dtype)
                g_o = {"src_cb": g_src} if "src_cb" in other else {}
            else:  # jax.vjp of the (affine) step at a zero state
                point = _zeros_like_state(state0, n_k)
                zE = tuple(jnp.zeros_like(e) for e in state0["E"])
                _, vjp = jax.vjp(lambda s, z, o: _step(plan, {**arrays, **o}, s, z), point, zE, o)
                g_prev, gE, g_o = vjp((g_s, g_rec_k))
            g_d = dict(g_d)
            for k, s_k in zip(diag, sens_k):
                g_d[k] = g_d[k] + _contract(gE, s_k, arrays[k])
            for k in other:
                if g_o.get(k) is not None:
                    g_d[k] = jax.tree_util.tree_map(jnp.add, g_d[k], g_o[k])
            g_prev = {**g_prev, "n": _float0(n_k)}
            return (g_prev, g_d), None

        g0 = {k: jax.tree_util.tree_map(jnp.zeros_like, v) for k, v in diff.items()}
        g_s = {**g_state, "n": _float0(state0["n"])}
        (g_s, g_d), _ = jax.lax.scan(back, (g_s, g0), (sens, ns, g_rec), reverse=True)
        return None, g_d, g_s  # const: no cotangent (applicable() checked it is not traced)

    seg.defvjp(fwd, bwd)
    return seg(const, diff, state)


# -- the hand-written transposed step (2nd order, no TF/SF) ----------------------------------

_TERMS = ((0, 1, 2, 1.0), (0, 2, 1, -1.0), (1, 2, 0, 1.0), (1, 0, 2, -1.0), (2, 0, 1, 1.0), (2, 1, 0, -1.0))
# (curl component, axis differentiated, field component, sign): curl_x = d_y F_z - d_z F_y, ...


def _roll_diff_T(g, axis, inv_dx, forward: bool):
    """Transpose of the wrapped 2nd-order difference: (D+)^T = -D-, (D-)^T = -D+."""
    if forward:  # D+ f = f[i+1] - f[i]  ->  g[j-1] - g[j]
        return (jnp.roll(g, 1, axis) - g) * inv_dx
    return (g - jnp.roll(g, -1, axis)) * inv_dx  # D- f = f[i] - f[i-1]  ->  g[j] - g[j+1]


def _slab_diff_T(g_vs, axis, start, L, n, forward: bool, inv_dx):
    """Transpose of pml.slab_derivative (2nd order): a block of planes and its first plane.
    forward: vs[i] = f[s+1+i] (0 past n - 1) - f[s+i]; else vs[i] = f[s+i] - f[s+i-1] (0
    before 0)."""
    from .pml import pad_to, take

    up = pad_to(g_vs, axis, 1, 0)  # + g at the plane read one above
    down = pad_to(g_vs, axis, 0, 1)
    if forward:  # planes s .. s+L: -g at s+i, +g at s+1+i
        block, first = (up - down) * inv_dx, start
    else:  # planes s-1 .. s+L-1: +g at s+i, -g at s+i-1
        block, first = (up - down) * inv_dx, start - 1
    lo, hi = max(first, 0), min(first + L + 1, n)
    return take(block, axis, lo - first, hi - first), lo


def _curl_T(plan, arrays, g_curl, g_psi_new, kind):
    """Transpose of step.curl (2nd order): the cotangents of the curl (3 full arrays)
    and of the new psi slabs -> (cotangent of the differentiated field, of the old psi)."""
    from .pml import pad_to

    forward = kind == "H"  # the H update differentiates E forward
    inv_dx = 1.0 / plan.dx
    g_f = [None, None, None]
    g_psi_old = {}
    for out, axis, comp, sign in _TERMS:
        G = g_curl[out] if sign > 0 else -g_curl[out]
        acc = _roll_diff_T(G, axis, inv_dx, forward)
        L = plan.pml[axis]
        if L:
            n = plan.shape[axis]
            for side, start in (("lo", 0), ("hi", n - L)):
                if side not in plan.pml_faces[axis]:
                    continue
                key = f"{kind}{axis}{comp}{side}"
                b, c, km1 = arrays[f"pml{kind}{axis}{side}"]
                idx = [slice(None)] * 3
                idx[axis] = slice(start, start + L)
                g_term = G[tuple(idx)]
                g_p = g_term + g_psi_new[key]
                g_vs = c * g_p + (km1 * g_term if plan.pml_kappa[axis] else 0)
                g_psi_old[key] = b * g_p
                block, lo = _slab_diff_T(g_vs, axis, start, L, n, forward, inv_dx)
                acc = acc + pad_to(block, axis, lo, n - lo - block.shape[axis])
        g_f[comp] = acc if g_f[comp] is None else g_f[comp] + acc
    return tuple(g_f), g_psi_old


def _e_mask(plan, arrays, c, dtype):
    """The product of the wall masks (axes other than c) and the PEC mask on E_c, or None."""
    from . import dispersive, terms

    m = None
    if any(plan.walls):
        for ax, w in enumerate(terms.wall_masks(plan, dtype)):
            if w is not None and ax != c:
                m = w if m is None else m * w
    if plan.has_pec:
        k = dispersive.component(arrays["pec_keep"], c)
        m = k if m is None else m * k
    return m


def _observe(plan, E, H, n, dft0):
    """The step's linear outputs read from the new E and H: the DFT increments and probes."""
    from . import monitors as mon_mod

    dft = tuple(mon_mod.accumulate(m, acc, E, H, n, plan.dt) for m, acc in zip(plan.monitors, dft0))
    rec = [(E if p.field == "E" else H)[p.component][tuple(p.index)] for p in plan.probes]
    return dft, (jnp.stack(rec) if rec else jnp.zeros((0,), E[0].dtype))


def _sources(plan, src_cb, n, dtype, shape):
    """The sources' E increments (per component, None where none) for ``src_cb``."""
    from . import terms
    from .sources import PointDipole
    from .tfsf import TFSF

    t = (n.astype(dtype) + 0.5) * plan.dt
    out = [None, None, None]
    for s_i, src in enumerate(s for s in plan.sources if not isinstance(s, TFSF)):
        if getattr(src, "field", "E") != "E":  # a magnetic sheet: dt M, no E increment
            continue
        where = tuple(src.index) if isinstance(src, PointDipole) else src.slices
        value = -src_cb[s_i] * src.waveform(t).astype(dtype)
        sl, block = terms.source_term(plan, value, where, src.component, dtype)
        add = terms.placed(block, sl, shape)
        out[src.component] = add if out[src.component] is None else out[src.component] + add
    return out


def _step_T(plan, arrays, n, g_out, g_rec, dtype):
    """The transposed step: cotangents of (new state, probe record) -> (cotangent of the old
    state, of the updated E (for the coefficients' sensitivities), of ``src_cb``)."""
    shape = plan.shape
    zeros = tuple(jnp.zeros(shape, dtype) for _ in range(3))
    # the monitors' and probes' transposes (plane-sized pieces padded into the fields); the
    # accumulators themselves pass their cotangent on unchanged (acc' = acc + increment)
    dft0 = g_out["dft"]
    _, vjp_obs = jax.vjp(lambda E, H: _observe(plan, E, H, n, dft0), zeros, zeros)
    gE_obs, gH_obs = vjp_obs((g_out["dft"], g_rec))
    gE5 = tuple(a + b for a, b in zip(g_out["E"], gE_obs))
    gH1 = tuple(a + b for a, b in zip(g_out["H"], gH_obs))
    # the sources: src_cb's cotangent (no state in them)
    g_src = None
    if "src_cb" in arrays and len(arrays["src_cb"]):
        outs, vjp_src = jax.vjp(lambda sc: _sources(plan, sc, n, dtype, shape), arrays["src_cb"])
        (g_src,) = vjp_src([g if o is not None else None for g, o in zip(gE5, outs)])
    # E1 = ca E + cb curl_h(H1) (+ CPML terms), masked
    from .dispersive import component as comp

    gE1 = []
    for c in range(3):
        m = _e_mask(plan, arrays, c, dtype)
        gE1.append(gE5[c] if m is None else gE5[c] * m)
    ca, cb = arrays["ca"], arrays["cb"]
    g_cH = tuple(comp(cb, c) * gE1[c] for c in range(3))
    psi_new = g_out["psi"]
    gH_from_E, g_psiE_old = _curl_T(plan, arrays, g_cH, psi_new, "E")
    gH_prev = tuple(a + b for a, b in zip(gH1, gH_from_E))
    # H1 = H - dt curl_e(E) (+ CPML terms)
    g_cE = tuple(-plan.dt * g for g in gH_prev)
    gE_from_H, g_psiH_old = _curl_T(plan, arrays, g_cE, psi_new, "H")
    gE_prev = tuple(comp(ca, c) * gE1[c] + gE_from_H[c] for c in range(3))
    g_prev = {
        "E": gE_prev,
        "H": gH_prev,
        "psi": {**g_psiE_old, **g_psiH_old},
        "dft": g_out["dft"],
        "J": g_out["J"],
        "aux": g_out["aux"],
        "sub": g_out["sub"],
        "sub_block": g_out["sub_block"],
    }
    return g_prev, gE5, g_src
