"""The halo exchange of the blocked kernel's x slabs (:mod:`.shards`): each device holds its
own planes ``[th, th + m)`` along x with ``th`` planes of each neighbour on either side, and
after a pass sends its first and last ``th`` own planes to the neighbours' halos.

On two devices each sends only its inner side, both in one collective. There the exchange
can also travel in two parts (:func:`send_interior`, :func:`finish_interior`): the part of
the planes that the bulk kernel and its tail write last is sent before the CPML kernel runs,
and the frame around it (with the CPML's psi) after it. Measured on 2 x H200 (512^3 with a
CPML): the exchange after the CPML kernel 0.26 -> 0.17 ms per pass. NCCL does not move the
first part while that kernel runs: XLA combines the two collectives into one, after the
kernel (kept apart by ``xla_gpu_collective_permute_combine_threshold_bytes=0``, the first
one's start is still scheduled after the kernel). Where the pass's last kernel marches the
x-CPML alone and writes none of the send planes (the x rows of :data:`.split.ALIGNED`),
every halo travels in one collective issued before it (:func:`send_group`, then
:func:`receive_group` after it), and NCCL moves them while it runs
(:data:`.shards.GROUPS` ``"before-x"``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ...layout import AXIS


def pairs(n: int) -> tuple:
    """(to the left, to the right) neighbour pairs of ``n`` slabs: x is walled, so the first
    and last slabs send nothing past the grid's ends (their outer halos stay zero: the bulk
    kernel reads them, and the x walls keep what it makes of them from the own planes)."""
    return [(i, i - 1) for i in range(1, n)], [(i, i + 1) for i in range(n - 1)]


def two_way(m: int, th: int):
    """Two devices: each sends one side, in one collective (where the two directions as two
    collectives run one after the other). Device 0 sends its last own planes and takes the
    others' first into its upper halo; device 1 the reverse. (send start, receive start, pairs)."""
    first = jax.lax.axis_index(AXIS) == 0
    return jnp.where(first, m, th), jnp.where(first, m + th, 0), [(0, 1), (1, 0)]


def exchange(a, th: int, n: int, axis: int = 0):
    """Refresh the halos of an extended slab (own planes ``[th, th + m)`` along ``axis``)."""
    m = a.shape[axis] - 2 * th
    if n == 2:
        send, recv, pp = two_way(m, th)
        got = jax.lax.ppermute(jax.lax.dynamic_slice_in_dim(a, send, th, axis=axis), AXIS, pp)
        return jax.lax.dynamic_update_slice_in_dim(a, got, recv, axis)
    to_left, to_right = pairs(n)
    lo = jax.lax.ppermute(jax.lax.slice_in_dim(a, m, m + th, axis=axis), AXIS, to_right)
    hi = jax.lax.ppermute(jax.lax.slice_in_dim(a, th, 2 * th, axis=axis), AXIS, to_left)
    a = jax.lax.dynamic_update_slice_in_dim(a, lo, 0, axis)
    return jax.lax.dynamic_update_slice_in_dim(a, hi, m + th, axis)


def _split(buf, shapes: list) -> list:
    """``buf`` (flat) back into arrays of ``shapes``."""
    out, at = [], 0
    for sh in shapes:
        k = int(np.prod(sh))
        out.append(buf[at : at + k].reshape(sh))
        at += k
    return out


def exchange_group(arrays, th: int, n: int):
    """:func:`exchange` of several arrays (x first) in one ``ppermute`` per direction."""
    if len(arrays) == 1:
        return [exchange(arrays[0], th, n)]
    return receive_group(*send_group(arrays, th, n, barrier=False), th, n)


def send_group(arrays, th: int, n: int, barrier: bool = True):
    """The send half of :func:`exchange_group`: the send planes of ``arrays`` in one
    ``ppermute`` per direction. Returns (the arrays, the received buffers). ``barrier``: an
    optimization barrier orders the copies of the send planes before any kernel that goes on
    to write over the arrays in place, so XLA need not copy them whole."""
    tie = jax.lax.optimization_barrier if barrier else (lambda v: v)
    m = arrays[0].shape[0] - 2 * th
    if n == 2:
        send, _, pp = two_way(m, th)
        buf = jnp.concatenate([jnp.ravel(jax.lax.dynamic_slice_in_dim(a, send, th)) for a in arrays])
        buf, arrays = tie((buf, list(arrays)))
        return arrays, (jax.lax.ppermute(buf, AXIS, pp),)
    to_left, to_right = pairs(n)
    lo = jnp.concatenate([jnp.ravel(a[m : m + th]) for a in arrays])
    hi = jnp.concatenate([jnp.ravel(a[th : 2 * th]) for a in arrays])
    (lo, hi), arrays = tie(((lo, hi), list(arrays)))
    return arrays, (jax.lax.ppermute(lo, AXIS, to_right), jax.lax.ppermute(hi, AXIS, to_left))


