"""The CPML in a kernel of its own: a pass as a bulk kernel without CPML code over the whole
grid, then a CPML kernel over the slabs only.

The CPML's code costs every cell's update registers and issue slots wherever it runs (with
1-cell slabs the kernel loses half its rate), so the bulk kernel is compiled without it: it
advances every tile as if the CPML faces were plain walls, which spoils the slabs and,
after TH steps, the TH cells beyond them. The CPML kernel then recomputes those cells from
the same inputs and writes over the bulk's values (and writes every psi):

* along y (z): windows whose own cells cover the ``L + TH`` cells at each face, over every
  z (y) tile and the whole x range (in marches of a few dozen planes, :func:`x_chunks`);
* along x: every tile the above leaves, marched over the ``L + 2 TH`` planes at each face
  (a march that ends inside the grid spoils its last TH planes; they are not written).

Both kernels read the pass's input state and write into the same output buffers, the CPML
kernel second; a probe is recorded by the kernel that writes its cell.
"""

from __future__ import annotations

import math
from dataclasses import replace

from .cuda import Spec


def _tiles(n: int, b: int) -> list[tuple[int, int, int]]:
    """The regular tiling: (window origin, own start, own end) per tile."""
    return [(min(t * b, n - b), t * b, min((t + 1) * b, n)) for t in range(math.ceil(n / b))]


def _cover(n: int, b: int, reach: int) -> list[tuple[int, int, int]]:
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


def _covered(own: tuple, cover: list) -> bool:
    return all(any(c[1] <= i < c[2] for c in cover) for i in range(own[1], own[2]))


def x_chunks(nx: int, th: int, pieces: int = 8) -> list[tuple[int, int, int, int]]:
    """The whole x range as marches of a few dozen planes (x0, nxw, ox0, ox1), each with TH
    planes of the next ones before and after it (spoiled, not written): the y and z slabs'
    windows are few, and one march each over the whole x range would leave most SMs idle
    while they run. Up to ``pieces`` pieces of at least 4 TH planes."""
    k = max(1, min(pieces, nx // (4 * th)))
    cuts = [round(i * nx / k) for i in range(k + 1)]
    out = []
    for a, b in zip(cuts[:-1], cuts[1:]):
        x0, x1 = max(a - th, 0), min(b + th, nx)
        out.append((x0, x1 - x0, a, b))
    return out


def tasks(spec: Spec, pieces: int = 8) -> tuple:
    """The CPML kernel's CTAs: rows (y0, z0, oy0, oy1, oz0, oz1, x0, nxw, ox0, ox1);
    ``pieces``: of the y and z slabs' x range (:func:`x_chunks`)."""
    (nx, ny, nz), th = spec.shape, spec.th
    by, bz = spec.block
    Lx, Ly, Lz = spec.pml
    ty, tz = _tiles(ny, by), _tiles(nz, bz)
    cy = _cover(ny, by, Ly + th) if Ly else []
    cz = _cover(nz, bz, Lz + th) if Lz else []
    rows = []
    whole = x_chunks(nx, th, pieces)
    for y in cy:
        rows += [(y[0], z[0], y[1], y[2], z[1], z[2]) + m for z in tz for m in whole]
    for z in cz:
        rows += [(y[0], z[0], y[1], y[2], z[1], z[2]) + m for y in ty for m in whole]
    if Lx:
        if 2 * (Lx + 2 * th) >= nx:
            marches = [(0, nx, 0, nx)]
        else:
            lo, hi = Lx + th, nx - Lx - 2 * th
            marches = [(0, lo + th, 0, lo), (hi, nx - hi, hi + th, nx)]
        for y in ty:
            for z in tz:
                if _covered(y, cy) or _covered(z, cz):
                    continue
                rows += [(y[0], z[0], y[1], y[2], z[1], z[2]) + m for m in marches]
    return tuple(rows)


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


def split(spec: Spec, rows: tuple | None = None, pieces: int = 8) -> tuple[Spec, Spec, tuple] | None:
    """(bulk, CPML) kernels for a pass of ``spec`` and the CPML kernel's task rows; None
    without a CPML. ``rows``: the table (default :func:`tasks`)."""
    if not any(spec.pml):
        return None
    rows = tasks(spec, pieces) if rows is None else rows
    mine = tuple(m for m, (_, _, node) in enumerate(spec.probes) if any(_owned(r, node) for r in rows))
    rest = tuple(m for m in range(len(spec.probes)) if m not in mine)
    bulk = replace(spec, pml=(0, 0, 0), kappa=(False, False, False), record=rest)
    return bulk, replace(spec, ntask=len(rows), record=mine), rows
