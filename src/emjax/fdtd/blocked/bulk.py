"""The bulk kernel's share of a pass (:func:`.split.split`): the regular tiles it computes,
its last wave in x pieces (:func:`tail`), and the hole it leaves where per-cell coefficients
sit in a box (:func:`hole`, :mod:`.coef_box`)."""

from __future__ import annotations

from .cuda import Spec
from .tiling import (
    best_pieces,
    cover,
    covered,
    cut_march,
    march_cost,
    mixed_pieces,
    regular_tiles,
    slab_chunks,
    tiles_of,
)

#: the bulk kernel leaves out the tiles the CPML kernel recomputes
SKIP_COVERED = True
#: the bulk's last wave in x pieces (:func:`tail`)
BALANCE_TAIL = True
#: per-cell coefficients in a box (:mod:`.coef_box`): the tiles whose windows meet it in a
#: kernel of their own, the rest of the bulk with the backgrounds as literals (:func:`hole`)
HOLE = True
#: the hole's marches in pieces of two lengths (:func:`.tiling.mixed_pieces`) instead of every
#: march alike (:func:`.tiling.best_pieces`): by the pieces' model (planes + 3 TH each, 132
#: SMs), a slab's 144 box marches of 132 planes 224 -> 190, one device's of 264 planes 389 ->
#: 344. Timed on H200s, an eps 2.25 sphere of radius 128 in 512^3 cells: one GPU 70.8 -> 72.3
#: G cell/s, two 131.3 -> 135.9
MIXED_PIECES = True
#: with a :func:`hole`, the bulk's tiles as whole marches in the tail's kernel (the same code,
#: a task table) with the hole's marches away from the box (each in one piece), longest
#: first, in one launch: the SMs the bulk's last wave leaves, and the short marches' last
#: wave, fill with the rest (H200, 512^3 float32, the eps 2.25 sphere: the bulk's 256 tiles
#: took two waves of 0.87 ms, 124 CTAs in the second; the hole's 672 short marches 0.76 ms
#: apart). Where the pass is cut for one device (also on slabs without the aligned face
#: rows: each slab's table rows clipped to it). Not yet timed: off
HOLE_ONE_LAUNCH = False


def bulk_tiles(spec: Spec, cpml_block: tuple | None = None) -> tuple:
    """The regular tiles the bulk kernel computes, (ty0, ty1, tz0, tz1): all but those
    at the faces whose own cells the CPML kernel's y or z windows (of ``cpml_block``
    cells, default the bulk's) cover (it recomputes them); every tile where
    ``SKIP_COVERED`` is off."""
    (_, ny, nz), th = spec.shape, spec.th
    if spec.span is not None:  # the faces' cells are the CPML rows' alone
        return (0, len(tiles_of(spec, 0)), 0, len(tiles_of(spec, 1)))
    cb = cpml_block or spec.block
    ends = []
    for n, b, c_b, L in ((ny, spec.block[0], cb[0], spec.pml[1]), (nz, spec.block[1], cb[1], spec.pml[2])):
        t = regular_tiles(n, b)
        c = cover(n, c_b, L + th) if L else []
        lo = 0
        while lo < len(t) and covered(t[lo], c):
            lo += 1
        hi = len(t)
        while hi > lo and covered(t[hi - 1], c):
            hi -= 1
        ends += [lo, hi]
    full = (0, len(regular_tiles(ny, spec.block[0])), 0, len(regular_tiles(nz, spec.block[1])))
    return full if not SKIP_COVERED else tuple(ends)


def hole(spec: Spec, tiles: tuple) -> tuple | None:
    """The bulk tiles whose windows meet the per-cell coefficients' box (:mod:`.coef_box`)
    in y and z, as a rectangle of tile indices (hy0, hy1, hz0, hz1), or None (no box, or
    it meets none). The bulk kernel, compiled with the backgrounds as literals, leaves
    them out; a kernel of their own (:func:`.split.split`) computes them."""
    if spec.cbox is None or not HOLE:
        return None
    th, out = spec.th, []
    for a, (n, b) in enumerate(zip(spec.shape[1:], spec.block)):
        lo, hi = spec.cbox[2 + 2 * a], spec.cbox[3 + 2 * a]
        hit = [
            t
            for t, (w0, _, _) in enumerate(tiles_of(spec, a))
            if tiles[2 * a] <= t < tiles[2 * a + 1] and _hit(w0 - th, b + 2 * th, lo, hi, n)
        ]
        if not hit:
            return None
        out += [hit[0], hit[-1] + 1]
    return tuple(out)


def _hit(a: int, w: int, lo: int, hi: int, n: int) -> bool:
    """Whether cells [a, a + w) modulo n meet [lo, hi)."""
    return w >= n or any(lo <= (a + i) % n < hi for i in range(w))


