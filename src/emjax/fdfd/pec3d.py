"""Perfect conductors on the 3-D Yee grid: open edge lengths and open face areas.

The conformal (Dey-Mittra) finite-volume treatment in the E formulation: Faraday's law on
the open part of each Yee face, ``i omega a_f dx^2 H_f = sum_edges +-l_e dx E_e``, with ``l``
the open (outside the conductor) fraction of each E edge and ``a`` the open fraction of each
face, while Ampere's law on the dual faces is unchanged (Dey & Mittra, IEEE Microw. Guided
Wave Lett. 7, 273 (1997); Yu & Mittra, IEEE Trans. Antennas Propag. 49, 1366 (2001)). The
operator becomes ``curl_h diag(1/a) curl_e diag(l)``; rows are scaled by ``l`` to keep it
symmetric, and edges with ``l = 0`` drop out (their total field is 0).

Where the surface crosses an edge comes from a bisection on the scene's inside test
(``Scene.label``), which works for every shape; a face's open area is the polygon of its
open corners and the edge crossings (the surface taken straight within a face: second
order for smooth surfaces). Faces whose open area is below ``min_area`` keep ``1/a`` at
``1 / min_area``: tiny cut faces would otherwise put huge entries into the matrix and slow
the Krylov solve; the change is local to those faces (measured in tests/fdfd/test_maxwell3d.py).

``averaging="staircase"``: ``l`` = 0 on edges whose midpoint is inside, 1 elsewhere; ``a``
= 1 (the plain staircase, first order).
"""

from __future__ import annotations

import numpy as np

__all__ = ["pec_fractions"]

_BISECTIONS = 30
MIN_AREA = 0.05


def _pec_index(scene):
    from ..scene import PEC

    for i, m in enumerate(scene.materials):
        if m is PEC:
            return i
    return None


def _inside(scene, pec, p: np.ndarray) -> np.ndarray:
    return scene.label(p[..., 0], p[..., 1], p[..., 2]) == pec


def _crossing(scene, pec, p_out, p_in) -> np.ndarray:
    lo, hi = np.zeros(len(p_out)), np.ones(len(p_out))
    d = p_in - p_out
    for _ in range(_BISECTIONS):
        mid = 0.5 * (lo + hi)
        ins = _inside(scene, pec, p_out + mid[:, None] * d)
        hi = np.where(ins, mid, hi)
        lo = np.where(ins, lo, mid)
    return 0.5 * (lo + hi)


