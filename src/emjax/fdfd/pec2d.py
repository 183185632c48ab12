"""Perfect electric conductors (``scene.PEC``) in the 2-D FDFD solvers.

Where a PEC surface lies is found along grid lines: between a node outside the conductor and
its neighbour inside, a bisection on the scene's inside test (``Scene.label``, 40 halvings:
to 1e-12 of a cell) gives the fraction ``theta`` of the step to the surface. That works for
every shape (analytic, polygon, voxels) and is exact to rounding for smooth ones.

TM (E_z at the nodes; E_z = 0 on the conductor):

* nodes inside the conductor are Dirichlet rows, scattered ``E_s = -E_inc`` (total 0);
* ``averaging="staircase"``: nothing else (the node next to the conductor sees its inside
  neighbour's zero one cell away: first order);
* ``averaging="subpixel"``: a node with an inside neighbour uses the Shortley-Weller
  difference along that line, ``u'' ~ 2 / (h_l + h_r) ((u_r - u) / h_r - (u - u_l) / h_l)``
  with ``h = theta dx`` towards the surface and the surface value ``u_s = -E_inc`` (at the
  surface point) moved to the right side. Its truncation error is O(h) at those nodes only,
  and the scheme converges at second order (the discrete maximum principle; measured in
  tests/fdfd/test_pec2d.py). ``theta`` is kept >= 1e-6 only to avoid dividing by zero (a
  node on the surface counts as inside).

TE (H_z at the cell centres, E_x / E_y on the cell edges; dH_z/dn = 0 on the conductor):

* ``averaging="staircase"``: the E_x / E_y edges whose midpoint is inside are closed (1/eps
  = 0 there, the eps -> infinity limit);
* ``averaging="subpixel"``: the Dey-Mittra conformal finite volume. Faraday's law on the open
  part of each H_z cell, ``i omega A_open H_z = sum_edges +-E l_open``, with the open lengths
  ``l`` of the edges (from the corner crossings) and the open area ``A`` of the cell (the
  polygon of the open corners and the crossings: the surface taken straight within a cell).
  The rows are multiplied by ``A`` rather than divided by it, so a small cut cell needs no
  clamping for stability (that is FDTD's time-step limit, absent in the frequency domain)
  and the matrix stays as well scaled as the vacuum one. A cell whose open area is below
  ``MIN_AREA`` (1e-3 of a cell) is closed as a whole, with its edges: only to keep
  round-off slivers (a corner on the surface) from leaving near-empty rows. Measured on
  PEC cylinders, closing nothing, below 1e-3 or below 1e-2 changes sigma by less than 15%
  of its error; below 5e-2 it starts to cost accuracy.

Cells (TE) or nodes (TM) entirely inside the conductor are identity rows with total field 0.

Measured (tests/fdfd/test_pec2d.py; sigma error relative to its peak, PEC cylinders of
radius 0.5 and 1 wavelength, 40 / 80 / 160 cells per wavelength): TM 8e-4 / 2.5e-4 / 8e-5
(slope 1.6-1.85 in sigma, 1.9-2.0 in the near field), TE 5e-3 / 1.0e-3 / 2.3e-4 (2.2);
a flat wall off the grid with a line source: 2.0 for both. Staircase: 0.9-1.8, erratic.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

#: open-area fraction below which a cut TE cell is closed (see the module docstring)
MIN_AREA = 1e-3
_BISECTIONS = 40


def pec_index(scene) -> int | None:
    """Index of :data:`scene.PEC` in ``scene.materials``, or None."""
    from ..scene import PEC

    if scene is None:
        return None
    for i, m in enumerate(scene.materials):
        if m is PEC:
            return i
    return None


def inside(scene, pec: int, x, y) -> np.ndarray:
    """Whether the points (x, y) lie in a PEC object (the last object there is PEC)."""
    x, y = np.broadcast_arrays(np.asarray(x, float), np.asarray(y, float))
    return scene.label(x, y, np.zeros(x.shape)) == pec


def crossing(scene, pec: int, p_out: np.ndarray, p_in: np.ndarray) -> np.ndarray:
    """Fraction t in [0, 1] of the way from ``p_out`` (outside, (M, 2)) to ``p_in`` (inside)
    at which the segment enters the conductor (bisection on the inside test)."""
    lo = np.zeros(len(p_out))
    hi = np.ones(len(p_out))
    d = p_in - p_out
    for _ in range(_BISECTIONS):
        mid = 0.5 * (lo + hi)
        p = p_out + mid[:, None] * d
        ins = inside(scene, pec, p[:, 0], p[:, 1])
        hi = np.where(ins, mid, hi)
        lo = np.where(ins, lo, mid)
    return 0.5 * (lo + hi)


def tm_rows(pec_mask, x, y, dx, scene, pec, boundary, subpixel: bool, stretch=None):
    """The TM rows that the conductor takes over.

    ``pec_mask`` (nx, ny): nodes inside; ``boundary(X, Y) -> (M, K)``: the scattered field
    on the conductor (``-E_inc``; zeros for a line source). Returns ``(rows, dirichlet,
    near, rhs)``: sparse rows (N, N) (identity at the nodes inside, the Shortley-Weller
    second differences at the ``near`` nodes: add omega^2 eps there), the masks (nx, ny)
    of the two kinds of rows, and ``rhs`` (N, K): the Dirichlet values at the nodes inside
    and, at the near ones, the known surface values moved to the right side (to add to the
    regular right side). ``stretch``: the PML's ``s`` along x and y at the nodes and the half
    nodes, ``((sx, sx_half), (sy, sy_half))`` (None: no PML), applied as operators.py does."""
    nx, ny = pec_mask.shape
    N = nx * ny
    idx = np.arange(N).reshape(nx, ny)
    X, Y = np.meshgrid(x, y, indexing="ij")
    vals = boundary(X[pec_mask], Y[pec_mask])
    rhs = np.zeros((N, vals.shape[1]), complex)
    rhs[idx[pec_mask]] = vals
    rows_i, cols, data = [idx[pec_mask]], [idx[pec_mask]], [np.ones(int(pec_mask.sum()), complex)]
    near = ~pec_mask & _has_pec_neighbour(pec_mask) if subpixel else np.zeros_like(pec_mask)
    ii, jj = np.nonzero(near)
    n = idx[ii, jj]
    diag = np.zeros(len(n), complex)
    for axis in (0, 1):
        pos = ii if axis == 0 else jj
        if stretch is None:
            s_node, s_half = np.ones(len(n)), (np.ones(len(n)), np.ones(len(n)))
        else:
            sn, sh = stretch[axis]
            s_node, s_half = sn[pos], (sh[np.maximum(pos - 1, 0)], sh[pos])
        sides = []
        for step in (-1, 1):  # the neighbour below, then above, along this axis
            ni, nj = (ii + step, jj) if axis == 0 else (ii, jj + step)
            ok = (ni >= 0) & (ni < nx) & (nj >= 0) & (nj < ny)
            ni, nj = np.where(ok, ni, ii), np.where(ok, nj, jj)
            blocked = pec_mask[ni, nj] & ok
            theta = np.ones(len(n))
            ps = np.zeros((len(n), 2))
            b = np.flatnonzero(blocked)
            if len(b):
                p0 = np.stack([X[ii[b], jj[b]], Y[ii[b], jj[b]]], -1)
                p1 = np.stack([X[ni[b], nj[b]], Y[ni[b], nj[b]]], -1)
                t = np.maximum(crossing(scene, pec, p0, p1), 1e-6)
                theta[b] = t
                ps[b] = p0 + t[:, None] * (p1 - p0)
            sides.append((blocked, theta * dx, ps, idx[ni, nj]))
        h_sum = sides[0][1] + sides[1][1]
        for (blocked, h, ps, col), s_h in zip(sides, s_half):
            coef = 2.0 / (h_sum * h * s_node * s_h)
            diag -= coef
            keep = ~blocked
            rows_i.append(n[keep])
            cols.append(col[keep])
            data.append(coef[keep])
            b = np.flatnonzero(blocked)
            if len(b):
                rhs[n[b]] -= coef[b, None] * boundary(ps[b, 0], ps[b, 1])
    rows_i.append(n)
    cols.append(n)
    data.append(diag)
    rows = sp.csr_matrix((np.concatenate(data), (np.concatenate(rows_i), np.concatenate(cols))), shape=(N, N))
    return rows, pec_mask, near, rhs


def _has_pec_neighbour(mask: np.ndarray) -> np.ndarray:
    out = np.zeros_like(mask)
    out[1:] |= mask[:-1]
    out[:-1] |= mask[1:]
    out[:, 1:] |= mask[:, :-1]
    out[:, :-1] |= mask[:, 1:]
    return out


def te_open_fractions(scene, pec: int, shape, dx: float, origin) -> tuple:
    """Dey-Mittra geometry of a TE grid (H_z cell (i, j) has its corners at ``origin + (i, j)
    dx`` .. ``(i + 1, j + 1) dx``): the open length fractions ``lx`` of the E_x edges (i, j)
    (bottom edges), ``ly`` of the E_y edges (left edges) and the open area fractions ``area``
    of the cells, each (nx, ny); cells below :data:`MIN_AREA` closed with their edges."""
    nx, ny = shape
    cx = origin[0] + np.arange(nx + 1) * dx
    cy = origin[1] + np.arange(ny + 1) * dx
    CX, CY = np.meshgrid(cx, cy, indexing="ij")
    ins = inside(scene, pec, CX, CY)  # (nx + 1, ny + 1) corners

    def edges(a_in, b_in, pa, pb, mid_in):
        """Open fraction and crossing (fraction from a) of edges from corners a to b."""
        frac = np.where(a_in | b_in | mid_in, 0.0, 1.0)
        cut = np.flatnonzero((a_in != b_in).ravel())
        s = np.full(a_in.shape, np.nan)
        if len(cut):
            ai = a_in.ravel()[cut]
            po = np.where(ai[:, None], pb.reshape(-1, 2)[cut], pa.reshape(-1, 2)[cut])
            pi = np.where(ai[:, None], pa.reshape(-1, 2)[cut], pb.reshape(-1, 2)[cut])
            t = crossing(scene, pec, po, pi)  # from the open end
            s.ravel()[cut] = np.where(ai, 1 - t, t)
            frac.ravel()[cut] = t
        return frac, s

    P = np.stack([CX, CY], -1)
    mx = inside(scene, pec, 0.5 * (CX[:-1] + CX[1:]), CY[:-1])
    lx, sx = edges(ins[:-1], ins[1:], P[:-1], P[1:], mx)  # (nx, ny + 1)
    my = inside(scene, pec, CX[:, :-1], 0.5 * (CY[:, :-1] + CY[:, 1:]))
    ly, sy = edges(ins[:, :-1], ins[:, 1:], P[:, :-1], P[:, 1:], my)  # (nx + 1, ny)

    c00, c10, c11, c01 = ins[:-1, :-1], ins[1:, :-1], ins[1:, 1:], ins[:-1, 1:]
    corners = np.stack([c00, c10, c11, c01])
    area = np.where(corners.all(0), 0.0, 1.0)
    ci, cj = np.nonzero(corners.any(0) & ~corners.all(0))
    if len(ci):
        # slots in counter-clockwise order: corner, crossing on the edge to the next corner
        sb, sr, st, sl = sx[ci, cj], sy[ci + 1, cj], sx[ci, cj + 1], sy[ci, cj]
        one, zero = np.ones(len(ci)), np.zeros(len(ci))
        pts = np.stack(
            [
                np.stack([zero, zero], -1),
                np.stack([sb, zero], -1),
                np.stack([one, zero], -1),
                np.stack([one, sr], -1),
                np.stack([one, one], -1),
                np.stack([st, one], -1),
                np.stack([zero, one], -1),
                np.stack([zero, sl], -1),
            ],
            1,
        )
        valid = np.stack(
            [
                ~c00[ci, cj],
                np.isfinite(sb),
                ~c10[ci, cj],
                np.isfinite(sr),
                ~c11[ci, cj],
                np.isfinite(st),
                ~c01[ci, cj],
                np.isfinite(sl),
            ],
            1,
        )
        area[ci, cj] = _polygon_area(pts, valid)
    small = (area < MIN_AREA) & (area > 0)
    area[small] = 0.0
    si, sj = np.nonzero(small)
    lx[si, sj] = lx[si, sj + 1] = 0.0
    ly[si, sj] = ly[si + 1, sj] = 0.0
    return lx[:, :ny], ly[:nx, :], area


def _polygon_area(pts: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Shoelace area of the polygons through the ``valid`` slots of ``pts`` (M, S, 2), in
    order; an invalid slot repeats the last valid point (a zero-length side)."""
    S = pts.shape[1]
    pos = np.where(valid, np.arange(S), -1)
    twice = np.concatenate([pos, np.where(valid, pos + S, -1)], 1)
    last = np.maximum.accumulate(twice, axis=1)[:, S:] % S  # every cut cell has a valid slot
    p = np.take_along_axis(pts, last[..., None], 1)
    q = np.roll(p, -1, axis=1)
    return np.clip(0.5 * np.abs(np.sum(p[..., 0] * q[..., 1] - q[..., 0] * p[..., 1], 1)), 0.0, 1.0)
