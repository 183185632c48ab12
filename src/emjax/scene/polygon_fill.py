"""The exact share of axis-aligned square cells inside a polygon, and the polygon's normal
there, written once for NumPy (the host raster) and ``jax.numpy`` (the traced raster: a
smooth function of the vertices).

For a cell ``S = [-1/2, 1/2]^2`` (cell units, centred on the node) and a simple polygon
``P`` traversed counter-clockwise, Green's theorem with ``H(x) = clip(x, -1/2, 1/2) + 1/2``
gives ``area(P & S) = sum over edges of the integral of H(x) dy`` over the part of the edge
with ``y`` in ``[-1/2, 1/2]``: each edge's share is the integral of a clipped linear function,
in closed form (:func:`_relu_mean`). Clockwise polygons change the sum's sign, which the
orientation (the shoelace area's sign) undoes.

The normal is the polygon's outward normal averaged over its boundary inside the cell,
``sum_e L_e n_e`` (``L_e`` the length of edge ``e`` clipped to the cell): the direction in
which the filled share falls fastest as the cell moves (``grad_p area = -sum_e L_e n_e``);
one edge's normal where a single straight edge crosses the cell.
"""

from __future__ import annotations

import numpy as np

__all__ = ["is_simple", "lab_vertices", "planar_polygon", "polygon_cell_fill"]


def _relu_mean(xp, a, b):
    """The mean of ``max(l, 0)`` over a segment on which ``l`` runs linearly from ``a`` to
    ``b``: ``(a+ + b+) / 2`` where both have one sign, ``max(a, b)^2 / (2 |a - b|)`` where
    they straddle 0 (no division by a vanishing ``|a - b|``)."""
    straddle = a * b < 0
    gap = xp.where(straddle, xp.abs(a - b), 1.0)
    pa, pb = xp.maximum(a, 0.0), xp.maximum(b, 0.0)
    return xp.where(straddle, (pa * pa + pb * pb) / (2 * gap), (pa + pb) / 2)


def _window(xp, start, step):
    """The parameter interval ``[lo, hi]`` of ``t`` in ``[0, 1]`` where ``start + t step``
    lies in ``[-1/2, 1/2]``; all of ``[0, 1]`` or nothing where ``step`` is 0."""
    flat = step == 0
    safe = xp.where(flat, 1.0, step)
    t1, t2 = (-0.5 - start) / safe, (0.5 - start) / safe
    lo = xp.clip(xp.minimum(t1, t2), 0.0, 1.0)
    hi = xp.clip(xp.maximum(t1, t2), 0.0, 1.0)
    inside = xp.abs(start) <= 0.5
    lo = xp.where(flat, xp.where(inside, 0.0, 1.0), lo)
    hi = xp.where(flat, 1.0, hi)
    return lo, hi


def polygon_cell_fill(xp, vertices, centers, dx):
    """``(fill (M,), normal (M, 2))`` of the squares of side ``dx`` centred at ``centers``
    (M, 2) cut by the simple polygon ``vertices`` (n, 2): the share of each square inside
    the polygon (exact) and the polygon's outward unit normal there (module docstring;
    ``(1, 0)`` in a square no edge crosses). ``xp``: ``numpy`` or ``jax.numpy``; with JAX
    the result is differentiable in the vertices (piecewise smooth: continuous with its
    first derivative where no vertex sits on a cell face)."""
    v = (vertices[None, :, :] - centers[:, None, :]) / dx  # (M, n, 2), cell units
    w = xp.roll(v, -1, axis=1)
    d = w - v
    x0, y0, ex, ey = v[..., 0], v[..., 1], d[..., 0], d[..., 1]
    # area: sum_e dy_e * integral over t in the y-window of H(x0 + t ex) dt
    lo, hi = _window(xp, y0, ey)
    span = xp.maximum(hi - lo, 0.0)
    xa, xb = x0 + lo * ex, x0 + hi * ex
    mean_h = _relu_mean(xp, xa + 0.5, xb + 0.5) - _relu_mean(xp, xa - 0.5, xb - 0.5)
    signed = xp.sum(ey * span * mean_h, axis=1)
    orient = xp.sum(
        vertices[:, 0] * xp.roll(vertices[:, 1], -1) - xp.roll(vertices[:, 0], -1) * vertices[:, 1]
    )
    sign = xp.where(orient > 0, 1.0, -1.0)
    fill = xp.clip(sign * signed, 0.0, 1.0)
    # normal: sum_e L_e n_e with the edge clipped to the cell in x and y
    lx, hx = _window(xp, x0, ex)
    clip = xp.maximum(xp.minimum(hi, hx) - xp.maximum(lo, lx), 0.0)
    g = sign * xp.stack([xp.sum(clip * ey, axis=1), -xp.sum(clip * ex, axis=1)], axis=-1)
    size = xp.sqrt(xp.sum(g * g, axis=-1, keepdims=True))
    crossed = size > 1e-12
    normal = xp.where(crossed, g / xp.where(crossed, size, 1.0), xp.asarray([1.0, 0.0]))
    # a square no edge enters lies wholly inside or outside: 0 or 1 exactly, not rounding
    return xp.where(crossed[:, 0], fill, xp.round(fill)), normal


def planar_polygon(obj) -> bool:
    """Whether ``obj`` (an :class:`emjax.scene.Object`) is a :class:`emjax.geometry.Polygon`
    with a simple outline turned about z only, so that its section in every z plane is the
    polygon: then :func:`polygon_cell_fill` gives its cells' fill fractions (area shares)."""
    from ..geometry import Polygon
    from ..tracing import primal

    if type(obj.shape) is not Polygon:
        return False
    R = primal(obj.rotation_matrix)  # None: abstract (inside jax.jit; the caller checked the values)
    return (R is None or abs(abs(R[2, 2]) - 1.0) < 1e-12) and is_simple(obj.shape.vertices)


def lab_vertices(xp, vertices, size, center, R):
    """The polygon's vertices (n, 2) in the lab's xy plane: ``center + size R q`` for the
    shape-frame vertices ``q = (x, y, 0)`` (an object turned about z only)."""
    return center[:2] + size * (vertices @ R[:2, :2].T)


def is_simple(vertices: np.ndarray) -> bool:
    """Whether the closed polygon ``vertices`` (n, 2) has no two non-adjacent edges that
    meet (the exact fill assumes it; a self-intersecting outline is sampled instead)."""
    v = np.asarray(vertices, float)
    n = len(v)
    a, b = v, np.roll(v, -1, axis=0)

    def orient(p, q, r):
        return np.sign(
            (q[..., 0] - p[..., 0]) * (r[..., 1] - p[..., 1])
            - (q[..., 1] - p[..., 1]) * (r[..., 0] - p[..., 0])
        )

    for i in range(n):
        j = np.arange(i + 2, n)
        if i == 0:
            j = j[j != n - 1]  # the last edge is adjacent to the first
        if not len(j):
            continue
        p, q, r, s = a[i], b[i], a[j], b[j]
        o1, o2 = orient(p, q, r), orient(p, q, s)
        o3, o4 = orient(r, s, p[None]), orient(r, s, q[None])
        # collinear segments meet only where their extents overlap
        collinear = (o1 == 0) & (o2 == 0)
        apart = np.any(
            (np.maximum(np.minimum(p, q), np.minimum(r, s)) > np.minimum(np.maximum(p, q), np.maximum(r, s))),
            axis=-1,
        )
        if np.any((o1 * o2 <= 0) & (o3 * o4 <= 0) & ~(collinear & apart)):
            return False
    return True
