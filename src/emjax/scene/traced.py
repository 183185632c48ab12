"""The scene's subpixel raster as a JAX function of its geometry: fill fractions and normals
that move smoothly as a boundary crosses a cell, so ``jax.grad`` reaches an object's size,
center and rotation and a 2-D polygon's vertices (the FDTD and the FDFD use it alike).

The host raster (:func:`emjax.scene.rasterize`, NumPy) finds the structure: each E node's
material and which nodes an interface crosses. Where a single object with an analytic
signed distance ``d`` (Sphere, Ellipsoid, Box, Cylinder, Disk, Rectangle) alone reaches a
node's dual cell, it takes the cell's fill fraction as the volume of the cube cut by the
tangent plane, ``cube_plane_fill(n, d / dx)`` with ``n = grad d`` (closed form: piecewise
cubic in ``d``, continuous with its first derivative). This module evaluates the same
formula with ``jax.numpy``: :func:`object_fill` at given points, :func:`fill_fraction` on
a whole Yee component (dense), :func:`interface_values` at the host raster's interface
nodes (what a solver's traced path uses). For concrete parameters the values equal the host
raster's to rounding: the host takes ``grad d`` by central differences (step 1e-6 dx), this
module by automatic differentiation; measured difference <= 1e-10 in the fill fraction
(tests/scene/test_traced_raster.py checks 1e-8).

A :class:`~emjax.geometry.Polygon` turned about z only takes the exact area of the cell
inside it instead (:mod:`emjax.scene.polygon_fill`, the host's formula too) and the normal
averaged over its edges in the cell; its vertices may be traced. The values are computed in
float64 in either JAX mode (:func:`_in_float64`), and the node lists padded to powers of two
(:func:`bucket`) so that compiled functions serve neighbouring structures.

Within one structure (the same interface nodes) the result is smooth in the parameters; a
node that joins or leaves the interface does so at fill 0 or 1, where the fill fraction's
derivative is zero, so the raster is continuously differentiable as a boundary crosses cells.
Nodes the host samples (where two objects' cells meet, or shapes without a signed distance)
have no traced counterpart: :func:`interface_values` refuses them when a reaching object's
geometry is traced.
"""

from __future__ import annotations

import itertools
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import ConfigError
from ..geometry import Box, Cylinder, Disk, Ellipsoid, Polygon, Rectangle, Sphere
from .objects import Object, Scene
from .polygon_fill import lab_vertices, planar_polygon, polygon_cell_fill
from .raster import YeeRaster

__all__ = [
    "ANALYTIC",
    "bucket",
    "padded",
    "interface_groups",
    "cube_plane_fill",
    "fill_fraction",
    "interface_values",
    "object_fill",
    "signed_distance",
]

#: shapes with an analytic signed distance: their geometry can be traced
ANALYTIC = (Sphere, Ellipsoid, Box, Cylinder, Disk, Rectangle)
_TINY = 1e-30  # under a square root: keeps the gradient of |q| finite at q = 0


def _norm(q):
    return jnp.sqrt(jnp.maximum(jnp.sum(q * q, axis=-1), _TINY))


def _max_last(e):
    """``max(e, axis=-1)`` whose derivative is the mean of the entries that reach it (ties
    within 16 ulp: central differences' answer at a tie). ``jnp.max``'s rule finds them by
    exact equality with the recomputed maximum, which XLA's fused arithmetic can miss inside
    ``jax.jit`` (a zero normal where a box's faces meet)."""
    m = jnp.max(e, axis=-1, keepdims=True)
    tol = 16 * jnp.finfo(e.dtype).eps * (1 + jnp.abs(m))
    w = jax.lax.stop_gradient((e >= m - tol).astype(e.dtype))
    return jnp.sum(w * e, axis=-1) / jnp.sum(w, axis=-1)


def _box_distance(e):
    """Signed distance from the per-axis excesses ``e`` (..., k) over a box's half-sides."""
    top = _max_last(e)
    return _norm(jnp.maximum(e, 0.0)) * (top > 0) + jnp.minimum(top, 0.0)


def signed_distance(obj: Object, p):
    """Signed distance (negative inside) of ``obj``'s surface at lab points ``p`` (..., 3),
    as a JAX function of its (possibly traced) size, center and rotation; the same formulas
    as :meth:`Object.signed_distance` (exact for Sphere, Box, Cylinder, Disk, Rectangle;
    first order in the distance for an Ellipsoid)."""
    _check_shape(obj.shape)
    return _distance(obj.shape, *_placement(obj), p)


