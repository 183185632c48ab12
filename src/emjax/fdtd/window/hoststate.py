"""Where a window run keeps its state: the host-memory path (pinned or NumPy) and the
pinned pool's limits, and the pinned chunks of the x-split leaves (:class:`_Chunks`)."""

from __future__ import annotations

import os
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ...errors import ConfigError
from .slabs import _x_split
from .subgrid import _Slot


def host_memory_kind(device=None) -> str | None:
    """``"pinned_host"`` where ``device`` offers that memory kind (GPUs; the CPU backend of
    JAX 0.10 does too), else None (the NumPy path)."""
    device = jax.devices()[0] if device is None else device
    try:
        kinds = {m.kind for m in device.addressable_memories()}
    except Exception:  # a backend without memory kinds
        return None
    return "pinned_host" if "pinned_host" in kinds else None


def host_memory_path(host_memory: str | None = None, device=None) -> str:
    """The path :func:`run_window` takes: ``"pinned"`` (the state as JAX arrays in the
    device's ``pinned_host`` memory, per-slab chunks) or ``"numpy"`` (NumPy arrays, pageable
    memory); ``host_memory=None``: pinned where the device offers it."""
    if host_memory not in (None, "pinned", "numpy"):
        raise ConfigError(f"run_window: host_memory must be None, 'pinned' or 'numpy', got {host_memory!r}")
    available = host_memory_kind(device) is not None
    if host_memory == "pinned" and not available:
        raise ConfigError(
            "run_window: host_memory='pinned' but this device has no pinned_host memory kind; "
            "use host_memory=None or 'numpy'"
        )
    return host_memory or ("pinned" if available else "numpy")


def pinned_pool_limit(device=None) -> int | None:
    """Bytes XLA lets the ``pinned_host`` memory of ``device`` hold: on a GPU a BFC pool of
    ``XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB`` GiB (default 64; read when the backend starts),
    which keeps what it once allocated; None on the CPU (ordinary host memory)."""
    device = jax.devices()[0] if device is None else device
    if device.platform == "cpu":
        return None
    return int(os.environ.get("XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB", "64")) << 30


def _pinned_fits(need: int, fields: int, device) -> str | None:
    """Why ``need`` bytes of pinned chunks do not fit (None: they do): the pool's limit,
    or host RAM for the pool (kept to the end) plus the NumPy E and H of the result."""
    limit = pinned_pool_limit(device)
    if limit is None:
        return None
    if need > limit:
        return (
            f"the pinned chunks need {need / 2**30:.1f} GiB, more than XLA's pinned host pool "
            f"({limit / 2**30:.0f} GiB: set XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB before JAX starts, "
            "or call emjax.backend.raise_pinned_host_limit())"
        )
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if need + fields > 0.95 * ram:
        return (
            f"the pinned chunks ({need / 2**30:.1f} GiB, held by XLA's pool to the end) and the "
            f"result's E and H ({fields / 2**30:.1f} GiB) exceed the host's {ram / 2**30:.0f} GiB"
        )
    return None


@partial(jax.jit, static_argnames=("axes",))
def _concat(lists, axes):
    """Each leaf's ring planes from its chunks (on the device)."""
    return tuple(x[0] if len(x) == 1 else jnp.concatenate(x, axis=a) for x, a in zip(lists, axes))


@partial(jax.jit, static_argnames=("bounds", "axes"))
def _split(leaves, bounds, axes):
    """The owned chunks of each leaf: its local planes ``bounds`` (one (start, stop) per chunk)."""
    return tuple(
        tuple(jax.lax.slice_in_dim(x, a, b, axis=ax) for a, b in bd)
        for x, bd, ax in zip(leaves, bounds, axes)
    )


