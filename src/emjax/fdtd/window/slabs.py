"""The calculation window's slabs along x: the ghost arithmetic (planes a pass's steps
reach) and each slab's ring (its sub-grid's planes, an edge ring holding the x boundary)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def reach(order: int) -> int:
    """Planes along x one time step reads on each side (2nd order 1, 4th order 3)."""
    return 1 if order == 2 else 3


def ghost(order: int, th: int) -> int:
    """Ghost planes per side for ``th`` steps per pass (+1: the DFT planes read H at i - 1)."""
    return th * reach(order) + 1


@dataclass(frozen=True)
class _Ring:
    """One slab's sub-grid: global planes ``[lo, hi)`` owned, the sub-grid's planes as
    global ranges ``pieces`` (local plane q = the q-th of them), ``edge``: the grid's x
    boundary code applies (its wrap is the grid's)."""

    lo: int
    hi: int
    pieces: tuple
    edge: bool

    @property
    def planes(self) -> np.ndarray:
        return np.concatenate([np.arange(a, b) for a, b in self.pieces])

    @property
    def m(self) -> int:
        return sum(b - a for a, b in self.pieces)

    @property
    def own(self) -> tuple:
        """Local (q0, q1) of the owned planes (contiguous in one piece)."""
        q = 0
        for a, b in self.pieces:
            if a <= self.lo < b:
                return q + self.lo - a, q + self.hi - a
            q += b - a
        raise AssertionError("owned planes outside the ring")


def rings(nx: int, slab: int, g: int, walled: bool, w_lo: int, w_hi: int) -> list:
    """The sub-grids of the slabs ``[k slab, (k + 1) slab)`` (the last one shorter) with ``g``
    ghost planes: ``w_lo``/``w_hi`` planes next to the x faces hold boundary code (walls,
    CPML) and must sit in an edge ring."""
    out = []
    for a in range(0, nx, slab):
        b = min(a + slab, nx)
        lo, hi = a - g, b + g
        if (lo >= w_lo and hi <= nx - w_hi) or (not walled and lo >= 0 and hi <= nx):
            out.append(_Ring(a, b, ((lo, hi),), False))
            continue
        e, s = w_lo, nx - w_hi
        if lo < 0:
            e, s = max(e, min(hi, nx)), min(s, nx + lo)
        elif hi > nx:
            e, s = max(e, hi - nx), min(s, lo)
        elif lo < w_lo:
            e = max(e, hi)
        else:
            s = min(s, lo)
        pieces = ((0, nx),) if e >= s else ((0, e), (s, nx))
        out.append(_Ring(a, b, pieces, True))
    return out


def _take(x, pieces, axis=0):
    """Planes ``pieces`` of ``x`` along ``axis`` (a view for one piece)."""
    sl = lambda a, b: x[(slice(None),) * axis + (slice(a, b),)]
    if len(pieces) == 1:
        return sl(*pieces[0])
    return np.concatenate([sl(a, b) for a, b in pieces], axis=axis)


def _x_split(x, nx) -> bool:
    return np.ndim(x) >= 3 and np.shape(x)[-3] == nx


def _seam_adjacent(ring: _Ring) -> np.ndarray:
    """Local planes next to a seam (where the sub-grid joins unrelated planes): wrong from
    the first step on, so the TF/SF masks need not match the grid's there."""
    m = ring.m
    adj = np.zeros(m, bool)
    ends = np.cumsum([b - a for a, b in ring.pieces])[:-1]
    for e in ends:
        adj[e - 1 : e + 1] = True
    if not ring.edge:  # the sub-grid's own wrap is a seam too
        adj[[0, m - 1]] = True
    return adj
