"""The x-march inside a tile: the order in which a GPU program updates a window's cells
and the fast memory it needs (see the package docstring), in plain JAX so the CPU checks
it; :func:`march` is both the plain-JAX tile (:func:`advance`) and the body of the Pallas
kernel (``traversal._march_kernel``: planes read from and written to global memory).

One loop over ``k = 0 .. nx + TH - 1`` (``nx``: the window's planes); iteration ``k`` reads
plane ``k`` of the input, then level ``t`` (step ``t`` of the pass, ``t = 0 .. TH-1``, in
this order) updates plane ``p = k - 1 - t``:

* ``H^(t+1/2)[p]`` from ``H^(t-1/2)[p]``, ``E^t[p]`` and ``E^t[p+1]`` (level ``t - 1``
  wrote ``E^t[p+1]`` earlier in this iteration; ``E^t[nx]`` is the plane 0 kept from when
  it was made);
* ``E^(t+1)[p]`` from ``E^t[p]``, ``H^(t+1/2)[p]`` (just made) and ``H^(t+1/2)[p-1]``
  (made by this level in iteration ``k - 1``; ``p = 0`` reads zeros: across an x wall the
  difference only reaches components the wall zeroes, and on a window's first plane
  it only reaches cells the halo gives up);
* the walls, PEC cells, sources and probes of plane ``p`` at step ``t``;

and the last level's plane ``k - TH`` is the output. Level ``t`` reads E on planes ``p``,
``p + 1`` and H on ``p - 1``, ``p`` (each read before the level writes its plane), so each
level holds a ring of :data:`RING` = 2 planes of E, H (and psi), plus its E on plane 0:
``(TH + 1) x 2`` planes per field component in flight, the working set of the shared-
memory budget in the package docstring. The rings start as NaN: a plane read before it is
written poisons the result (a stale plane from two iterations back gives wrong values), so
the comparisons with the XLA step check the order and the ring size (1 plane fails). The
march needs the planes before the first (a periodic x axis wraps them in): x must be
tiled (a window, whose halo absorbs it) or walled (PEC or CPML).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .tile import _comp, _line, curl


def _x_line(key: str) -> bool:
    if key.startswith("pml"):
        return key[-2] == "0"
    return key.startswith(("index", "wall", "own", "mask")) and key[-1] == "0"


def _plane(x, p):
    return jax.lax.dynamic_slice_in_dim(x, p, 1, 0)


def _pair(a, b):
    return jnp.concatenate([a, b], axis=0)


def _window_at(w, p):
    """The inputs at plane ``p``, twice (the curls below work on pairs of planes)."""
    out = {}
    for k, v in w.items():
        if _x_line(k):
            out[k] = _pair(_plane(v, p), _plane(v, p))
        elif k in ("ca", "cb", "pec_keep") and v.ndim >= 3:
            ax = v.ndim - 3
            s = jax.lax.dynamic_slice_in_dim(v, p, 1, ax)
            out[k] = jnp.concatenate([s, s], axis=ax)
        else:
            out[k] = v
    return out


def _second(a, c):
    """Component ``c`` of a coefficient on the second plane of a pair (or a scalar)."""
    a = _comp(a, c)
    return a[1:2] if a.ndim == 3 else a


def _level(cfg, wp, t, E_p, E_n, H_old, psi_p, H_prev, src_values):
    """Level ``t`` on one plane: (E^(t+1), H^(t+1/2), psi, probe values) from E^t on the
    plane and the next, H^(t-1/2) on the plane, H^(t+1/2) on the plane before (a function
    of the new H on the plane, ``H_prev(H_new)``, so the caller may pass zeros on plane 0)."""
    dt = cfg.dt
    two = lambda d: {key: _pair(v, v) for key, v in d.items()}  # noqa: E731
    cE, newH = curl(cfg, wp, tuple(map(_pair, E_p, E_n)), "H", two(psi_p))
    H_new = [h - dt * c[0:1] for h, c in zip(H_old, cE)]
    psi_mid = {**psi_p, **{key: v[0:1] for key, v in newH.items()}}
    cH, newE = curl(cfg, wp, tuple(map(_pair, H_prev, H_new)), "E", two(psi_mid))
    E_new = [_second(wp["ca"], c) * E_p[c] + _second(wp["cb"], c) * cH[c][1:2] for c in range(3)]
    for c in range(3):
        for ax in range(3):
            if ax != c and cfg.walls[ax]:
                m = _line(wp[f"wall{ax}"], ax)
                E_new[c] = E_new[c] * (m[1:2] if ax == 0 else m)
    if cfg.has_pec:
        E_new = [e * _second(wp["pec_keep"], c) for c, e in enumerate(E_new)]
    idx = [_line(wp["index0"], 0)[1:2], _line(wp["index1"], 1), _line(wp["index2"], 2)]
    own = [_line(wp["own0"], 0)[1:2], _line(wp["own1"], 1), _line(wp["own2"], 2)]
    at = lambda n: (idx[0] == n[0]) & (idx[1] == n[1]) & (idx[2] == n[2])  # noqa: E731
    zero = jnp.zeros((), E_new[0].dtype)
    for s, (node, comp) in enumerate(cfg.sources):
        if node is not None:
            E_new[comp] = E_new[comp] + jnp.where(at(node), src_values[t, s], zero)
    psi_new = {**psi_mid, **{key: v[1:2] for key, v in newE.items()}}
    vals = []
    for field, comp, node in cfg.probes:
        f = (E_new if field == "E" else H_new)[comp]
        vals.append(jnp.sum(jnp.where(at(node) & own[0] & own[1] & own[2], f, zero)))
    return E_new, H_new, psi_new, vals


RING = 2  # planes per ring: level t reads planes p and p + 1 (E), p - 1 and p (H)


def _slot(ring, q):
    return jax.lax.dynamic_slice_in_dim(ring, q % RING, 1, 0)


def _set(ring, q, x):
    return jax.lax.dynamic_update_slice_in_dim(ring, x, q % RING, 0)


def march(cfg, th, steps, nx, plane, dtype, psi_keys, load, coef_at, store, out, src_values):
    """The march over ``nx`` planes with rings of 2 planes per level (the GPU kernel's
    working set). ``load(q)``: the input's (E, H, psi) planes at ``q`` (any finite values
    for ``q >= nx``); ``coef_at(p)``: the inputs at plane ``p`` twice (:func:`_window_at`);
    ``store(out, p, valid, E, H, psi)``: the result's plane ``p`` (``valid`` False: off the
    grid), returns the new ``out``. Returns (out, records ``(th, n_probes)``)."""
    nan = jnp.full((RING,) + plane, jnp.nan, dtype)
    ring = lambda: (tuple(nan for _ in range(3)), tuple(nan for _ in range(3)), {k: nan for k in psi_keys})  # noqa: E731
    rings = [ring() for _ in range(th + 1)]  # level t: E^t, H^(t-1/2), psi after t steps
    first = [tuple(nan[:1] for _ in range(3)) for _ in range(th + 1)]  # E^t on plane 0
    rec = jnp.zeros((th, len(cfg.probes)), dtype)

    def iteration(k, carry):
        rings, first, out, rec = carry
        rings, first = [list(r) for r in rings], list(first)
        E0, H0, P0 = load(jnp.minimum(k, nx - 1))
        rings[0] = [
            tuple(_set(r, k, x) for r, x in zip(rings[0][0], E0)),
            tuple(_set(r, k, x) for r, x in zip(rings[0][1], H0)),
            {key: _set(rings[0][2][key], k, P0[key]) for key in psi_keys},
        ]
        first[0] = tuple(jnp.where(k == 0, x, f) for x, f in zip(E0, first[0]))
        for t in range(th):
            p = k - 1 - t
            valid = (p >= 0) & (p < nx)
            active = valid & (t < steps)
            pc = jnp.clip(p, 0, nx - 1)
            Er, Hr, Pr = rings[t]
            E_p = [_slot(r, pc) for r in Er]
            E_n = [jnp.where(p + 1 >= nx, f, _slot(r, pc + 1)) for r, f in zip(Er, first[t])]
            H_old = [_slot(r, pc) for r in Hr]
            psi_p = {key: _slot(Pr[key], pc) for key in psi_keys}
            H_prev = [
                jnp.where(p >= 1, _slot(r, pc - 1), jnp.zeros_like(e)) for r, e in zip(rings[t + 1][1], E_p)
            ]
            E_new, H_new, psi_new, vals = _level(
                cfg, coef_at(pc), t, E_p, E_n, H_old, psi_p, H_prev, src_values
            )
            if vals:
                rec = rec.at[t].add(jnp.where(active, jnp.stack(vals), 0))
            # a level past ``steps`` (the last, shorter pass) passes its plane on unchanged
            pick = lambda new, old, cur, v=valid, a=active: jnp.where(v, jnp.where(a, new, old), cur)  # noqa: E731
            En, Hn, Pn = rings[t + 1]
            E_out = [pick(n, o, _slot(r, pc)) for n, o, r in zip(E_new, E_p, En)]
            H_out = [pick(n, o, _slot(r, pc)) for n, o, r in zip(H_new, H_old, Hn)]
            P_out = {key: pick(psi_new[key], psi_p[key], _slot(Pn[key], pc)) for key in psi_keys}
            rings[t + 1] = [
                tuple(_set(r, pc, x) for r, x in zip(En, E_out)),
                tuple(_set(r, pc, x) for r, x in zip(Hn, H_out)),
                {key: _set(Pn[key], pc, P_out[key]) for key in psi_keys},
            ]
            first[t + 1] = tuple(jnp.where(valid & (p == 0), x, f) for x, f in zip(E_out, first[t + 1]))
            if t == th - 1:
                out = store(out, pc, valid, E_out, H_out, P_out)
        return [tuple(r) for r in rings], first, out, rec

    _, _, out, rec = jax.lax.fori_loop(0, nx + th, iteration, ([tuple(r) for r in rings], first, out, rec))
    return out, rec


def advance(cfg, w, E, H, psi, src_values, th: int, steps=None):
    """The same as :func:`emjax.fdtd.blocked.tile.advance`, updated plane by plane in the
    march's order (:func:`march` on window values)."""
    nx = E[0].shape[0]
    keys = tuple(sorted(psi))

    def load(q):
        return (
            tuple(_plane(e, q) for e in E),
            tuple(_plane(h, q) for h in H),
            {k: _plane(psi[k], q) for k in keys},
        )

    def store(out, p, valid, E_p, H_p, P_p):
        oE, oH, oP = out
        put = lambda col, x: jax.lax.dynamic_update_slice_in_dim(
            col, jnp.where(valid, x, _plane(col, p)), p, 0
        )  # noqa: E731
        return (
            tuple(map(put, oE, E_p)),
            tuple(map(put, oH, H_p)),
            {k: put(oP[k], P_p[k]) for k in keys},
        )

    out, rec = march(
        cfg,
        th,
        th if steps is None else steps,
        nx,
        E[0].shape[1:],
        E[0].dtype,
        keys,
        load,
        lambda p: _window_at(w, p),
        store,
        (tuple(E), tuple(H), dict(psi)),
        src_values,
    )
    return (*out, rec)