def _check_shape(shape) -> None:
    if type(shape) not in ANALYTIC:
        raise ConfigError(
            f"{shape.name}: traced geometry needs a shape with an analytic signed distance "
            f"({', '.join(c.__name__ for c in ANALYTIC)}); keep this object's size, center and "
            "rotation concrete"
        )


def _placement(obj: Object):
    """(size, center (3,), rotation matrix) of ``obj`` as JAX values."""
    center = jnp.stack([jnp.asarray(v) for v in obj.center])
    return jnp.asarray(obj.size), center, jnp.asarray(obj.rotation_matrix)


def _distance(shape, size, center, R, p):
    q = (p - center) @ R
    if type(shape) is Sphere:
        return _norm(q) - size / 2
    if type(shape) is Disk:
        return _norm(q[..., :2]) - size / 2
    if type(shape) in (Box, Rectangle):
        if type(shape) is Box:
            h = 0.5 * size * jnp.array([1.0, shape.y_over_x, shape.z_over_x])
            return _box_distance(jnp.abs(q) - h)
        return _box_distance(jnp.abs(q[..., :2]) - 0.5 * size * jnp.array([1.0, shape.y_over_x]))
    if type(shape) is Cylinder:
        e = jnp.stack([_norm(q[..., :2]) - size / 2, jnp.abs(q[..., 2]) - 0.5 * size * shape.aspect], axis=-1)
        return _box_distance(e)
    a = 0.5 * size * jnp.array([1.0, shape.y_over_x, shape.z_over_x])  # Ellipsoid
    u = q / a
    phi = jnp.sum(u * u, axis=-1) - 1.0
    return phi / jnp.maximum(_norm(2 * u / a), jnp.finfo(phi.dtype).tiny)


def cube_plane_fill(normal, distance):
    """:func:`emjax.scene.cube_plane_fill` in ``jax.numpy``: the volume fraction of the unit
    cube on the side ``n . x <= -distance`` of a plane (``normal`` (..., 3), ``distance`` in
    cell units, negative inside). Evaluate it in float64: the closed form sums terms of size
    ``1 / (n_x n_y n_z)`` (up to 1e12 with the 1e-4 floor on each component) that cancel, so
    float32 loses the result where a normal is near an axis (the FDTD's traced raster runs it
    in float64 in either JAX mode)."""
    n = jnp.maximum(jnp.abs(normal), 1e-4)  # as the host: a face-parallel plane as a limit
    n = n / jnp.sqrt(jnp.sum(n * n, axis=-1, keepdims=True))
    t = -distance
    total = jnp.zeros(jnp.shape(t))
    for v in itertools.product((0.0, 1.0), repeat=3):
        v = np.asarray(v) - 0.5
        sign = (-1.0) ** np.sum(v > 0)
        total = total + sign * jnp.maximum(0.0, t - n @ v) ** 3
    vol = total / (6.0 * n[..., 0] * n[..., 1] * n[..., 2])
    return jnp.clip(vol, 0.0, 1.0)


def object_fill(obj: Object, p, dx: float):
    """``(fill, normal)`` at lab points ``p`` (M, 3): the volume fraction of the dual cell
    (a cube of side ``dx`` centred on each point) inside ``obj`` by its tangent-plane cut,
    and the outward unit normal ``grad d`` there; JAX arrays, differentiable in ``obj``'s
    traced parameters. Exactly 0 or 1 where the surface is more than ``sqrt(3)/2 dx`` away.
    Computed in float64 in either JAX mode (:func:`cube_plane_fill`; :func:`_in_float64`)."""
    p = np.asarray(p, float).reshape(-1, 3)
    m = len(p)
    padded = np.concatenate([p, np.repeat(p[:1] if m else np.zeros((1, 3)), bucket(m) - m, axis=0)])
    if type(obj.shape) is Polygon:
        if not planar_polygon(obj):
            raise ConfigError(
                f"{obj.shape.name}: traced geometry of a polygon needs a simple outline turned about z "
                "only (rotation (alpha, 0, 0)); keep this object's geometry concrete"
            )
        v = obj.shape.traced_vertices
        v = jnp.asarray(obj.shape.vertices) if v is None else v
        f, n = _in_float64(partial(_polygon_fill, dx=dx), padded, v, *_placement(obj))
    else:
        _check_shape(obj.shape)
        f, n = _in_float64(partial(_fill, shape=obj.shape, dx=dx), padded, *_placement(obj))
    return (f, n) if len(f) == m else (f[:m], n[:m])


