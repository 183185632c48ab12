"""The 3-D FDFD operator on several devices: E arrays split in slabs along x.

The matrix-free operator (:class:`emjax.fdfd.operator3d.Operator3D`) is a nearest-neighbour
stencil, so it is sharded like the FDTD grid: every (3, nx, ny, nz) leaf, the x axis's PML
arrays and the Krylov vectors split along x over the layout's devices. The operator runs
under :func:`jax.shard_map`, each device on its slab, the forward/backward differences along
x completed by a halo exchange of one plane with each neighbour (``ppermute``); the Krylov
loop runs on the sharded vectors (GSPMD: elementwise updates stay local, dot products are
all-reduces of one number). No field is gathered (checked on the compiled HLO in
tests/fdfd/test_fdfd_sharded.py). Measured: letting GSPMD partition the plain operator from
sharded inputs instead gathers whole field components along x (6 all-gathers per matvec on
4 devices, 12 all-to-alls on 3): hence the explicit halos.

A grid whose nx does not divide by the device count is padded along x with fixed cells
(the PEC rows ``x = 0`` of the operator's mask, ``free = 0``) and ``Z = 0`` there: the padded
planes hold zeros, exactly the "zero beyond the grid" of the one-device operator, so the
solution is the same. ``layout=None`` never reaches this module.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import PartitionSpec as P

from ..layout import AXIS, Layout
from .operator3d import Operator3D, _along, _bwd, _curl, _fwd


class XSlabs:
    """Padding and placement of (..., nx, ny, nz) grids split along x over ``layout``."""

    def __init__(self, shape, layout: Layout):
        self.shape = tuple(int(n) for n in shape)
        self.layout = layout
        self.nx_pad = layout.padded(self.shape[0])

    def pad(self, a, value=0):
        a = jnp.asarray(a)
        ax = a.ndim - 3
        w = [(0, 0)] * a.ndim
        w[ax] = (0, self.nx_pad - self.shape[0])
        return jnp.pad(a, w, constant_values=value)

    def put(self, a, value=0):
        """Pad along x with ``value`` and place split along x."""
        a = self.pad(a, value)
        return self.layout.put(a, a.ndim - 3)

    def crop(self, a):
        return a[..., : self.shape[0], :, :]

    def operator(self, op: Operator3D) -> Operator3D:
        """``op`` on the padded, x-split grid (padded planes: fixed cells holding 0)."""
        shape3 = (3,) + self.shape
        rep = lambda v: self.layout.put(v, None)  # noqa: E731
        pad1 = lambda v: self.layout.put(  # noqa: E731
            jnp.pad(v, (0, self.nx_pad - self.shape[0]), constant_values=1), 0
        )
        s_int = (pad1(op.s_int[0]),) + tuple(rep(v) for v in op.s_int[1:])
        s_half = (pad1(op.s_half[0]),) + tuple(rep(v) for v in op.s_half[1:])

        def field(v, value):  # a (3, nx, ny, nz) leaf or a scalar (kept scalar)
            return self.put(v, value) if jnp.ndim(v) == 4 else rep(v)

        free = op.free if jnp.ndim(op.free) == 4 else jnp.broadcast_to(op.free, shape3)
        local = Operator3D(
            self.put(op.eps, 1),
            s_int,
            s_half,
            self.put(op.Z, 0),
            field(op.l, 1),
            field(op.W, 1),
            self.put(free, 0),
            rep(op.scale),
            rep(op.omega2),
        )
        return SlabOperator3D(local, self.layout)


def _spec(v, x_split: bool):
    nd = jnp.ndim(v)
    if nd == 0 or not x_split:
        return P()
    return P(*([None] * (nd - 3) + [AXIS, None, None])) if nd >= 3 else P(AXIS)


def _specs(op: Operator3D) -> Operator3D:
    """The shard_map specs of a slab operator's leaves (an Operator3D of PartitionSpecs)."""
    return Operator3D(
        _spec(op.eps, True),
        (P(AXIS), P(), P()),
        (P(AXIS), P(), P()),
        _spec(op.Z, True),
        _spec(op.l, True),
        _spec(op.W, True),
        _spec(op.free, True),
        P(),
        P(),
    )


def _neighbour(f, n: int, forward: bool):
    """The plane beyond this slab's end (``forward``) or before its start, from the
    neighbouring device (zero at the grid's ends)."""
    if forward:  # device i needs device i + 1's first plane
        return lax.ppermute(f[:1], AXIS, [(i, i - 1) for i in range(1, n)])
    return lax.ppermute(f[-1:], AXIS, [(i, i + 1) for i in range(n - 1)])


class _Local(Operator3D):
    """The operator on one device's slab: differences along x completed by halos."""

    n_devices = 1

    def _diff(self, forward: bool):
        base = _fwd if forward else _bwd
        n = self.n_devices

        def diff(f, axis):
            if axis != 0:
                return base(f, axis)
            h = _neighbour(f, n, forward)
            if forward:
                return jnp.concatenate([f[1:], h], 0) - f
            return f - jnp.concatenate([h, f[:-1]], 0)

        return diff

    def curl_e(self, E):
        return _curl(E, self._diff(True), [1 / _along(v, a) for a, v in enumerate(self.s_half)])

    def curl_h(self, H):
        return _curl(H, self._diff(False), [1 / _along(v, a) for a, v in enumerate(self.s_int)])

    def K(self, V):
        bwd = self._diff(False)
        return bwd(self._w(0) * V[0], 0) + bwd(self._w(1) * V[1], 1) + bwd(self._w(2) * V[2], 2)

    def KT(self, q):
        fwd = self._diff(True)
        return -jnp.stack([self._w(c) * fwd(q, c) for c in range(3)])


class SlabOperator3D:
    """The 3-D FDFD operator on x-split E arrays (3, nx_pad, ny, nz); a JAX pytree."""

    def __init__(self, op: Operator3D, layout: Layout):
        self.op, self.layout = op, layout

    @property
    def eps(self):
        return self.op.eps

    def __call__(self, x):
        n = self.layout.n

        f = jax.shard_map(
            lambda o, v: body_op(o, v, n),
            mesh=self.layout.mesh,
            in_specs=(_specs(self.op), P(None, AXIS, None, None)),
            out_specs=P(None, AXIS, None, None),
        )
        return f(self.op, x)


def body_op(o: Operator3D, v, n: int):
    loc = _Local(o.eps, o.s_int, o.s_half, o.Z, o.l, o.W, o.free, o.scale, o.omega2)
    loc.n_devices = n
    return loc(v)


jax.tree_util.register_pytree_node(
    SlabOperator3D,
    lambda s: ((s.op,), s.layout),
    lambda layout, children: SlabOperator3D(children[0], layout),
)
