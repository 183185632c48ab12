"""A closed triangle mesh as a shape (STL, OBJ, PLY, OFF, GLB ... through trimesh).

The inside test casts a ray along +z from each point and sums the orientations of the faces
it crosses (+1 where a face turns its outer side up, -1 down): the winding number, nonzero
inside. So bodies that overlap in one file are united and a cavity (an inner shell wound
the other way, as CAD writes a hollow part) stays empty. Faces are binned on a grid in the
xy plane, so a point meets only the few faces whose projections cover its bin. Rays through
an edge or a vertex are decided by a symbolic perturbation of the point,
``(x + d, y + d^2)`` with ``d -> 0+``, and each edge's orientation test is evaluated from
its endpoints in one fixed order, so that the two faces sharing an edge see bit-identical
values: the count is exact whatever the mesh's alignment with the grid (a sphere's vertices
on the lattice planes, an axis-aligned cube's faces on the nodes). Faces seen edge-on
(vertical faces) are never crossed under the perturbation and are left out.

Subpixel averaging (:func:`emjax.scene.rasterize`) uses the mesh's signed distance, as for
the built-in sphere: at an interface node whose dual cell no other object reaches, the fill
fraction is the share of the cell on the inner side of the tangent plane (the plane through
the nearest surface point, normal to the distance's gradient: the nearest face's normal
where the nearest point lies inside a face), in closed form
(:func:`emjax.scene.cube_plane_fill`); where objects meet, the cell is sampled (8^3 points).
The distance is exact (the nearest face among those a k-d tree of face centroids proposes);
its sign is the ray test's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import ConfigError, require_positive
from .geometry_shape import Shape

__all__ = ["Mesh", "load_trimesh"]

_PAIRS = 1 << 22  # (point, face) pairs per evaluation batch: bounds the temporaries
INSTALL = "pip install emjax[cad]"


def load_trimesh():
    """The trimesh module, or one ConfigError naming the extra to install."""
    try:
        import trimesh
    except ModuleNotFoundError:
        raise ConfigError(f"reading mesh files needs the trimesh package: {INSTALL}") from None
    return trimesh


def _closed(mesh, where: str):
    """The trimesh ``mesh`` made watertight (duplicate vertices merged, degenerate faces
    dropped, small holes filled), or a ConfigError saying why it cannot be."""
    mesh.merge_vertices()
    mesh.update_faces(mesh.nondegenerate_faces())
    mesh.remove_unreferenced_vertices()
    if not len(mesh.faces):
        raise ConfigError(f"{where}: the mesh has no faces of non-zero area")
    try:
        if not mesh.is_watertight:
            mesh.fill_holes()
        if mesh.is_watertight and not mesh.is_winding_consistent:
            mesh.fix_normals()  # one winding: the signed volume sums to the volume
    except ModuleNotFoundError as exc:  # trimesh's repairs need networkx
        raise ConfigError(f"{where}: repairing the mesh needs {exc.name}: {INSTALL}") from None
    if not mesh.is_watertight:
        edges = mesh.edges_sorted
        _, counts = np.unique(edges, axis=0, return_counts=True)
        open_edges = int(np.sum(counts == 1))
        bad = int(np.sum(counts > 2))
        raise ConfigError(
            f"{where}: the mesh is not closed ({open_edges} open edge(s), {bad} shared by more "
            "than two faces) and filling its holes did not close it; an inside/outside test "
            "needs a watertight surface: repair it in a CAD tool (e.g. close the holes)"
        )
    return mesh


@dataclass(frozen=True, eq=False)
class Mesh(Shape):
    """A closed triangle mesh: ``vertices`` (V, 3) and ``faces`` (F, 3) vertex indices.

    As every shape, it is stored normalized (bounding box centred at the origin, lengths in
    units of its extent along x); :attr:`center` and :attr:`size` keep where the source put
    it (lab frame, the source's length unit): ``scene.Object(mesh, material)`` places it
    there, ``scene.Object(mesh, material, center=..., size=...)`` moves and scales it.
    The mesh must be closed and consistently wound (every edge shared by two faces running
    it in opposite directions; :meth:`from_file` repairs what it can); either orientation
    (normals out or in) gives the same inside. Bodies that overlap are united, but their
    volume (:attr:`volume_ratio`, the DDA's volume correction) counts the overlap twice.
    """

    vertices: np.ndarray = None  # type: ignore[assignment]
    faces: np.ndarray = None  # type: ignore[assignment]
    center: tuple = (0.0, 0.0, 0.0)
    size: float = 1.0
    name = "mesh"

    def __post_init__(self):
        v = np.asarray(self.vertices, dtype=float)
        f = np.asarray(self.faces)
        if v.ndim != 2 or v.shape[1] != 3 or len(v) < 4 or not np.all(np.isfinite(v)):
            raise ConfigError(f"Mesh.vertices must be (V >= 4, 3) finite, got shape {v.shape}")
        if f.ndim != 2 or f.shape[1] != 3 or len(f) < 4 or not np.issubdtype(f.dtype, np.integer):
            raise ConfigError(f"Mesh.faces must be (F >= 4, 3) integer indices, got shape {f.shape}")
        if f.min() < 0 or f.max() >= len(v):
            raise ConfigError(f"Mesh.faces index vertices outside 0 .. {len(v) - 1}")
        _check_closed(f, len(v))
        lo, hi = v.min(0), v.max(0)
        ext = hi - lo
        if np.any(ext <= 0):
            raise ConfigError(f"Mesh spans no volume: its extent is {ext.tolist()}")
        object.__setattr__(self, "vertices", (v - (lo + hi) / 2) / ext[0])
        object.__setattr__(self, "faces", f.astype(np.int64))
        c = tuple(float(x) for x in self.center)
        if len(c) != 3 or not all(math.isfinite(x) for x in c):
            raise ConfigError(f"Mesh.center must be three finite numbers, got {self.center!r}")
        object.__setattr__(self, "center", c)
        object.__setattr__(self, "size", float(require_positive("Mesh.size", self.size)))

    @classmethod
    def from_trimesh(cls, mesh, *, scale: float = 1.0, center=None, where: str = "mesh") -> Mesh:
        """A Mesh from a ``trimesh.Trimesh`` (repaired as :meth:`from_file` says)."""
        require_positive("scale", scale)
        trimesh = load_trimesh()
        if isinstance(mesh, trimesh.Scene):
            mesh = mesh.to_mesh() if hasattr(mesh, "to_mesh") else mesh.dump(concatenate=True)
        if not isinstance(mesh, trimesh.Trimesh):
            raise ConfigError(f"{where}: expected a triangle mesh, got {type(mesh).__name__}")
        mesh = _closed(mesh.copy(), where)
        v = np.asarray(mesh.vertices, float) * scale
        lo, hi = v.min(0), v.max(0)
        c = (lo + hi) / 2 if center is None else np.asarray(center, float)
        return cls(v, np.asarray(mesh.faces), center=tuple(c), size=float(hi[0] - lo[0]))

    @classmethod
    def from_file(cls, path, scale: float = 1.0, center=None) -> Mesh:
        """Read a surface mesh (STL, OBJ, PLY, OFF, GLB ...: what trimesh reads).

        ``scale`` multiplies the file's coordinates (e.g. 1e-3 for a file in mm and a scene
        in um); ``center``: where the centre of the mesh's bounding box goes (default: where
        the file puts it, times ``scale``). Duplicate vertices are merged, degenerate faces
        dropped and holes filled; a mesh still not closed is refused (ConfigError)."""
        trimesh = load_trimesh()
        path = Path(path)
        if not path.is_file():
            raise ConfigError(f"mesh file {str(path)!r} does not exist")
        try:
            mesh = trimesh.load(str(path), force="mesh", process=True)
        except Exception as exc:  # trimesh raises many types for unreadable files
            raise ConfigError(f"cannot read mesh file {str(path)!r}: {exc}") from None
        return cls.from_trimesh(mesh, scale=scale, center=center, where=str(path))

    def __repr__(self) -> str:
        return (
            f"Mesh({len(self.vertices)} vertices, {len(self.faces)} faces, size={self.size:.6g}, "
            f"center=({', '.join(f'{c:.6g}' for c in self.center)}))"
        )

    @property
    def placement(self) -> tuple:
        return self.center, self.size

    @property
    def yx_ratio(self):
        return float(np.ptp(self.vertices[:, 1]))

    @property
    def zx_ratio(self):
        return float(np.ptp(self.vertices[:, 2]))

    @property
    def volume_ratio(self):
        a, b, c = (self.vertices[self.faces[:, k]] for k in range(3))
        return abs(float(np.sum(np.einsum("ij,ij->i", a, np.cross(b, c))))) / 6.0

    def domain(self, x, y, z):
        x, y, z = np.broadcast_arrays(np.asarray(x, float), np.asarray(y, float), np.asarray(z, float))
        p = np.stack([x.ravel(), y.ravel(), z.ravel()], axis=-1)
        inside = _Crossings.of(self).inside(p)
        return np.where(inside, 0, -1).reshape(x.shape)

    def signed_distance(self, q: np.ndarray) -> np.ndarray:
        """Distance from points ``q`` (..., 3; normalized units) to the surface, negative
        inside: the nearest face's exact distance, the sign from :meth:`domain`."""
        q = np.asarray(q, float)
        p = q.reshape(-1, 3)
        d = _nearest_face_distance(self, p)
        inside = _Crossings.of(self).inside(p)
        return np.where(inside, -d, d).reshape(q.shape[:-1])


