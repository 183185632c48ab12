"""Traced (JAX) scene parameters: what :class:`emjax.scene.Object` and
:class:`emjax.scene.Scene` need to accept them (the rotation of traced angles, the stand-in
for a traced permittivity on the host)."""

from __future__ import annotations

import numpy as np

from ..errors import ConfigError
from ..materials import Material
from ..tracing import is_traced, primal

__all__ = ["PrimalValue", "has_tracer", "traced_rotation"]


class PrimalValue(Material):
    """A non-dispersive medium standing for a traced permittivity in :meth:`Scene.primal`:
    its value (``eps``), and its own identity (two tracers of equal value stay two
    materials)."""

    def __init__(self, eps):
        self.eps = eps

    def permittivity(self, omega):
        return np.full(np.shape(omega), self.eps, dtype=complex)

    def __repr__(self) -> str:
        return f"PrimalValue({self.eps!r})"


def has_tracer(v) -> bool:
    """Whether ``v`` (a tracer, or a list/tuple of numbers and tracers) holds a tracer."""
    return is_traced(v) or (isinstance(v, (list, tuple)) and any(is_traced(x) for x in v))


def traced_rotation(rotation):
    """The rotation matrix of traced Euler angles (degrees, ZYZ as :func:`euler_matrix`) or of
    a traced 3x3 matrix (orthogonality checked on its value where concrete), as a JAX array."""
    import jax.numpy as jnp

    r = jnp.stack([jnp.asarray(x) for x in rotation]) if isinstance(rotation, (list, tuple)) else rotation
    r = jnp.asarray(r)
    if r.shape == (3,):
        a, b, g = jnp.deg2rad(r[0]), jnp.deg2rad(r[1]), jnp.deg2rad(r[2])

        def rz(t):
            c, s = jnp.cos(t), jnp.sin(t)
            return jnp.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])

        cb, sb = jnp.cos(b), jnp.sin(b)
        ry = jnp.array([[cb, 0.0, sb], [0.0, 1.0, 0.0], [-sb, 0.0, cb]])
        return rz(a) @ ry @ rz(g)
    value = primal(r)
    if r.shape != (3, 3) or (value is not None and not np.allclose(value @ value.T, np.eye(3), atol=1e-9)):
        raise ConfigError("Object.rotation must be (alpha, beta, gamma) in degrees or a 3x3 rotation")
    return r
