"""Per-cell coefficients held only in the box where they differ from a background.

A scatterer in a vacuum (or any uniform medium) has per-cell ca, cb (and PEC masks) that
equal one value per component everywhere outside the scatterer's bounding box. The kernel
then reads the arrays only inside that box (cropped to it: less memory too) and takes the
background value, a literal compiled into the kernel, outside it, so the planes and windows
away from the scatterer run as a vacuum does. The box is found on the device before the
passes are compiled; the box and the background values are part of the compiled program's
key. Where the box would hold more than :data:`MAX_FRACTION` of the grid the arrays stay
whole (the kernel as before).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

#: the largest box, as a fraction of the grid's cells, worth cropping to
MAX_FRACTION = 0.5

#: the per-cell coefficients the box covers: the spec's key and the plan's array
KEYS = (("ca", "ca"), ("cb", "cb"), ("pec", "pec_keep"))


def _components(a, shape):
    return a if np.ndim(a) == 4 else a[None] if np.shape(a) == tuple(shape) else None


def find(plan, arrays) -> tuple | None:
    """(box (x0, x1, y0, y1, z0, z1), backgrounds ((key, (v0, v1, v2)), ...)) of ``plan``'s
    per-cell coefficients, or None (no per-cell coefficient, every cell the background, or
    a box over :data:`MAX_FRACTION` of the grid). A background is the value at cell (0, 0, 0)
    per component; the box bounds every cell where any coefficient differs from it."""
    shape = tuple(plan.shape)
    proj, bgs = None, []
    for key, name in KEYS:
        if name not in arrays or (key == "pec" and not plan.has_pec):
            continue
        comps = _components(arrays[name], shape)
        if comps is None:
            continue
        bg = comps[:, 0, 0, 0]
        p = _projections(comps, bg)
        proj = p if proj is None else tuple(a | b for a, b in zip(proj, p))
        vals = [float(v) for v in np.asarray(bg)]
        bgs.append((key, tuple(vals + [vals[-1]] * (3 - len(vals)))))
    if proj is None:
        return None
    box = []
    for hit in (np.flatnonzero(np.asarray(p)) for p in proj):
        if not len(hit):
            return None
        box += [int(hit[0]), int(hit[-1]) + 1]
    if np.prod([box[2 * a + 1] - box[2 * a] for a in range(3)]) > MAX_FRACTION * np.prod(shape):
        return None
    return tuple(box), tuple(bgs)


def find_slabs(plan, arrays) -> tuple | None:
    """:func:`find`'s box over the whole x range, for a grid held in x slabs (each device's
    arrays then hold the box's y-z cells of all its planes, halos included; the kernels index
    them from the slab's first plane), or None where that box would hold more than
    :data:`MAX_FRACTION` of the grid."""
    got = find(plan, arrays)
    if got is None:
        return None
    box, bgs = got
    (_, ny, nz), nx = plan.shape, plan.shape[0]
    if (box[3] - box[2]) * (box[5] - box[4]) > MAX_FRACTION * ny * nz:
        return None
    return (0, nx) + tuple(box[2:]), bgs


@jax.jit
def _projections(comps, bg):
    """Per axis, whether any cell of each plane differs from the background (one fused pass:
    no grid-sized mask kept)."""
    d = jnp.any(comps != bg[:, None, None, None], axis=0)
    return jnp.any(d, axis=(1, 2)), jnp.any(d, axis=(0, 2)), jnp.any(d, axis=(0, 1))


def shape(box) -> tuple:
    return tuple(box[2 * a + 1] - box[2 * a] for a in range(3))


def array_shape(spec) -> tuple:
    """The cells a kernel's coefficient arrays hold: the box's, or on a slab (``spec.nxa``)
    the slab's planes of the box's y-z cells."""
    cells = shape(spec.cbox)
    return cells if spec.nxa is None else (spec.nxa,) + cells[1:]


def crop(a, box):
    """A per-cell array (grid or (3,) + grid) cut to ``box``."""
    x0, x1, y0, y1, z0, z1 = box
    return a[..., x0:x1, y0:y1, z0:z1]


def defines(spec, literal) -> dict:
    """The kernel's #defines for ``spec.cbox`` (CBOX 0 without one)."""
    if spec.cbox is None:
        return {"CBOX": 0}
    x0, x1, y0, _, z0, _ = spec.cbox
    nx, ny, nz = shape(spec.cbox)
    if spec.nxa is not None:  # a slab's arrays: all its planes, from the grid's plane xoff
        if (x0, x1) != (0, spec.shape[0]):
            raise ValueError(f"a slab's coefficient box must span x whole, got [{x0}, {x1})")
        x0, nx = "xoff", "NXA"
    d = {
        "CBOX": 1,
        "CBOX_BG": int(spec.cbox_bg),
        "CB_X0": x0,
        "CB_Y0": y0,
        "CB_Z0": z0,
        "CB_NX": nx,
        "CB_NY": ny,
        "CB_NZ": nz,
    }
    for key, vals in spec.cbg:
        for c, v in enumerate(vals):
            d[f"{key.upper()}_BG{c}"] = literal(v)
    return d
