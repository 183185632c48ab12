"""The x-CPML's cells that no y or z window covers, marched along y instead of x.

Along x the CPML is a slab of L cells at each end; the CPML kernel recomputes its L + TH
planes there in marches of L + 2 TH planes each, one per (y, z) tile: hundreds of short
marches whose start-up and local-memory chains cost as much as the bulk's whole pass (under
Nsight Compute, H100 512^3: 2.16 ms of an 8.5 ms pass). Here the same cells are one long
march along y per z tile and x end, in the same kernel compiled for a small grid of its
own: ``(NY, 2 D, NZ)`` with ``D = L + 2 TH``, its x the grid's y, its y the grid's x (the
D planes at the low end, then the D at the high end), its z the grid's z. The grid's
walls behind the CPML are that grid's y walls at its first and last cells; the seam between
the two ends spoils TH cells each side, which no own cell is within.

Swapping x and y is a reflection, so the fields come in as ``E' = (Ey, Ex, Ez)`` and ``H' =
-(Hy, Hx, Hz)`` (the curl's sign) and go back the same way; the x-CPML's psi become the
small grid's y-CPML psi, transposed, the E-kind ones (differences of H) negated. The
kernel's text is unchanged: only the arrays it is given differ.

It applies on one device (not a shard's slab) where the pass carries no PEC cells, poles,
TF/SF source or DFT monitors, its per-cell coefficients (if any) lie in a box that misses
these cells' windows, and no point source or probe sits in them; elsewhere the short
marches remain (:func:`.split.tasks`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import jax.numpy as jnp
import numpy as np

from . import xpaste
from .cuda import Spec
from .tiling import best_pieces, cover, covered, cut_march, regular_tiles, tiles_from


@dataclass(frozen=True)
class Plan:
    """The small grid's kernel and what it owns of the grid: x depth ``d`` (= L + 2 TH)
    at each end, own cells ``[0, L + TH)`` and ``[nx - L - TH, nx)`` in x, ``[y0, y1)`` x
    ``[z0, z1)`` in y and z; ``rows``: its task rows."""

    spec: Spec
    d: int
    y0: int
    y1: int
    z0: int
    z1: int
    rows: tuple


def _rect(spec: Spec, cspec: Spec) -> tuple | None:
    """[y0, y1) x [z0, z1): the (y, z) tiles of the CPML windows' tiling that no y or z
    window covers (those the short x marches would take) without the cells within L + TH
    of a y or z face (the faces' windows own those too), or None."""
    (_, ny, nz), th = spec.shape, spec.th
    by, bz = cspec.block
    _, Ly, Lz = spec.pml
    cy = cover(ny, by, Ly + th) if Ly else []
    cz = cover(nz, bz, Lz + th) if Lz else []
    ys = [t for t in regular_tiles(ny, by) if not covered(t, cy)]
    zs = [t for t in regular_tiles(nz, bz) if not covered(t, cz)]
    if not ys or not zs:
        return None
    # no own cell within TH of a y or z CPML (this grid has none; the faces' windows own those)
    y0, y1 = max(ys[0][1], Ly + th), min(ys[-1][2], ny - Ly - th)
    z0, z1 = max(zs[0][1], Lz + th), min(zs[-1][2], nz - Lz - th)
    return (y0, y1, z0, z1) if y0 < y1 and z0 < z1 else None


def _backgrounds(spec: Spec, d: int, ys: tuple, zs: tuple) -> dict | None:
    """The per-cell coefficients where the small grid's windows (x within ``d`` of an end,
    ``ys`` x ``zs``) see them: {} for uniform ones (literals or one traced value), the
    backgrounds as literals where the coefficients' box misses the windows (equal in the
    three components: x and y swap), None where the windows meet the box or the arrays
    are the grid's own."""
    kinds = {k: getattr(spec, k) for k in ("ca", "cb") if isinstance(getattr(spec, k), str)}
    arrays = [k for k, v in kinds.items() if v != "array"]
    if not arrays:
        return {}
    if spec.cbox is None:
        return None
    nx = spec.shape[0]
    x0, x1, y0, y1, z0, z1 = spec.cbox

    def hit(a, b, r):
        return a < r[1] and r[0] < b

    if (hit(x0, x1, (0, d)) or hit(x0, x1, (nx - d, nx))) and hit(y0, y1, ys) and hit(z0, z1, zs):
        return None
    bg = dict(spec.cbg)
    if any(len(set(bg.get(k, (None, 0)))) != 1 for k in arrays):
        return None
    return {k: float(bg[k][0]) for k in arrays}


def plan(spec: Spec, cspec: Spec, slots: int) -> Plan | None:
    """The small grid's march where it applies to ``spec`` (see the module), else None;
    ``cspec``: the CPML kernel's windows; ``slots``: CTAs resident at once (the pieces
    along y fill them)."""
    nx, ny, nz = spec.shape
    th, L = spec.th, spec.pml[0]
    d = L + 2 * th
    if not L or spec.nxa is not None or 2 * d >= nx or spec.tfsf is not None or spec.poles is not None:
        return None
    if spec.boxes or spec.pec is not None:
        return None
    r = _rect(spec, cspec)
    if r is None:
        return None
    y0, y1, z0, z1 = r
    if y0 < th or y1 > ny - th:
        return None
    lits = _backgrounds(spec, d, (y0 - th, y1 + th), (z0 - th, z1 + th))
    if lits is None:
        return None
    own = L + th

    def inside(node):
        i, j, k = node
        return (i < own or i >= nx - own) and y0 <= j < y1 and z0 <= k < z1

    def near(node):  # within its windows: own cells and their TH-deep halos
        i, j, k = node
        return (i < d or i >= nx - d) and y0 - th <= j < y1 + th and z0 - th <= k < z1 + th

    if any(n is not None and near(n) for n, _ in spec.sources) or any(inside(n) for *_, n in spec.probes):
        return None
    bz = min(cspec.block[1], z1 - z0)
    ztiles = tiles_from(z0, z1 - z0, bz)
    # the small grid's y: the low end's own cells [0, own) and the high end's [2 d - own, 2 d)
    wins = [(0, 0, own), (2 * d - own, 2 * d - own, 2 * d)]
    k = best_pieces(len(ztiles) * len(wins), y1 - y0, th, slots)  # fill the SMs' waves
    marches = cut_march(y0, y1, ny, th, min(k, max(1, (y1 - y0) // (4 * th))))
    rows = tuple((w[0], z[0], w[1], w[2], z[1], z[2]) + m for w in wins for z in ztiles for m in marches)
    vs = replace(
        spec,
        shape=(ny, 2 * d, nz),
        block=(own, bz),
        ry=spec.ry if (own + 2 * th) % spec.ry == 0 else 1,
        walls=(False, spec.walls[0], spec.walls[2]),
        pml=(0, L, 0),
        kappa=(False, spec.kappa[0], False),
        sources=(),
        probes=(),
        ntask=len(rows),
        record=(),
        tiles=None,
        span=None,
        cbox=None,
        cbg=(),
        cbox_bg=False,
        **lits,
    )
    w = (own + 2 * th) * (bz + 2 * th)  # one axis's chains in shared memory where they fit
    vs = replace(vs, chain_smem=th > 1 and (12 + 4 * vs.chain_slots) * w * vs.itemsize <= 160 * 1024)
    return Plan(vs, d, y0, y1, z0, z1, rows)


def profiles(p: Plan, prof_x: list, nx: int) -> list:
    """The x-CPML's profiles (b, c, kappa, each over nx) -> the small grid's y-CPML's."""
    out = []
    for v in prof_x:
        parts = [v[q * nx : (q + 1) * nx] for q in range(3)]
        out.append(jnp.concatenate([jnp.concatenate([a[: p.d], a[nx - p.d :]]) for a in parts]))
    return out


def run(p: Plan, spec: Spec, run_kernel, E, H, static, prof_x, psi_x, fields, cur_psi_x, gpu=False):
    """The small grid's pass: the pass's inputs ``E``, ``H``, ``psi_x`` (the x-CPML's packed
    psi, :data:`.cuda.PSI` [0] order) in; its own cells written into ``fields`` (E then H,
    the other kernels' outputs) and ``cur_psi_x``. Returns (fields, cur_psi_x). ``gpu``:
    the copies as kernels (:mod:`.xpaste`), the fields' buffers written in place."""
    nx, L = spec.shape[0], spec.pml[0]
    ev = [xpaste.gather(E[c], p.d, 1.0, gpu) for c in (1, 0, 2)]
    hv = [xpaste.gather(H[c], p.d, -1.0, gpu) for c in (1, 0, 2)]
    signs = (1.0, 1.0, -1.0, -1.0)  # the x-psi's, E-kind ones negated
    pv = [xpaste.gather(v, L, s, gpu) for v, s in zip(psi_x, signs)]
    vs = p.spec
    xr = np.array([0, 0, vs.shape[0], 0, vs.shape[0]], np.int32)
    table = np.array(p.rows, np.int32).reshape(-1, 10)
    dest = [jnp.zeros(vs.shape, vs.dtype) for _ in range(6)] + [jnp.zeros_like(v) for v in pv]
    keys = [k for k in ("ca", "cb") if isinstance(getattr(spec, k), str)]  # static's order
    static = [v for k, v in zip(keys, static) if isinstance(getattr(vs, k), str)]
    outs = run_kernel(vs, ev + hv + static + profiles(p, prof_x, nx) + pv + [xr, table], dest)
    rect = (p.y0, p.y1, p.z0, p.z1)
    fields = [jnp.asarray(f) for f in fields]
    for c, src, sign in ((0, 1, 1.0), (1, 0, 1.0), (2, 2, 1.0), (3, 4, -1.0), (4, 3, -1.0), (5, 5, -1.0)):
        fields[c] = xpaste.scatter(fields[c], outs[src], vs.block[0], rect, sign, gpu)
    psi = [jnp.asarray(v) for v in cur_psi_x]
    for q, s in enumerate(signs):
        psi[q] = xpaste.scatter(psi[q], outs[6 + q], L, rect, s, gpu)
    return fields, psi
