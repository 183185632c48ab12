"""The DDA on several devices: orientations over devices, or one lattice in slabs.

Two ways to split, both behind ``layout=`` (an :class:`emjax.layout.Layout`, a device count
or a device list; None or one device never reaches this module):

* **Orientations** (:func:`solve_batched`, used by :func:`emjax.dda.average` on a layout
  spanning several processes; on the devices of one process the orientations are dealt out
  whole instead, each device running its own batch in its own host thread, see
  :func:`emjax.layout.on_each`): the right-hand sides of one particle's system are split
  along the batch axis; the interaction tensor is replicated. Each device runs the vmapped
  Krylov loop on its systems; the only communication is the loop's "has every system
  stopped" reduction. The batch is padded
  to a multiple of the device count with copies of its last system (dropped afterwards).

* **Slabs of one lattice** (:class:`Slabs`, used by :func:`emjax.dda.solve`): the dipole
  vectors (3, nx, ny, nz) are split along x (nx padded to a multiple of the device count with
  empty cells, s = 0), the FFT of the interaction tensor along its z-frequency axis ("zyx"
  layout (6, Mz, My, Mx), Mz padded). The matvec is a slab-decomposed 3-D FFT under
  :func:`jax.shard_map`: the FFT along z of the local x planes, one ``all_to_all`` (split z
  frequencies, gather x), the FFTs along x and y, the product with the local part of the
  tensor, and the same backwards. The exchange comes before the y transform, so it carries
  the ny lattice rows rather than the 2 ny of the embedding: half the bytes of an exchange
  after the (y, z) pair. The Krylov recurrences run on the sharded vectors as they are
  (their dot products become all-reduces of one number); no device ever holds a whole
  field.

The interaction tensor of a slab layout is computed slab by slab: the circulantly embedded
G at signed index differences (``G(-r)`` is the embedding's mirrored copy, odd components
changing sign by themselves) for each device's x-slab of the embedding, then the same
distributed FFT.
"""

from __future__ import annotations

import functools
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import PartitionSpec as P

from .. import krylov
from ..errors import ConfigError
from ..layout import AXIS, Layout
from . import interaction
from .matvec import DDAOperator

# ----------------------------------------------------------------------------------------
# orientations (batched right-hand sides) over devices


def pad_batch(a, n: int):
    """``a`` padded along axis 0 to length ``n`` with copies of its last entry."""
    a = jnp.asarray(a)
    if a.shape[0] == n:
        return a
    return jnp.concatenate([a, jnp.repeat(a[-1:], n - a.shape[0], axis=0)])


