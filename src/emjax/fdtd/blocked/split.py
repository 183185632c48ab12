"""The CPML in a kernel of its own: a pass as a bulk kernel without CPML code over the whole
grid, then a CPML kernel over the slabs only.

The CPML's code costs every cell's update registers and issue slots wherever it runs (with
1-cell slabs the kernel loses half its rate), so the bulk kernel is compiled without it: it
advances every tile as if the CPML faces were plain walls, which spoils the slabs and,
after TH steps, the TH cells beyond them. The CPML kernel then recomputes those cells from
the same inputs and writes over the bulk's values (and writes every psi):

* along y (z): windows whose own cells cover the ``L + TH`` cells at each face, over every
  z (y) tile and the whole x range (in a few marches along x, :func:`.tiling.x_chunks`);
* along x: every tile the above leaves, marched over the ``L + 2 TH`` planes at each face
  (a march that ends inside the grid spoils its last TH planes; they are not written).

Both kernels read the pass's input state and write into the same output buffers, the CPML
kernel second; a probe is recorded by the kernel that writes its cell. The bulk kernel
leaves out the tiles the CPML kernel's y and z windows recompute, and its last wave of
CTAs, where it would leave most SMs idle for a whole march, runs as a second launch in x
pieces (:func:`.bulk.tail`; also without a CPML). Measured on an H100 at 512^3 (float32): with
a CPML 48.8 -> 55.2 G cell/s, PEC walls 92.7 -> 98.4.

Per-cell coefficients held in a box (a scatterer in a uniform background,
:mod:`.coef_box`): the bulk kernel and its tail are compiled with the background values as
literals, as vacuum's is, and leave out the tiles whose windows meet the box (:func:`.bulk.hole`);
those tiles march over the box's x range in a kernel of their own and over the rest of x in
the tail. The CPML rows that miss the box take the literals too. Measured on an H100 at
512^3 with a CPML, an eps 2.25 sphere of radius N/4: 42.7 -> 51.3 G cell/s (vacuum 57.8).
"""

from __future__ import annotations

from dataclasses import replace

from . import bulk as bulk_mod
from . import launches, xvirtual
from .bulk import bulk_tiles, hole, hole_rows, meets_box, tail
from .cuda import Spec, fit_rows
from .tiling import (
    best_pieces,
    cover,
    covered,
    cut_march,
    face_depth,
    regular_tiles,
    slab_chunks,
    tiles_from,
    tiles_of,
    x_chunks,
    x_ends,
)


def tasks(spec: Spec, pieces: int | None = None) -> tuple:
    """The CPML kernel's CTAs: rows (y0, z0, oy0, oy1, oz0, oz1, x0, nxw, ox0, ox1);
    ``pieces``: of the y and z slabs' x range (:func:`.tiling.x_chunks`)."""
    (nx, ny, nz), th = spec.shape, spec.th
    by, bz = spec.block
    Lx, Ly, Lz = spec.pml
    ty, tz = regular_tiles(ny, by), regular_tiles(nz, bz)
    cy = cover(ny, by, Ly + th) if Ly else []
    cz = cover(nz, bz, Lz + th) if Lz else []
    rows = []
    if X_ENDS_APART and Lx and nx > 2 * (Lx + th + 1) + 4 * th:
        whole = face_marches(nx, Lx, th, len(cy) * len(tz) + len(cz) * len(ty), pieces)
    else:
        whole = x_chunks(nx, th, PIECES if pieces is None else pieces)
    for y in cy:
        rows += [(y[0], z[0], y[1], y[2], z[1], z[2]) + m for z in tz for m in whole]
    for z in cz:  # the y tiles the y windows recompute whole (the corners) are theirs
        rows += [(y[0], z[0], y[1], y[2], z[1], z[2]) + m for y in ty if not covered(y, cy) for m in whole]
    if Lx and virtual_of(spec) is None:
        marches = x_ends(nx, Lx, th)
        for y in ty:
            for z in tz:
                if covered(y, cy) or covered(z, cz):
                    continue
                rows += [(y[0], z[0], y[1], y[2], z[1], z[2]) + m for m in marches]
    return tuple(rows)


