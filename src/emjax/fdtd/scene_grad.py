"""The scene of a physical :class:`~emjax.fdtd.Simulation` whose parameters are JAX tracers
(``jax.grad`` over an object's size, center, rotation, a 2-D Polygon's vertices or a
permittivity): the cell-index materials as JAX functions of them.

The host raster of the scene's values (:meth:`emjax.scene.Scene.primal`) gives the
structure (each E node's material, the interface nodes); :mod:`emjax.scene.traced` gives
the fill fractions and normals there as JAX functions of the geometry. The update is the
concrete one's (:mod:`emjax.fdtd.scene_raster`): Farjadpour-Kottke's inverse tensor at the
interface nodes (a traced :class:`~emjax.fdtd.SubpixelBox`), each other E node its own
material's eps (given per node here: ``eps`` of shape ``(3, nx, ny, nz)``). The forward
values equal the concrete run's to rounding; ``fdtd.run`` then differentiates through JAX's
reverse mode of the checkpointed time loop.

Covered: dielectric materials (real eps >= 1, numbers or ``materials.Constant``) with
``averaging="subpixel"`` or ``"diagonal"`` (geometry and eps; diagonal: the same tensors'
diagonal set into the per-node eps, no box) or ``"staircase"`` (eps only: a staircased
boundary has no derivative). PEC and Drude/Lorentz media are refused with the reason. The
tensors are computed in float64 in either JAX mode (:func:`_in_float64`). Under ``jax.jit`` only
permittivities may be traced (the host raster needs the geometry's values; Scene.primal
refuses abstract geometry with that reason). The raster's compiled functions are cached by
structure (:data:`_COMPILED`: the interface nodes, materials and untraced values), as the
time loop's are by their arrays' shapes: a new set of interface nodes compiles anew.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np

from ..backend import precision_scope
from ..errors import ConfigError
from ..materials import Constant
from ..tracing import is_traced, primal
from .subpixel import SubpixelBox


def _eps(name: str, m):
    """The (possibly traced) real permittivity of a dielectric scene material."""
    if is_traced(m):
        value = primal(m)
        if value is not None and (np.iscomplexobj(value) or value.real < 1):
            raise ConfigError(f"FDTD: {name} = {value.item()} must be a real permittivity >= 1")
        if jnp.iscomplexobj(m):
            raise ConfigError(f"FDTD: {name} must be a real permittivity >= 1 (traced complex given)")
        return m
    if isinstance(m, Constant):
        m = complex(m.permittivity(1.0))
        m = m.real if m.imag == 0 else m
    if isinstance(m, (int, float)) and m >= 1:
        return float(m)
    raise ConfigError(
        f"FDTD: differentiating a scene (traced parameters) needs dielectric materials (real eps "
        f">= 1); {name} is {m!r}: keep the parameters of scenes with PEC, Drude/Lorentz or lossy "
        "media concrete, or differentiate GridSimulation's per-cell eps"
    )


def _check_inside(sim, scene, tf) -> np.ndarray:
    """As :func:`emjax.fdtd.scene_raster.materials`: the objects inside the region (the CPML
    excluded; they may run into a CPML, as a waveguide through a port does, or cross a
    periodic face) and the TF/SF box; returns the periodic axes."""
    from .grid import CPML, Bloch, Periodic

    g = sim.grid
    origin = np.asarray(sim.origin)
    lo = origin + np.array([p[0] for p in sim.pml_cells]) * g.dx
    hi = origin + np.array([n - p[1] for n, p in zip(g.shape, sim.pml_cells)]) * g.dx
    periodic = np.array([isinstance(b, (Periodic, Bloch)) for b in g.boundary])
    for i, o in enumerate(scene.objects):  # nothing wholly outside the region
        a, b = o.bounds()
        if np.any((b <= lo) | (a >= hi)):
            raise ConfigError(
                f"Scene.objects[{i}] ({o.shape.name}, bounds {np.round(a, 6).tolist()} .. "
                f"{np.round(b, 6).tolist()}) lies outside the simulated region "
                f"{np.round(lo, 6).tolist()} .. {np.round(hi, 6).tolist()}: it would not be simulated"
            )
    open_face = periodic | np.array([isinstance(b, CPML) for b in g.boundary])
    scene.check_inside(
        np.where(open_face, -np.inf, lo),
        np.where(open_face, np.inf, hi),
        "the simulated region (the CPML excluded)",
    )
    if tf is not None:
        tf_lo = origin + np.asarray(tf.lo) * g.dx
        tf_hi = origin + np.asarray(tf.hi) * g.dx
        scene.check_inside(tf_lo + 2 * g.dx, tf_hi - 2 * g.dx, "the PlaneWaveSource box (less two cells)")
    return periodic


def _box_bounds(sim, points, periodic):
    """The box of E nodes holding ``points`` (K, 3), as the concrete raster's, or a
    ConfigError where it comes within two cells of the CPML."""
    g = sim.grid
    blo, bhi = points.min(axis=0), points.max(axis=0) + 1
    for ax in range(3):
        if g.shape[ax] == 1:
            blo[ax], bhi[ax] = 0, 1
    pml = [max(p) for p in sim.pml_cells]
    for ax in range(3):
        if periodic[ax] and g.shape[ax] > 1 and (blo[ax] < 2 or bhi[ax] > g.shape[ax] - 2):
            blo[ax], bhi[ax] = 0, g.shape[ax]
    for a, b, n, p, per in zip(blo, bhi, g.shape, pml, periodic):
        if n > 1 and not (per and a == 0 and b == n) and (a < 2 + p or b > n - 2 - p):
            raise ConfigError(
                "subpixel averaging at an interface within two cells of the CPML is not supported: "
                'keep the objects two cells away from it, or use averaging="diagonal" or "staircase"'
            )
    return blo, bhi


def _leaves(scene):
    """The scene's traced values (a list, each tracer once) and a function rebuilding the
    scene from a list of values in their place (the scene inside ``jax.jit``)."""
    from ..scene import Object, Scene

    leaves, slots = [], {}

    def slot(x):
        if not is_traced(x):
            return None
        if id(x) not in slots:
            slots[id(x)] = len(leaves)
            leaves.append(x)
        return slots[id(x)]

    def describe(slot_index, value):
        return ("traced", slot_index) if slot_index is not None else ("value", repr(value))

    bg = slot(scene.background)
    specs = [
        (
            tuple(slot(m) for m in o.material),
            tuple(slot(v) for v in o.center),
            slot(o.size),
            slot(o.rotation_matrix) if "rotation" in o.traced else None,
        )
        for o in scene.objects
    ]

    # a Polygon's traced outline: its normalized vertices (the shape keeps their values)
    outline = [slot(o.shape.traced_vertices) if "vertices" in o.traced else None for o in scene.objects]
    shapes = [o.shape if j is None else o.shape.with_traced(None) for o, j in zip(scene.objects, outline)]
    # the untraced values only (a cached rebuild must hold no tracer of an earlier call)
    fixed = [
        (
            shape,
            tuple(None if i is not None else m for i, m in zip(mats, o.material)),
            tuple(None if i is not None else v for i, v in zip(center, o.center)),
            None if size is not None else o.size,
            None if rot is not None else o.rotation,
        )
        for o, shape, (mats, center, size, rot) in zip(scene.objects, shapes, specs)
    ]
    background = None if bg is not None else scene.background

    def rebuild(values):
        def get(i, default):
            return default if i is None else values[i]

        objs = [
            Object(
                shape if j is None else shape.with_traced(values[j]),
                tuple(get(i, m) for i, m in zip(mats, mats0)),
                tuple(get(i, v) for i, v in zip(center, center0)),
                get(size, size0),
                get(rot, rot0),
            )
            for (shape, mats0, center0, size0, rot0), (mats, center, size, rot), j in zip(
                fixed, specs, outline
            )
        ]
        return Scene(objs, get(bg, background))

    description = (describe(bg, scene.background),) + tuple(
        (
            type(o.shape).__name__,
            repr(o.shape) if j is None else ("outline", len(o.shape.vertices), describe(j, None)),
            tuple(describe(i, m) for i, m in zip(mats, o.material)),
            tuple(describe(i, v) for i, v in zip(center, o.center)),
            describe(size, o.size),
            describe(rot, None if rot is not None else np.asarray(o.rotation_matrix).tolist()),
        )
        for o, (mats, center, size, rot), j in zip(scene.objects, specs, outline)
    )
    return leaves, rebuild, description


#: compiled raster functions by structure (the same interface nodes, materials and untraced
#: values): an optimization's next step reuses them instead of compiling anew
_COMPILED: OrderedDict = OrderedDict()
_COMPILED_MAX = 8


def _digest(*parts) -> str:
    """A hash of nested tuples of plain values and NumPy arrays (shape, dtype and bytes)."""
    h = hashlib.sha1()

    def feed(x):
        if isinstance(x, np.ndarray):
            h.update(repr((x.shape, x.dtype.str)).encode())
            h.update(np.ascontiguousarray(x).tobytes())
        elif isinstance(x, (tuple, list)):
            h.update(b"(")
            for v in x:
                feed(v)
            h.update(b")")
        else:
            h.update(repr(x).encode())
        h.update(b",")

    feed(parts)
    return h.hexdigest()


def _in_float64(entry, leaves):
    """``f(leaves)`` (one array) evaluated in float64 whatever JAX's default: the
    cube-plane fill cancels terms of size ``1 / (n_x n_y n_z)``, which float32 loses where a
    normal is near an axis. In JAX's 32-bit mode the result comes back in float32 with a
    derivative rule of float32 operations only (``jax.grad``'s backward pass runs after this
    scope: it must not meet float64 arrays): the Jacobian with respect to the few traced
    scalars is computed in float64 with the value, and the tangent is ``J @ t``."""
    f = entry["tensors"]
    if jax.config.jax_enable_x64:  # 64-bit JAX: plain
        return f(leaves)
    if any(is_traced(v) and primal(v) is None for v in leaves):
        # inside jax.jit only concrete geometry passes (Scene.primal refuses the rest): the
        # fill fractions are the host's, float32 loses nothing
        return f(leaves)
    shapes = [jnp.shape(v) for v in leaves]
    sizes = [int(np.prod(sh)) for sh in shapes]

    def unflatten(x):
        out, k = [], 0
        for sh, n in zip(shapes, sizes):
            out.append(x[k : k + n].reshape(sh))
            k += n
        return out

    def g(x):
        return f(unflatten(x))

    @jax.custom_jvp
    def value(x):
        with precision_scope():
            return g(jnp.asarray(np.asarray(x), jnp.float64)).astype(jnp.float32)

    @value.defjvp
    def _(primals, tangents):
        (x,), (t,) = primals, tangents
        x64 = np.asarray(primal(x) if is_traced(x) else x, np.float64)  # concrete: checked above
        with precision_scope():
            if entry["jacobian"] is None:
                entry["jacobian"] = jax.jit(lambda x: (g(x), jax.jacfwd(g)(x)))
            out, jac = entry["jacobian"](jnp.asarray(x64))
            out, jac = np.asarray(out, np.float32), np.asarray(jac, np.float32)
        return jnp.asarray(out), jnp.tensordot(jnp.asarray(jac), t, axes=1)

    x = jnp.concatenate([jnp.ravel(jnp.asarray(v, jnp.float32)) for v in leaves])
    return value(x)


def _compile(raster, box, groups, names, rebuild) -> dict:
    """The jitted per-node eps and box tensors of a structure (what a cache entry holds);
    they read only their arguments' structure, never the scene's traced values."""
    from ..scene.traced import interface_values

    def node_eps(values):
        """The per-node eps (a lookup of the materials' eps by the node labels)."""
        sc = rebuild(values)
        lut = jnp.stack([jnp.asarray(_eps(n, m), dtype=float) for n, m in zip(names, sc.materials)])
        return jnp.stack([lut[lab] for lab in raster.label]), lut

    def tensors(values):
        """The box's inverse tensors: 1 / eps on the diagonal, Kottke's at interface nodes."""
        sc = rebuild(values)
        eps, lut = node_eps(values)
        blo, bhi = box
        sl = tuple(slice(int(a), int(b)) for a, b in zip(blo, bhi))
        inv_box = jnp.zeros((3, 3) + tuple(int(v) for v in bhi - blo), dtype=eps.dtype)
        for c in range(3):
            inv_box = inv_box.at[c, c].set(1.0 / eps[c][sl])
            it = raster.interface[c]
            if not len(it["fill"]):
                continue
            f, n = interface_values(sc, raster, c, groups=groups[c])
            e1, e2 = lut[it["own"]], lut[it["other"]]
            mean_inv = f / e1 + (1 - f) / e2  # <1/eps>
            inv_mean = 1.0 / (f * e1 + (1 - f) * e2)  # <eps>^-1
            P = n[:, :, None] * n[:, None, :]
            inv = P * mean_inv[:, None, None] + (jnp.eye(3)[None] - P) * inv_mean[:, None, None]
            i = tuple((it["index"] - blo).T)
            inv_box = inv_box.at[(c, slice(None)) + i].set(inv[:, c, :])  # (M, 3): row c per node
        return inv_box

    # each one compiled function, not one operation at a time (a ConfigError raised while
    # tracing reaches the caller unchanged)
    return {"eps": jax.jit(lambda v: node_eps(v)[0]), "tensors": jax.jit(tensors), "jacobian": None}


def materials(sim, tf=None) -> dict:
    """``eps`` (per E node, ``(3, nx, ny, nz)``) and a traced ``subpixel`` box for the
    :class:`GridSimulation` of ``sim``, whose scene holds JAX tracers."""
    from ..scene import rasterize
    from ..scene.traced import interface_groups

    scene = sim.scene
    base = scene.primal(structure_only=True)  # the values: the host raster's structure
    periodic = _check_inside(sim, base, tf)
    names = ["Scene.background"] + [f"Scene.materials[{i}]" for i in range(1, len(scene.materials))]
    for name, m in zip(names, scene.materials):
        _eps(name, m)
    geometry = [name for o in scene.objects for name in o.traced]
    if geometry and sim.averaging == "staircase":
        raise ConfigError(
            f'averaging="staircase" has no derivative with respect to an object\'s {geometry[0]} '
            '(a staircased boundary jumps from cell to cell): use averaging="subpixel" or "diagonal"'
        )
    g = sim.grid
    diagonal = sim.averaging == "diagonal"
    r = rasterize(base, g.shape, g.dx, sim.origin, averaging="subpixel" if diagonal else sim.averaging)
    nodes = [r.interface[c]["index"] if len(r.interface[c]["fill"]) else None for c in range(3)]
    present = [q for q in nodes if q is not None]
    box = None
    if present and diagonal:  # the tensors' diagonal goes per node: no box, no margin to keep
        every = np.concatenate(present)
        box = every.min(axis=0), every.max(axis=0) + 1
    elif present:
        box = _box_bounds(sim, np.concatenate(present), periodic)
    leaves, rebuild, description = _leaves(scene)
    groups = [interface_groups(scene, r, c, base) if nodes[c] is not None else [] for c in range(3)]
    # what the compiled functions read: the raster without the values the traced geometry
    # replaces (nor the scene's values), the groups, the scene's structure and untraced values
    stripped = []
    for c in range(3):
        it = dict(r.interface[c])
        it["fill"], it["normal"] = it["fill"].copy(), it["normal"].copy()
        for _, rows, _ in groups[c]:
            it["fill"][rows], it["normal"][rows] = 0.0, 0.0
        stripped.append(it)
    raster = replace(r, scene=None, interface=tuple(stripped))
    key = _digest(
        (raster.shape, raster.dx, raster.origin, raster.averaging, None if box is None else box),
        tuple(raster.label),
        tuple((it["index"], it["own"], it["other"], it["fill"], it["normal"]) for it in stripped),
        tuple(tuple((k, rows, mine) for k, rows, mine in grp) for grp in groups),
        tuple(names),
        description,
    )
    entry = _COMPILED.pop(key, None) or _compile(raster, box, groups, names, rebuild)
    _COMPILED[key] = entry
    while len(_COMPILED) > _COMPILED_MAX:
        _COMPILED.popitem(last=False)
    eps = entry["eps"](leaves)
    inv_box = None if box is None else _in_float64(entry, leaves)
    if box is None:
        return {"eps": eps, "subpixel": None}
    if diagonal:  # each interface node's E_c takes 1 / eps_inv[c, c] (scene_raster's rule)
        for c in range(3):
            if nodes[c] is not None:
                i = tuple((nodes[c] - box[0]).T)
                eps = eps.at[(c,) + tuple(nodes[c].T)].set(1.0 / inv_box[c, c][i].astype(eps.dtype))
        return {"eps": eps, "subpixel": None}
    active = np.zeros((3,) + np.shape(inv_box)[2:], bool)
    for c in range(3):
        if nodes[c] is not None:
            active[(c,) + tuple((nodes[c] - box[0]).T)] = True
    return {"eps": eps, "subpixel": SubpixelBox(tuple(int(v) for v in box[0]), inv_box, active)}
