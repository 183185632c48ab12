"""A scene on the Yee grid: materials at each E component's nodes, and at the nodes an
interface crosses, the fill fraction and the surface normal that subpixel averaging needs.

Each E node owns the dual cell of size dx^3 centred on it (E_x at ``(i + 1/2, j, k) dx``
from the origin, E_y at ``(i, j + 1/2, k) dx``, E_z at ``(i, j, k + 1/2) dx``). A node is an
*interface node* when its dual cell holds two materials. There:

* the two materials are the node's own (the point test, as staircasing would use) and the
  most frequent other one among the samples (Meep's choice where three meet: the two
  dominant ones);
* the fill fraction ``fill`` is the volume fraction of the node's own material;
* the normal is the direction from the other material's samples to the own material's
  (first moments), or, for a shape with an analytic signed distance (sphere, ellipsoid) that
  alone crosses the cell, its gradient, with the fill fraction of the cell cut by the
  tangent plane in closed form (second-order accurate for smooth surfaces); for a 2-D
  :class:`~emjax.geometry.Polygon` alone in the cell, the exact area share and the
  boundary-averaged edge normal (:mod:`emjax.scene.polygon_fill`).

Solvers turn this into what their update needs: :meth:`YeeRaster.kottke` gives Farjadpour
and Kottke's inverse permittivity tensor ``P <1/eps> + (1 - P) <eps>^-1`` with ``P = n n^T``
for dielectric interfaces (Opt. Lett. 31, 2972 (2006); PRE 77, 036611 (2008)).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError, require_int, require_positive
from .objects import Scene
from .polygon_fill import lab_vertices, planar_polygon, polygon_cell_fill

__all__ = ["YeeRaster", "cube_plane_fill", "rasterize"]

#: samples per axis of a dual cell where the fill fraction is sampled
SAMPLES = 8
_CHUNK = 1 << 21  # points per evaluation batch (bounds memory on large grids)


def cube_plane_fill(normal: np.ndarray, distance: np.ndarray) -> np.ndarray:
    """Volume fraction of the unit cube ``[-1/2, 1/2]^3`` on the side ``n . x <= -distance``
    of a plane (``normal`` (..., 3) unit vectors; ``distance`` the signed distance of the
    cube's centre from the plane, in cell units, negative on the inside). Closed form: the
    inclusion-exclusion sum over the cube's corners of the cut corner pyramids."""
    n = np.abs(np.asarray(normal, float))
    n = np.maximum(n, 1e-4)  # a face-parallel plane as the limit of a tilted one (error ~1e-4)
    n = n / np.linalg.norm(n, axis=-1, keepdims=True)
    t = -np.asarray(distance, float)  # the plane is n . x = t (in the folded, all-positive frame)
    total = np.zeros(np.shape(t))
    for v in itertools.product((0.0, 1.0), repeat=3):
        v = np.asarray(v) - 0.5
        sign = (-1.0) ** np.sum(v > 0)
        total = total + sign * np.maximum(0.0, t - n @ v) ** 3
    vol = total / (6.0 * n[..., 0] * n[..., 1] * n[..., 2])
    return np.clip(vol, 0.0, 1.0)


@dataclass(frozen=True, eq=False)
class YeeRaster:
    """A scene on a Yee grid (see the module docstring).

    ``label[c]``: material index (into ``scene.materials``) at E_c's nodes, (nx, ny, nz).
    ``interface[c]``: dict of the interface nodes of E_c: ``index`` (M, 3) node indices,
    ``own`` and ``other`` (M,) material indices, ``fill`` (M,) volume fraction of ``own`` in
    the dual cell, ``normal`` (M, 3) unit normals (pointing out of ``own``). Empty with
    ``averaging="staircase"``.
    """

    scene: Scene
    shape: tuple
    dx: float
    origin: tuple
    averaging: str
    label: tuple
    interface: tuple

    def kottke(self, c: int, eps_of) -> dict:
        """Farjadpour-Kottke tensors at E_c's interface nodes: ``{"index": (M, 3),
        "eps_inv": (M, 3, 3)}`` with ``eps_of(material index) -> permittivity`` (real)."""
        it = self.interface[c]
        e1 = np.array([eps_of(int(m)) for m in it["own"]], float).reshape(-1)
        e2 = np.array([eps_of(int(m)) for m in it["other"]], float).reshape(-1)
        f = it["fill"]
        mean_inv = f / e1 + (1 - f) / e2  # <1/eps>
        inv_mean = 1.0 / (f * e1 + (1 - f) * e2)  # <eps>^-1
        n = it["normal"]
        P = n[:, :, None] * n[:, None, :]
        eye = np.eye(3)[None]
        inv = P * mean_inv[:, None, None] + (eye - P) * inv_mean[:, None, None]
        return {"index": it["index"], "eps_inv": inv}


def _node_coords(shape, dx, origin, c: int):
    return [origin[ax] + (np.arange(n) + (0.5 if ax == c else 0.0)) * dx for ax, n in enumerate(shape)]


def _box_range(lo, hi, coords):
    """Index range of the 1-D node coordinates ``coords`` within [lo, hi] (+1 node margin)."""
    a = max(int(np.searchsorted(coords, lo)) - 1, 0)
    b = min(int(np.searchsorted(coords, hi, side="right")) + 1, len(coords))
    return a, b


def _labels(scene: Scene, shape, dx, origin, c: int) -> np.ndarray:
    """Material index at E_c's nodes (point test), object by object within their boxes."""
    label = np.zeros(shape, np.int32)
    xs = _node_coords(shape, dx, origin, c)
    for o in scene.objects:
        lo, hi = o.bounds()
        rng = [_box_range(lo[ax], hi[ax], xs[ax]) for ax in range(3)]
        if any(b <= a for a, b in rng):
            continue
        lut = np.array([scene.material_index(m) for m in o.material], np.int32)
        X = xs[0][rng[0][0] : rng[0][1]]
        Y, Z = np.meshgrid(xs[1][rng[1][0] : rng[1][1]], xs[2][rng[2][0] : rng[2][1]], indexing="ij")
        for i0 in range(0, len(X), max(1, _CHUNK // max(Y.size, 1))):
            xi = X[i0 : i0 + max(1, _CHUNK // max(Y.size, 1))]
            d = o.domain(xi[:, None, None], Y[None], Z[None])
            sl = (slice(rng[0][0] + i0, rng[0][0] + i0 + len(xi)), slice(*rng[1]), slice(*rng[2]))
            label[sl] = np.where(d >= 0, lut[np.clip(d, 0, None)], label[sl])
    return label


def _candidates(label: np.ndarray, region) -> np.ndarray:
    """Nodes (K, 3) in ``region`` whose label differs from one of their 26 neighbours':
    every node whose dual cell a smooth surface crosses is among them."""
    sl = tuple(slice(a, b) for a, b in region)
    sub = label[sl]
    lo, hi = sub, sub
    for ax in range(3):  # separable 3x3x3 minimum and maximum
        if sub.shape[ax] < 2:
            continue
        for f, agg in ((0, np.minimum), (1, np.maximum)):
            a = lo if f == 0 else hi
            pad = np.concatenate([a.take([0], axis=ax), a, a.take([-1], axis=ax)], axis=ax)
            n = a.shape[ax]
            b = agg(agg(pad.take(range(0, n), axis=ax), a), pad.take(range(2, n + 2), axis=ax))
            if f == 0:
                lo = b
            else:
                hi = b
    idx = np.argwhere(lo != hi)
    return idx + np.array([a for a, _ in region])


def _sample_offsets(samples: int) -> np.ndarray:
    u = (np.arange(samples) + 0.5) / samples - 0.5
    return np.stack(np.meshgrid(u, u, u, indexing="ij"), -1).reshape(-1, 3)


def _interface(scene: Scene, label, shape, dx, origin, c: int, samples: int) -> dict:
    """Fill fractions and normals at E_c's interface nodes."""
    empty = {
        "index": np.zeros((0, 3), np.int64),
        "own": np.zeros(0, np.int32),
        "other": np.zeros(0, np.int32),
        "fill": np.zeros(0),
        "normal": np.zeros((0, 3)),
    }
    if not scene.objects:
        return empty
    xs = _node_coords(shape, dx, origin, c)
    lo = np.min([o.bounds()[0] for o in scene.objects], axis=0)
    hi = np.max([o.bounds()[1] for o in scene.objects], axis=0)
    region = [_box_range(lo[ax], hi[ax], xs[ax]) for ax in range(3)]
    if any(b <= a for a, b in region):
        return empty
    cand = _candidates(label, region)
    if not len(cand):
        return empty
    pos = np.stack([xs[ax][cand[:, ax]] for ax in range(3)], axis=-1)
    own = label[tuple(cand.T)]
    handled, mixed, ex_other, ex_fill, ex_normal = _analytic(scene, own, pos, dx)
    ex = handled & mixed
    rest = np.flatnonzero(~handled)
    offs = _sample_offsets(samples) * dx
    keep, other, fill, normal = [], [], [], []
    per = max(1, _CHUNK // len(offs))
    pos_all, own_all = pos, own
    pos, own = pos_all[rest], own_all[rest]
    for s in range(0, len(rest), per):
        p = pos[s : s + per][:, None, :] + offs[None]
        lab = scene.label(p[..., 0], p[..., 1], p[..., 2])
        o = own[s : s + per]
        is_own = lab == o[:, None]
        frac = is_own.mean(axis=1)
        mixed = (frac > 0) & (frac < 1)
        # the other material: the most frequent label that is not the node's own
        alt = np.where(is_own, -1, lab)
        counts = np.stack([(alt == m).sum(axis=1) for m in range(len(scene.materials))], axis=1)
        oth = counts.argmax(axis=1)
        in_pair = is_own | (lab == oth[:, None])
        f = is_own.sum(axis=1) / np.maximum(in_pair.sum(axis=1), 1)
        w_own = is_own / np.maximum(is_own.sum(axis=1, keepdims=True), 1)
        w_oth = (lab == oth[:, None]) / np.maximum((lab == oth[:, None]).sum(axis=1, keepdims=True), 1)
        g = (w_oth - w_own) @ offs  # from own's centroid to the other's: the outward normal
        nn = np.linalg.norm(g, axis=1)
        g = g / np.maximum(nn, 1e-300)[:, None]
        keep.append(mixed & (nn > 0))
        other.append(oth)
        fill.append(f)
        normal.append(g)

    def cat(parts, shape):
        return np.concatenate(parts) if parts else np.zeros(shape)

    keep = cat(keep, (0,)).astype(bool)
    out = {
        "index": np.concatenate([cand[ex], cand[rest][keep]]).astype(np.int64),
        "own": np.concatenate([own_all[ex], own[keep]]).astype(np.int32),
        "other": np.concatenate([ex_other[ex], cat(other, (0,))[keep]]).astype(np.int32),
        "fill": np.concatenate([ex_fill[ex], cat(fill, (0,))[keep]]),
        "normal": np.concatenate([ex_normal[ex], cat(normal, (0, 3))[keep]]),
    }
    order = np.lexsort(out["index"].T[::-1])  # node order, as the candidates came
    return {k: v[order] for k, v in out.items()}


def _analytic(scene: Scene, own: np.ndarray, pos: np.ndarray, dx: float):
    """Nodes whose cell only one object reaches, an object with a signed distance and one
    material: its tangent-plane cut gives the fill fraction and its gradient the normal.

    Returns ``(handled, mixed, other, fill, normal)``: ``handled`` marks the nodes solved
    here, ``mixed`` those of them an interface crosses; the other arrays are per node
    (meaningful where ``mixed``)."""
    n_pts = len(pos)
    half = np.sqrt(3) / 2 * dx
    # the nodes each object's (widened) bounding box reaches: candidates sorted along x, a
    # binary search per object, then the other axes on that slice (O(nodes log nodes +
    # reached) rather than objects x nodes: scenes of thousands of objects)
    order = np.argsort(pos[:, 0], kind="stable")
    xs = pos[order, 0]
    reach = []
    for o in scene.objects:
        lo, hi = o.bounds()
        a, b = np.searchsorted(xs, lo[0] - half, "right"), np.searchsorted(xs, hi[0] + half, "left")
        idx = order[a:b]
        sub = pos[idx]
        reach.append(idx[np.all((sub > lo - half) & (sub < hi + half), axis=1)])
    count = np.bincount(np.concatenate(reach), minlength=n_pts) if reach else np.zeros(n_pts, int)
    handled = np.zeros(n_pts, bool)
    mixed = np.zeros(n_pts, bool)
    other = np.zeros(n_pts, np.int32)
    fill = np.zeros(n_pts)
    normal = np.zeros((n_pts, 3))
    for k, o in enumerate(scene.objects):
        alone = reach[k][count[reach[k]] == 1]
        if not len(alone) or len(o.material) != 1:
            continue
        p = pos[alone]
        if planar_polygon(o):  # a polygon's exact area share (z-invariant: the volume share)
            verts = lab_vertices(np, o.shape.vertices, o.size, np.asarray(o.center), o.rotation_matrix)
            per = max(1, _CHUNK // (8 * len(verts)))  # nodes x edges per batch: bounded memory
            parts = [polygon_cell_fill(np, verts, p[s : s + per, :2], dx) for s in range(0, len(p), per)]
            f_in = np.concatenate([f for f, _ in parts])
            n = np.concatenate([np.concatenate([g for _, g in parts]), np.zeros((len(p), 1))], axis=1)
        elif o.signed_distance(pos[:1]) is None:
            continue
        else:
            f_in, n = _plane_cut(o, p, dx)
        m_obj = scene.material_index(o.material[0])
        mine = own[alone] == m_obj
        f = np.where(mine, f_in, 1.0 - f_in)
        handled[alone] = True
        mixed[alone] = (f > 0) & (f < 1)
        other[alone] = np.where(mine, 0, m_obj)  # alone: the object covers only the background
        fill[alone] = f
        normal[alone] = np.where(mine[:, None], 1.0, -1.0) * n  # out of the node's own material
    return handled, mixed, other, fill, normal


def _plane_cut(o, p: np.ndarray, dx: float):
    """The share of the cells at ``p`` (M, 3) inside ``o`` cut by the tangent plane of its
    signed distance, and that plane's normal (the distance's gradient, central differences)."""
    d = o.signed_distance(p)
    eps = 1e-6 * dx
    grad = np.stack(
        [(o.signed_distance(p + eps * e) - o.signed_distance(p - eps * e)) / (2 * eps) for e in np.eye(3)],
        axis=-1,
    )
    n = grad / np.maximum(np.linalg.norm(grad, axis=1, keepdims=True), 1e-300)
    return cube_plane_fill(n, d / dx), n


def rasterize(
    scene: Scene,
    shape,
    dx: float,
    origin=(0.0, 0.0, 0.0),
    *,
    averaging: str = "subpixel",
    samples: int = SAMPLES,
    components=(0, 1, 2),
) -> YeeRaster:
    """The scene on the Yee grid of ``shape`` cells of size ``dx`` whose cell (0, 0, 0) has
    its low corner at ``origin``: node materials, and with ``averaging="subpixel"`` the
    interface nodes' fill fractions and normals (``samples`` per axis where sampled).
    ``components``: the E components to rasterize (the others' ``label`` and
    ``interface`` entries are None; a 2-D TM solve needs E_z only)."""
    if not isinstance(scene, Scene):
        raise ConfigError(f"scene must be an emjax.scene.Scene, got {scene!r}")
    if scene.traced:
        raise ConfigError(
            "scene.rasterize is the host (NumPy) raster and needs concrete scene parameters, but "
            f"the scene's {', '.join(scene.traced_names)} "
            f"{'is a JAX tracer' if len(scene.traced_names) == 1 else 'are JAX tracers'}: rasterize "
            "scene.primal() for the structure and take the traced fill "
            "fractions from emjax.scene.traced (the solver at hand may not differentiate scene "
            "geometry yet: then differentiate its per-cell permittivity instead)"
        )
    shape = tuple(require_int(f"shape[{i}]", n, 1) for i, n in enumerate(shape))
    if len(shape) != 3:
        raise ConfigError(f"shape must be (nx, ny, nz), got {shape!r}")
    require_positive("dx", dx)
    if averaging not in ("subpixel", "staircase"):
        raise ConfigError(f"averaging must be 'subpixel' or 'staircase', got {averaging!r}")
    require_int("samples", samples, 2, 64)
    origin = tuple(float(v) for v in origin)
    if not set(components) <= {0, 1, 2} or not components:
        raise ConfigError(f"components must be a non-empty subset of (0, 1, 2), got {components!r}")
    labels = tuple(_labels(scene, shape, dx, origin, c) if c in components else None for c in range(3))
    geo = scene if averaging == "subpixel" else Scene()
    inter = tuple(
        _interface(geo, labels[c], shape, dx, origin, c, samples) if c in components else None
        for c in range(3)
    )
    return YeeRaster(scene, shape, float(dx), origin, averaging, labels, inter)
