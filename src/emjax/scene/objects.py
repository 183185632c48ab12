"""A scene in physical units: objects (a shape, a material, a placement) over a background.

Shapes are :mod:`emjax.geometry`'s (normalized by their extent along x, centred at the
origin); an :class:`Object` scales one to ``size`` (its extent along its own x), turns it by
ZYZ Euler angles (degrees, as ADDA) or a rotation matrix, and moves it to ``center``.
Materials: a number (relative permittivity, complex allowed), an :mod:`emjax.materials`
material (Constant, Drude/Lorentz, Debye, Tabulated) or :data:`PEC`. Later objects override
earlier ones where they overlap.

Differentiable: ``size``, ``center`` (numbers or a (3,) array), ``rotation``, a numeric
permittivity and a :class:`emjax.geometry.Polygon`'s vertices may be JAX tracers; their
values are checked where JAX knows them (``jax.grad``, ``jax.jvp``), only their shapes
inside ``jax.jit``. The host-side methods (:meth:`Object.domain`,
:meth:`Object.bounds`, :meth:`Object.signed_distance`) use the values (:meth:`Object.primal`);
``emjax.scene.traced`` holds the JAX functions of them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import ConfigError, require_floats, require_positive
from ..geometry import Shape, Voxels
from ..materials import Material
from ..scattering import euler_matrix
from ..tracing import is_traced, primal
from .params import PrimalValue, has_tracer, traced_rotation

__all__ = ["PEC", "Object", "Scene", "PerfectConductor"]


class PerfectConductor:
    """A perfect electric conductor (tangential E = 0 inside)."""

    def __repr__(self) -> str:
        return "PEC"

    def __reduce__(self):
        return "PEC"


#: the perfect electric conductor, as a material
PEC = PerfectConductor()


def check_material(name: str, m):
    """A number (eps, finite), a Material or PEC; returns it (numbers as complex or float).
    A JAX tracer (a permittivity being differentiated) is returned as it is, its value
    checked where it is concrete."""
    if m is PEC or isinstance(m, Material):
        return m
    if is_traced(m):
        if np.ndim(m) != 0:
            raise ConfigError(f"{name} must be a scalar permittivity, got an array of shape {np.shape(m)}")
        value = primal(m)
        if value is not None:
            check_material(name, value.item())
        return m
    if not isinstance(m, (bool, np.bool_)) and hasattr(m, "dtype") and np.ndim(m) == 0:
        m = np.asarray(m).item()  # a 0-d NumPy or JAX array (an optimizer's parameter) is a number
    if isinstance(m, bool) or not isinstance(m, (int, float, complex, np.number)):
        raise ConfigError(
            f"{name} must be a permittivity (number), an emjax.materials material or scene.PEC, got {m!r}"
        )
    z = complex(m)
    if not (math.isfinite(z.real) and math.isfinite(z.imag)):
        raise ConfigError(f"{name} must be finite, got {m!r}")
    if z.imag < 0:
        raise ConfigError(f"{name} = {m!r}: Im eps must be >= 0 (exp(-i omega t): absorption)")
    return z.real if z.imag == 0 else z


@dataclass(frozen=True, eq=False)
class Object:
    """``shape`` of extent ``size`` along its x axis, turned by ``rotation`` (ZYZ Euler angles
    in degrees, or a 3x3 matrix) and centred at ``center``; ``material`` (one per domain for
    multi-domain shapes such as CoatedSphere: a tuple, domain 0 first). ``size``, ``center``,
    ``rotation``, a numeric material and a Polygon's ``vertices`` may be JAX tracers:
    :attr:`traced` names them. Left out, ``center`` and ``size`` are the shape's own
    placement where it has one (a :class:`emjax.geometry.Mesh` or a polygon of
    :func:`emjax.geometry.from_gds`: where the file puts it), else the origin and 1."""

    shape: Shape
    material: object
    center: tuple = None
    size: float = None
    rotation: object = None

    def __post_init__(self):
        if not isinstance(self.shape, Shape):
            raise ConfigError(f"Object.shape must be an emjax.geometry shape, got {self.shape!r}")
        own = getattr(self.shape, "placement", None) or ((0.0, 0.0, 0.0), 1.0)
        if self.center is None:
            object.__setattr__(self, "center", own[0])
        if self.size is None:
            object.__setattr__(self, "size", own[1])
        for name, value in vars(self.shape).items():
            if name.startswith("_"):  # a Polygon's traced outline, a file shape's placement, caches
                continue
            numeric = isinstance(value, np.ndarray) and value.dtype != object  # no tracer inside
            if has_tracer(value) or (not numeric and np.ndim(value) and any(map(is_traced, np.ravel(value)))):
                raise ConfigError(
                    f"{type(self.shape).__name__}.{name} is a JAX tracer: a shape's proportions "
                    "cannot be traced; trace the Object's size, center or rotation (a box of "
                    "independent sides: one traced size per object)"
                )
        n = self.shape.n_domains
        mats = self.material if isinstance(self.material, (tuple, list)) else (self.material,)
        if len(mats) != n:
            raise ConfigError(
                f"Object.material: {self.shape.name} has {n} domain(s), got {len(mats)} material(s)"
            )
        object.__setattr__(
            self, "material", tuple(check_material(f"Object.material[{i}]", m) for i, m in enumerate(mats))
        )
        traced = []
        if has_tracer(self.center):
            shape = (len(self.center),) if isinstance(self.center, (list, tuple)) else np.shape(self.center)
            if shape != (3,) or any(np.ndim(v) for v in self.center):
                raise ConfigError(f"Object.center must be three numbers, got {self.center!r}")
            c = tuple(self.center[i] for i in range(3))
            value = primal(c)
            if value is not None and not np.all(np.isfinite(value)):
                raise ConfigError(f"Object.center must be three finite numbers, got {value.tolist()}")
            traced.append("center")
        else:
            try:
                c = tuple(float(v) for v in self.center)
            except (TypeError, ValueError):
                raise ConfigError(f"Object.center must be three numbers, got {self.center!r}") from None
            if len(c) != 3 or not all(math.isfinite(v) for v in c):
                raise ConfigError(f"Object.center must be three finite numbers, got {self.center!r}")
        object.__setattr__(self, "center", c)
        if is_traced(self.size):
            if np.ndim(self.size) != 0:
                raise ConfigError(
                    f"Object.size must be a scalar, got an array of shape {np.shape(self.size)}"
                )
            value = primal(self.size)
            if value is not None:
                require_positive("Object.size", value.item())
            traced.append("size")
        else:
            require_positive("Object.size", self.size)
            object.__setattr__(self, "size", float(self.size))
        R = np.eye(3)
        if self.rotation is not None and has_tracer(self.rotation):
            R = traced_rotation(self.rotation)
            traced.append("rotation")
        elif self.rotation is not None:
            r = require_floats(
                "Object.rotation", self.rotation, "three Euler angles (deg) or a 3x3 rotation matrix"
            )
            if r.shape == (3,):
                R = euler_matrix(*r)
            elif r.shape == (3, 3) and np.allclose(r @ r.T, np.eye(3), atol=1e-9):
                R = r
            else:
                raise ConfigError("Object.rotation must be (alpha, beta, gamma) in degrees or a 3x3 rotation")
        object.__setattr__(self, "_R", R)
        if getattr(self.shape, "traced_vertices", None) is not None:
            traced.append("vertices")
        object.__setattr__(self, "traced", tuple(traced))

    @property
    def rotation_matrix(self):
        """Columns: the object's x, y, z axes in the lab frame (a JAX array when the
        rotation is traced)."""
        return self._R

    def primal(self) -> Object:
        """This object with concrete geometry: itself when nothing is traced, else its
        traced size, center and rotation replaced by their values (a ConfigError where they
        have none: abstract tracers inside ``jax.jit`` or ``jax.vmap``). The host-side
        methods (:meth:`domain`, :meth:`bounds`, :meth:`signed_distance`) use it."""
        if not self.traced:
            return self
        cached = self.__dict__.get("_primal")
        if cached is not None:
            return cached
        values = {}
        for name in self.traced:
            if name == "vertices":  # the shape's values are concrete already
                continue
            value = primal(getattr(self, name) if name != "rotation" else self._R)
            if value is None:
                raise ConfigError(
                    f"Object.{name} is abstract (traced inside jax.jit or jax.vmap): the scene is "
                    "rasterized on the host from the geometry's values; take jax.grad of the loss "
                    "without jax.jit or jax.vmap around it (or keep the geometry concrete there)"
                )
            values[name] = tuple(value.tolist()) if name == "center" else value
        values["rotation"] = values.get("rotation", self.rotation)
        if "size" in values:
            values["size"] = float(values["size"])
        shape = self.shape
        if "vertices" in self.traced:
            shape = type(shape)(vertices=shape.vertices)
        out = Object(
            shape,
            self.material,
            values.get("center", self.center),
            values.get("size", self.size),
            values["rotation"],
        )
        object.__setattr__(self, "_primal", out)
        return out

    def domain(self, x, y, z) -> np.ndarray:
        """Domain index at lab points (arrays of any shape), -1 outside."""
        if self.traced:
            return self.primal().domain(x, y, z)
        x, y, z = np.broadcast_arrays(np.asarray(x, float), np.asarray(y, float), np.asarray(z, float))
        p = np.stack([x, y, z], axis=-1)
        q = (p - np.asarray(self.center)) @ self._R / self.size  # the shape's frame, units of size
        if isinstance(self.shape, Voxels):
            return _voxel_domain(self.shape, q)
        return np.asarray(self.shape.domain(q[..., 0], q[..., 1], q[..., 2]))

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Lab-frame bounding box (lo, hi) of the turned shape."""
        if self.traced:
            return self.primal().bounds()
        half = 0.5 * self.size * np.array([1.0, self.shape.yx_ratio, self.shape.zx_ratio])
        ext = np.abs(self._R) @ half
        c = np.asarray(self.center)
        return c - ext, c + ext

    def signed_distance(self, p: np.ndarray):
        """Signed distance to the surface at lab points ``p`` (..., 3), negative inside, for the
        shapes where it is analytic near the surface (Sphere, Box, Cylinder, Mesh: exact;
        Ellipsoid: to first order in the distance), else None (the raster then samples :meth:`domain`)."""
        from ..geometry import Box, Cylinder, Disk, Ellipsoid, Rectangle, Sphere

        if self.traced:
            return self.primal().signed_distance(p)
        q = (p - np.asarray(self.center)) @ self._R
        if type(self.shape) is Sphere:
            return np.linalg.norm(q, axis=-1) - self.size / 2
        if type(self.shape) is Disk:
            return np.linalg.norm(q[..., :2], axis=-1) - self.size / 2
        if type(self.shape) is Rectangle:
            e = np.abs(q[..., :2]) - 0.5 * self.size * np.array([1.0, self.shape.y_over_x])
            return np.linalg.norm(np.maximum(e, 0.0), axis=-1) + np.minimum(np.max(e, axis=-1), 0.0)
        if type(self.shape) in (Box, Cylinder):
            if type(self.shape) is Box:
                h = 0.5 * self.size * np.array([1.0, self.shape.y_over_x, self.shape.z_over_x])
                e = np.abs(q) - h
            else:  # radial and axial excess
                e = np.stack(
                    [
                        np.linalg.norm(q[..., :2], axis=-1) - self.size / 2,
                        np.abs(q[..., 2]) - 0.5 * self.size * self.shape.aspect,
                    ],
                    axis=-1,
                )
            outside = np.linalg.norm(np.maximum(e, 0.0), axis=-1)
            return outside + np.minimum(np.max(e, axis=-1), 0.0)
        if type(self.shape) is Ellipsoid:
            a = 0.5 * self.size * np.array([1.0, self.shape.y_over_x, self.shape.z_over_x])
            u = q / a
            phi = np.sum(u * u, axis=-1) - 1.0
            grad = np.linalg.norm(2 * u / a, axis=-1)
            return phi / np.maximum(grad, 1e-300)  # phi / |grad phi|: the distance to first order
        own = getattr(self.shape, "signed_distance", None)  # a Mesh: to its nearest face
        return None if own is None else self.size * own(q / self.size)