@partial(jax.jit, static_argnames=("dx",))
def _polygon_fill(p, vertices, size, center, R, dx):
    """:func:`object_fill` of a planar polygon: the exact area share of each cell (the
    volume share of a z-invariant outline) and the boundary-averaged normal (in the plane)."""
    f, n = polygon_cell_fill(jnp, lab_vertices(jnp, vertices, size, center, R), p[:, :2], dx)
    return f, jnp.concatenate([n, jnp.zeros((len(p), 1), n.dtype)], axis=1)


def exact(obj: Object) -> bool:
    """Whether the raster's fill fraction of ``obj`` (alone in a cell) is a JAX function of
    its geometry here: an analytic signed distance, or a planar polygon."""
    return type(obj.shape) in ANALYTIC or planar_polygon(obj)


def bucket(m: int) -> int:
    """``m`` rounded up to a power of two (at least 64): the length the traced raster pads its
    per-node arrays to, so that the compiled operations (one per array shape) serve the next
    structures too (an optimization's steps, a finite difference), not one per node count."""
    return max(64, 1 << max(m - 1, 0).bit_length())


def padded(raster: YeeRaster) -> YeeRaster:
    """``raster`` with each component's interface list padded to :func:`bucket` length by
    repeats of its first node (the same node written twice with the same values: a scatter
    of them is the unpadded one's)."""
    from dataclasses import replace

    out = []
    for it in raster.interface:
        m = 0 if it is None else len(it["fill"])
        if m == 0 or bucket(m) == m:
            out.append(it)
            continue
        extra = np.zeros(bucket(m) - m, np.int64)
        out.append({k: np.concatenate([v, v[extra]]) for k, v in it.items()})
    return replace(raster, interface=tuple(out))


def _in_float64(fn, points, *params):
    """``fn(points, *params)`` (a tuple of float arrays) evaluated in float64 whatever JAX's
    mode. In JAX's 32-bit mode the result comes back in float32 with a derivative of float32
    operations only (the caller's ``jax.grad`` transposes it outside the 64-bit scope): the
    Jacobian with respect to the few parameters (a size, a center, a rotation, a polygon's
    vertices) is computed in float64 with the value, the tangent is ``J @ t``. The
    parameters must have values (the scene's geometry always does: Scene.primal refuses
    abstract geometry before the raster runs)."""
    if jax.config.jax_enable_x64:
        return fn(jnp.asarray(points), *params)
    from ..backend import precision_scope

    def f64(*a):
        return fn(jnp.asarray(points, jnp.float64), *(jnp.asarray(x, jnp.float64) for x in a))

    @jax.custom_jvp
    def value(*a):
        with precision_scope():
            return tuple(o.astype(jnp.float32) for o in f64(*a))

    @value.defjvp
    def _(primals, tangents):
        with precision_scope():
            out = f64(*primals)
            jac = jax.jacfwd(f64, argnums=tuple(range(len(primals))))(*primals)
            out = tuple(o.astype(jnp.float32) for o in out)
            jac = jax.tree_util.tree_map(lambda j: j.astype(jnp.float32), jac)
        tan = tuple(
            sum(jnp.tensordot(j, jnp.asarray(t, jnp.float32), axes=jnp.ndim(t)) for j, t in zip(jk, tangents))
            for jk in jac
        )
        return out, tan

    return value(*(jnp.asarray(x, jnp.float32) for x in params))


@partial(jax.jit, static_argnames=("shape", "dx"))
def _fill(p, size, center, R, shape, dx):
    """:func:`object_fill` compiled once per shape kind and point count."""
    d = _distance(shape, size, center, R, p)
    grad = jax.vmap(jax.grad(lambda x: _distance(shape, size, center, R, x)))(p.reshape(-1, 3)).reshape(
        p.shape
    )
    n = grad / jnp.maximum(jnp.sqrt(jnp.sum(grad * grad, axis=-1, keepdims=True)), jnp.finfo(grad.dtype).tiny)
    return cube_plane_fill(n, d / dx), n


def node_positions(shape, dx: float, origin, component: int) -> np.ndarray:
    """Lab positions (nx, ny, nz, 3) of E_``component``'s nodes (the host raster's)."""
    xs = [origin[ax] + (np.arange(n) + (0.5 if ax == component else 0.0)) * dx for ax, n in enumerate(shape)]
    return np.stack(np.meshgrid(*xs, indexing="ij"), axis=-1)


def fill_fraction(obj: Object, shape, dx: float, origin=(0.0, 0.0, 0.0), component: int = 0):
    """The volume fraction of each E_``component`` node's dual cell inside ``obj``, shape
    ``shape`` (a JAX array): the smooth raster of one object on a whole grid (dense: for
    design regions of modest size). Equals the host raster's fill fraction of the object's
    material wherever that one uses the tangent-plane cut. Float64 (see
    :func:`cube_plane_fill`)."""
    pos = node_positions(shape, dx, tuple(float(v) for v in origin), component)
    f, _ = object_fill(obj, pos.reshape(-1, 3), dx)
    return f.reshape(tuple(shape))


