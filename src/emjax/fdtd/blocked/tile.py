"""One tile of the blocked traversal: ``TH`` Yee steps on a window of cells (values, not
memory), the arithmetic of :func:`emjax.fdtd.step.step` cell for cell.

A window is the tile's cells plus ``TH`` halo cells on each side of every tiled axis (an
untiled axis is whole: no halo, its differences wrap exactly as the grid's). Differences
inside the window wrap around the window (``jnp.roll``): the wrapped value is wrong, but
it only reaches the outermost planes, and each step spoils one more plane on each side
(the H update reads E at ``i + 1``, the E update H at ``i - 1``), so after ``TH`` steps the
tile's own cells, ``TH`` planes in from the window's faces, are exact.

Everything the step needs per global index comes in as windows too, so the tile does not
know where it sits: per axis the wall mask (0 on the PEC plane ``i = 0``), the CPML's
``b``, ``c``, ``1/kappa - 1`` profiles (zero outside the slabs, which keeps ``psi`` zero
there) and the masks that make the CPML's derivative read zero past the wall (as
``pml.slab_derivative`` does), and the global index (sources, probes).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

# order of the curl terms: (component updated, axis differentiated, component
# differentiated, sign), as step.curl: cx = dy Fz - dz Fy, cy = dz Fx - dx Fz, ...
CURL = ((0, 1, 2, 1), (0, 2, 1, -1), (1, 2, 0, 1), (1, 0, 2, -1), (2, 0, 1, 1), (2, 1, 0, -1))


def _line(v, axis):
    """A 1-D window along ``axis``, shaped to broadcast against a 3-D window."""
    shape = [1, 1, 1]
    shape[axis] = v.shape[0]
    return v.reshape(shape)


def _comp(a, c):
    return a[c] if a.ndim == 4 else a


def curl(cfg, w, F, kind, psi):
    """The curl of ``F`` (E for the H update, ``kind = "H"``; H for the E update) with the
    CPML's corrections; returns (curl components, new psi entries)."""
    inv_dx = 1.0 / cfg.dx
    parts = {}
    new = {}
    for out, axis, comp, sign in CURL:
        f = F[comp]
        if kind == "H":  # forward difference (E at i + 1)
            v = (jnp.roll(f, -1, axis) - f) * inv_dx
        else:
            v = (f - jnp.roll(f, 1, axis)) * inv_dx
        if cfg.pml[axis]:
            m = _line(w[f"mask{kind}{axis}"], axis)  # 0 where the slab's difference meets the wall
            if kind == "H":
                vs = (jnp.roll(f, -1, axis) * m - f) * inv_dx
            else:
                vs = (f - jnp.roll(f, 1, axis) * m) * inv_dx
            b, c, km1 = (_line(w[f"pml{kind}{axis}{q}"], axis) for q in "bck")
            key = f"{kind}{axis}{comp}"
            p = b * psi[key] + c * vs
            term = km1 * vs + p if cfg.pml_kappa[axis] else p
            new[key] = p
            v = v + term
        parts[(out, sign)] = v
    cx = parts[(0, 1)] - parts[(0, -1)]
    cy = parts[(1, 1)] - parts[(1, -1)]
    cz = parts[(2, 1)] - parts[(2, -1)]
    return (cx, cy, cz), new


def advance(cfg, w, E, H, psi, src_values, th: int, steps=None):
    """``steps`` (default ``th``; at most ``th``, may be traced) steps of the window: ``E``,
    ``H`` (tuples of 3-D windows), ``psi`` (dict of 3-D windows, zero outside the slabs),
    ``src_values`` (``(th, n_sources)``: each point
    source's ``-dt/eps * amplitude * waveform`` at each step, computed by the caller as
    step.step does). Returns (E, H, psi, records ``(th, n_probes)``: the probes this tile
    owns, zero for the others and for the rows past ``steps``)."""
    dt = cfg.dt
    idx = [_line(w[f"index{a}"], a) for a in range(3)]
    own = [_line(w[f"own{a}"], a) for a in range(3)]

    def at(node):
        i, j, k = node
        return (idx[0] == i) & (idx[1] == j) & (idx[2] == k)

    def one(t, carry):
        E, H, psi, rec = carry
        cE, newH = curl(cfg, w, E, "H", psi)
        H = tuple(h - dt * c for h, c in zip(H, cE))
        cH, newE = curl(cfg, w, H, "E", psi)
        ca, cb = w["ca"], w["cb"]
        E = tuple(_comp(ca, i) * e + _comp(cb, i) * c for i, (e, c) in enumerate(zip(E, cH)))
        E = list(E)
        for c in range(3):  # PEC walls: tangential E zero on the plane i = 0
            for ax in range(3):
                if ax != c and cfg.walls[ax]:
                    E[c] = E[c] * _line(w[f"wall{ax}"], ax)
        if cfg.has_pec:
            E = [e * _comp(w["pec_keep"], i) for i, e in enumerate(E)]
        for s, (node, comp) in enumerate(cfg.sources):
            if node is None:  # on a wall, tangential: no source (terms.source_term)
                continue
            E[comp] = E[comp] + jnp.where(at(node), src_values[t, s], jnp.zeros((), E[comp].dtype))
        E = tuple(E)
        psi = {**psi, **newH, **newE}
        vals = []
        for field, comp, node in cfg.probes:
            f = (E if field == "E" else H)[comp]
            mine = at(node) & own[0] & own[1] & own[2]
            vals.append(jnp.sum(jnp.where(mine, f, jnp.zeros((), f.dtype))))
        if vals:
            rec = rec.at[t].set(jnp.stack(vals))
        return E, H, psi, rec

    rec = jnp.zeros((th, len(cfg.probes)), E[0].dtype)
    return jax.lax.fori_loop(0, th if steps is None else steps, one, (tuple(E), tuple(H), dict(psi), rec))
