"""The halo exchange of the several-device FDTD step (see :mod:`emjax.fdtd.sharded` for the
design): the x-differences with one or two planes per face from the neighbours
(:func:`diff_x`), the x-CPML's edge windows replicated by one all-reduce
(:func:`edge_windows`), the 4th order's wall terms from them, and replication constraints.
The step (:mod:`emjax.fdtd.step`) calls these when its plan carries a layout.
"""

from __future__ import annotations

from typing import NamedTuple

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


class Planes(NamedTuple):
    """A halo correction of :func:`diff_x`: ``lo`` (``hi``), an x-split array of ``n p``
    planes, to be added (times the update's coefficient) to the first (last) ``p`` planes of
    every device's slab of component ``comp``; None: nothing on that face."""

    comp: int
    lo: object
    hi: object


def diff_x(f, forward: bool, inv_dx, order: int, phase, layout: Layout):
    """The x-derivative of :func:`emjax.fdtd.update.d_forward` (``forward``) or
    ``d_backward`` on an x-split array, as ``(v, lo, hi)``: ``v`` is each device's slab
    differenced with its own edge plane standing for its neighbours' planes (no dependency
    on the exchange: the bulk update that reads it need not wait); ``lo`` and ``hi`` are the
    missing parts of the first and last one or two planes (the stencil applied to received
    minus stand-in planes; x-split arrays of ``n p`` planes, None where nothing is missing),
    from one (2nd order) or two (4th order) planes per face sent to the neighbours by
    ``ppermute`` on the ring of devices. ``v + lo + hi`` is the one-device roll's difference
    (the received plane's term is exact; the sum is rounded differently)."""
    n = layout.n
    to_left = [(i, (i - 1) % n) for i in range(n)]  # my first planes follow my left neighbour's
    to_right = [(i, (i + 1) % n) for i in range(n)]

    def local(b):
        k = jax.lax.axis_index(AXIS)
        m = b.shape[0]
        first, last = b[:1], b[m - 1 :]
        if order == 2:
            if forward:  # f[i + 1]: the right neighbour's first plane after my last
                after = jax.lax.ppermute(b[:1], AXIS, to_left)
                if phase is not None:
                    after = jnp.where(k == n - 1, after * jnp.asarray(phase, b.dtype), after)
                nxt = jnp.concatenate([b[1:], last])  # plane m - 1: difference 0
                return (nxt - b) * inv_dx, None, (after - last) * inv_dx
            before = jax.lax.ppermute(b[m - 1 :], AXIS, to_right)
            if phase is not None:
                before = jnp.where(k == 0, before * jnp.asarray(1 / phase, b.dtype), before)
            prev = jnp.concatenate([first, b[:-1]])  # plane 0: difference 0
            return (b - prev) * inv_dx, (first - before) * inv_dx, None
        # 4th order (no Bloch phase on one device either): f[i-2 .. i+2] as needed; the
        # received planes' terms by linearity (d: received minus the stand-in edge plane)
        if forward:  # v[j] = C1 (f[j+1] - f[j]) + C3 (f[j+2] - f[j-1]); e[j] = f[j - 1]
            before = jax.lax.ppermute(b[m - 1 :], AXIS, to_right)
            after = jax.lax.ppermute(b[:2], AXIS, to_left)
            e = jnp.concatenate([first, b, last, last])
            d0, d1 = after[:1] - last, after[1:2] - last
            lo = -C3 * (before - first) * inv_dx  # f[-1] in plane 0
            hi = jnp.concatenate([C3 * d0, C1 * d0 + C3 * d1]) * inv_dx  # f[m], f[m+1]
        else:  # v[j] = C1 (f[j] - f[j-1]) + C3 (f[j+1] - f[j-2]); e[j] = f[j - 2]
            before = jax.lax.ppermute(b[m - 2 :], AXIS, to_right)
            after = jax.lax.ppermute(b[:1], AXIS, to_left)
            e = jnp.concatenate([first, first, b, last])
            d0, d1 = before[:1] - first, before[1:2] - first  # f[-2], f[-1]
            lo = -jnp.concatenate([C1 * d1 + C3 * d0, C3 * d1]) * inv_dx
            hi = C3 * (after - last) * inv_dx  # f[m] in plane m - 1
        v = (C1 * (e[2 : m + 2] - e[1 : m + 1]) + C3 * (e[3 : m + 3] - e[0:m])) * inv_dx
        return v, lo, hi

    def parts(b):  # shard_map's outputs are arrays: the None faces left out, put back below
        return tuple(x for x in local(b) if x is not None)

    spec = PartitionSpec(AXIS, None, None)
    faces = (False, True) if order == 2 and forward else (True, False) if order == 2 else (True, True)
    out = list(jax.shard_map(parts, mesh=layout.mesh, in_specs=spec, out_specs=(spec,) * (1 + sum(faces)))(f))
    v = out.pop(0)
    lo = out.pop(0) if faces[0] else None
    hi = out.pop(0) if faces[1] else None
    return v, lo, hi