def _reaching(scene: Scene, pos: np.ndarray, dx: float) -> list:
    """Per node, the indices of the objects whose bounding box widened by half a cell's
    diagonal reaches it (the host raster's test for the tangent-plane cut)."""
    half = np.sqrt(3) / 2 * dx
    out = [[] for _ in range(len(pos))]
    for k, o in enumerate(scene.objects):
        lo, hi = o.bounds()
        hit = np.flatnonzero(np.all((pos > lo - half) & (pos < hi + half), axis=1))
        for i in hit:
            out[i].append(k)
    return out


def interface_groups(scene: Scene, raster: YeeRaster, component: int, base: Scene | None = None) -> list:
    """The host part of :func:`interface_values`: ``[(k, rows, mine), ...]``, per object
    ``k`` with traced geometry, the interface nodes (rows of ``raster.interface[component]``)
    that it alone reaches (the tangent-plane cut) and whether each node's own material is
    the object's. A ConfigError names the object when traced geometry reaches a node the host
    sampled. ``base``: ``scene.primal()`` where it is known already."""
    it = raster.interface[component]
    if not len(it["fill"]) or not any(o.traced for o in scene.objects):
        return []
    primal = scene.primal() if base is None else base
    pos = node_positions(raster.shape, raster.dx, raster.origin, component)[tuple(it["index"].T)]
    groups = {}
    smooth = [exact(o) for o in primal.objects]
    for i, ks in enumerate(_reaching(primal, pos, raster.dx)):
        o = scene.objects[ks[0]] if len(ks) == 1 else None
        if o is not None and len(o.material) == 1 and smooth[ks[0]]:
            groups.setdefault(ks[0], []).append(i)
            continue
        for k in ks:
            if scene.objects[k].traced:
                why = (
                    f"another object's cells meet it there ({len(ks)} objects reach the node)"
                    if len(ks) > 1
                    else f"{scene.objects[k].shape.name} has no analytic signed distance (nor is a "
                    "planar polygon)"
                )
                raise ConfigError(
                    f"Scene.objects[{k}] ({scene.objects[k].shape.name}): its traced "
                    f"{', '.join(scene.objects[k].traced)} cannot be differentiated at the node "
                    f"{it['index'][i].tolist()} of E_{'xyz'[component]}: {why}; keep objects with "
                    f"traced geometry over a cell apart, use one of "
                    f"{', '.join(c.__name__ for c in ANALYTIC)} or a Polygon, or keep that geometry concrete"
                )
    out = []
    for k, rows in sorted(groups.items()):
        if scene.objects[k].traced:  # else the host's values stand
            rows = np.asarray(rows)
            rows = np.concatenate([rows, np.repeat(rows[:1], bucket(len(rows)) - len(rows))])  # see bucket()
            m_obj = primal.material_index(primal.objects[k].material[0])
            out.append((k, rows, it["own"][rows] == m_obj))
    return out


def interface_values(
    scene: Scene, raster: YeeRaster, component: int, base: Scene | None = None, groups: list | None = None
):
    """``(fill, normal)`` at ``raster``'s interface nodes of E_``component`` as JAX
    functions of ``scene``'s traced parameters: ``raster`` is the host raster of
    ``scene.primal()`` (the structure: nodes, own and other materials), and the result
    replaces its ``fill`` and ``normal`` there (the same meaning: fraction of the node's
    own material, normal pointing out of it). Nodes the host sampled keep its values; a
    ConfigError names the object when one of them is reached by traced geometry. ``base``:
    ``scene.primal()`` where it is known already (inside ``jax.jit`` the scene's own tracers
    are abstract); ``groups``: :func:`interface_groups`' answer where it is known already."""
    it = raster.interface[component]
    fill = jnp.asarray(it["fill"])
    normal = jnp.asarray(it["normal"])
    if groups is None:
        groups = interface_groups(scene, raster, component, base)
    if not groups:
        return fill, normal
    pos = node_positions(raster.shape, raster.dx, raster.origin, component)[tuple(it["index"].T)]
    for k, rows, mine in groups:
        f_in, n = object_fill(scene.objects[k], pos[rows], raster.dx)
        fill = fill.at[rows].set(jnp.where(mine, f_in, 1.0 - f_in))
        normal = normal.at[rows].set(jnp.where(mine[:, None], 1.0, -1.0) * n)
    return fill, normal