def solve_batched(Dhat, s, rhs, solver, variant: str, layout: Layout, progress=None):
    """:func:`emjax.krylov.solve_batched` of the DDA systems ``(I - s_i G s_i) x_i = rhs_i``
    with the batch split over ``layout``'s devices; returns the results of the B given
    systems (the padding copies dropped).

    The Krylov loop is krylov's own (its jitted vmapped init and chunk), run under
    :func:`jax.shard_map` so that each device iterates its own systems (GSPMD partitioning
    of the plain batched loop from batch-split inputs gathers the whole batch around the
    FFTs: measured, 4 all-gathers per iteration). The host loop mirrors
    :func:`emjax.krylov.solve_batched`; each device's loop stops when its own systems have,
    and a stopped system keeps its state, so the results do not depend on the split. A
    layout spanning several processes: every process gets every system's result, the
    solutions gathered onto its own default device."""
    from ..krylov import batched as kb
    from ..krylov import core as kc

    solver = solver or krylov.QMR()
    B = rhs.shape[0]
    Bp = layout.padded(B)
    s = layout.put(pad_batch(s, Bp), 0)
    b = layout.put(pad_batch(rhs, Bp).astype(jnp.result_type(rhs.dtype, jnp.complex64)), 0)
    if not _replicated(Dhat, layout):
        Dhat = layout.put(Dhat, None)
    op = DDAOperator(Dhat, s, variant)
    treedef, axes = kb._flat_axes(op, DDAOperator(None, 0, variant))
    leaves = jax.tree_util.tree_leaves(op)
    init, chunk = _batched_loop(solver.name, treedef, axes, layout)
    t0 = time.perf_counter()
    rdt = jnp.real(b).dtype
    # several processes: host reads gather the whole (small) per-system arrays everywhere
    host = np.asarray if layout.local else layout.gather
    bnorm = np.asarray(host(jax.vmap(kc._norm)(b)), dtype=float)
    tol = np.maximum(solver.rtol * bnorm, solver.atol)
    hist = jnp.full((solver.maxiter + 1,), jnp.nan, rdt)
    state = init(leaves, b, jnp.zeros_like(b), hist)
    tol_d = layout.put(jnp.asarray(tol, rdt), 0)
    safe_b = np.where(bnorm == 0, 1.0, bnorm)
    it = 0
    while True:
        it = min(it + solver.chunk, solver.maxiter)
        state = chunk(leaves, state, jnp.int32(it), tol_d)
        rnorm = np.asarray(host(state["rnorm"]), dtype=float)
        stopped = ~np.isfinite(rnorm) | (rnorm <= tol) | host(state["breakdown"])
        if progress is not None:
            progress(int(np.max(host(state["it"]))), float(np.max(np.where(bnorm == 0, 0, rnorm / safe_b))))
        if stopped.all() or it >= solver.maxiter:
            break
    seconds = time.perf_counter() - t0
    iters, hists, brk = host(state["it"]), host(state["hist"]), host(state["breakdown"])
    # one process: the solutions stay on the devices; several: each process gets them all,
    # on its own default device (what follows, the observables, runs there)
    X = state["x"] if layout.local else jax.device_put(layout.gather(state["x"]))
    out = []
    for i in range(B):
        r, n = float(rnorm[i]), int(iters[i])
        if bnorm[i] == 0:
            out.append(
                kc.KrylovResult(
                    jnp.zeros_like(X[i]), True, 0, 0, 0.0, np.zeros(1), "b = 0: x = 0", seconds, solver.name
                )
            )
            continue
        conv = bool(np.isfinite(r) and r <= tol[i])
        msg = kc._message(solver, conv, n, r, bnorm[i], bool(brk[i]))
        n_mv = n * solver.matvecs_per_iteration + 1
        out.append(
            kc.KrylovResult(
                X[i],
                conv,
                n,
                n_mv,
                r / bnorm[i],
                hists[i, : n + 1] / bnorm[i],
                msg,
                seconds,
                solver.name,
            )
        )
    return tuple(out)


@functools.lru_cache(maxsize=32)
def _batched_loop(name: str, treedef, axes, layout: Layout):
    """krylov's vmapped init and chunk under shard_map, the batch axis split (compiled once
    per method, operator structure and layout)."""
    from ..krylov import batched as kb

    leaf_specs = [P() if a is None else P(AXIS) for a in axes]
    mesh = layout.mesh
    init = jax.shard_map(
        lambda lv, b, x0, h: kb._init_many(name, treedef, axes, lv, b, x0, h),
        mesh=mesh,
        in_specs=(leaf_specs, P(AXIS), P(AXIS), P()),
        out_specs=P(AXIS),
        check_vma=False,
    )
    chunk = jax.shard_map(
        lambda lv, st, it, t: kb._chunk_many(name, treedef, axes, lv, st, it, t),
        mesh=mesh,
        in_specs=(leaf_specs, P(AXIS), P(), P(AXIS)),
        out_specs=P(AXIS),
        check_vma=False,
    )
    return jax.jit(init), jax.jit(chunk, donate_argnums=1)


def _replicated(x, layout: Layout) -> bool:
    sh = getattr(x, "sharding", None)
    return (
        sh is not None
        and len(sh.device_set) == layout.n
        and getattr(sh, "spec", None) is not None
        and all(a is None for a in sh.spec)
    )


def replicate(x, layout: Layout):
    """``x`` on every device of the layout (the shared interaction tensor)."""
    return layout.put(x, None)


# ----------------------------------------------------------------------------------------
# one lattice in slabs over devices


