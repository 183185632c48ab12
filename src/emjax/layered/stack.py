"""Planar multilayer stacks.

Layers are listed from +z down: ``eps[0]`` is the semi-infinite top medium, ``eps[-1]`` the
semi-infinite bottom medium and ``eps[1:-1]`` the finite layers of ``thickness[i - 1]``. The
topmost interface is the plane ``z = z_top``; interface ``i`` (0-based) lies at
``z_top - sum(thickness[:i])``. A point exactly on an interface belongs to the layer above.
Lengths in any unit shared with the wavelength; ``exp(-i omega t)``, so lossy media have
``Im eps > 0``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError, require_finite, require_positive
from ..materials import Material, _as_complex


def _check_eps(name: str, value) -> complex | Material:
    if isinstance(value, Material):
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
        eps = tuple(self.eps) if not isinstance(self.eps, (str, bytes)) else None
        if eps is None or len(eps) < 2:
            raise ConfigError(f"Stack.eps must list at least two media (top and bottom), got {self.eps!r}")
        eps = tuple(_check_eps(f"Stack.eps[{i}]", e) for i, e in enumerate(eps))
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

    @property
    def n_media(self) -> int:
        return len(self.eps)

    @property
    def interfaces(self) -> np.ndarray:
        """z of the interfaces, from the top one down, shape (n_media - 1,)."""
        return self.z_top - np.concatenate([[0.0], np.cumsum(self.thickness)])

    def permittivities(self, wavelength: float) -> np.ndarray:
        """Complex eps of every medium at the vacuum ``wavelength``, shape (n_media,)."""
        wavelength = require_positive("wavelength", wavelength)
        out = []
        for i, e in enumerate(self.eps):
            if isinstance(e, Material):
                v = complex(np.asarray(e.permittivity(2 * np.pi / wavelength)))
                if not np.isfinite(v) or v.imag < -1e-12 * abs(v):
                    raise ConfigError(
                        f"Stack.eps[{i}] gives eps = {v} at wavelength {wavelength} (need Im eps >= 0)"
                    )
                out.append(v)
            else:
                out.append(e)
        return np.asarray(out, dtype=complex)

    def layer_of(self, z) -> np.ndarray:
        """Index of the medium holding each ``z`` (0 = top); on an interface: the layer above."""
        z = np.asarray(z, dtype=float)
        return np.sum(self.interfaces[None, :] > z.reshape(-1, 1), axis=1).reshape(z.shape)
