"""Mirror symmetry values shared by the methods that run on half the domain per plane."""

from __future__ import annotations

import numpy as np

from .errors import ConfigError

ALLOWED = "0 (none), -1 (odd: tangential E vanishes on the plane, a PEC) or +1 (even: a PMC)"


def check_values(value, n: int, named: bool = True) -> tuple:
    """``value`` as ``n`` ints in (-1, 0, 1), one per axis, or one ConfigError line (naming
    the axes where ``named``)."""
    try:
        v = tuple(value)
    except TypeError:
        v = ()
    if len(v) != n or not all(
        isinstance(s, (int, np.integer)) and not isinstance(s, bool) and s in (-1, 0, 1) for s in v
    ):
        count = ("two", "three")[n - 2] + " values" + (f" ({', '.join('xyz'[:n])})" if named else "")
        raise ConfigError(f"symmetry must be {count}, each {ALLOWED}, got {value!r}")
    return tuple(int(s) for s in v)
