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
    """:func:`find`'s box and backgrounds for a grid held in x slabs, as (box, backgrounds,
    True): each device's arrays then hold the box's y-z cells of all its planes, halos
    included (the kernels index them from the slab's first plane), and the box's x range
    says where along x they are read (the kernel rows outside it take the backgrounds, as on
    one device). None where the box's y-z would hold more than :data:`MAX_FRACTION` of a
    plane."""
    got = find(plan, arrays)
    if got is None:
        return None
    box, bgs = got
    _, ny, nz = plan.shape
    if (box[3] - box[2]) * (box[5] - box[4]) > MAX_FRACTION * ny * nz:
        return None
    return box, bgs, True


@jax.jit
def _projections(comps, bg):
    """Per axis, whether any cell of each plane differs from the background (one fused pass:
    no grid-sized mask kept)."""
    d = jnp.any(comps != bg[:, None, None, None], axis=0)
    return jnp.any(d, axis=(1, 2)), jnp.any(d, axis=(0, 2)), jnp.any(d, axis=(0, 1))


def shape(box) -> tuple:
    return tuple(box[2 * a + 1] - box[2 * a] for a in range(3))


def array_shape(spec) -> tuple:
    """The cells a kernel's coefficient arrays hold: the box's, or for slabs
    (``spec.cbox_slabs``) the box's y-z cells of every plane: the slab's (``spec.nxa``) or,
    before the grid is cut, the grid's."""
    cells = shape(spec.cbox)
    if not spec.cbox_slabs:
        return cells
    return (spec.nxa or spec.shape[0],) + cells[1:]


def held(spec) -> tuple:
    """The part of the grid the coefficient arrays are cut to: the box, or for slabs the
    box's y-z over the whole x range."""
    return (0, spec.shape[0]) + tuple(spec.cbox[2:]) if spec.cbox_slabs else spec.cbox


def crop(a, box):
    """A per-cell array (grid or (3,) + grid) cut to ``box``."""
    x0, x1, y0, y1, z0, z1 = box
    return a[..., x0:x1, y0:y1, z0:z1]


def defines(spec, literal) -> dict:
    """The kernel's #defines for ``spec.cbox`` (CBOX 0 without one): the box where the
    arrays are read (CB_X0 ...) and the first plane (CB_XA) and planes (CB_NXA) they hold."""
    if spec.cbox is None:
        return {"CBOX": 0}
    if spec.cbox_slabs != (spec.nxa is not None):
        raise ValueError("a slab's kernel takes a slabs' coefficient box (find_slabs), one device's find's")
    x0, x1, y0, _, z0, _ = spec.cbox
    nx, ny, nz = shape(spec.cbox)
    # a slab's arrays: all its planes, from the grid's plane xoff (at run time)
    xa, nxa = ("xoff", "NXA") if spec.cbox_slabs else (x0, nx)
    d = {
        "CBOX": 1,
        "CBOX_BG": int(spec.cbox_bg),
        "CB_X0": x0,
        "CB_Y0": y0,
        "CB_Z0": z0,
        "CB_NX": nx,
        "CB_NY": ny,
        "CB_NZ": nz,
        "CB_XA": xa,
        "CB_NXA": nxa,
    }
    for key, vals in spec.cbg:
        for c, v in enumerate(vals):
            d[f"{key.upper()}_BG{c}"] = literal(v)
    return d
