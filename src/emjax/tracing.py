"""Tracer helpers shared by the slices: is a value traced (jax.grad/jit/vmap), and its
concrete (primal) value where JAX has one. JAX is not imported here: where it has not been
imported, nothing can be a tracer (a host-only run, e.g. the 2-D FDFD's direct solve, then
never starts JAX)."""

from __future__ import annotations

import sys

import numpy as np


def _tracer_type():
    jax = sys.modules.get("jax")
    return None if jax is None else jax.core.Tracer


__all__ = ["is_traced", "primal"]


def is_traced(x) -> bool:
    """True when ``x`` (a scalar, array or nested list/tuple of them) holds a JAX tracer."""
    tracer = _tracer_type()
    if tracer is None:
        return False
    if isinstance(x, tracer):
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
    tracer = _tracer_type()
    while tracer is not None and isinstance(x, tracer):
        try:
            x = x.to_concrete_value()
        except Exception:  # noqa: BLE001  (abstract tracers raise or return None)
            return None
        if x is None:
            return None
    return np.asarray(x)
