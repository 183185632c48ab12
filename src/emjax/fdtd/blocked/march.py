"""The x-march inside a tile: the order in which a GPU program must update a window's cells
(see the package docstring), written plane by plane in plain JAX so the CPU checks it.

One loop over ``k = 0 .. nx + TH - 1``; in iteration ``k`` level ``t`` (step ``t`` of the
pass, ``t = 0 .. TH-1``, in this order) updates plane ``p = k - 1 - t`` of the window:

* ``H^(t+1/2)[p]`` from ``H^(t-1/2)[p]``, ``E^t[p]`` and ``E^t[p+1]`` (level ``t - 1``
  wrote ``E^t[p+1]`` earlier in this iteration; ``E^t[nx]`` is the plane 0 kept from when
  it was made);
* ``E^(t+1)[p]`` from ``E^t[p]``, ``H^(t+1/2)[p]`` (just made) and ``H^(t+1/2)[p-1]``
  (made by this level in iteration ``k - 1``; ``p = 0`` reads zeros: across an x wall the
  difference only reaches components the wall zeroes, and on a window's first plane
  it only reaches cells the halo gives up);
* the walls, PEC cells, sources and probes of plane ``p`` at step ``t``.

So level ``t`` reads planes ``p - 1 .. p + 1`` of level ``t``'s fields and writes plane
``p`` of level ``t + 1``: per level a ring of 3 planes of E and H (and of psi in CPML
tiles) is all the fast memory a program needs. Here each level is a whole column filled
with NaN before the march: a plane read before it is written poisons the result, so the
tests that compare with the XLA step also check the order. The march needs the planes
before the first one (a periodic x axis wraps them in): x must be tiled (a window, whose
halo absorbs it) or walled (PEC or CPML).
"""

from __future__ import annotations

from functools import partial

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


def _put(dst, new, old, valid, active, p):
    """Write plane ``p`` of ``dst``: ``new`` on an active level, ``old`` (the plane passed on
    unchanged) on a level past the pass's steps, nothing off the grid (``valid`` False)."""
    return jax.lax.dynamic_update_slice_in_dim(
        dst, jnp.where(valid, jnp.where(active, new, old), _plane(dst, p)), p, 0
    )


def advance(cfg, w, E, H, psi, src_values, th: int, steps=None):
    """The same as :func:`emjax.fdtd.blocked.tile.advance`, updated plane by plane in the
    march's order."""
    nx = E[0].shape[0]
    steps = th if steps is None else steps
    dt = cfg.dt
    nan = lambda x: jnp.full_like(x, jnp.nan)  # noqa: E731
    Es = [tuple(E)] + [tuple(map(nan, E)) for _ in range(th)]  # E^t
    Hs = [tuple(H)] + [tuple(map(nan, H)) for _ in range(th)]  # H^(t-1/2)
    Ps = [dict(psi)] + [{k: nan(v) for k, v in psi.items()} for _ in range(th)]
    first = [tuple(e[0:1] for e in E)] + [tuple(nan(e[0:1]) for e in E) for _ in range(th)]
    rec = jnp.zeros((th, len(cfg.probes)), E[0].dtype)

    def iteration(k, carry):
        Es, Hs, Ps, first, rec = (list(x) if isinstance(x, (list, tuple)) else x for x in carry)
        for t in range(th):
            p = k - 1 - t
            valid = (p >= 0) & (p < nx)
            active = valid & (t < steps)
            pc = jnp.clip(p, 0, nx - 1)
            wp = _window_at(w, pc)
            E_p = [_plane(e, pc) for e in Es[t]]
            E_n = [
                jnp.where(p + 1 >= nx, f, _plane(e, jnp.clip(p + 1, 0, nx - 1)))
                for e, f in zip(Es[t], first[t])
            ]
            H_old = [_plane(h, pc) for h in Hs[t]]
            psi_p = {key: _plane(v, pc) for key, v in Ps[t].items()}
            two = lambda d: {key: _pair(v, v) for key, v in d.items()}  # noqa: E731
            cE, newH = curl(cfg, wp, tuple(map(_pair, E_p, E_n)), "H", two(psi_p))
            H_new = [h - dt * c[0:1] for h, c in zip(H_old, cE)]
            psi_mid = {**psi_p, **{key: v[0:1] for key, v in newH.items()}}
            zero = jnp.zeros_like(H_new[0])
            H_prev = [jnp.where(p >= 1, _plane(h, jnp.clip(p - 1, 0, nx - 1)), zero) for h in Hs[t + 1]]
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
            at = lambda n, i=idx: (i[0] == n[0]) & (i[1] == n[1]) & (i[2] == n[2])  # noqa: E731
            for s, (node, comp) in enumerate(cfg.sources):
                if node is not None:
                    E_new[comp] = E_new[comp] + jnp.where(
                        at(node), src_values[t, s], jnp.zeros((), zero.dtype)
                    )
            psi_new = {**psi_mid, **{key: v[1:2] for key, v in newE.items()}}
            vals = []
            for field, comp, node in cfg.probes:
                f = (E_new if field == "E" else H_new)[comp]
                mine = at(node) & own[0] & own[1] & own[2]
                vals.append(jnp.sum(jnp.where(mine, f, jnp.zeros((), f.dtype))))
            if vals:
                rec = rec.at[t].add(jnp.where(active, jnp.stack(vals), 0))
            # levels past ``steps`` (the last, shorter pass) pass their planes on unchanged
            put = partial(_put, valid=valid, active=active, p=pc)
            Es[t + 1] = tuple(put(d, n, o) for d, n, o in zip(Es[t + 1], E_new, E_p))
            Hs[t + 1] = tuple(put(d, n, o) for d, n, o in zip(Hs[t + 1], H_new, H_old))
            Ps[t + 1] = {key: put(Ps[t + 1][key], psi_new[key], psi_p[key]) for key in Ps[t + 1]}
            first[t + 1] = tuple(
                jnp.where(valid & (p == 0), jnp.where(active, n, o), f)
                for f, n, o in zip(first[t + 1], E_new, E_p)
            )
        return Es, Hs, Ps, first, rec

    Es, Hs, Ps, first, rec = jax.lax.fori_loop(0, nx + th, iteration, (Es, Hs, Ps, first, rec))
    return Es[th], Hs[th], Ps[th], rec
