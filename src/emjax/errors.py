"""Exceptions raised by emjax.

All are subclasses of :class:`EmjaxError`, so ``except emjax.EmjaxError`` catches every
problem that emjax reports on purpose.
"""

from __future__ import annotations

import math
import numbers

import numpy as np


class EmjaxError(Exception):
    """Base class of every error emjax raises on purpose."""


class ConfigError(EmjaxError, ValueError):
    """An input is invalid; the message names the field and the allowed range. Always one
    line: a value's multi-line repr (a NumPy array) is folded onto it."""

    def __init__(self, message="", *args):
        if isinstance(message, str) and "\n" in message:
            message = " ".join(message.split())
        super().__init__(message, *args)


class ConvergenceError(EmjaxError, RuntimeError):
    """An iterative method did not reach its tolerance (or broke down)."""


class ResourceError(EmjaxError, MemoryError):
    """A run would need more memory than the device has; says needed vs available."""


def _refuse_tracer(name: str, value) -> None:
    """A JAX tracer where a concrete number is needed: say so (not "must be a number")."""
    if type(value).__module__.startswith("jax") and hasattr(value, "aval"):
        raise ConfigError(
            f"{name} is not differentiable (got a JAX tracer under jax.grad, jax.jit or jax.vmap): "
            "give it a concrete number"
        )


def require_finite(name: str, value: float) -> float:
    """Return ``float(value)`` or raise :class:`ConfigError` if it is NaN/Inf."""
    try:
        v = float(value)
    except (TypeError, ValueError) as exc:
        _refuse_tracer(name, value)
        raise ConfigError(f"{name} must be a real number, got {value!r}") from exc
    if not math.isfinite(v):
        raise ConfigError(f"{name} must be finite, got {value!r}")
    return v


def require_positive(name: str, value: float) -> float:
    """Finite and > 0, else :class:`ConfigError`."""
    v = require_finite(name, value)
    if v <= 0:
        raise ConfigError(f"{name} must be > 0, got {value!r}")
    return v


def require_range(
    name: str, value: float, lo: float, hi: float, *, open_lo: bool = False, why: str = ""
) -> float:
    """Finite and in [lo, hi] (or (lo, hi] with ``open_lo``), else :class:`ConfigError`
    (``why``, if given, follows the range in parentheses)."""
    left = "(" if open_lo else "["
    rng = f"in {left}{lo}, {hi}]" + (f" ({why})" if why else "")
    try:
        v = float(value)
    except (TypeError, ValueError) as exc:
        _refuse_tracer(name, value)
        raise ConfigError(f"{name} must be a number {rng}, got {value!r}") from exc
    if not math.isfinite(v) or v < lo or v > hi or (open_lo and v == lo):
        raise ConfigError(f"{name} must be {rng}, got {value!r}")
    return v


def require_int(name: str, value: int, lo: int, hi: int | None = None, *, why: str = "") -> int:
    """An integer in [lo, hi], else :class:`ConfigError` (``why``, if given, follows the
    range in parentheses)."""
    rng = (f">= {lo}" if hi is None else f"in [{lo}, {hi}]") + (f" ({why})" if why else "")
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Integral)
        and not (isinstance(value, numbers.Real) and math.isfinite(value) and float(value).is_integer())
    ):
        raise ConfigError(
            f"{name} must be an integer{' ' + rng if why or hi is not None else ''}, got {value!r}"
        )
    v = int(value)
    if v < lo or (hi is not None and v > hi):
        raise ConfigError(f"{name} must be an integer {rng}, got {value!r}")
    return v


def is_one_of(value, options) -> bool:
    """``value in options`` for a plain string or number; False for anything else (an array
    or a list would compare elementwise or be unhashable: a traceback, not a message)."""
    return isinstance(value, (str, numbers.Number)) and not isinstance(value, bool) and value in options


def require_length(name: str, value, n: int, what: str) -> tuple:
    """``tuple(value)`` with ``n`` entries (a list, tuple or 1-D array; not a string or a
    scalar), else :class:`ConfigError` "``name`` must be ``what``"."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != n:
        raise ConfigError(f"{name} must be {what}, got {value!r}")
    return tuple(value)


def require_floats(name: str, value, what: str, dtype=float):
    """``value`` as a NumPy array of ``dtype`` (strings and non-numbers refused with a
    :class:`ConfigError` "``name`` must be ``what``"); shape and range are the caller's."""
    if isinstance(value, (str, bytes)) or value is None:
        raise ConfigError(f"{name} must be {what}, got {value!r}")
    try:
        return np.asarray(value, dtype=dtype)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be {what}, got {value!r}") from None