def pec_fractions(scene, axes, dx: float, averaging: str, min_area: float = MIN_AREA):
    """``(l, inv_a)``: open edge fractions (3, nx, ny, nz) of the E edges (E_c[i] spans
    node i to i + e_c) and ``1/a`` (3, nx, ny, nz) of the faces (H_c[i]: the face normal
    to c with low corner at node i); ``None`` when the scene has no PEC."""
    pec = _pec_index(scene) if scene is not None else None
    shape = tuple(len(a) for a in axes)
    if pec is None:
        return None
    l = np.ones((3, *shape))
    inv_a = np.ones((3, *shape))
    # the nodes near the conductors: their bounding boxes plus one cell
    objs = [o for o in scene.objects if any(m is scene.materials[pec] for m in o.material)]
    lo = np.min([o.bounds()[0] for o in objs], axis=0) - 1.5 * dx
    hi = np.max([o.bounds()[1] for o in objs], axis=0) + 1.5 * dx
    rng = [
        (max(int(np.searchsorted(a, lo_)) - 1, 0), min(int(np.searchsorted(a, hi_)) + 1, len(a)))
        for a, lo_, hi_ in zip(axes, lo, hi)
    ]
    sub = [a[r0:r1] for a, (r0, r1) in zip(axes, rng)]
    off = np.array([r0 for r0, _ in rng])
    P = np.stack(np.meshgrid(*sub, indexing="ij"), -1)
    node_in = _inside(scene, pec, P)  # (mx, my, mz) at the nodes
    m = node_in.shape
    if averaging == "staircase":
        for c in range(3):
            mid = P.copy()
            mid[..., c] += dx / 2
            box = tuple(slice(o, o + n) for o, n in zip(off, m))
            l[c][box] = np.where(_inside(scene, pec, mid), 0.0, 1.0)
        return l, inv_a
    # crossing fraction along each edge (from its low node), open length l
    t_edge = []
    for c in range(3):
        a_in = node_in
        b_in = np.zeros_like(node_in)
        sl = [slice(None)] * 3
        sl[c] = slice(0, m[c] - 1)
        sl2 = [slice(None)] * 3
        sl2[c] = slice(1, m[c])
        b_in[tuple(sl)] = node_in[tuple(sl2)]
        step = np.zeros(3)
        step[c] = dx
        lc = np.where(a_in & b_in, 0.0, 1.0)
        cut = a_in ^ b_in
        last = [slice(None)] * 3
        last[c] = m[c] - 1
        cut[tuple(last)] = False  # the far node is outside the sub-box: not near the PEC
        idx = np.argwhere(cut)
        p0 = P[tuple(idx.T)]
        p1 = p0 + step
        inside0 = a_in[tuple(idx.T)]
        p_out = np.where(inside0[:, None], p1, p0)
        p_in = np.where(inside0[:, None], p0, p1)
        t = _crossing(scene, pec, p_out, p_in)  # open fraction measured from the outside end
        lc[tuple(idx.T)] = t
        # where along the edge (from the low node) the surface sits
        tc = np.full(m, np.nan)
        tc[tuple(idx.T)] = np.where(inside0, 1 - t, t)
        t_edge.append(tc)
        box = tuple(slice(o, o + n) for o, n in zip(off, m))
        l[c][box] = lc
    # open face areas: the polygon of the open corners and the crossings
    for c in range(3):
        u, v = [a for a in range(3) if a != c]
        nu, nv = m[u] - 1, m[v] - 1
        area = np.ones(m)

        def corner(du, dv, u=u, v=v, c=c, nu=nu, nv=nv):
            s = [slice(None)] * 3
            s[u] = slice(du, du + nu)
            s[v] = slice(dv, dv + nv)
            s[c] = slice(None)
            return tuple(s)

        def edge_t(axis, du, dv):
            return t_edge[axis][corner(du, dv)]

        # corners in order (0,0) -> (1,0) -> (1,1) -> (0,1), the edges between them
        corners = [(0, 0), (1, 0), (1, 1), (0, 1)]
        ins = [node_in[corner(*cc)] for cc in corners]
        # edge from corner k to k+1: along u at dv = 0, along v at du = 1, along u at dv = 1
        # (reversed), along v at du = 0 (reversed)
        edges = [(u, 0, 0, False), (v, 1, 0, False), (u, 0, 1, True), (v, 0, 0, True)]
        coords = {(0, 0): (0.0, 0.0), (1, 0): (1.0, 0.0), (1, 1): (1.0, 1.0), (0, 1): (0.0, 1.0)}
        shp = ins[0].shape
        X = np.zeros((*shp, 8))
        Y = np.zeros((*shp, 8))
        valid = np.zeros((*shp, 8), bool)
        k = 0
        for j, cc in enumerate(corners):
            X[..., k], Y[..., k] = coords[cc]
            valid[..., k] = ~ins[j]
            k += 1
            ax, du, dv, rev = edges[j]
            t = edge_t(ax, du, dv)
            cutj = np.isfinite(t)
            tt = np.where(cutj, 1 - t if rev else t, 0.0)
            a0, a1 = np.array(coords[cc]), np.array(coords[corners[(j + 1) % 4]])
            X[..., k] = a0[0] + tt * (a1[0] - a0[0])
            Y[..., k] = a0[1] + tt * (a1[1] - a0[1])
            valid[..., k] = cutj
            k += 1
        # shoelace over the valid points, in order (invalid ones repeat the previous point)
        Xc, Yc = X.copy(), Y.copy()
        first = np.argmax(valid, axis=-1)
        fx = np.take_along_axis(X, first[..., None], -1)[..., 0]
        fy = np.take_along_axis(Y, first[..., None], -1)[..., 0]
        lastx, lasty = fx.copy(), fy.copy()
        for q in range(8):
            Xc[..., q] = np.where(valid[..., q], X[..., q], lastx)
            Yc[..., q] = np.where(valid[..., q], Y[..., q], lasty)
            lastx, lasty = Xc[..., q], Yc[..., q]
        s = np.zeros(shp)
        for q in range(8):
            q1 = (q + 1) % 8
            s += Xc[..., q] * Yc[..., q1] - Xc[..., q1] * Yc[..., q]
        a = np.abs(s) / 2
        a = np.where(valid.any(-1), a, 0.0)
        full = [slice(None)] * 3
        full[u] = slice(0, nu)
        full[v] = slice(0, nv)
        area[tuple(full)] = a
        ia = np.where(area > 0, 1.0 / np.maximum(area, min_area), 0.0)
        box = tuple(slice(o, o + n) for o, n in zip(off, m))
        inv_a[c][box] = ia
    return l, inv_a