def _nearest_face_distance(mesh: Mesh, p: np.ndarray) -> np.ndarray:
    """The distance from each point ``p`` (M, 3) to the nearest face: a k-d tree of the
    faces' centroids bounds it (the nearest centroids' faces), then every face whose
    centroid lies within that bound plus the largest centroid-to-vertex distance is tried."""
    from scipy.spatial import cKDTree

    tri = mesh.vertices[mesh.faces]
    cached = mesh.__dict__.get("_centroids")
    if cached is None:
        cent = tri.mean(axis=1)
        reach = float(np.max(np.linalg.norm(tri - cent[:, None], axis=-1)))
        cached = (cKDTree(cent), reach)
        object.__setattr__(mesh, "_centroids", cached)
    tree, reach = cached
    k = min(4, len(tri))
    _, near = tree.query(p, k=k)
    near = near.reshape(len(p), k)
    bound = np.min([_point_triangle(p, tri[near[:, j]]) for j in range(k)], axis=0)
    out = np.full(len(p), np.inf)
    for s in range(0, len(p), 4096):
        lists = tree.query_ball_point(p[s : s + 4096], bound[s : s + 4096] + reach * (1 + 1e-9))
        n = np.array([len(x) for x in lists])
        face = np.concatenate([np.asarray(x, np.int64) for x in lists])
        pt = np.repeat(np.arange(len(n)), n)
        dist = _point_triangle(p[s : s + 4096][pt], tri[face])
        np.minimum.at(out[s : s + 4096], pt, dist)
    return np.minimum(out, bound)