class Slabs:
    """The slab decomposition of one lattice ``grid`` (nx, ny, nz) over ``layout``: x split
    for the dipole vectors, the FFT's z-frequency axis split for the interaction tensor."""

    def __init__(self, grid, layout: Layout):
        self.grid = tuple(int(n) for n in grid)
        self.layout = layout
        n = layout.n
        self.M = interaction.fft_shape(self.grid)
        self.nx_pad = layout.padded(self.grid[0])
        self.Mz_pad = layout.padded(self.M[2])
        self.Mx_pad = layout.padded(self.M[0])
        if self.nx_pad > self.M[0]:
            raise ConfigError(
                f"layout: a lattice of {self.grid[0]} cells along x is too thin for {n} devices (padded "
                f"to {self.nx_pad} planes, more than its FFT length {self.M[0]}); use fewer devices"
            )

    def __eq__(self, other):  # static pytree data: equal slabs, one compilation
        return isinstance(other, Slabs) and (self.grid, self.layout) == (other.grid, other.layout)

    def __hash__(self):
        return hash((self.grid, self.layout))

    # placement ------------------------------------------------------------------------
    def pad(self, v):
        """A lattice array (..., nx, ny, nz) padded along x with empty cells."""
        v = jnp.asarray(v)
        ax = v.ndim - 3
        widths = [(0, 0)] * v.ndim
        widths[ax] = (0, self.nx_pad - self.grid[0])
        return jnp.pad(v, widths)

    def put(self, v):
        """Pad along x and place split along x (axis ndim - 3)."""
        v = self.pad(v)
        return self.layout.put(v, v.ndim - 3)

    def crop(self, v):
        """Back to the lattice's nx (a sharded array stays where it is)."""
        return v[..., : self.grid[0], :, :]

    @property
    def field_spec(self):
        return P(None, AXIS, None, None)

    # the interaction tensor -----------------------------------------------------------
    def interaction_fft(self, d: float, k: float, dtype, kind: str = "point"):
        """The FFT of the embedded interaction tensor in the "zyx" layout (6, Mz_pad, My, Mx),
        split along its z-frequency axis (rows Mz..Mz_pad-1 zero). Computed slab by slab."""
        lay = self.layout
        Mx, My, Mz = self.M
        nloc = self.Mx_pad // lay.n
        shape = (6, self.Mx_pad, My, Mz)

        def slab(index):
            xs = index[1]
            a = xs.start or 0
            b = xs.stop if xs.stop is not None else self.Mx_pad
            return embedded_green(self.grid, self.M, d, k, kind, a, b).astype(dtype)

        sharding = lay.sharding(4, 1)
        g = jax.make_array_from_callback(shape, sharding, slab)
        assert nloc * lay.n == self.Mx_pad
        return _green_fft(g, self.M, self.Mz_pad, lay)

    # the operator ---------------------------------------------------------------------
    def operator(self, Dhat, s):
        """The DDA operator on x-split vectors (3, nx_pad, ny, nz); ``s`` (nx, ny, nz)."""
        return SlabOperator(Dhat, self.put(s), self)


def embedded_green(grid, M, d: float, k: float, kind: str, x0: int, x1: int) -> np.ndarray:
    """The circulantly embedded interaction tensor (6, x1 - x0, My, Mz) for the embedding's
    x indices [x0, x1) (indices >= Mx: zero), computed at signed index differences."""
    Mx, My, Mz = M

    def signed(n, m, idx):
        idx = np.asarray(idx)
        out = np.where(idx < n, idx, idx - m).astype(float)
        valid = (idx < n) | ((idx > m - n) & (idx < m))
        return out, valid

    ix, vx = signed(grid[0], Mx, np.arange(x0, x1))
    iy, vy = signed(grid[1], My, np.arange(My))
    iz, vz = signed(grid[2], Mz, np.arange(Mz))
    x = ix[:, None, None] * d
    y = iy[None, :, None] * d
    z = iz[None, None, :] * d
    valid = vx[:, None, None] & vy[None, :, None] & vz[None, None, :]
    r2 = x * x + y * y + z * z
    rs = np.sqrt(np.where(r2 == 0, 1.0, r2))
    kr = k * rs
    e = np.exp(1j * kr) / rs**3
    t1 = e * (kr**2 - 1 + 1j * kr)
    t2 = e * (3 - kr**2 - 3j * kr)
    q = (x / rs, y / rs, z / rs)
    out = np.zeros((6,) + r2.shape, complex)
    corr = None
    if kind == "fcd":
        corr = _fcd_signed(x, y, z, rs, kr, d)
    elif kind != "point":
        raise ValueError(f"unknown interaction {kind!r}")
    for c, (a, b) in enumerate(interaction.COMPONENTS):
        g = t2 * q[a] * q[b] + (t1 if a == b else 0)
        if corr is not None:
            g = g + corr[c]
        out[c] = np.where((r2 == 0) | ~valid, 0, g)
    return out