def window_planes(comp: int, start: int, term, nx: int, layout: Layout) -> Planes:
    """A replicated term of the planes ``[start, start + w)`` next to one x face (the x-CPML's
    slab correction, the 4th order's wall terms) as :class:`Planes` of component ``comp``:
    each device takes its part locally (a dynamic slice of the term; zeros on the devices it
    does not reach), to be added in place after the bulk pass like the halo planes (a term
    padded to the grid inside the bulk update would hold it up until the windows'
    all-reduce, and XLA may write the padded term out at the whole grid's size)."""
    n, w = layout.n, term.shape[0]
    m = nx // n
    low = start < nx - start - w  # the window [0, start + w), or [start, nx)
    length = start + w if low else nx - start
    p = min(length, m)

    def local(t):
        k = jax.lax.axis_index(AXIS)
        zeros = [(0, 0)] * (t.ndim - 1)
        # the start clamped here (past the window: the zeros padded on; JAX would wrap a
        # negative start around)
        if low:  # device k's planes [0, p) are the grid's [k m, k m + p)
            t = jnp.pad(t, [(start, p)] + zeros)
            return jax.lax.dynamic_slice_in_dim(t, jnp.minimum(k * m, length), p)
        # device k's planes [m - p, m) are the grid's [(k + 1) m - p, (k + 1) m)
        t = jnp.pad(t, [(p, nx - start - w)] + zeros)
        return jax.lax.dynamic_slice_in_dim(t, jnp.maximum((k + 1) * m - start, 0), p)

    spec = PartitionSpec(AXIS, None, None)
    part = jax.shard_map(local, mesh=layout.mesh, in_specs=PartitionSpec(), out_specs=spec)(term)
    return Planes(comp, part, None) if low else Planes(comp, None, part)


def add_planes(F, planes, scale, masks, layout: Layout):
    """``F[comp] += k * term`` on each device's first (``lo``) or last (``hi``) planes of
    its slab, for the :class:`Planes` of :func:`diff_x`, in place (one-plane updates after
    the bulk pass: only they wait for the exchange). ``k``: ``scale`` (a scalar, a per-cell
    or a per-component coefficient) times the wall ``masks`` of the axes other than the
    component's, as in :func:`emjax.fdtd.terms.add_slabs`."""
    nx = F[0].shape[0]
    extra = [jnp.asarray(scale)] + [mk for mk in masks if mk is not None]

    def spec(x):
        if x.ndim == 4 and x.shape[1] == nx:
            return PartitionSpec(None, AXIS, None, None)
        if x.ndim == 3 and x.shape[0] == nx:
            return PartitionSpec(AXIS, None, None)
        return PartitionSpec()

    terms = [(p.comp, t, face) for p in planes for t, face in ((p.lo, "lo"), (p.hi, "hi")) if t is not None]
    split = PartitionSpec(AXIS, None, None)

    def local(F, ts, extra):
        F = list(F)
        sc, mks = extra[0], iter(extra[1:])
        mks = [None if mk is None else next(mks) for mk in masks]
        m = F[0].shape[0]
        for (comp, _, face), t in zip(terms, ts):
            p = t.shape[0]
            start = 0 if face == "lo" else m - p
            sl = slice(start, start + p)
            k = sc[comp] if sc.ndim == 4 else sc
            k = k[sl] if k.ndim == 3 and k.shape[0] == m else k
            for ax, mk in enumerate(mks):
                if mk is not None and ax != comp:
                    k = k * (mk[sl] if mk.shape[0] == m else mk)
            F[comp] = F[comp].at[sl].add(k * t)
        return tuple(F)

    in_specs = ((split,) * 3, [split] * len(terms), [spec(x) for x in extra])
    return jax.shard_map(local, mesh=layout.mesh, in_specs=in_specs, out_specs=(split,) * 3)(
        tuple(F), [t for _, t, _ in terms], extra
    )


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
