"""Tracer helpers shared by the slices: is a value traced (jax.grad/jit/vmap), and its
concrete (primal) value where JAX has one."""

from __future__ import annotations

import jax
import numpy as np

__all__ = ["is_traced", "primal"]


def is_traced(x) -> bool:
    """True when ``x`` (a scalar, array or nested list/tuple of them) holds a JAX tracer."""
    if isinstance(x, jax.core.Tracer):
        return True
    if isinstance(x, (list, tuple)):
        return any(is_traced(v) for v in x)
    return False


def primal(x):
    """The concrete value of ``x`` (tracers unwrapped to their primal), or None where it is
    abstract (inside jit/vmap). Lists/tuples are converted element by element."""
    if isinstance(x, (list, tuple)):
        vals = [primal(v) for v in x]
        return None if any(v is None for v in vals) else np.asarray(vals)
    while isinstance(x, jax.core.Tracer):
        try:
            x = x.to_concrete_value()
        except Exception:  # noqa: BLE001  (abstract tracers raise or return None)
            return None
        if x is None:
            return None
    return np.asarray(x)