def _fcd_signed(x, y, z, rs, kr, d):
    from scipy import special

    kfr = np.pi * rs / d
    ci1, si1 = special.sici(kfr + kr)[::-1]
    ci2, si2 = special.sici(kfr - kr)[::-1]
    ci = ci1 - ci2
    si = np.pi - si1 - si2
    inv_r3 = 1 / rs**3
    cos_e, sin_e = np.cos(kr) * inv_r3, np.sin(kr) * inv_r3
    g0 = (sin_e * ci + cos_e * si) / np.pi
    g2 = (kr * (cos_e * ci - sin_e * si) + 2 / 3 * inv_r3 * (kfr * np.cos(kfr) - 4 * np.sin(kfr))) / np.pi
    g2 = g2 - g0
    t = g0 * kr**2
    q = (x / rs, y / rs, z / rs)
    out = []
    for a, b in interaction.COMPONENTS:
        c = q[a] * q[b] * (t + 3 * g2)
        if a == b:
            c = c - (t + g2)
        out.append(c)
    return out


def _green_fft(g, M, Mz_pad: int, layout: Layout):
    Mx, My, Mz = M

    def body(gl):  # (6, Mx_pad / n, My, Mz)
        q = jnp.fft.fft2(gl, axes=(2, 3))
        q = jnp.pad(q, ((0, 0), (0, 0), (0, 0), (0, Mz_pad - Mz)))
        q = lax.all_to_all(q, AXIS, 3, 1, tiled=True)  # (6, Mx_pad, My, Mz_pad / n)
        q = jnp.fft.fft(q[:, :Mx], axis=1)
        return jnp.transpose(q, (0, 3, 2, 1))  # (6, Mz_pad / n, My, Mx)

    f = jax.shard_map(
        body, mesh=layout.mesh, in_specs=P(None, AXIS, None, None), out_specs=P(None, AXIS, None, None)
    )
    return jax.jit(f)(g)


def slab_convolve(Dhat, p, grid, M, nx_pad: int, Mz_pad: int):
    """The local part of ``G * p`` inside :func:`jax.shard_map`: ``Dhat`` (6, Mz_pad / n, My,
    Mx) and ``p`` (3, nx_pad / n, ny, nz) the device's slabs. The zero halves of the
    embedding are never transformed nor exchanged: z is transformed on the local lattice
    rows, x on the ny lattice rows, y last."""
    _, nx, ny, nz = (None,) + tuple(grid)
    Mx, My, Mz = M
    q = jnp.fft.fft(p, n=Mz, axis=3)  # (3, nxl, ny, Mz)
    q = jnp.pad(q, ((0, 0), (0, 0), (0, 0), (0, Mz_pad - Mz)))
    q = lax.all_to_all(q, AXIS, 3, 1, tiled=True)  # (3, nx_pad, ny, Mzl)
    q = jnp.fft.fft(jnp.transpose(q, (0, 3, 2, 1)), n=Mx, axis=3)  # (3, Mzl, ny, Mx)
    q = jnp.fft.fft(q, n=My, axis=2)  # (3, Mzl, My, Mx)
    y = interaction._tensor_product(Dhat, q)
    y = jnp.fft.ifft(y, axis=2)[:, :, :ny]
    y = jnp.fft.ifft(y, axis=3)[..., :nx_pad]  # (3, Mzl, ny, nx_pad)
    y = lax.all_to_all(jnp.transpose(y, (0, 3, 2, 1)), AXIS, 1, 3, tiled=True)  # (3, nxl, ny, Mz_pad)
    return jnp.fft.ifft(y[..., :Mz], axis=3)[..., :nz]


class SlabOperator:
    """``x -> x - s * (G * (s * x))`` on x-split vectors; a JAX pytree (Dhat, s leaves)."""

    def __init__(self, Dhat, s, slabs: Slabs):
        self.Dhat, self.s, self.slabs = Dhat, s, slabs

    def interact(self, p):
        sl = self.slabs
        q = p.astype(self.Dhat.dtype)
        f = jax.shard_map(
            lambda D, v: slab_convolve(D, v, sl.grid, sl.M, sl.nx_pad, sl.Mz_pad),
            mesh=sl.layout.mesh,
            in_specs=(P(None, AXIS, None, None), sl.field_spec),
            out_specs=sl.field_spec,
        )
        return f(self.Dhat, q).astype(p.dtype)

    def __call__(self, x):
        return x - self.s * self.interact(self.s * x)


jax.tree_util.register_pytree_node(
    SlabOperator,
    lambda op: ((op.Dhat, op.s), op.slabs),
    lambda slabs, children: SlabOperator(*children, slabs=slabs),
)


def slab_memory_bytes(grid, layout: Layout, complex_dtype) -> int:
    """Per-device bytes of the interaction tensor of a slab layout (the largest array)."""
    sl = Slabs(grid, layout)
    return 6 * sl.Mz_pad // layout.n * sl.M[1] * sl.M[0] * np.dtype(complex_dtype).itemsize