def _point_triangle(p, t):
    """Distance from points ``p`` (M, 3) to triangles ``t`` (M, 3, 3), pair by pair: the
    point projected onto the plane where that lies inside, else the nearest of the edges."""
    a, b, c = t[:, 0], t[:, 1], t[:, 2]
    n = np.cross(b - a, c - a)
    nn = np.einsum("ij,ij->i", n, n)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = np.einsum("ij,ij->i", p - a, n) / nn
        foot = p - h[:, None] * n
        inside = np.ones(len(p), bool)
        for u, v in ((a, b), (b, c), (c, a)):
            inside &= np.einsum("ij,ij->i", np.cross(v - u, foot - u), n) >= 0
    plane = np.abs(h) * np.sqrt(nn)
    edge = np.min([_point_segment(p, u, v) for u, v in ((a, b), (b, c), (c, a))], axis=0)
    return np.where(inside & (nn > 0), plane, edge)


def _point_segment(p, u, v):
    e = v - u
    ee = np.einsum("ij,ij->i", e, e)
    t = np.clip(np.einsum("ij,ij->i", p - u, e) / np.where(ee > 0, ee, 1.0), 0.0, 1.0)
    return np.linalg.norm(p - u - t[:, None] * e, axis=1)


def _check_closed(f: np.ndarray, n_vertices: int) -> None:
    """Every edge shared by exactly two faces that run it in opposite directions (a closed,
    consistently wound surface: what the winding number needs), else a ConfigError."""
    a = np.concatenate([f[:, 0], f[:, 1], f[:, 2]]).astype(np.int64)
    b = np.concatenate([f[:, 1], f[:, 2], f[:, 0]]).astype(np.int64)
    fwd, back = a * n_vertices + b, b * n_vertices + a
    fwd_sorted = np.sort(fwd)
    repeated = bool(np.any(fwd_sorted[1:] == fwd_sorted[:-1]))
    unmatched = int(np.count_nonzero(~np.isin(back, fwd_sorted, assume_unique=not repeated)))
    if repeated or unmatched:
        raise ConfigError(
            f"Mesh.faces do not form a closed, consistently wound surface ({unmatched} edge(s) "
            f"without a partner face{', an edge run twice the same way' if repeated else ''}); "
            "Mesh.from_file and Mesh.from_trimesh repair what they can"
        )


