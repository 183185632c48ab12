"""Polygon shapes (:mod:`emjax.geometry`): a prism over a polygon (:class:`PolygonPrism`)
and a flat polygon (:class:`Polygon`), the shapes GDSII layouts give."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import ConfigError, require_positive
from .geometry_shape import Shape, _has_tracer


@dataclass(frozen=True, eq=False)
class PolygonPrism(Shape):
    """A right prism along z over any simple polygon (``vertices``: (n, 2) in the xy plane, in
    units of the polygon's extent along x after centring; even-odd rule), height/size_x
    ``aspect``. The bounding box of the polygon is centred at the origin."""

    vertices: np.ndarray = None  # type: ignore[assignment]
    aspect: float = 1.0
    name = "polygon_prism"

    def __post_init__(self):
        traced = None
        if _has_tracer(self.vertices):
            traced = self._traced_vertices()
            object.__setattr__(self, "vertices", traced[0])
        v = np.asarray(self.vertices, dtype=float)
        if v.ndim != 2 or v.shape[1] != 2 or len(v) < 3 or not np.all(np.isfinite(v)):
            raise ConfigError(f"PolygonPrism.vertices must be (n >= 3, 2) finite, got shape {v.shape}")
        ext = v.max(0) - v.min(0)
        if ext[0] <= 0 or ext[1] <= 0:
            raise ConfigError("PolygonPrism.vertices span no area")
        v = (v - (v.max(0) + v.min(0)) / 2) / ext[0]
        object.__setattr__(self, "vertices", v)
        require_positive("aspect", self.aspect)
        if traced is not None:  # the same normalization, in JAX
            t = traced[1]
            lo, hi = t.min(axis=0), t.max(axis=0)
            object.__setattr__(self, "_traced", (t - (hi + lo) / 2) / (hi[0] - lo[0]))

    def _traced_vertices(self):
        """(values, JAX array) of traced vertices: a (Polygon only) differentiable outline."""
        import jax.numpy as jnp

        from .tracing import primal

        if type(self) is not Polygon:
            raise ConfigError(
                f"{type(self).__name__}.vertices are not differentiable (got JAX tracers): give "
                "concrete vertices (a 2-D geometry.Polygon's vertices are differentiable); trace the "
                "Object's size, center or rotation instead"
            )
        raw = self.vertices
        if isinstance(raw, (list, tuple)):
            raw = jnp.stack([jnp.stack([jnp.asarray(c) for c in p]) for p in raw])
        elif isinstance(raw, np.ndarray):  # an object array holding tracers
            raw = jnp.stack([jnp.asarray(x) for x in raw.ravel()]).reshape(raw.shape)
        value = primal(raw)
        if value is None:
            raise ConfigError(
                "Polygon.vertices are abstract (traced inside jax.jit or jax.vmap): the scene is "
                "rasterized on the host from their values; take jax.grad of the loss without jax.jit "
                "or jax.vmap around it (or keep the vertices concrete there)"
            )
        return value, jnp.asarray(raw)

    @property
    def traced_vertices(self):
        """The normalized vertices as a JAX function of traced ones (None: concrete)."""
        return self.__dict__.get("_traced")

    def with_traced(self, normalized):
        """This outline (concrete values) with ``normalized`` (a JAX array of its normalized
        vertices, e.g. an argument inside ``jax.jit``) as :attr:`traced_vertices`; None: the
        concrete outline alone."""
        out = type(self)(vertices=self.vertices, aspect=self.aspect)
        if normalized is not None:
            object.__setattr__(out, "_traced", normalized)
        return out

    @property
    def yx_ratio(self):
        return float(np.ptp(self.vertices[:, 1]))

    @property
    def zx_ratio(self):
        return self.aspect

    @property
    def volume_ratio(self):
        x, y = self.vertices[:, 0], self.vertices[:, 1]
        return self.aspect * 0.5 * abs(float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))))

    def domain(self, x, y, z):
        x, y, z = np.broadcast_arrays(x, y, z)
        inside = np.zeros(x.shape, bool)
        v = self.vertices
        for (x1, y1), (x2, y2) in zip(v, np.roll(v, -1, axis=0)):  # even-odd ray casting along +x
            crosses = (y1 > y) != (y2 > y)
            with np.errstate(divide="ignore", invalid="ignore"):
                xc = x1 + (y - y1) * (x2 - x1) / (y2 - y1)
            inside ^= crosses & (x < xc)
        return np.where(inside & (np.abs(z) <= self.aspect / 2), 0, -1)


@dataclass(frozen=True)
class Polygon(PolygonPrism):
    """A 2-D polygon in the xy plane (``vertices`` as :class:`PolygonPrism`'s: scaled to
    unit extent along x, bounding box centred; even-odd rule), invariant along z (for 2-D
    grids). Not a DDA particle.

    The vertices may be JAX tracers (``jax.grad`` over an outline: the FDFD's 2-D TM solve,
    the FDTD on a 2-D grid):
    ``vertices`` then holds their normalized values (the host's) and
    :attr:`traced_vertices` the same normalization in JAX. The Object places the normalized
    outline (``center``, ``size``), so absolute vertices ``v`` land where they say with
    ``size = ptp(v[:, 0])`` and ``center`` the middle of their bounding box (as the TOML
    ``vertices`` key does)."""

    name = "polygon"

    @property
    def zx_ratio(self):
        return 1e9  # unbounded along z

    @property
    def volume_ratio(self):
        return None

    def domain(self, x, y, z):
        x, y, z = np.broadcast_arrays(x, y, z)
        return super().domain(x, y, np.zeros(x.shape))
