"""Planar multilayer stacks.

Layers are listed from +z down: ``eps[0]`` is the semi-infinite top medium, ``eps[-1]`` the
semi-infinite bottom medium and ``eps[1:-1]`` the finite layers of ``thickness[i - 1]``. The
topmost interface is the plane ``z = z_top``; interface ``i`` (0-based) lies at
``z_top - sum(thickness[:i])``. A point exactly on an interface belongs to the layer above.
Lengths in any unit shared with the wavelength; ``exp(-i omega t)``, so lossy media have
``Im eps > 0``.

Permittivities, thicknesses and ``z_top`` may be JAX tracers (``jax.grad`` through
``green_tensor``): they are kept as given and checked on their concrete (primal) values;
``interfaces`` and ``layer_of`` then use those concrete values (which layer holds a point is
no differentiable quantity), ``permittivities`` returns a traced ``jax.Array``.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from ..backend import precision_scope
from ..errors import ConfigError, require_finite, require_positive
from ..materials import Material, _as_complex
from .traced import is_traced, primal


def _check_eps(name: str, value) -> complex | Material:
    if isinstance(value, Material):
        return value
    if is_traced(value):  # check the concrete value where there is one; keep the tracer
        if np.ndim(value) != 0:
            raise ConfigError(f"{name} must be a complex number, got shape {np.shape(value)}")
        v = primal(value)
        if v is not None:
            _check_eps(name, complex(v))
        return value
    z = _as_complex(name, value)  # a finite complex number (or a ConfigError naming the field)
    if z.imag < 0:
        raise ConfigError(
            f"{name} = {z} has Im < 0; with exp(-i omega t) a lossy medium has Im eps > 0 "
            "(allowed: Im eps >= 0)"
        )
    if z == 0:
        raise ConfigError(f"{name} must not be 0")
    return z


@dataclass(frozen=True)
class Stack:
    """A planar stack: ``Stack(eps=[top, layer 1, ..., bottom], thickness=[d1, ...], z_top=0.0)``.

    ``eps``: relative permittivities (complex numbers, or emjax.materials objects evaluated
    at the wavelength); at least two media. ``thickness``: one positive thickness per finite
    layer (``len(eps) - 2`` of them).
    """

    eps: tuple
    thickness: tuple = ()
    z_top: float = 0.0

    def __post_init__(self):
        try:  # a list, a tuple or an array of media; not a string, a number or None
            eps = tuple(self.eps) if not isinstance(self.eps, (str, bytes, dict)) else None
        except TypeError:
            eps = None
        if eps is None or len(eps) < 2:
            raise ConfigError(f"Stack.eps must list at least two media (top and bottom), got {self.eps!r}")
        eps = tuple(_check_eps(f"Stack.eps[{i}]", e) for i, e in enumerate(eps))
        if is_traced(self.thickness) or is_traced(self.z_top):
            self._set_traced(eps)
            return
        try:  # a list, a tuple, an array or a single number
            th = tuple(np.atleast_1d(np.asarray(self.thickness, dtype=float)).ravel().tolist())
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"Stack.thickness must be numbers, got {self.thickness!r}") from exc
        if len(th) != len(eps) - 2:
            raise ConfigError(
                f"Stack.thickness needs one value per finite layer: {len(eps) - 2} for {len(eps)} "
                f"media, got {len(th)}"
            )
        th = tuple(require_positive(f"Stack.thickness[{i}]", d) for i, d in enumerate(th))
        object.__setattr__(self, "eps", eps)
        object.__setattr__(self, "thickness", th)
        object.__setattr__(self, "z_top", require_finite("Stack.z_top", self.z_top))

    def _set_traced(self, eps):
        """Traced thicknesses or z_top: kept as (0-d) traced values, checked where concrete."""
        t = self.thickness
        if isinstance(t, (list, tuple)):
            th = tuple(t)
        else:
            t = jnp.atleast_1d(t).ravel() if is_traced(t) else np.atleast_1d(np.asarray(t, float)).ravel()
            th = tuple(t[i] for i in range(t.shape[0]))
        if len(th) != len(eps) - 2:
            raise ConfigError(
                f"Stack.thickness needs one value per finite layer: {len(eps) - 2} for {len(eps)} "
                f"media, got {len(th)}"
            )
        for i, d in enumerate(th):
            if np.ndim(d) != 0:
                raise ConfigError(f"Stack.thickness[{i}] must be a number, got shape {np.shape(d)}")
            v = primal(d)
            if v is not None:
                require_positive(f"Stack.thickness[{i}]", float(v))
        v = primal(self.z_top)
        if np.ndim(self.z_top) != 0:
            raise ConfigError(f"Stack.z_top must be a number, got shape {np.shape(self.z_top)}")
        if v is not None:
            require_finite("Stack.z_top", float(v))
        th = tuple(d if is_traced(d) else float(d) for d in th)
        z_top = self.z_top if is_traced(self.z_top) else float(self.z_top)
        object.__setattr__(self, "eps", eps)
        object.__setattr__(self, "thickness", th)
        object.__setattr__(self, "z_top", z_top)

    @property
    def traced(self) -> bool:
        """True when a permittivity, thickness or z_top is a JAX tracer."""
        return is_traced(self.eps) or is_traced(self.thickness) or is_traced(self.z_top)

    def primal(self) -> Stack:
        """The same stack with the concrete values of traced entries (ConfigError inside jit)."""
        if not self.traced:
            return self
        from .traced import concrete

        def val(name, x, kind):
            return kind(concrete(name, x)) if is_traced(x) else x

        return Stack(
            eps=[val(f"Stack.eps[{i}]", e, complex) for i, e in enumerate(self.eps)],
            thickness=[val(f"Stack.thickness[{i}]", d, float) for i, d in enumerate(self.thickness)],
            z_top=val("Stack.z_top", self.z_top, float),
        )

    def interfaces_traced(self):
        """z of the interfaces as a (possibly traced) float64 ``jax.Array`` (n_media - 1,)."""
        with precision_scope():
            th = [jnp.asarray(d, jnp.float64) for d in self.thickness]
            z = [jnp.asarray(self.z_top, jnp.float64)]
            for d in th:
                z.append(z[-1] - d)
            return jnp.stack(z)

    @property
    def n_media(self) -> int:
        return len(self.eps)

    @property
    def interfaces(self) -> np.ndarray:
        """z of the interfaces, from the top one down, shape (n_media - 1,) (concrete values)."""
        if self.traced:
            return self.primal().interfaces
        return self.z_top - np.concatenate([[0.0], np.cumsum(self.thickness)])

    def permittivities(self, wavelength: float) -> np.ndarray:
        """Complex eps of every medium at the vacuum ``wavelength``, shape (n_media,): a
        NumPy array, or a complex128 ``jax.Array`` where an entry is traced."""
        wavelength = require_positive("wavelength", wavelength)
        out = []
        for i, e in enumerate(self.eps):
            if isinstance(e, Material):
                v = e.permittivity(2 * np.pi / wavelength)
                if is_traced(v):  # a material with traced parameters
                    v0 = primal(v)
                    if v0 is not None and (
                        not np.isfinite(complex(v0)) or complex(v0).imag < -1e-12 * abs(complex(v0))
                    ):
                        raise ConfigError(
                            f"Stack.eps[{i}] gives eps = {complex(v0)} at wavelength {wavelength} "
                            "(need Im eps >= 0)"
                        )
                    out.append(v)
                    continue
                v = complex(np.asarray(v))
                if not np.isfinite(v) or v.imag < -1e-12 * abs(v):
                    raise ConfigError(
                        f"Stack.eps[{i}] gives eps = {v} at wavelength {wavelength} (need Im eps >= 0)"
                    )
                out.append(v)
            else:
                out.append(e)
        if is_traced(out):
            with precision_scope():
                return jnp.stack([jnp.asarray(v, jnp.complex128) for v in out])
        return np.asarray(out, dtype=complex)

    def layer_of(self, z) -> np.ndarray:
        """Index of the medium holding each ``z`` (0 = top); on an interface: the layer above."""
        z = np.asarray(z, dtype=float)
        return np.sum(self.interfaces[None, :] > z.reshape(-1, 1), axis=1).reshape(z.shape)