def _voxel_domain(shape: Voxels, q: np.ndarray) -> np.ndarray:
    a = np.asarray(shape.array)
    a = np.where(a, 0, -1) if a.dtype == bool else a
    nx = a.shape[0]
    idx = np.floor((q + 0.5 * np.array(a.shape) / nx) * nx).astype(np.int64)
    ok = np.all((idx >= 0) & (idx < np.array(a.shape)), axis=-1)
    idx = np.where(ok[..., None], idx, 0)
    return np.where(ok, a[idx[..., 0], idx[..., 1], idx[..., 2]], -1)


@dataclass(frozen=True, eq=False)
class Scene:
    """Objects (later ones override earlier ones) in a ``background`` medium."""

    objects: tuple = ()
    background: object = 1.0
    materials: tuple = field(init=False, repr=False)

    def __post_init__(self):
        objs = tuple(self.objects) if not isinstance(self.objects, Object) else (self.objects,)
        for i, o in enumerate(objs):
            if not isinstance(o, Object):
                raise ConfigError(f"Scene.objects[{i}] must be an emjax.scene.Object, got {o!r}")
        object.__setattr__(self, "objects", objs)
        bg = check_material("Scene.background", self.background)
        if bg is PEC:
            raise ConfigError("Scene.background cannot be PEC")
        object.__setattr__(self, "background", bg)
        mats = [bg]
        for o in objs:
            for m in o.material:
                if not any(m is x or (_is_number(m) and _is_number(x) and m == x) for x in mats):
                    mats.append(m)
        object.__setattr__(self, "materials", tuple(mats))

    @property
    def traced(self) -> bool:
        """Whether a scene parameter (an object's size, center, rotation, or a permittivity
        number) is a JAX tracer (``jax.grad`` / ``jax.jit`` over it)."""
        return any(o.traced for o in self.objects) or any(is_traced(m) for m in self.materials)

    @property
    def traced_names(self) -> tuple:
        """The traced parameters by name, as ``("objects[0].size", "background", ...)``."""
        out = ["background"] if is_traced(self.background) else []
        for i, o in enumerate(self.objects):
            out += [f"objects[{i}].{name}" for name in o.traced]
            out += [f"objects[{i}].material[{k}]" for k, m in enumerate(o.material) if is_traced(m)]
        return tuple(out)

    def primal(self, structure_only: bool = False) -> Scene:
        """The scene with concrete values (host-side rasterization): each object's
        :meth:`Object.primal`, and each traced permittivity replaced by a
        :class:`PrimalValue` of its value (one per tracer: :attr:`materials`
        keeps its order, material ``i`` of both scenes is the same one). A ConfigError names
        a value that is abstract (inside ``jax.jit`` or ``jax.vmap``); ``structure_only``:
        an abstract permittivity becomes a placeholder (eps 2) instead, for uses that need
        the geometry alone (the raster's labels and interfaces do not depend on the values)."""
        if not self.traced:
            return self
        subst = {}
        for m in self.materials:
            if is_traced(m):
                value = primal(m)
                if value is None and not structure_only:
                    raise ConfigError(
                        "a scene permittivity is abstract (traced inside jax.jit or jax.vmap): "
                        "the scene is rasterized on the host from its values; take jax.grad of the "
                        "loss without jax.jit or jax.vmap around it"
                    )
                subst[id(m)] = PrimalValue(2.0 if value is None else value.item())

        def sub(m):
            return subst.get(id(m), m)

        objs = tuple(
            Object(
                o.primal().shape,
                tuple(sub(m) for m in o.material),
                o.primal().center,
                o.primal().size,
                o.primal().rotation,
            )
            for o in self.objects
        )
        out = Scene(objs, sub(self.background))
        if len(out.materials) != len(self.materials):  # cannot happen: identities are kept
            raise ConfigError("Scene.primal: the materials' order changed")
        return out

    def material_index(self, m) -> int:
        """Index of material ``m`` in :attr:`materials` (0: the background)."""
        for i, x in enumerate(self.materials):
            if m is x or (_is_number(m) and _is_number(x) and m == x):
                return i
        raise KeyError(m)

    def label(self, x, y, z) -> np.ndarray:
        """Material index (into :attr:`materials`) at lab points: the last object containing
        each point, else 0 (the background)."""
        x, y, z = np.broadcast_arrays(np.asarray(x, float), np.asarray(y, float), np.asarray(z, float))
        out = np.zeros(x.shape, np.int32)
        for o in self.objects:
            lo, hi = o.bounds()
            pad = 1e-9 * o.size  # the box is exact; a hair more keeps surface points in
            near = ((x >= lo[0] - pad) & (x <= hi[0] + pad) & (y >= lo[1] - pad) & (y <= hi[1] + pad)) & (
                (z >= lo[2] - pad) & (z <= hi[2] + pad)
            )
            if not np.any(near):  # shapes are evaluated only inside their bounding boxes
                continue
            d = o.domain(x[near], y[near], z[near])
            if not np.any(d >= 0):
                continue
            lut = np.array([self.material_index(m) for m in o.material], np.int32)
            out[near] = np.where(d >= 0, lut[np.clip(d, 0, None)], out[near])
        return out

    def check_inside(self, lo, hi, what: str = "the simulation region") -> None:
        """Every object's bounding box lies within [lo, hi] (lab frame)."""
        for i, o in enumerate(self.objects):
            a, b = o.bounds()
            if np.any(a < np.asarray(lo) - 1e-12) or np.any(b > np.asarray(hi) + 1e-12):
                raise ConfigError(
                    f"Scene.objects[{i}] ({o.shape.name}, bounds {np.round(a, 6).tolist()} .. "
                    f"{np.round(b, 6).tolist()}) extends beyond {what} "
                    f"{_rounded(lo)} .. {_rounded(hi)}"
                )


def _rounded(v) -> list:
    return np.round(np.asarray(v, float), 6).tolist()


def _is_number(m) -> bool:
    return isinstance(m, (int, float, complex))