def face_marches(nx: int, Lx: int, th: int, n: int, pieces: int | None = None) -> list:
    """With ``X_ENDS_APART``: the y and z faces' marches over x as the x-CPML's two ends
    (own planes [0, Lx + TH) and [nx - Lx - TH - 1, nx), the only marches that reach it) and
    the planes between in the pieces that fill the SMs best for ``n`` face windows (or
    ``pieces``)."""
    a, b = Lx + th, nx - Lx - th - 1
    k = pieces if pieces is not None else best_pieces(n, b - a, th, slots())
    k = max(1, min(k, (b - a) // (4 * th)))
    return cut_march(0, a, nx, th, 1) + cut_march(a, b, nx, th, k) + cut_march(b, nx, nx, th, 1)


def aligned_on(spec: Spec) -> bool:
    """Whether :data:`ALIGNED` holds for ``spec``'s precision."""
    return ALIGNED if ALIGNED is not None else ALIGNED_DEFAULT.get(spec.itemsize, False)


def aligned(spec: Spec) -> tuple | None:
    """With ``ALIGNED``: (the bulk's span, the depth of the face rows' own cells: ``L + TH``
    per axis, the bulk's tile where the axis has no CPML) where the CPML on y or z leaves an
    interior the bulk's tiles fit in; None otherwise."""
    (_, ny, nz), th = spec.shape, spec.th
    if not aligned_on(spec) or not (spec.pml[1] or spec.pml[2]):
        return None
    span, block = [], []
    sector = max(32 // spec.itemsize, 1)  # z: a 32-byte sector in cells
    for a, (n, b, L) in enumerate(((ny, spec.block[0], spec.pml[1]), (nz, spec.block[1], spec.pml[2]))):
        c = face_depth(n, b, L + th, sector if a else 1) if L else 0
        if n - 2 * c < b:
            return None
        span.append((c, n - 2 * c))
        block.append(c or b)
    return tuple(span), tuple(block)


def aligned_tasks(
    spec: Spec, span: tuple, block: tuple, pieces: int | None = None, devices: int = 1
) -> tuple:
    """The CPML rows under ``ALIGNED``: (y faces' rows, z faces' rows, x rows). Face rows
    own the ``L + TH`` cells at each y face over every z, and at each z face over the
    interior's y; along the face their windows are the bulk's tile long (the y faces' own
    cells ``(L + TH) x BZ``, the z faces' ``BY x (L + TH)``). x rows march the x-CPML's ends
    of the interior's tiles (the bulk's windows, which reach no y or z CPML cell). Without
    ``pieces``, each face kernel's marches come in the x pieces that fill the SMs best, on
    ``devices`` x slabs (:mod:`.shards`) those of a slab's planes in each slab
    (:func:`.tiling.slab_chunks`); with :data:`FACE_CORNER_PIECES`, one more for the y faces'
    windows over the z-CPML where the waves of CTAs allow."""
    (nx, ny, nz), th = spec.shape, spec.th
    Lx, Ly, Lz = spec.pml
    cy, cz = block
    by, bz = face_along(spec)

    ctas = slots() * FACE_MIN_CTAS

    def marches(n: int, more: int = 0) -> list:  # the x range in the pieces that fill the SMs best
        if pieces is not None:
            return x_chunks(nx, th, pieces)
        return slab_chunks(nx, th, best_pieces(n, nx // devices, th, ctas) + more, devices)

    yfaces, zfaces = [], []
    wy, wz = walls_of(spec)  # windows that end at the wall start TH later at y = 0 (z = 0)
    corners_z = CORNERS_Z and Lz  # (the z faces' rows own the corners)
    if Ly:
        zs = tiles_from(*span[1], bz) if corners_z else tiles_from(0, nz, bz)
        whole = marches(2 * len(zs))
        corner = {z for z in zs if Lz and (z[1] < Lz or z[2] > nz - Lz)}  # (windows over the z-CPML)
        per = 2 * len(zs) * len(whole) // devices  # a device's CTAs
        fits = per + 2 * len(corner) <= -(-per // ctas) * ctas  # one more piece each, same waves
        more = marches(2 * len(zs), 1) if FACE_CORNER_PIECES and pieces is None and fits else whole
        for y in ((th if wy else 0, 0, cy), (ny - cy, ny - cy, ny)):
            yfaces += [
                (y[0], z[0], y[1], y[2], z[1], z[2]) + m for z in zs for m in (more if z in corner else whole)
            ]
    if Lz:
        # the interior's y (the y faces' rows own the corners), or with CORNERS_Z all of y
        ys = tiles_from(0, ny, by) if corners_z and Ly else tiles_from(*span[0], by)
        whole = marches(2 * len(ys))
        for z in ((th if wz else 0, 0, cz), (nz - cz, nz - cz, nz)):
            zfaces += [(y[0], z[0], y[1], y[2], z[1], z[2]) + m for y in ys for m in whole]
    xrows = []
    if Lx and virtual_of(spec) is None:
        marches = x_ends(nx, Lx, th)
        inner = replace(spec, span=span)
        for y in tiles_of(inner, 0):
            for z in tiles_of(inner, 1):
                xrows += [(y[0], z[0], y[1], y[2], z[1], z[2]) + m for m in marches]
    return tuple(yfaces), tuple(zfaces), tuple(xrows)


#: with :data:`ALIGNED`, the CPML's corners along x (cells in both the y and the z slabs) owned
#: by the z faces' rows over every y, the y faces' rows over the interior's z only (off: the
#: y faces' over every z). A y face's window over the z-CPML runs the z-CPML's code in each of
#: its warps (a warp is a row along z), where a z face's window runs the y-CPML's code only in
#: the warps of its rows in the y slab; at 512^3 the y faces' windows (132 CTAs, 12 at the
#: corners) took 0.82 ms a pass against the z faces' 0.59 (120 CTAs; H200, float32). Timed
#: (H200, 512^3, float32, one lease): vacuum 112.96 either way, an eps 2.25 sphere 98.58
#: against 98.22: off
CORNERS_Z = False

#: with :data:`ALIGNED` and an x-CPML on one device, the bulk's last wave (:func:`.bulk.tail`) in a
#: kernel with the x-CPML's code ahead of the faces' kernels, its tiles' x rows left out, so
#: that the x rows fill whole waves of the SMs (at 512^3, 792 rows: 6 waves of 132, where 800
#: took 7). Measured on an H200 at 512^3 (float32): 69.7 G cell/s against 69.3. Not on x
#: slabs: on 2 x H200 (396 rows a slab, 3 waves where 400 took 4) 121.6 against 122.9.
X_TAIL = True
#: x pieces of the CPML kernel's y and z windows (:func:`.tiling.x_chunks`); measured on an H100
#: with a 10-cell CPML, 24 steps, 512^3 / 1024^3 (G cell/s): 2: 51.4 / 77.0, 3: 55.8 / 76.7,
#: 4: 55.5 / 76.5, 8: 54.1 / 75.4, 16: 51.7 / 74.3
PIECES = 4
#: CTAs resident at once (None: the GPU's SMs, one CTA each)
SLOTS = None
#: the CTAs an SM should hold of the bulk kernel and its tail (``__launch_bounds__``: the
#: compiler keeps their registers to fit; the tail's wave counts that many CTAs an SM). By
#: ptxas (sm_90, 512^3): float64 at TH = 2, tiles of 16, the next plane staged in shared
#: memory (a setting since removed), two CTAs of 416 threads in 72 registers (12 bytes
#: spilled) where one takes 108; float32 at TH = 4, tiles of 16, one row a thread: 56
#: registers (120 bytes spilled) for 91.
#: (The box's kernel and, with :data:`X_TAIL`, the x-CPML's kernel that marches the last wave
#: keep one CTA an SM, and their rows are cut for that.) Timed on an H200 (512^3, a CPML),
#: that float64 setting whole (TH = 2, staged, two CTAs): 25.8 G cell/s against 42.7 (TH = 3,
#: the next plane read at level 3); min_ctas alone not yet. One
BULK_MIN_CTAS = 1
#: the CPML kernel's own cells per window in (y, z): None takes :data:`CPML_BLOCK_DEFAULT`
#: by precision and TH, "bulk" the bulk's tile. Smaller windows let the psi chains of all
#: three axes sit in shared memory (float32, TH = 4, (16, 16): no spills, against about
#: 1.3 KB per thread with the bulk's 24 x 24) but recompute more halo cells.
CPML_BLOCK = None
#: by (bytes per value, TH), where smaller than the bulk's tile (else the bulk's); measured
#: at 512^3 with a 10-cell CPML (G cell/s): float32 TH = 4, tiles of 24 (H100): the bulk's
#: 56.2, (16, 16) 48.5, (16, 24) 54.0; float64 TH = 2 (H200): tiles of 28 17.1, of 24 19.9,
#: of 24 with (12, 12) 21.5, (16, 16) 20.3, (16, 28) 20.8; tiles of 20 25.2, with (12, 12)
#: 26.7; (H100) tiles of 28 14.1, with (16, 16) 17.4; float64 TH = 3, tiles of 16 (H200):
#: the bulk's 36.1, (8, 8) 22.8, (8, 16) 31.1, (12, 12) 28.4. Keyed on the pass's TH: a
#: run's last, shorter pass may take other windows (as correct).
CPML_BLOCK_DEFAULT = {(8, 2): (12, 12)}
#: the CPML's rows in kernels by the axes they reach, and where one axis's chains fit,
#: those in shared memory (measured on an H100 at 512^3: 53.7 G cell/s against 55.2 for one
#: kernel; the groups' launches are too small to fill the GPU)
GROUP_BY_AXES = False
CHAINS_IN_SMEM = True
#: where the chains of all of a CPML kernel's axes do not fit in shared memory, those of as
#: many axes as fit there (y, then z, then x: the faces' rows first), the rest in local
#: memory (off: all of them in local memory). Under the device's limit, not
#: :data:`CHAIN_SMEM_LIMIT`: by ptxas (sm_90), float64's CPML kernel at TH = 3, tiles of 16,
#: then holds all three axes' chains in 181 KiB of shared memory, no stack, where it keeps
#: 576 bytes a thread in local memory without it. H200, 512^3 with a CPML, float64: 46.2 G
#: cell/s against 45.5 (with :data:`.cuda.PREFETCH_OPEN` 49.3 against 48.7); float32's
#: kernels hold all their chains in shared memory already (unchanged)
CHAIN_AXES_APART = True
#: the rows that reach the x-CPML alone (the x ends of the tiles no y or z window covers) in
#: a kernel of their own, compiled for that axis: its psi chains fit in shared memory, the
#: march unrolls (the kernel of all three axes keeps them in local memory). Two launches:
#: the y and z faces' long marches, then these short ones. Measured on an H100 at 512^3
#: (float32): 56.4 G cell/s against 58.7 without.
X_SLABS_APART = False
#: the bulk's tiles over the interior only, the CPML's face rows owning the cells at each y
#: and z face (:func:`aligned`, :func:`.tiling.face_depth`) in windows a bulk tile long along the
#: face, a kernel per face axis, the x-CPML's rows in a kernel of their own with the bulk's
#: windows. None: by the precision (:data:`ALIGNED_DEFAULT`, keyed on the item size); True or
#: False for every precision.
ALIGNED = None
#: measured with a CPML, one GPU: float32 at 512^3 on an H100 67.3 G cell/s against 61.5, on
#: an H200 68.7 against 63.5; on an H100 (24 steps) at 256^3 34.2 against 30.3, at 1024^3
#: 81.9 against 82.8; float64 (TH = 3) at 512^3 on an H200 35.0 against 36.0. Later (H200,
#: 512^3, one lease, with the CPML's psi prefetched): float64 with tiles of 16 x 16 52.7
#: against 49.6, with tiles of 10 x 26 (:data:`.choice.TILINGS`) 55.2
ALIGNED_DEFAULT = {4: True, 8: True}
#: with :data:`ALIGNED`, the face rows' windows end at the walls (y and z): TH halo cells on
#: the inner side only, where the others also compute TH cells past the wall that no own cell
#: needs (at 512^3, windows of 20 x 32 cells for 24 x 32)
WALL_WINDOWS = True
#: the shared memory (bytes) a CPML kernel whose windows are the bulk's tiles may fill with
#: the psi chains beside its buffers (:func:`chains_fit`; kernels with windows of their own
#: may fill the ring's limit). Float64 at TH = 3, tiles of 16: all three axes' chains take
#: 185 KB, so they stay in local memory (608 bytes a thread) under this limit
CHAIN_SMEM_LIMIT = 160 * 1024
#: the face rows' kernels' window rows per thread (None: the bulk's), their own cells along
#: the face (None: the bulk's tile), the CTAs an SM should hold of them (``__launch_bounds__``:
#: the compiler keeps their registers to fit; their marches' x pieces then fill that many CTAs
#: an SM), and whether only the face's own axis keeps its psi chains in shared memory (the
#: corners' and the x ends' chains in local memory). Measured on an H200 at 512^3 float32
#: with a CPML (G cell/s; two rows a thread, all chains in shared memory: 82.5): one row a
#: thread and the own axis's chains 90.7 (640 threads of 95 registers, 70 KB of shared
#: memory, where 320 threads took 168 and 150 KB); either alone 79.3 (the chains), 79.5
#: (one row, on an H100 against 78.2); with 16 cells along the face 83.3, and two CTAs an
#: SM 84.2; float64 42.0 either way. Later, with the steady iterations in loops of their own
#: (:data:`.cuda.STEADY_LOOP`), all three axes' chains in shared memory beat the own axis's
#: alone: H200, 512^3 (where all three fit), one lease, 104.6 against 102.4 G cell/s; the y
#: faces' kernel alone 0.88 ms against 1.01, whose CTAs over the z-CPML's corners had taken
#: 0.95 ms and the others 0.68 (one wave of CTAs: the slowest sets the time). Where all three
#: do not fit, as many as do, the face's own axis first (not timed)
FACE_ROWS_PER_THREAD = 1
#: None: by the precision and tile (:data:`FACE_ALONG_DEFAULT`); one size, or (along y for
#: the z faces, along z for the y faces), None in either place for the bulk's tile
FACE_ALONG = None
#: by (item size, the bulk's tile): float64's tiles of 10 x 26 give the z faces 16 own cells
#: along y (windows of 22 along y, where 10 own cells took windows of 16); H200, 512^3, one
#: lease: 56.7 G cell/s against 55.2 (20 along y: 55.1, spilling)
FACE_ALONG_DEFAULT = {(8, (10, 26)): (16, None)}
FACE_MIN_CTAS = 1
FACE_CHAINS_OWN_AXIS = False
#: the y faces' windows over the z-CPML (the corners, whose CTAs take the longest: 0.95 ms
#: against 0.68 for the others, H200, 512^3, all in one wave) in one more x piece each where
#: that fills no more waves of CTAs than before. At 512^3 with the bulk's tile along the face
#: there is no room (132 CTAs); at 768^3 and 1024^3 there is. With :data:`FACE_ALONG` = 25 at
#: 512^3 there would be (126 CTAs and 4 more), but windows of 672 threads take 80 registers
#: and spill 48-64 bytes (ptxas, sm_90). Not yet timed: off
FACE_CORNER_PIECES = False
#: the x-CPML's rows' kernels (the x ends of the interior's tiles, and of the bulk's last
#: wave with :data:`X_TAIL`): window rows per thread (None: the bulk's), and their psi
#: chains in shared memory (off: in local memory)
X_ROWS_PER_THREAD = None
X_CHAINS_IN_SMEM = True
#: the window rows per thread of the kernel that marches a coefficients' box (:func:`.bulk.hole`;
#: None, or a count that does not divide its window's rows: the bulk's). Measured on an H100
#: at 512^3 with a CPML and a block of eps per component over the middle half of each axis:
#: one row 65.98 G cell/s against the bulk's two, 65.72
BOX_ROWS_PER_THREAD = None
#: the y and z faces' marches cut at the x-CPML's ends (:func:`face_marches`): the long
#: marches between reach one CPML axis (y or z) and run in a kernel per axis with their psi
#: chains in shared memory; the short ones at the x ends, the corners and the x rows in the
#: kernel of all three axes. (Under Nsight Compute the CPML kernel of all axes waits on its
#: chains in local memory: 38% of its warps' time.) Measured on an H100 at 512^3: float32
#: 58.5 G cell/s against 58.2, float64 19.36 against 19.12. Not applied to the rows of
#: :data:`ALIGNED`: cut so there (the middle marches in a y-only and a z-only kernel, the x ends
#: and the corners in the kernel of all axes) float32 lost, 62.0 against 67.5, and 60.6 with a
#: kernel per set of axes (H100, 2026-11-27).
X_ENDS_APART = False
#: the bulk kernel and its tail compiled without the walls of the axes that have a CPML: the
#: CPML's rows recompute every cell within L + TH of those faces, which is as far as a wall
#: acts in TH steps (a slab's kernel then tests no run-time x bounds for the walls)
BULK_WITHOUT_CPML_WALLS = True
#: the x-CPML's cells that no y or z window covers in long marches along y on a small grid
#: of their own (:mod:`.xvirtual`) instead of short marches along x at each end. Measured on
#: an H100 at 512^3: float32 53.4 G cell/s against 61.3, float64 17.9 against 19.4. The
#: kernel of all three axes keeps the faces' x-end pieces and the corners, and its time is
#: one CTA's (0.23 ms saved), while the small grid costs 0.81 ms a pass.
X_ENDS_VIRTUAL = False
#: on one device with the face rows aligned, the bulk's march stops at the x-CPML: the x
#: rows recompute and own its L + TH planes at each end, so the bulk marches [L, NX - L)
#: and writes [L + TH, NX - L - TH) (:func:`bulk_x_inside`): at 512^3 with a 10-cell CPML,
#: 492 planes of 512. H200, 512^3 with a CPML (G cell/s): float32 112.6 against 106.0, an
#: eps sphere 94.1 against 91.1 (float64 since its face rows are aligned too)
BULK_X_INSIDE = True


def bulk_x_inside(spec: Spec, xrows: bool, devices: int) -> tuple | None:
    """The bulk kernel's march (x0, nxw, ox0, ox1) under :data:`BULK_X_INSIDE` where the x
    rows (``xrows``: there are some) own the x-CPML's ends (:func:`.tiling.x_ends`), else None."""
    (nx, _, _), L, th = spec.shape, spec.pml[0], spec.th
    if not (BULK_X_INSIDE and xrows and L and devices == 1 and spec.nxa is None and spec.span is not None):
        return None
    if len(x_ends(nx, L, th)) == 1:  # one x row over the whole x range
        return None
    return (L, nx - 2 * L, L + th, nx - L - th)


#: :data:`BULK_X_INSIDE` on two x slabs (:mod:`.shards`): each slab's bulk leaves out the
#: x-CPML's L planes at its end of the grid (and writes from L + TH), which the x rows own;
#: the march keeps one length on both slabs, compiled in. Not yet timed: off
BULK_X_INSIDE_SLABS = False


def slab_x_inside(spec: Spec, xrows: bool, devices: int) -> int:
    """The planes (the x-CPML's L) each of two slabs' bulk leaves out at its end of the grid
    under :data:`BULK_X_INSIDE_SLABS` where the x rows own the x-CPML's ends, else 0."""
    nx, L, th = spec.shape[0], spec.pml[0], spec.th
    if not (BULK_X_INSIDE_SLABS and BULK_WITHOUT_CPML_WALLS and xrows and L and devices == 2):
        return 0
    if spec.nxa is None or spec.xhalo != th or len(x_ends(nx, L, th)) == 1:
        return 0
    return L


def virtual_of(cspec: Spec):
    """:func:`.xvirtual.plan` for the CPML kernel's windows ``cspec`` where
    :data:`X_ENDS_VIRTUAL` (not with :data:`ALIGNED`), else None."""
    if not X_ENDS_VIRTUAL or aligned_on(cspec):
        return None
    return xvirtual.plan(cspec, cspec, slots())


def virtual(spec: Spec):
    """The small grid's march of a pass of ``spec`` (:mod:`.xvirtual`), or None."""
    if not spec.pml[0]:
        return None
    cb = cpml_block(spec)
    return virtual_of(_windows(spec, cb) if cb != tuple(spec.block) else spec)


def _owned(row: tuple, node: tuple) -> bool:
    i, j, k = node
    return row[8] <= i < row[9] and row[2] <= j < row[3] and row[4] <= k < row[5]


def clip(rows: tuple, planes: tuple, own: tuple) -> tuple:
    """The rows for a slab of the grid: arrays holding ``planes`` = [A0, A1), writing ``own``
    = [a, b) (at least TH planes inside [A0, A1) where that is not the grid's end). Marches
    are cut to the arrays; rows left without cells get nxw = 0."""
    out = []
    for r in rows:
        x0, x1 = max(r[6], planes[0]), min(r[6] + r[7], planes[1])
        o0, o1 = max(r[8], own[0]), min(r[9], own[1])
        out.append(r[:6] + ((x0, x1 - x0, o0, o1) if o0 < o1 and x0 < x1 else (0, 0, 0, 0)))
    return tuple(out)


def touches(spec: Spec, row: tuple) -> tuple:
    """Which CPML axes' slabs a task's window and march reach (x, y, z): a kernel compiled
    for those axes alone computes the row's cells as the one with all of them does."""
    (nx, ny, nz), th = spec.shape, spec.th
    wy, wz = spec.window

    def hit(cells, n, L):
        return L > 0 and any(g % n < L or g % n >= n - L for g in cells)

    y0, z0, x0, nxw = row[0], row[1], row[6], row[7]
    return (
        hit(range(x0, min(x0 + nxw + 1, nx)), nx, spec.pml[0]),
        hit(range(y0 - th, y0 - th + wy), ny, spec.pml[1]),
        hit(range(z0 - th, z0 - th + wz), nz, spec.pml[2]),
    )


def chains_fit(spec: Spec, axes: int, limit: int = 160 * 1024) -> bool:
    """Whether ``axes`` CPML axes' psi chains fit in shared memory beside the buffers."""
    w = spec.window[0] * spec.window[1]
    return spec.th > 1 and (12 * w + 4 * spec.chain_slots * w * axes) * spec.itemsize <= limit


def chain_axes(spec: Spec, mask: tuple, limit: int, order: tuple = (1, 2, 0)) -> tuple:
    """Per axis (x, y, z): whether its psi chains go to shared memory, as many of ``mask``'s
    axes as fit under ``limit`` beside the buffers (:func:`chains_fit`), in ``order`` (y
    first, then z, then x)."""
    out = [False] * 3
    for a in order:
        if mask[a] and chains_fit(spec, sum(out) + 1, limit):
            out[a] = True
    return tuple(out)


def _windows(spec: Spec, block: tuple, wall: int = 0, ry: int | None = None) -> Spec:
    """``spec`` with windows of ``block`` own cells (``ry`` rows per thread, default the
    spec's, where they divide), ending at the walls of axis ``wall`` (:attr:`.cuda.Spec.wall`)."""
    out = replace(spec, block=tuple(block), wall=wall)
    ry = spec.ry if ry is None else ry
    return replace(out, ry=fit_rows(out.window, ry if out.window[0] % ry == 0 else 1))


def face_along(spec: Spec) -> tuple:
    """The face rows' own cells along their faces: (along y for the z faces, along z for the
    y faces), :data:`FACE_ALONG` (one size, or a pair: along y, along z) or the bulk's tile."""
    along = FACE_ALONG
    if along is None:
        along = FACE_ALONG_DEFAULT.get((spec.itemsize, tuple(spec.block[:2])))
    ay, az = along if isinstance(along, tuple) else (along, along)
    return ay or spec.block[0], az or spec.block[1]


def walls_of(spec: Spec) -> tuple:
    """Per face axis (y, z): whether its face rows' windows end at the wall
    (:data:`WALL_WINDOWS`, where that axis has a CPML and its walls)."""
    return tuple(bool(WALL_WINDOWS and spec.pml[a] and spec.walls[a]) for a in (1, 2))


def cpml_block(spec: Spec) -> tuple:
    """The CPML kernel's own cells per window (:data:`CPML_BLOCK`)."""
    if CPML_BLOCK == "bulk":
        return tuple(spec.block)
    if CPML_BLOCK:
        return tuple(CPML_BLOCK)
    cb = CPML_BLOCK_DEFAULT.get((spec.itemsize, spec.th))
    if cb is None or any(c >= b for c, b in zip(cb, spec.block)):
        return tuple(spec.block)
    return cb


def slots() -> int:
    if SLOTS:
        return SLOTS
    try:
        import jax

        return int(jax.devices("gpu")[0].core_count)
    except Exception:  # noqa: BLE001
        return 132


def split(spec: Spec, pieces: int | None = None, devices: int = 1) -> tuple | None:
    """The kernels of a pass of ``spec`` and the task rows of those that take a table:
    (bulk kernel, its tail or None, [(kernel, its rows' indices), ...], rows), the tail's
    rows last; None where one kernel over the regular tiling does it all. ``pieces``,
    ``devices``: the x pieces of the CPML's rows (:func:`tasks`, :func:`aligned_tasks`) and
    the x slabs they and the tail are cut for (:mod:`.shards`). With :data:`X_TAIL` the tail
    is None and its rows come first, marched by a kernel of the x-CPML's code. The bulk kernel
    has no CPML code and leaves out the tiles the CPML kernels recompute
    (:func:`.bulk.bulk_tiles`) and those of its last wave (:func:`.bulk.tail`). With per-cell
    coefficients in a box, the bulk and its tail take the backgrounds as literals and leave
    out the :func:`.bulk.hole`, whose marches over the box run first in the list (no CPML code).
    The CPML's rows (:func:`tasks`) follow, grouped by the CPML axes they reach where
    ``GROUP_BY_AXES``."""
    cspec = spec  # the CPML kernels' windows
    cb = cpml_block(spec)
    if cb != tuple(spec.block) and any(spec.pml):
        cspec = _windows(spec, cb)
    al = aligned(spec)
    xrows = ()
    wins = []  # per CPML row: the windows of its kernel, and a tag that keeps kernels apart
    if al is not None:  # the bulk over the interior, the faces' rows exactly over the rest
        spec = replace(spec, span=al[0])
        whole = replace(spec, span=None)
        yrows, zrows, xrows = aligned_tasks(spec, al[0], al[1], pieces, devices)
        rows = yrows + zrows
        wy, wz = walls_of(spec)
        fry = FACE_ROWS_PER_THREAD
        by, bz = face_along(spec)
        yspec = replace(_windows(whole, (al[1][0], bz), 1 if wy else 0, fry), min_ctas=FACE_MIN_CTAS)
        zspec = replace(_windows(whole, (by, al[1][1]), 2 if wz else 0, fry), min_ctas=FACE_MIN_CTAS)
        xspec = whole if X_ROWS_PER_THREAD is None else _windows(whole, whole.block, 0, X_ROWS_PER_THREAD)
        wins = [(yspec, "y")] * len(yrows) + [(zspec, "z")] * len(zrows) + [(xspec, "x")] * len(xrows)
    else:
        rows = tasks(cspec, pieces) if any(spec.pml) else ()
        wins = [(cspec, None)] * len(rows)
    tiles = bulk_tiles(spec, cspec.block)
    gap = hole(spec, tiles)
    xmarch = bulk_x_inside(spec, bool(xrows), devices)
    xin = slab_x_inside(spec, bool(xrows), devices)
    xtail = al is not None and bool(xrows) and gap is None and X_TAIL and devices == 1
    # the bulk's last wave at the CTAs an SM of the kernel that marches it (the x-CPML's: one)
    kept, trows = tail(spec, tiles, slots() * (1 if xtail else BULK_MIN_CTAS), gap, devices)
    if xtail and trows:
        # the tail's tiles march the x-CPML too, in a kernel of its own ahead of the faces'
        # (their x rows left out): the x rows then fill whole waves of the SMs
        done = {(r[0], r[1]) for r in trows}
        xrows = tuple(r for r in xrows if (r[0], r[1]) not in done)
        wins = [(xspec, "xt")] * len(trows) + wins[: len(rows)] + [(xspec, "x")] * len(xrows)
        rows, trows = trows + rows, ()
    boxrows = ()
    if gap is not None:
        one = bulk_mod.HOLE_ONE_LAUNCH and devices == 1
        boxrows, litrows = hole_rows(spec, gap, slots(), devices, xmarch, one)  # (the box's: one an SM)
        trows = trows + litrows
        if one:  # the bulk's tiles too, in one launch, the longest marches first
            trows = tuple(
                sorted(bulk_mod.tile_rows(spec, tiles, kept, gap, xmarch) + trows, key=lambda r: -r[7])
            )
            kept = 0
    if not rows and not xrows and not trows and not boxrows:
        return None
    groups: dict = {}
    if boxrows:
        groups["box"] = list(range(len(rows) + len(xrows), len(rows) + len(xrows) + len(boxrows)))
    windows = {}  # a group's kernel windows
    for i, r in enumerate(rows + xrows):  # by the CPML axes, and whether the row meets the box
        own, tag = wins[i]
        key = tuple(bool(L) for L in spec.pml)
        if tag == "xt":
            key = (bool(spec.pml[0]), False, False)
        elif GROUP_BY_AXES or i >= len(rows) or (X_SLABS_APART and touches(own, r) == (True, False, False)):
            key = touches(own, r)
        elif X_ENDS_APART and touches(own, r) in ((False, True, False), (False, False, True)):
            key = touches(own, r)
        key = (key + ((tag,) if tag else ()), spec.cbox is None or meets_box(own, r))
        groups.setdefault(key, []).append(i)
        windows[key] = own
    rows = rows + xrows + boxrows
    order = sorted(groups.items(), key=lambda g: (g[0] != "box", g[1][0]))
    # a probe is recorded by the last kernel that writes its cell (the values are equal)
    last = {}
    for g, (_, idx) in enumerate(order):
        for m, (_, _, node) in enumerate(spec.probes):
            if any(_owned(rows[i], node) for i in idx):
                last[m] = g
    in_tail = {m for m, (_, _, node) in enumerate(spec.probes) if any(_owned(r, node) for r in trows)}
    rest = tuple(m for m in range(len(spec.probes)) if m not in last and m not in in_tail)
    plain = dict(pml=(0, 0, 0), kappa=(False, False, False))
    if BULK_WITHOUT_CPML_WALLS:
        plain["walls"] = tuple(w and not L for w, L in zip(spec.walls, spec.pml))
    lit = dict(cbox_bg=gap is not None, min_ctas=BULK_MIN_CTAS)  # (the bulk and its tail)
    btiles = (*tiles, kept, *(gap or (0, 0, 0, 0)))
    bulk = replace(spec, **plain, **lit, record=rest, tiles=btiles, xmarch=xmarch, xin=xin)
    tail_spec = None
    if trows:
        tail_rec = tuple(m for m in sorted(in_tail) if m not in last)
        tail_spec = replace(spec, **plain, **lit, record=tail_rec, ntask=len(trows))
    fixes, tags = [], []
    for g, (key, idx) in enumerate(order):
        rec = tuple(m for m, h in last.items() if h == g)
        tags.append(key[0][3] if key != "box" and len(key[0]) > 3 else None)
        if key == "box":
            ry = BOX_ROWS_PER_THREAD or spec.ry
            ry = ry if spec.window[0] % ry == 0 else spec.ry  # (a last, shorter pass's windows)
            fixes.append((replace(spec, **plain, ntask=len(idx), record=rec, ry=ry), tuple(idx)))
            continue
        mask, meets = key
        tag = mask[3] if len(mask) > 3 else None
        mask = mask[:3]
        pml = tuple(L if m else 0 for L, m in zip(spec.pml, mask))
        kappa = tuple(k and bool(m) for k, m in zip(spec.kappa, mask))
        own = windows[key]
        sp = replace(own, pml=pml, kappa=kappa, ntask=len(idx), record=rec, cbox_bg=not meets)
        limit = sp.smem_limit if own.block != spec.block else CHAIN_SMEM_LIMIT
        sp = replace(sp, chain_smem=CHAINS_IN_SMEM and chains_fit(sp, sum(mask), limit))
        x_off = tag in ("x", "xt") and not X_CHAINS_IN_SMEM  # (no axis's chains either)
        if x_off:
            sp = replace(sp, chain_smem=False)
        if CHAINS_IN_SMEM and tag in ("y", "z") and (FACE_CHAINS_OWN_AXIS or not sp.chain_smem):
            # the face's own axis first, then (all three do not fit) the other face's, x's
            face = 1 if tag == "y" else 2
            first = (face,) if FACE_CHAINS_OWN_AXIS else (face, 3 - face, 0)
            sp = replace(sp, chain_smem=False, chain_axes=chain_axes(sp, mask, limit, first))
        elif CHAINS_IN_SMEM and CHAIN_AXES_APART and not sp.chain_smem and not x_off:
            sp = replace(sp, chain_axes=chain_axes(sp, mask, sp.smem_limit))
        fixes.append((sp, tuple(idx)))
    return bulk, tail_spec, launches.merge_faces(fixes, tags), rows + trows
