"""Dipole fields in planar multilayers: the Sommerfeld-integral dyadic Green's tensor.

``Stack`` describes the layers; ``green_tensor`` returns G (N, 3, 3) and ``dipole_fields``
(alias ``fields``) E and H of a dipole. See green.py for the conventions. Both are
differentiable (``jax.grad``/``jacrev``/``jacfwd``/``jvp``, outside ``jit``) in the source,
the points, the moment and the Stack's eps, thickness and z_top (see traced.py).

The slice: stack -> coefficients -> bessel -> sommerfeld -> groups -> mapping -> green; results, plot,
bench, config and cli around them. Public names load on first use (see ``emjax._lazy``).
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS = {
    "DipoleFields": ".results",
    "GreenResult": ".results",
    "Stack": ".stack",
    "dipole_fields": ".green",
    "fields": ".green",
    "free_space": ".green",
    "green_tensor": ".green",
}
__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # for type checkers and IDEs; at run time the names load on first use
    from .green import dipole_fields, fields, free_space, green_tensor
    from .results import DipoleFields, GreenResult
    from .stack import Stack