class _Crossings:
    """The faces binned in the xy plane, with what the ray test needs per face."""

    @staticmethod
    def of(mesh: Mesh) -> _Crossings:
        cached = mesh.__dict__.get("_crossings")
        if cached is None:
            cached = _Crossings(mesh.vertices, mesh.faces)
            object.__setattr__(mesh, "_crossings", cached)
        return cached

    def __init__(self, v: np.ndarray, f: np.ndarray):
        self.v = v
        xy = v[:, :2]
        a, b, c = xy[f[:, 0]], xy[f[:, 1]], xy[f[:, 2]]
        area = (b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0])
        f = f[area != 0]  # seen edge-on from the ray: never crossed (see the module docstring)
        self.f = f
        self.sign = np.sign(area[area != 0])
        lo, hi = xy[f].min(axis=1), xy[f].max(axis=1)
        self.lo0 = xy.min(0)
        span = np.maximum(xy.max(0) - self.lo0, 1e-300)
        n = max(1, int(math.sqrt(len(f))))  # about one face per bin
        self.nbin = np.maximum(1, np.round(n * span / span.max())).astype(np.int64)
        self.width = span / self.nbin
        b0, b1 = self._bin(lo), self._bin(hi)
        # every bin each face's bounding box overlaps: CSR lists of faces per bin
        nx = b1[:, 0] - b0[:, 0] + 1
        ny = b1[:, 1] - b0[:, 1] + 1
        count = nx * ny
        face = np.repeat(np.arange(len(f)), count)
        k = np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)
        bx = b0[face, 0] + k % nx[face]
        by = b0[face, 1] + k // nx[face]
        key = bx * self.nbin[1] + by
        order = np.argsort(key, kind="stable")
        self.faces_of = face[order]
        self.start = np.searchsorted(key[order], np.arange(self.nbin.prod() + 1))

    def _bin(self, xy):
        b = np.floor((xy - self.lo0) / self.width).astype(np.int64)
        return np.clip(b, 0, self.nbin - 1)

    def inside(self, p: np.ndarray) -> np.ndarray:
        out = np.zeros(len(p), bool)
        lo, hi = self.v.min(0), self.v.max(0)
        near = np.flatnonzero(np.all((p >= lo) & (p <= hi), axis=1))
        if not len(near):
            return out
        b = self._bin(p[near, :2])
        key = b[:, 0] * self.nbin[1] + b[:, 1]
        n = self.start[key + 1] - self.start[key]
        ends = np.cumsum(n)
        s = 0
        while s < len(near):  # batches of points with at most _PAIRS candidate pairs
            e = int(np.searchsorted(ends, (ends[s - 1] if s else 0) + _PAIRS, side="right"))
            e = max(e, s + 1)
            out[near[s:e]] = self._winding(p[near[s:e]], key[s:e], n[s:e]) != 0
            s = e
        return out

    def _winding(self, p, key, n) -> np.ndarray:
        """The winding number of the surface about each point (crossings above it, each
        +1 or -1 by the face's orientation seen from below)."""
        pt = np.repeat(np.arange(len(p)), n)
        k = np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n)
        face = self.faces_of[self.start[key][pt] + k]
        q = p[pt]
        tri = self.f[face]
        s = self.sign[face]
        e = [self._edge(tri[:, j], tri[:, (j + 1) % 3], q, s) for j in range(3)]
        hit = e[0][1] & e[1][1] & e[2][1]
        w = [x[0] for x in e]  # w[j]: the edge opposite vertex (j + 2) % 3
        z = self.v[tri, 2]
        total = w[0] + w[1] + w[2]
        with np.errstate(divide="ignore", invalid="ignore"):
            zhit = (w[1] * z[:, 0] + w[2] * z[:, 1] + w[0] * z[:, 2]) / total
        above = hit & (zhit > q[:, 2])
        return np.rint(np.bincount(pt[above], weights=s[above], minlength=len(p)))

    def _edge(self, i, j, q, s):
        """(``s`` times the orientation of q against the directed edge i -> j, whether q is
        on its inner side under the perturbation): evaluated from the lower-index endpoint,
        so two faces sharing the edge see the same value with opposite signs."""
        flip = i > j
        a = np.where(flip, j, i)
        b = np.where(flip, i, j)
        va, vb = self.v[a], self.v[b]
        dx, dy = vb[:, 0] - va[:, 0], vb[:, 1] - va[:, 1]
        val = dx * (q[:, 1] - va[:, 1]) - dy * (q[:, 0] - va[:, 0])
        sgn = np.where(flip, -1.0, 1.0) * s
        val = sgn * val
        # on the edge: the sign for the point moved by (d, d^2): -dy first, then dx
        tie = np.where(dy != 0, -dy, dx) * sgn
        return val, (val > 0) | ((val == 0) & (tie > 0))
