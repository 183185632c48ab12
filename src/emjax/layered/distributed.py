"""Layered maps on the devices of several processes: the observation points split over a
device layout spanning them (on the devices of one process the points are dealt out whole
instead, each device with its own loop: see mapping.py).

Every point's Sommerfeld integrals are independent of the others' (the points share the
quadrature nodes, not results), so a map splits along its points with no communication:
each chunk of points is padded to a multiple of the device count (copies of its last point,
dropped afterwards), placed split along the point axis, the node tables replicated, and the
jitted integration (:func:`emjax.layered.sommerfeld.integrate`) then runs as one SPMD
program, each device on its own points. The adaptive refinement (a few dozen sample
points) stays on one device. ``layout=None`` (one device) never reaches this module.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..layout import Layout


def chunk_size(n_points: int, batch: int, layout: Layout) -> int:
    """Points per integration call: ``batch`` per device when the map is larger than that,
    else the map padded to a power of two (>= 16, few distinct shapes: few compilations)
    and to a multiple of the device count."""
    if n_points > batch * layout.n:
        return batch * layout.n
    per = -(-n_points // layout.n)
    per = max(16 // layout.n, 1 << max(per - 1, 0).bit_length(), 1)
    return per * layout.n


def put_points(v: np.ndarray, size: int, dtype, layout: Layout) -> jax.Array:
    """A chunk of per-point values padded (edge copies) to ``size``, split over the devices."""
    v = np.pad(np.asarray(v), (0, size - len(v)), mode="edge").astype(dtype)
    return layout.put(v, 0)


def zeros(shape, dtype, layout: Layout) -> jax.Array:
    """Accumulators of shape (points, ...) split along the points."""
    return jax.jit(lambda: jnp.zeros(shape, dtype), out_shardings=layout.sharding(len(shape), 0))()


def replicate(tree, layout: Layout):
    """The shared node tables on every device (placed once per group, not per chunk)."""
    return jax.tree_util.tree_map(
        lambda a: layout.put(a, None) if isinstance(a, (jax.Array, np.ndarray)) else a, tree
    )
