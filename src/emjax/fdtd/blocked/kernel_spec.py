"""What one launch of the blocked kernel is: :class:`Spec` (the grid, tile, TH, dtype, the
CPML's axes, walls, sources, probes, tasks...), from which :mod:`.cuda` writes the kernel's
source and its buffers, and the threads and shared memory a CTA of it takes."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: the most shared memory a CTA takes with the ring (H100 / H200: 227 KB per block)
RING_SMEM_LIMIT = 200 * 1024
#: the threads a CTA may hold
MAX_THREADS = 1024


def threads_of(window: tuple, ry: int) -> int:
    """A CTA's threads for a window of (WY, WZ) cells at ``ry`` rows a thread (whole warps)."""
    return 32 * math.ceil(window[0] * window[1] / ry / 32)


def fit_rows(window: tuple, ry: int) -> int:
    """The fewest rows a thread, from ``ry`` up, that divide the window's rows and leave a
    CTA at most :data:`MAX_THREADS` threads."""
    rows = (r for r in range(ry, window[0] + 1) if window[0] % r == 0)
    return next(r for r in rows if threads_of(window, r) <= MAX_THREADS)


@dataclass(frozen=True)
class Spec:
    """Everything the generated kernel is specialised on (a cache key)."""

    dtype: str  # "float32" | "float64"
    shape: tuple
    th: int
    block: tuple  # (BY, BZ): a tile's own cells
    dx: float
    dt: float
    ca: object  # "grid" | "comp" | "array" (one value, traced) | a float (a literal)
    cb: object
    pec: str | None  # None | "grid" | "comp"
    walls: tuple
    pml: tuple  # per axis: CPML thickness L (the packed psi holds 2 L planes) or 0
    kappa: tuple
    sources: tuple  # (((i, j, k) or None, component), ...)
    probes: tuple  # ((field, component, (i, j, k)), ...)
    ry: int = 1  # window rows per thread (WY must be a multiple)
    # CTAs from a table (an int32 input of ``ntask`` rows) instead of the regular tiling:
    # rows (y0, z0, oy0, oy1, oz0, oz1, x0, nxw, ox0, ox1), window origin, own y/z cells, the
    # x march and its written planes
    ntask: int = 0
    record: tuple | None = None  # the probes this kernel records (indices; None: all)
    nxa: int | None = None  # planes the arrays hold (a shard's slab; None: the grid's nx)
    xhalo: int = 0  # a shard's halo planes on either side (its own planes: nxa - 2 xhalo)
    # field records for DFT monitors: (field, component, lo, count) boxes of cells, cell g of
    # axis a in the box where (g - lo[a]) mod n[a] < count[a]; every step's values are
    # written to ``mrec`` (the box's cells in C order per step, boxes one after another)
    boxes: tuple = ()
    # the CPML's per-thread psi chains in shared memory instead of local memory: every CPML
    # axis's (``chain_smem``), or those of ``chain_axes`` (x, y, z) only, the others' in
    # local memory
    chain_smem: bool = False
    chain_axes: tuple = (False, False, False)
    # the regular tiling's tiles this kernel computes: (ty0, ty1, tz0, tz1, n, hy0, hy1,
    # hz0, hz1), the first n tiles of the rectangle in launch order (z fastest) but those of
    # the hole [hy0, hy1) x [hz0, hz1); None: all
    tiles: tuple | None = None
    # per-cell coefficients through the shared-memory ring, and the shared memory a CTA may
    # take (:func:`.cuda.ring_setting`, resolved outside jit by the drivers: part of the key)
    coef_ring: bool = True
    smem_limit: int = RING_SMEM_LIMIT
    # the TF/SF box (:func:`.incidence.spec_entry`; None: no TF/SF source); its incident
    # lines come in as ``tinc`` (TH, 2, n along the incidence axis)
    tfsf: tuple | None = None
    # Drude poles (:func:`.poles.spec_entry`: count, kind of k, kind of beta; None: none)
    poles: tuple | None = None
    # the per-cell coefficients' box and backgrounds (:func:`.coef_box.find`; None: whole)
    cbox: tuple | None = None
    cbg: tuple = ()
    cbox_bg: bool = False  # every window of this kernel misses the box: the backgrounds only
    cbox_slabs: bool = False  # the arrays hold the box's y-z cells of every plane (x slabs)
    # ((y0, ny'), (z0, nz')): the regular tiling covers these cells of y and z only (the
    # interior inside the CPML kernel's face rows, ``split.ALIGNED``); None: whole axes
    span: tuple | None = None
    # 1 (y) or 2 (z): every window of this kernel ends at one of that axis's walls (a CPML
    # face's rows): TH halo cells on the inner side only, none past the wall; 0: both sides
    wall: int = 0
    # the psi a level 1 takes copied into its chain slot in shared memory an iteration ahead
    # (a slot more per chain; :data:`.cuda.PSI_PREFETCH`), not read from memory at level 1
    psi_pref: bool = False
    # CTAs an SM should hold at once (``__launch_bounds__``'s second value: the compiler
    # keeps the registers to 64 K / (threads x this))
    min_ctas: int = 1
    # one device, the regular tiling: the march's planes [x0, x0 + nxw) and those it writes
    # [ox0, ox1), compiled in (:data:`.split.BULK_X_INSIDE`); None: all of x
    xmarch: tuple | None = None
    # two x slabs, a bulk without x walls: the planes each leaves out at the grid's x end it
    # holds (the x-CPML's L, whose L + TH planes the x rows own: :data:`.split.BULK_X_INSIDE_SLABS`)
    xin: int = 0
    # one launch of several kernels (:mod:`.launches`): their specs, each of its own ``ntask``
    # rows, one after another in this launch's table (``ntask``: all of them); the CTA takes
    # the most threads and shared memory of any of them. (): this spec's own kernel
    merged: tuple = ()

    @property
    def box_cells(self) -> int:
        return sum(int(np.prod(b[3])) for b in self.boxes)

    @property
    def ashape(self) -> tuple:
        """The field arrays' shape (a shard's slab along x)."""
        return (self.nxa or self.shape[0],) + tuple(self.shape[1:])

    @property
    def window(self) -> tuple:
        return tuple(b + (1 if self.wall == a + 1 else 2) * self.th for a, b in enumerate(self.block))

    @property
    def threads(self) -> int:
        if self.merged:
            return max(m.threads for m in self.merged)
        return threads_of(self.window, self.ry)

    @property
    def grid(self) -> tuple:
        """CTAs: (z tiles, y tiles, 1), or (tasks, 1, 1)."""
        if self.ntask:
            return (self.ntask, 1, 1)
        (by, bz), (_, ny, nz) = self.block, self.shape
        (_, ly), (_, lz) = self.span or ((0, ny), (0, nz))
        return (math.ceil(lz / bz), math.ceil(ly / by), 1)

    @property
    def itemsize(self) -> int:
        return 4 if self.dtype == "float32" else 8

    @property
    def smem_chains(self) -> tuple:
        """Per axis (x, y, z): whether its psi chains are in shared memory."""
        pick = (True,) * 3 if self.chain_smem else self.chain_axes
        return tuple(bool(L) and bool(c) for L, c in zip(self.pml, pick))

    @property
    def chain_slots(self) -> int:
        """Planes a psi chain in shared memory holds: TH, and one more with :attr:`psi_pref`."""
        return self.th + bool(self.psi_pref)

    @property
    def chains(self) -> int:
        """Values per window cell of the psi chains in shared memory."""
        return 4 * self.chain_slots * sum(self.smem_chains)

    @property
    def ring(self) -> tuple:
        """The per-cell coefficients staged in shared memory, ((key, values per cell), ...):
        cb, ca, then pec while they fit in ``smem_limit``; none without ``coef_ring`` or
        with ``cbox_bg`` (the background values as literals)."""
        if not self.coef_ring or self.cbox_bg:
            return ()
        w = self.window[0] * self.window[1]
        out, used = [], (12 + self.chains) * w * self.itemsize
        for key in ("cb", "ca", "pec"):
            n = (
                {"grid": 1, "comp": 3}.get(getattr(self, key), 0)
                if isinstance(getattr(self, key), str)
                else 0
            )
            extra = (self.th + 1) * n * w * self.itemsize
            if n and used + extra <= self.smem_limit:
                out.append((key, n))
                used += extra
        return tuple(out)

    @property
    def smem_bytes(self) -> int:
        if self.merged:
            return max(m.smem_bytes for m in self.merged)
        w = self.window[0] * self.window[1]
        ring = (self.th + 1) * sum(n for _, n in self.ring)
        return (12 + self.chains + ring) * w * self.itemsize
