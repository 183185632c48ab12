"""Yee updates: staggered differences of 2nd order and the 4th-order (9/8, -1/24) stencil.

Differences wrap around (``jnp.roll``), so the grid is periodic; PEC walls zero the
tangential E on the planes ``i = 0`` afterwards, and the CPML adds its slab corrections
(see pml.py; the curls are assembled in step.py). Everything is element-wise on whole
arrays so XLA fuses one step into few passes over memory.
"""

from __future__ import annotations

import jax.numpy as jnp

C1, C3 = 9.0 / 8.0, -1.0 / 24.0


def _edge(n: int, axis: int, index: int, phase, dtype):
    """Ones along ``axis`` (length n) with ``phase`` at ``index``, shaped to broadcast."""
    shape = [1, 1, 1]
    shape[axis] = n
    return jnp.ones((n,), dtype).at[index].set(phase).reshape(shape)


def d_forward(f, axis: int, inv_dx, order: int, phase=None):
    """Derivative at i + 1/2 from nodes at i (used on E for the H update); ``phase``: the
    Bloch factor exp(i k L) that the wrapped plane carries."""
    if order == 2:
        nxt = jnp.roll(f, -1, axis)
        if phase is not None:
            nxt = nxt * _edge(f.shape[axis], axis, -1, phase, f.dtype)
        return (nxt - f) * inv_dx
    return (C1 * (jnp.roll(f, -1, axis) - f) + C3 * (jnp.roll(f, -2, axis) - jnp.roll(f, 1, axis))) * inv_dx


def d_backward(f, axis: int, inv_dx, order: int, phase=None):
    """Derivative at i from nodes at i - 1/2 (used on H for the E update)."""
    if order == 2:
        prev = jnp.roll(f, 1, axis)
        if phase is not None:
            prev = prev * _edge(f.shape[axis], axis, 0, 1 / phase, f.dtype)
        return (f - prev) * inv_dx
    return (C1 * (f - jnp.roll(f, 1, axis)) + C3 * (jnp.roll(f, -1, axis) - jnp.roll(f, 2, axis))) * inv_dx
