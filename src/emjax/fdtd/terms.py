"""How extra terms reach the fields in the FDTD step: CPML slab corrections, wall masks and
sources, either zero-padded into the fused bulk pass (GPU) or added in place (CPU)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def inplace_default(g, dtype) -> tuple:
    """Per axis, whether the CPML slabs are corrected in place (and, as x, the sources).

    On a GPU never (XLA then copies the whole array; a padded term costs ~10% of a pass).
    On the CPU the padded term slows XLA:CPU's loops 3-5x, so x and y slabs are corrected in
    place; the z
    slabs (rows of a few elements strided through the whole array) only while one component
    fits in 4 MiB: beyond the cache each such row is a memory latency, and the padded term
    is then faster (2-core EPYC, 32 MB L3: 100^3 single 342 vs 277 M cells/s, double
    101 vs 158; 128^3 single 142 vs 164)."""
    if jax.default_backend() != "cpu":
        return (False, False, False)
    small = g.n_cells * np.dtype(dtype).itemsize <= 4 << 20
    return (True, True, small)


def add_slabs(F, slabs, scale, masks=None):
    """Add ``scale * term`` to each slab of F in place (``scale``: a scalar or a full-size
    coefficient array, sliced to the slab; ``masks``: the PEC wall masks, likewise)."""
    F = list(F)
    for comp, axis, start, term in slabs:
        idx = [slice(None)] * 3
        idx[axis] = slice(start, start + term.shape[axis])
        idx = tuple(idx)
        k = scale[comp] if jnp.ndim(scale) == 4 else scale  # per-component coefficients
        k = k[idx] if jnp.ndim(k) == 3 else k
        if masks is not None:
            for ax, m in enumerate(masks):
                if m is not None and ax != comp:
                    k = k * (m[idx] if m.shape[axis] > 1 else m)
        F[comp] = F[comp].at[idx].add(k * term)
    return tuple(F)


def wall_masks(plan, dtype):
    """Per axis: a (n, 1, 1)-shaped (along that axis) mask zero on the wall plane, or None."""
    masks = []
    for ax, (n, wall) in enumerate(zip(plan.shape, plan.walls)):
        if not wall:
            masks.append(None)
            continue
        shape = [1, 1, 1]
        shape[ax] = n
        masks.append(jnp.ones((n,), dtype).at[0].set(0).reshape(shape))
    return masks


def pec(plan, E):
    """Zero tangential E on the wall planes i = 0 of walled axes (1-D masks, fused)."""
    if not any(plan.walls):
        return E
    masks = wall_masks(plan, E[0].dtype)
    out = []
    for c in range(3):
        f = E[c]
        for ax in range(3):
            if ax != c and plan.walls[ax]:
                f = f * masks[ax]
        out.append(f)
    return tuple(out)


def pmc(plan, F, kind: str):
    """PMC walls (``plan.pmc``) on the H plane i = 1/2, index 0 along the axis: zero the
    tangential H ("H") or the normal E ("E") there."""
    if not any(plan.pmc):
        return F
    out = list(F)
    for ax, on in enumerate(plan.pmc):
        if not on:
            continue
        shape = [1, 1, 1]
        shape[ax] = plan.shape[ax]
        mask = jnp.ones((plan.shape[ax],), F[0].dtype).at[0].set(0).reshape(shape)
        for c in range(3):
            if (c != ax) == (kind == "H"):
                out[c] = out[c] * mask
    return tuple(out)


def block_slices(where, shape):
    """Slices and block shape of ``where`` (ints or slices) in an array of ``shape``."""
    sl = []
    for w, n in zip(where, shape):
        start, stop, _ = (w if isinstance(w, slice) else slice(w, w + 1)).indices(n)
        sl.append(slice(start, stop))
    return tuple(sl), tuple(x.stop - x.start for x in sl)


def source_term(plan, value, where, comp, dtype):
    """A source's value as a block at ``where``, zero on the PEC wall planes where the
    component is tangential (a sheet reaching a wall must not drive the wall)."""
    sl, bshape = block_slices(where, plan.shape)
    block = jnp.reshape(value, bshape)
    for ax, m in enumerate(wall_masks(plan, dtype)):
        if m is not None and ax != comp:
            block = block * m[tuple(x if a == ax else slice(None) for a, x in enumerate(sl))]
    return sl, block


def placed(block, sl, shape):
    """A block zero-padded to the full array at slices ``sl``. Added to the field inside
    the E update's fused pass: ``.at[where].add`` after it made XLA:GPU copy the whole
    component every step (11% of a 256^3 step on an H100)."""
    return jnp.pad(block, [(x.start, n - x.stop) for x, n in zip(sl, shape)])