class _Chunks:
    """The x-split leaves (E, H, the CPML psi, dispersive currents J and the x-split
    coefficients) as JAX arrays in the device's ``pinned_host`` memory, each cut along x at
    ``cuts``: every slab boundary, every ring piece's ends and the x-CPML's inner faces, so
    that a slab's owned planes and its ring are whole chunks. ``data[name][c]``: chunk
    ``c`` of leaf ``name``, global planes ``[cuts[c], cuts[c + 1])``, None outside the
    leaf's planes ``[start, stop)`` (the x-face psi: the L planes at its face, held whole
    by the edge rings); names ``("E", c)``, ``("H", c)``, ``("psi", key)``, ``("J", i)``
    (state) and ``("coef", key, i)`` (coefficients, never written)."""

    def __init__(self, subs, host, arrays, nx, device, zero_state: bool = False):
        self.pinned = jax.sharding.SingleDeviceSharding(device, memory_kind="pinned_host")
        self.dev = jax.sharding.SingleDeviceSharding(device, memory_kind=device.default_memory().kind)
        self.start, self.stop, self.axes, self.data = {}, {}, {}, {}
        state = [(("E", c), x) for c, x in enumerate(host["E"])] + [
            (("H", c), x) for c, x in enumerate(host["H"])
        ]
        for k, v in host["psi"].items():
            name = ("psi", k)
            state.append((name, v))
            if k[1] == "0":  # the x faces: L planes
                L = np.shape(v)[0]
                self.start[name] = 0 if k.endswith("lo") else nx - L
                self.stop[name] = self.start[name] + L
        self.J_tree = jax.tree_util.tree_structure(host["J"])
        state += [(("J", i), x) for i, x in enumerate(jax.tree_util.tree_leaves(host["J"]))]
        coef = []
        for k, v in arrays.items():
            if k == "src_cb" or (k.startswith("pml") and k[4] == "0"):
                continue
            coef += [
                (("coef", k, i), x) for i, x in enumerate(jax.tree_util.tree_leaves(v)) if _x_split(x, nx)
            ]
        cuts = {0, nx} | set(self.start.values()) | set(self.stop.values())
        for s in subs:
            cuts |= {s.ring.lo, s.ring.hi} | {p for piece in s.ring.pieces for p in piece}
        self.cuts = sorted(cuts)
        nc = len(self.cuts) - 1
        span = lambda a, b: [c for c in range(nc) if a <= self.cuts[c] and self.cuts[c + 1] <= b]
        self.ring_ids = [sum((span(a, b) for a, b in s.ring.pieces), []) for s in subs]
        self.own_ids = [span(s.ring.lo, s.ring.hi) for s in subs]
        self.last_reader = [max(k for k, ids in enumerate(self.ring_ids) if c in ids) for c in range(nc)]
        for name, x in state + coef:
            self.add(name, x, 0 if name[0] != "coef" else np.ndim(x) - 3, zero_state and name[0] != "coef")
        self.state_names = tuple(n for n, _ in state)
        self.coef_names = tuple(n for n, _ in coef)
        self.resident = None  # one slab: the coefficients stay on the device
        if len(subs) == 1:
            lists = jax.device_put([self.ring(0, n) for n in self.coef_names], self.dev)
            self.resident = dict(zip(self.coef_names, _concat(lists, axes=self.axes_of(self.coef_names))))
        # per ring: the leaves sent (the x-face psi to edge rings only), those returned with
        # their owned chunks and those chunks' planes in the leaf's ring-local array
        names = self.state_names + (self.coef_names if self.resident is None else ())
        self.up, self.down = [], []
        for k, s in enumerate(subs):
            self.up.append(tuple(n for n in names if s.ring.edge or n not in self.start))
            down = []
            for n in self.state_names:
                ids = [c for c in self.own_ids[k] if self.data[n][c] is not None]
                if ids and (s.ring.edge or n not in self.start):
                    # the leaf's local plane of global plane p: through the ring's pieces
                    # (full leaves) or from the face (x-face psi, held whole)
                    if n in self.start:
                        q = lambda p, n=n: p - self.start[n]
                    else:
                        q = lambda p, s=s: s.ring.own[0] + p - s.ring.lo
                    down.append((n, tuple(ids), tuple((q(self.cuts[c]), q(self.cuts[c + 1])) for c in ids)))
            self.down.append(tuple(down))
        # each sub's small coefficient leaves, on the device once
        self.small = []
        for s in subs:
            leaves = jax.tree_util.tree_leaves(s.arrays)
            self.small.append(jax.device_put([x for x in leaves if not isinstance(x, _Slot)], self.dev))
        size = lambda n, ids: sum(self.data[n][c].nbytes for c in ids if self.data[n][c] is not None)
        self.bytes_up = sum(
            size(n, self.ring_ids[k]) for k in range(len(subs)) for n in self.up[k]
        )  # per pass
        self.bytes_down = sum(size(n, ids) for d in self.down for n, ids, _ in d)

    def ring(self, k, name, data=None) -> list:
        """Ring ``k``'s chunks of leaf ``name``, in the ring's plane order (from ``data``
        where it holds ``name``: the next pass's state)."""
        src = data[name] if data is not None and name in data else self.data[name]
        return [src[c] for c in self.ring_ids[k] if src[c] is not None]

    @property
    def ahead(self) -> bool:
        """Whether the next pass's first ring goes up while this pass's last slab runs (two
        slabs or more; its chunks of the last slab's planes come from the device)."""
        return len(self.ring_ids) >= 2

    def add(self, name, x, axis, zero=False):
        """Leaf ``x`` (NumPy) as pinned chunks, one at a time (device_put copies: the NumPy
        array is never aliased); ``zero``: ``x`` is zeros, made on the device and sent."""
        x = np.asarray(x)
        a0, a1 = self.start.get(name, 0), self.stop.get(name, self.cuts[-1])
        ids = [c for c in range(len(self.cuts) - 1) if a0 <= self.cuts[c] and self.cuts[c + 1] <= a1]
        sl = lambda c: x[(slice(None),) * axis + (slice(self.cuts[c] - a0, self.cuts[c + 1] - a0),)]
        self.data[name] = [None] * (len(self.cuts) - 1)
        zeros = {}  # one device buffer per chunk shape, copied to each chunk
        for c in ids:
            if zero:
                shape = sl(c).shape
                if shape not in zeros:
                    zeros[shape] = jnp.zeros(shape, x.dtype, device=self.dev)
                self.data[name][c] = jax.device_put(zeros[shape], self.pinned)
            else:
                self.data[name][c] = jax.device_put(np.ascontiguousarray(sl(c)), self.pinned)
        jax.block_until_ready(self.data[name])
        self.axes[name] = axis

    def axes_of(self, names):
        return tuple(self.axes[n] for n in names)

    def leaf(self, state, name):
        if name[0] == "J":
            return jax.tree_util.tree_leaves(state["J"])[name[1]]
        return state[name[0]][name[1]]

    def slots(self, host):
        """``host`` with the chunked state leaves replaced by :class:`_Slot` (NumPy freed)."""
        host["E"] = tuple(_Slot(("E", c)) for c in range(3))
        host["H"] = tuple(_Slot(("H", c)) for c in range(3))
        host["psi"] = {k: _Slot(("psi", k)) for k in host["psi"]}
        n_j = self.J_tree.num_leaves
        host["J"] = jax.tree_util.tree_unflatten(self.J_tree, [_Slot(("J", i)) for i in range(n_j)])

    def gather(self, field: str, shape, dtype) -> np.ndarray:
        """E or H as one NumPy (3, nx, ny, nz) array, each chunk freed once copied."""
        out = np.empty((3,) + tuple(shape), dtype)
        for c in range(3):
            chunks = self.data[(field, c)]
            for i in range(len(chunks)):
                out[c, self.cuts[i] : self.cuts[i + 1]] = np.asarray(chunks[i])
                chunks[i].delete()
                chunks[i] = None
        return out
