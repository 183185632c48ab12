"""Host array work on a map's points in blocks computed side by side in threads (NumPy's
array operations run without the GIL): at 1e8 points a serial pass over an array takes
0.1-0.4 s, which a map on several GPUs would otherwise wait for."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

#: points per block
SETUP_BLOCK = 1 << 18


def blocks_of(n: int) -> list:
    """Consecutive slices of ``range(n)`` of :data:`SETUP_BLOCK` points."""
    return [slice(a, min(a + SETUP_BLOCK, n)) for a in range(0, n, SETUP_BLOCK)]


def in_blocks(n: int, fn) -> None:
    """``fn(block)`` for consecutive slices of ``range(n)`` of :data:`SETUP_BLOCK` points,
    side by side in threads (each block's values are those of the whole array's)."""
    blocks = blocks_of(n)
    side_by_side(lambda j: fn(blocks[j]), len(blocks))


def per_block(n: int, fn) -> list:
    """``[fn(block), ...]`` over :func:`blocks_of` ``n``, side by side in threads."""
    blocks = blocks_of(n)
    out = [None] * len(blocks)

    def one(j):
        out[j] = fn(blocks[j])

    side_by_side(one, len(blocks))
    return out


def extreme(a, reduce) -> float:
    """``reduce`` (np.max or np.min) of a large array, in blocks side by side."""
    return float(reduce(per_block(len(a), lambda b: reduce(a[b]))))


def negated(a):
    out = np.empty_like(a)
    in_blocks(len(a), lambda b: np.negative(a[b], out=out[b]))
    return out


def where_equal(a, v):
    """``np.flatnonzero(a == v)``, in blocks side by side."""
    found = per_block(len(a), lambda b: np.flatnonzero(a[b] == v) + b.start)
    return np.concatenate(found) if found else np.zeros(0, np.int64)


def present(a, length: int):
    """The values 0 ... length - 1 that occur in the integer array ``a`` (blocks side by side)."""
    seen = per_block(len(a), lambda b: np.bincount(a[b], minlength=length) > 0)
    return [int(v) for v in np.flatnonzero(np.any(seen, axis=0))] if seen else []


def side_by_side(fn, count: int) -> None:
    """``fn(j)`` for ``j`` in ``range(count)``, in threads where there are several."""
    if count <= 1:
        for j in range(count):
            fn(j)
        return
    with ThreadPoolExecutor(max_workers=min(count, os.cpu_count() or 1)) as pool:
        list(pool.map(fn, range(count)))