def meets_box(spec: Spec, row: tuple) -> bool:
    """Whether a task row's window (y, z) and march (x) meet the coefficients' box."""
    th, (wy, wz), b = spec.th, spec.window, spec.cbox
    return (
        row[7] > 0
        and _hit(row[0] - th, wy, b[2], b[3], spec.shape[1])
        and _hit(row[1] - th, wz, b[4], b[5], spec.shape[2])
        and row[6] < b[1]
        and row[6] + row[7] > b[0]
    )


def _order(tiles: tuple) -> list:
    """The regular tiles (ty0, ty1, tz0, tz1) as (y, z) indices in the bulk's launch order."""
    ty0, ty1, tz0, tz1 = tiles
    return [(y, z) for y in range(ty0, ty1) for z in range(tz0, tz1)]


def _in_gap(gap: tuple | None, y: int, z: int) -> bool:
    return gap is not None and gap[0] <= y < gap[1] and gap[2] <= z < gap[3]


def _yz(spec: Spec):
    """Tile (y, z) -> a task row's first six values: window origin and own cells in y and z."""
    ty, tz = tiles_of(spec, 0), tiles_of(spec, 1)
    return lambda y, z: (ty[y][0], tz[z][0], ty[y][1], ty[y][2], tz[z][1], tz[z][2])


def tail(
    spec: Spec, tiles: tuple, slots: int, gap: tuple | None = None, devices: int = 1
) -> tuple[int, tuple]:
    """The bulk's last wave: a CTA marches the whole x range, so the tiles left over after
    whole waves of ``slots`` CTAs would keep most SMs idle for a whole march. They go to a
    second launch in x pieces (:func:`.tiling.x_chunks`) instead, as many as fill the SMs best
    (on each of ``devices`` x slabs). ``gap``: the :func:`hole` the bulk leaves out. Returns
    (the first launch computes the tiles before this index in its order, the tail's rows)."""
    order = _order(tiles)
    real = [i for i, (y, z) in enumerate(order) if not _in_gap(gap, y, z)]
    left = len(real) % slots if BALANCE_TAIL and len(real) > slots else 0
    if not left:
        return len(order), ()
    nx, th = spec.shape[0], spec.th
    length = nx // devices
    best = best_pieces(left, length, th, slots)
    if march_cost(left, best, length, th, slots) >= length:  # no faster than one whole march
        return len(order), ()
    head = _yz(spec)
    rows = tuple(
        head(y, z) + m
        for y, z in (order[i] for i in real[len(real) - left :])
        for m in slab_chunks(nx, th, best, devices)
    )
    return real[len(real) - left], rows


def hole_rows(
    spec: Spec, gap: tuple, slots: int, devices: int = 1, xmarch: tuple | None = None, whole: bool = False
) -> tuple[tuple, tuple]:
    """The :func:`hole`'s tiles as task rows: (the marches over the box's x range and TH
    planes each side, the marches over the rest of x, whose windows miss the box; with the
    bulk's ``xmarch`` (:func:`.split.bulk_x_inside`), the rest only within the planes the
    bulk writes: the x rows own the others; ``whole``: those each in one march), each in
    the x pieces that fill ``slots`` CTAs best (with :data:`MIXED_PIECES`, some marches in one
    piece more than others, the longer pieces first), on each of ``devices`` x slabs
    apart (no march crosses a slab's boundary: the pieces fill each device's SMs)."""
    nx, th = spec.shape[0], spec.th
    head = _yz(spec)
    yz = [head(y, z) for y, z in _order(gap)]
    a, b = max(spec.cbox[0] - th, 0), min(spec.cbox[1] + th, nx)
    m = nx // devices
    slabs = [(d * m, (d + 1) * m if d < devices - 1 else nx) for d in range(devices)]
    x0, x1 = (xmarch[2], xmarch[3]) if xmarch else (0, nx)
    out = []
    for rest, segments in enumerate((((a, b),), ((x0, a), (b, x1)))):
        rows = []
        for s0, s1 in slabs:
            for lo, hi in ((max(lo, s0), min(hi, s1)) for lo, hi in segments):
                if hi > lo:
                    if whole and rest:
                        ks = [1] * len(yz)
                    elif MIXED_PIECES:
                        ks = mixed_pieces(len(yz), hi - lo, th, slots)
                    else:
                        ks = [best_pieces(len(yz), hi - lo, th, slots)] * len(yz)
                    rows += [c + x for c, k in zip(yz, ks) for x in cut_march(lo, hi, nx, th, k)]
        out.append(tuple(rows))
    return out[0], out[1]


def tile_rows(spec: Spec, tiles: tuple, kept: int, gap: tuple, xmarch: tuple | None) -> tuple:
    """The task rows of the bulk's tiles (those before ``kept`` in its launch order, but the
    ``gap``'s), each one march over the bulk's x range (``xmarch``, or all of x):
    :data:`HOLE_ONE_LAUNCH`'s."""
    nx, head = spec.shape[0], _yz(spec)
    march = tuple(xmarch) if xmarch else (0, nx, 0, nx)
    return tuple(head(y, z) + march for y, z in _order(tiles)[:kept] if not _in_gap(gap, y, z))
