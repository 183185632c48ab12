"""The tilings and marches the blocked kernel's launches are made of: the regular tiling of
y and z (own cells and window origins), the marches along x in pieces, the windows that
cover the CPML's faces, and how many x pieces fill the SMs best."""

from __future__ import annotations

import heapq
import math

from .cuda import Spec


def regular_tiles(n: int, b: int) -> list[tuple[int, int, int]]:
    """The regular tiling: (window origin, own start, own end) per tile."""
    return [(min(t * b, n - b), t * b, min((t + 1) * b, n)) for t in range(math.ceil(n / b))]


def tiles_from(off: int, length: int, b: int) -> list[tuple[int, int, int]]:
    """:func:`regular_tiles` of the ``length`` cells from ``off``."""
    return [(off + w, off + o0, off + o1) for w, o0, o1 in regular_tiles(length, b)]


def tiles_of(spec: Spec, a: int) -> list[tuple[int, int, int]]:
    """The regular tiling of y (``a`` = 0) or z (1) over ``spec.span`` (the whole axis
    without one): (window origin, own start, own end) per tile."""
    n, b = spec.shape[1 + a], spec.block[a]
    return tiles_from(*(spec.span[a] if spec.span else (0, n)), b)


def x_ends(nx: int, Lx: int, th: int) -> list[tuple[int, int, int, int]]:
    """The marches (x0, nxw, ox0, ox1) over the x-CPML's ``Lx + TH`` planes at each end (one
    over the whole x range where they would meet)."""
    if 2 * (Lx + 2 * th) >= nx:
        return [(0, nx, 0, nx)]
    lo, hi = Lx + th, nx - Lx - 2 * th
    return [(0, lo + th, 0, lo), (hi, nx - hi, hi + th, nx)]


def cover(n: int, b: int, reach: int) -> list[tuple[int, int, int]]:
    """Windows of ``b`` exact cells covering the ``reach`` cells at each end of an axis."""
    out = []
    o = 0
    while o < min(reach, n):
        out.append((min(o, n - b), min(o, n - b), min(o, n - b) + b))
        o += b
    e = n
    while e > max(n - reach, 0):
        out.append((max(e - b, 0), max(e - b, 0), max(e - b, 0) + b))
        e -= b
    return sorted(set(out))


def covered(own: tuple, cover: list) -> bool:
    return all(any(c[1] <= i < c[2] for c in cover) for i in range(own[1], own[2]))


def x_chunks(nx: int, th: int, pieces: int = 8) -> list[tuple[int, int, int, int]]:
    """The whole x range as marches of a few dozen planes (x0, nxw, ox0, ox1), each with TH
    planes of the next ones before and after it (spoiled, not written): the y and z slabs'
    windows are few, and one march each over the whole x range would leave most SMs idle
    while they run. Up to ``pieces`` pieces of at least 4 TH planes."""
    return slab_chunks(nx, th, pieces)


def slab_chunks(nx: int, th: int, pieces: int, devices: int = 1) -> list[tuple[int, int, int, int]]:
    """:func:`x_chunks` of each of ``devices`` x slabs of ``nx / devices`` planes, ``pieces``
    in a slab: no piece crosses a slab's boundary (one device: :func:`x_chunks`)."""
    m = nx // devices
    out = []
    for d in range(devices):
        k = max(1, min(pieces, m // (4 * th)))
        out += cut_march(d * m, (d + 1) * m if d < devices - 1 else nx, nx, th, k)
    return out


#: what a cell of the CPML's face rows costs against a bulk cell (H200, 512^3 float32, TH = 4:
#: the y faces' 8.4 M cells took 1.56 ms a pass, the bulk's 110 M 3.89 ms; about 5.3)
FACE_COST = 5


def face_depth(n: int, b: int, reach: int, align: int) -> int:
    """The face rows' depth along an axis of ``n`` cells: at least ``reach`` (L + TH), a
    multiple of ``align`` cells (along z the bulk's tiles then start on a 32-byte sector:
    tiles that write part of a sector cost the DRAM a read of it, measured on an H100 at
    512^3: the bulk's DRAM reads 3.36 -> 6.24 GB with faces of 14 cells), leaving the
    interior one tile of ``b`` at least. Of the depths up to a tile deeper, the one whose
    cells cost least: the bulk's cells its last tile (slid back) computes twice, and
    :data:`FACE_COST` for each face cell past the least depth; on a tie the deeper (whole
    tiles). At 512^3 with tiles of 24 and 14 cells to cover: 16 (20 whole tiles); at 1024^3
    and 256^3: 14 along y and 16 along z, where whole tiles would take 20 and 32."""
    first = -(-reach // align) * align
    best, key = first, None
    for c in range(first, first + b + 1, align):
        inner = n - 2 * c
        if inner < b:
            break
        cost = (-(-inner // b) * b - inner) + FACE_COST * 2 * (c - first)
        if key is None or (cost, -c) < key:
            best, key = c, (cost, -c)
    return best


def march_cost(n: int, p: int, length: int, th: int, slots: int) -> float:
    """The time of ``n`` marches over ``length`` planes in ``p`` pieces each, in planes:
    waves of ``slots`` CTAs x a piece's planes (TH planes each side spoiled)."""
    return math.ceil(n * p / slots) * (length / p + 3 * th)


def best_pieces(n: int, length: int, th: int, slots: int) -> int:
    """Pieces along x of ``n`` marches over ``length`` planes that fill ``slots`` CTAs best."""
    return min(range(1, 65), key=lambda p: (march_cost(n, p, length, th, slots), p))


def list_makespan(costs: list, slots: int) -> float:
    """The time ``slots`` CTAs at once take for pieces of these costs, each started, in
    order, as soon as one ends (the GPU's block scheduler, one CTA an SM)."""
    loads = [0.0] * min(slots, len(costs))
    heapq.heapify(loads)
    for c in costs:
        heapq.heappush(loads, heapq.heappop(loads) + c)
    return max(loads, default=0.0)


def mixed_pieces(n: int, length: int, th: int, slots: int) -> list[int]:
    """Pieces along x of each of ``n`` marches over ``length`` planes, some marches in one
    piece more than others, the longer pieces first: the count of pieces whose
    :func:`list_makespan` is least (a piece costs its planes and 3 TH), so that the last wave
    of the SMs need not be a short one (:func:`best_pieces` cuts every march alike)."""

    def makespan(ks):
        return list_makespan(sorted((length / k + 3 * th for k in ks for _ in range(k)), reverse=True), slots)

    got = [best_pieces(n, length, th, slots)] * n
    best = makespan(got)
    for total in range(n, 64 * n + 1):
        p, r = divmod(total, n)
        if length // (p + (r > 0)) < 4 * th:  # pieces of at least 4 TH planes
            break
        if (n * length + 3 * th * total) / slots >= best:
            break  # every SM's share of the work alone takes longer from here on
        ks = [p + 1] * r + [p] * (n - r)
        t = makespan(ks)
        if t < best - 1e-9:
            best, got = t, ks
    return sorted(got)


def cut_march(a: int, b: int, nx: int, th: int, k: int) -> list[tuple[int, int, int, int]]:
    """Own planes [a, b) as ``k`` marches (x0, nxw, ox0, ox1) with TH planes each side."""
    cuts = [a + round(i * (b - a) / k) for i in range(k + 1)]
    return [
        (max(u - th, 0), min(v + th, nx) - max(u - th, 0), u, v) for u, v in zip(cuts[:-1], cuts[1:]) if u < v
    ]
