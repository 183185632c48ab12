"""Yee updates: staggered differences of 2nd order and the 4th-order (9/8, -1/24) stencil.

Differences wrap around (``jnp.roll``), so the grid is periodic; PEC walls zero the
tangential E on the planes ``i = 0`` afterwards, and the CPML adds its slab corrections
(see pml.py; the curls are assembled in simulation.py). Everything is element-wise on whole
arrays so XLA fuses one step into few passes over memory.
"""

from __future__ import annotations

import jax.numpy as jnp

C1, C3 = 9.0 / 8.0, -1.0 / 24.0


def d_forward(f, axis: int, inv_dx, order: int):
    """Derivative at i + 1/2 from nodes at i (used on E for the H update)."""
    if order == 2:
        return (jnp.roll(f, -1, axis) - f) * inv_dx
    return (C1 * (jnp.roll(f, -1, axis) - f) + C3 * (jnp.roll(f, -2, axis) - jnp.roll(f, 1, axis))) * inv_dx


def d_backward(f, axis: int, inv_dx, order: int):
    """Derivative at i from nodes at i - 1/2 (used on H for the E update)."""
    if order == 2:
        return (f - jnp.roll(f, 1, axis)) * inv_dx
    return (C1 * (f - jnp.roll(f, 1, axis)) + C3 * (jnp.roll(f, -1, axis) - jnp.roll(f, 2, axis))) * inv_dx