def receive_group(arrays, got: tuple, th: int, n: int):
    """The receive half of :func:`exchange_group`: ``got`` (from :func:`send_group`) written
    into the halos of ``arrays``."""
    m = arrays[0].shape[0] - 2 * th
    shapes = [(th,) + a.shape[1:] for a in arrays]
    if n == 2:
        _, recv, _ = two_way(m, th)
        return [
            jax.lax.dynamic_update_slice_in_dim(a, g, recv, 0) for a, g in zip(arrays, _split(got[0], shapes))
        ]
    out = []
    for a, low, high in zip(arrays, _split(got[0], shapes), _split(got[1], shapes)):
        a = jax.lax.dynamic_update_slice_in_dim(a, low, 0, 0)
        out.append(jax.lax.dynamic_update_slice_in_dim(a, high, m + th, 0))
    return out


def extend(a, th: int, n: int, axis: int = 0):
    """``a``'s slab with its halos filled from the neighbours."""
    pad = [(0, 0)] * a.ndim
    pad[axis] = (th, th)
    return exchange(jnp.pad(a, pad), th, n, axis)


def _frame(shape: tuple, rect: tuple) -> list:
    """The (y, z) slices of a plane block of ``shape`` (th, ny, nz) around ``rect`` = (y0,
    y1, z0, z1): the rows below and above it whole, then the two sides of its rows."""
    y0, y1, z0, z1 = rect
    return [
        (slice(None), slice(0, y0), slice(None)),
        (slice(None), slice(y1, shape[1]), slice(None)),
        (slice(None), slice(y0, y1), slice(0, z0)),
        (slice(None), slice(y0, y1), slice(z1, shape[2])),
    ]


def send_interior(fields: list, rect: tuple, th: int):
    """Two devices: send ``rect`` of each field's send planes (the cells the bulk kernel and
    its tail wrote last). Returns (the received buffer, the fields to go on with): an
    optimization barrier orders the copies before the kernels that write over the fields
    in place, so XLA need not copy them."""
    m = fields[0].shape[0] - 2 * th
    send, _, pp = two_way(m, th)
    y0, y1, z0, z1 = rect
    buf = jnp.concatenate(
        [jnp.ravel(jax.lax.dynamic_slice_in_dim(f, send, th)[:, y0:y1, z0:z1]) for f in fields]
    )
    buf, fields = jax.lax.optimization_barrier((buf, list(fields)))
    return jax.lax.ppermute(buf, AXIS, pp), fields


def finish_interior(fields: list, psis: list, got, rect: tuple, th: int):
    """After the CPML kernel: send the frame around ``rect`` of each field's send planes and
    the psi slabs' send planes; write both parts (``got`` from :func:`send_interior`) into
    the halos. Returns (fields, psis)."""
    m = fields[0].shape[0] - 2 * th
    send, recv, pp = two_way(m, th)
    y0, y1, z0, z1 = rect
    blocks = [jax.lax.dynamic_slice_in_dim(f, send, th) for f in fields]
    cuts = _frame(blocks[0].shape, rect)
    pieces = [b[c] for b in blocks for c in cuts] + [jax.lax.dynamic_slice_in_dim(v, send, th) for v in psis]
    frame = jax.lax.ppermute(jnp.concatenate([jnp.ravel(p) for p in pieces]), AXIS, pp)
    frame = _split(frame, [p.shape for p in pieces])
    inner = _split(got, [(th, y1 - y0, z1 - z0)] * len(fields))
    out = []
    for j, f in enumerate(fields):
        lo, hi, left, right = frame[4 * j : 4 * j + 4]
        block = jnp.concatenate([lo, jnp.concatenate([left, inner[j], right], axis=2), hi], axis=1)
        out.append(jax.lax.dynamic_update_slice_in_dim(f, block, recv, 0))
    rest = frame[4 * len(fields) :]
    return out, [jax.lax.dynamic_update_slice_in_dim(v, g, recv, 0) for v, g in zip(psis, rest)]
