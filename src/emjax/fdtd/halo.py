"""The halo exchange of the several-device FDTD step (see :mod:`emjax.fdtd.sharded` for the
design): the x-differences with one or two planes per face from the neighbours
(:func:`diff_x`), the x-CPML's edge windows replicated by one all-reduce
(:func:`edge_windows`), the 4th order's wall terms from them, and replication constraints.
The step (:mod:`emjax.fdtd.step`) calls these when its plan carries a layout.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec

from ..layout import AXIS, Layout
from .update import C1, C3


def resize(x, axis, length):
    if axis is None or x.shape[axis] == length:
        return x
    if x.shape[axis] > length:
        return jax.lax.slice_in_dim(x, 0, length, axis=axis)
    widths = [(0, 0)] * x.ndim
    widths[axis] = (0, length - x.shape[axis])
    return jnp.pad(x, widths)


def halo_ok(plan) -> bool:
    """Whether the explicit halo exchange applies: ``nx`` divides over the devices, each
    holding at least the stencil's reach."""
    n = plan.layout.n
    return plan.shape[0] % n == 0 and plan.shape[0] // n >= 2


def diff_x(f, forward: bool, inv_dx, order: int, phase, layout: Layout):
    """The x-derivative of :func:`emjax.fdtd.update.d_forward` (``forward``) or
    ``d_backward`` on an x-split array, with one (2nd order) or two (4th order) planes per
    face from the neighbours by ``ppermute`` on the ring of devices; the same arithmetic as
    the one-device roll, so the same numbers."""
    n = layout.n
    to_left = [(i, (i - 1) % n) for i in range(n)]  # my first planes follow my left neighbour's
    to_right = [(i, (i + 1) % n) for i in range(n)]

    def local(b):
        k = jax.lax.axis_index(AXIS)
        m = b.shape[0]
        if order == 2:
            if forward:  # f[i + 1]: the right neighbour's first plane after my last
                after = jax.lax.ppermute(b[:1], AXIS, to_left)
                if phase is not None:
                    after = jnp.where(k == n - 1, after * jnp.asarray(phase, b.dtype), after)
                nxt = jnp.concatenate([b[1:], after])
                return (nxt - b) * inv_dx
            before = jax.lax.ppermute(b[m - 1 :], AXIS, to_right)
            if phase is not None:
                before = jnp.where(k == 0, before * jnp.asarray(1 / phase, b.dtype), before)
            prev = jnp.concatenate([before, b[:-1]])
            return (b - prev) * inv_dx
        # 4th order (no Bloch phase on one device either): f[i-2 .. i+2] as needed
        if forward:
            before = jax.lax.ppermute(b[m - 1 :], AXIS, to_right)
            after = jax.lax.ppermute(b[:2], AXIS, to_left)
            e = jnp.concatenate([before, b, after])  # e[j] = f[j - 1]
            return (C1 * (e[2 : m + 2] - e[1 : m + 1]) + C3 * (e[3 : m + 3] - e[0:m])) * inv_dx
        before = jax.lax.ppermute(b[m - 2 :], AXIS, to_right)
        after = jax.lax.ppermute(b[:1], AXIS, to_left)
        e = jnp.concatenate([before, b, after])  # e[j] = f[j - 2]
        return (C1 * (e[2 : m + 2] - e[1 : m + 1]) + C3 * (e[3 : m + 3] - e[0:m])) * inv_dx

    spec = PartitionSpec(AXIS, None, None)
    return jax.shard_map(local, mesh=layout.mesh, in_specs=spec, out_specs=spec)(f)


def edge_windows(f, width: int, layout: Layout):
    """The planes ``[0, width)`` and ``[nx - width, nx)`` of an x-split array, replicated on
    every device (one all-reduce of ``2 width`` planes: each device adds the planes it owns
    into zeros). The x-CPML's psi slabs and the 4th order's wall terms are computed from them,
    replicated, with the one-device functions (no slicing of the split array, which XLA turns
    into many small collective-permutes)."""
    n = layout.n
    nx = f.shape[0]
    m = layout.padded(nx) // n
    if nx % n:  # an unevenly split (logical) array: padded back to its storage, locally
        f = jax.lax.with_sharding_constraint(resize(f, 0, n * m), layout.sharding(3, 0))

    def local(b):
        k = jax.lax.axis_index(AXIS)
        out = jnp.zeros((2 * width,) + b.shape[1:], b.dtype)
        for dev in range(n):
            s = dev * m
            for w0 in (0, nx - width):  # the window's global start
                a, e = max(s, w0), min(s + m, w0 + width)
                if a >= e:
                    continue
                off = (0 if w0 == 0 else width) + a - w0
                part = jnp.pad(b[a - s : e - s], [(off, 2 * width - off - (e - a))] + [(0, 0)] * (b.ndim - 1))
                out = out + jnp.where(k == dev, part, jnp.zeros_like(part))
        return jax.lax.psum(out, AXIS)

    spec = PartitionSpec(AXIS, None, None)
    both = jax.shard_map(local, mesh=layout.mesh, in_specs=spec, out_specs=PartitionSpec())(f)
    return both[:width], both[width:]


def wall_terms_4(lo, hi, forward: bool, inv_dx, nx: int):
    """:func:`emjax.fdtd.pml.wall_terms_4` along x (``nx`` planes) from the edge windows
    ``lo``, ``hi`` (planes ``[0, w)`` and ``[nx - w, nx)``), with the same arithmetic."""
    w = hi.shape[0]
    if forward:
        t = C3 * inv_dx * (lo[1:2] + hi[w - 1 : w])
        return [(0, t), (nx - 1, -t)]
    t = C3 * inv_dx * (hi[w - 1 : w] - lo[0:1])
    return [(1, t), (nx - 1, t)]


def replicated(tree, layout: Layout):
    """Constrain ``tree``'s arrays to be replicated (XLA would otherwise split the small
    slab computations along x and gather them back)."""
    return jax.tree_util.tree_map(
        lambda x: jax.lax.with_sharding_constraint(x, layout.sharding(x.ndim, None)), tree
    )
