"""The blocked kernel on several devices: the grid in x slabs, each device's slab held with
TH-deep halos that are exchanged once per pass of TH steps.

Device ``k`` of ``n`` owns planes ``[k m, (k + 1) m)``, ``m = nx / n``, and holds them with
TH planes of each neighbour on either side (arrays of ``m + 2 TH`` planes whose first is the
grid's plane ``k m - TH``). A pass runs the kernel on the whole extended slab: its march
starts and ends inside the grid, which spoils the TH planes at each end in TH steps, exactly
the halo; the slab's own planes come out exact. Then each device sends its first and last
TH own planes to its neighbours (``ppermute``), which write them into their
halos: one exchange of ``2 TH`` planes per field per TH steps, the seed paper's multi-node
scheme, instead of a plane per field every half step. The y- and z-CPML's psi travel the
same way; the x-CPML's packed psi is kept per device (each writes the planes it owns; the low
slab comes back from device 0, the high one from device n - 1). Probes are recorded by the
device that owns their cell and summed. The grid's first and last devices' outer halos
(past x's ends) receive nothing and are zero; the bulk kernel marches over every plane of a
slab, so it reads them, and the x walls keep what it makes of them from the own planes (the
CPML kernels' marches start and end in the grid). Leaving the outer halo out of the march
(on two devices every slab has one: 4 of 264 planes at 512^3) needs the own planes' test at
run time, which cost more than the planes: on 2 x H200, strong scaling 116.2 against 122.7
G cell/s (2026-11-27).
A scatterer's per-cell coefficients are held over its y-z box only, every plane of a slab
(:func:`.coef_box.find_slabs`), and read only in its box: the tiles whose windows miss it in
y-z, and the planes before and after it along x, take the backgrounds as literals, as on
one device.
``fdtd.run`` keeps its state in this layout from call to call (:func:`extend`,
:func:`advance_extended`): a call then pads, exchanges and crops nothing before and after its
passes; a checkpoint and the result take the plain layout (:func:`crop`).

On the host the same driver runs with the kernel emulated (one callback per device), which
is how the CPU tests check it on virtual devices.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from ...layout import AXIS
from ..sharded import split_axis
from . import coef_box, cuda, emulation, halos, incidence, records, split, tiling
from .cuda_advance import (
    _one_pass,
    _sv,
    make_spec,
    pack_psi,
    poles_flat,
    poles_nested,
    static_inputs,
    unpack_psi,
)


def unsupported(plan, th: int) -> str | None:
    """Why the blocked kernel cannot run ``plan`` on its layout's devices (None: it can)."""
    n, nx = plan.layout.n, plan.shape[0]
    if nx % n:
        return f"nx = {nx} not divisible by the {n} devices"
    need = plan.pml[0] + 2 * th
    if nx // n < need:
        return f"slabs of {nx // n} planes, under the {need} its x-CPML and halos need"
    return None


def _tables(spec, n: int, split_cpml: bool, th: int):
    """Per device: xr rows (n, 5) and the CPML kernels' clipped task rows (n, ntask, 10),
    for slabs held with ``th`` halo planes (a last, shorter pass keeps the arrays' halos)."""
    nx = spec.shape[0]
    m = nx // n
    xr, tabs = [], []
    parts = _split(spec, n) if split_cpml else None
    for k in range(n):
        lo, hi = k * m - th, (k + 1) * m + th
        planes = (max(lo, 0), min(hi, nx))
        xr.append((lo, planes[0], planes[1] - planes[0], k * m, (k + 1) * m))
        if parts is not None:
            tabs.append(split.clip(parts[3], planes, (k * m, (k + 1) * m)))
    tab = np.array(tabs, np.int32).reshape(n, -1, 10) if tabs else None
    return np.array(xr, np.int32), tab


def interior(spec, n: int, th: int) -> tuple | None:
    """(y0, y1, z0, z1): the part of every send plane on ``n`` devices that the bulk kernel
    and its tail write last (no CPML or box kernel's row owns a cell of it in a send plane),
    sent before the CPML kernel runs (:func:`.halos.send_interior`); None where there is
    none."""
    nx = spec.shape[0]
    m = nx // n
    parts = _split(spec, n)
    if parts is None:
        return None
    bulk, _, fixes, rows = parts
    ty0, ty1, tz0, tz1 = bulk.tiles[:4]
    if ty0 >= ty1 or tz0 >= tz1:
        return None
    ys, zs = tiling.tiles_of(bulk, 0), tiling.tiles_of(bulk, 1)
    y0, y1, z0, z1 = ys[ty0][1], ys[ty1 - 1][2], zs[tz0][1], zs[tz1 - 1][2]
    sends = _send_planes(n, m, th)
    later = [
        rows[i] for _, idx in fixes for i in idx if any(rows[i][8] < b and a < rows[i][9] for a, b in sends)
    ]
    for r in later:  # a row that owns cells of the rectangle cuts it back past them
        if not (r[2] < y1 and y0 < r[3] and r[4] < z1 and z0 < r[5]):
            continue
        cuts = [
            (max(y0, r[3]), y1, z0, z1) if r[2] <= y0 else None,
            (y0, min(y1, r[2]), z0, z1) if r[3] >= y1 else None,
            (y0, y1, max(z0, r[5]), z1) if r[4] <= z0 else None,
            (y0, y1, z0, min(z1, r[4])) if r[5] >= z1 else None,
        ]
        cuts = [c for c in cuts if c is not None and c[0] < c[1] and c[2] < c[3]]
        if not cuts:
            return None
        y0, y1, z0, z1 = max(cuts, key=lambda c: (c[1] - c[0]) * (c[3] - c[2]))
    if any(r[2] < y1 and y0 < r[3] and r[4] < z1 and z0 < r[5] for r in later):
        return None
    return (y0, y1, z0, z1)


def _send_planes(n: int, m: int, th: int) -> list:
    """The x ranges of the planes ``n`` slabs of ``m`` send: the first TH own planes of each
    but the first, the last TH of each but the last."""
    return [(k * m, k * m + th) for k in range(1, n)] + [
        ((k + 1) * m - th, (k + 1) * m) for k in range(n - 1)
    ]


def _cuts(spec, n: int) -> dict:
    """How :func:`.split.split` cuts the whole grid's x range for ``n`` slabs (the same in
    the tables and in every pass): the face rows of :data:`.split.ALIGNED` in the pieces
    that fill the SMs best per slab, the CPML kernel's rows otherwise in :func:`pieces`."""
    if split.aligned(spec) is not None:
        return {"pieces": None, "devices": n}
    return {"pieces": pieces(n, spec.shape[0]), "devices": 1}


def _split(spec, n: int):
    return split.split(spec, **_cuts(spec, n))


def pieces(n: int, nx: int) -> int:
    """x pieces of the CPML kernel's y and z windows over the whole grid of ``nx`` planes on
    ``n`` devices: each slab of 384 planes or more gets the one-device count, a shorter slab
    3. Measured on 2 x H200, 512^3 float32 CPML (two runs each), strong scaling (slabs of 256):
    2 per slab 79.7%, 3 86.2 / 85.6%, 4 84.3 / 84.3%, 6 81.8%; weak (slabs of 512): 3 per slab
    94.0 / 94.1%, 4 95.7 / 95.8%. With the state kept in the slabs' layout between
    calls, strong, in all: 4 82.0%, 5 88.4%, 6 89.3-89.5%, 7 85.3%, 8 87.3%. (2 x H100, an
    earlier kernel: 4 in all 72.5% / 78.4%, 8 79.3% / 89.0%.)"""
    return (split.PIECES if nx // n >= 384 else 3) * n


#: how the halos travel: "each" (a ppermute per array and direction), "psi" (the CPML's psi
#: slabs together; on two devices the bulk's part of the send planes sent before the CPML
#: kernels, the rest after them), "kinds" (E, H and the psi slabs in three), "all"
#: (everything in one per direction), "before-x" (everything in one per direction before
#: the pass's last kernel where it marches the x-CPML alone and writes no send plane,
#: :func:`last_spares_sends`, so that NCCL moves the halos while it runs; else "psi"). Read by
#: :func:`advance` at each call (part of the compiled program's key). Measured on 2 x H100 at
#: 512^3 (float32, a CPML), strong: "before-x" 88.6%, "psi" 86.8% (the trace: the send beside
#: the x-CPML's kernel, 232 us of its 486).
GROUPS = "before-x"


def last_spares_sends(spec, n: int, th: int) -> bool:
    """Whether the last kernel of a pass on ``n`` slabs marches the x-CPML alone (the x rows
    of :data:`.split.ALIGNED`, or the one CPML kernel where only x has a CPML) and owns no
    cell of any send plane: then every halo can travel while it runs (``GROUPS =
    "before-x"``)."""
    parts = _split(spec, n)
    if parts is None or not parts[2]:
        return False
    sends = _send_planes(n, spec.shape[0] // n, th)
    last, idx = parts[2][-1]
    if last.pml[1] or last.pml[2]:
        return False
    rows = parts[3]
    return not any(rows[i][8] < b and a < rows[i][9] for i in idx for a, b in sends)


def _emulated(spec, args, dest):
    shapes = [jax.ShapeDtypeStruct(s, np.dtype(spec.dtype)) for _, s in cuda.outputs(spec)]

    def host(*a):
        k = len(cuda.inputs(spec))
        return emulation.emulate_pass(spec, [np.asarray(v) for v in a[:k]], [np.asarray(v) for v in a[k:]])

    return jax.pure_callback(host, shapes, *args, *dest)


#: a scatterer's per-cell coefficients held over its y-z box only (every plane of a slab),
#: the slabs' tiles outside it with the background values as literals, as one device
#: crops them to the box (:func:`.coef_box.find_slabs`)
COEF_BOX = True


def _box(plan, arrays):
    return coef_box.find_slabs(plan, arrays) if COEF_BOX else None


def advance(plan, arrays, state, steps: int, th: int, block: tuple, split_cpml: bool = True, emulate=False):
    """``steps`` steps of a run on ``plan.layout``'s devices (x-split state, as
    :func:`emjax.fdtd.sharded.advance`), in passes of the blocked kernel."""
    ring = cuda.ring_setting()
    # settings read here, outside jit, are part of the compiled program's key
    box = _box(plan, arrays)
    return _advance(plan, arrays, state, steps, th, block, split_cpml, emulate, ring, GROUPS, False, box)


def advance_extended(
    plan, arrays, ext, steps: int, th: int, block: tuple, split_cpml: bool = True, emulate=False
):
    """:func:`advance` on a state kept in the slabs' layout between calls (:func:`extend`):
    no pads, halo exchange or crops per call; returns (extended state, records, finite)."""
    ring = cuda.ring_setting()
    ext = _slabs_placed(plan, ext)
    box = _box(plan, arrays)
    return _advance(plan, arrays, ext, steps, th, block, split_cpml, emulate, ring, GROUPS, True, box)


@partial(jax.jit, static_argnames=("plan", "th"), donate_argnames=("state",))
def extend(plan, state, th: int):
    """``state`` (x-split, as :func:`emjax.fdtd.sharded.place` lays it out) in the slabs'
    layout: each device's fields and y/z psi with TH-deep halos from its neighbours (global
    arrays of ``n (m + 2 TH)`` planes), the CPML's psi packed (:func:`.cuda_advance.pack_psi`),
    the x-CPML's once per device. :func:`crop` undoes it."""
    n = plan.layout.n
    spec = _psi_spec(plan, state["E"][0].dtype)
    psi = pack_psi(plan, state["psi"], spec)
    nx_psi = 4 if plan.pml[0] else 0
    lay = plan.layout
    # the x-CPML's psi, one copy per device (split along its first axis, as the passes keep it)
    psi_x = [
        jax.lax.with_sharding_constraint(jnp.tile(v, (n, 1, 1)), lay.sharding(3, 0)) for v in psi[:nx_psi]
    ]
    fields = list(state["E"]) + list(state["H"]) + list(poles_flat(state["J"])) + psi[nx_psi:]

    out = _per_slab(plan, lambda fs: [halos.extend(f, th, n) for f in fs], fields)
    nj = len(poles_flat(state["J"]))
    return {
        **state,
        "E": tuple(out[:3]),
        "H": tuple(out[3:6]),
        "J": poles_nested(out[6 : 6 + nj], state["J"]),
        "psi": (psi_x, out[6 + nj :]),
    }


def _slabs_placed(plan, ext):
    """``ext`` (the slabs' layout) with every array of the slabs (E, H, J, psi) placed as split
    along its first axis in one spelling (``jax.device_put`` to an equivalent sharding moves
    nothing): a jitted call's cache key holds its inputs' shardings, and the same split
    written two ways (as :func:`extend` and the pass loop give it) would compile the pass
    loop again on the next call."""
    lay = plan.layout
    put = lambda x: jax.device_put(x, lay.sharding(x.ndim, 0))  # noqa: E731
    return {**ext, **{k: jax.tree_util.tree_map(put, ext[k]) for k in ("E", "H", "J", "psi")}}


@partial(jax.jit, static_argnames=("plan", "th", "keys"))
def crop(plan, ext, th: int, keys: tuple):
    """The state of :func:`extend`'s ``ext`` back in the plain x-split layout (``keys``: the
    state's psi names); ``ext`` stays valid."""
    n, nx = plan.layout.n, plan.shape[0]
    m, lx = nx // n, plan.pml[0]
    spec = _psi_spec(plan, ext["E"][0].dtype)
    psi_x, psi_yz = ext["psi"]
    fields = list(ext["E"]) + list(ext["H"]) + list(poles_flat(ext["J"])) + list(psi_yz)

    out = _per_slab(plan, lambda fs: [jax.lax.slice_in_dim(f, th, th + m, axis=0) for f in fs], fields)
    nj = len(poles_flat(ext["J"]))
    # the x-CPML's psi: the low slab from device 0, the high one from device n - 1
    px = [jnp.concatenate([v[:lx], v[(n - 1) * 2 * lx + lx :]]) for v in psi_x]
    new = {
        **ext,
        "E": tuple(out[:3]),
        "H": tuple(out[3:6]),
        "J": poles_nested(out[6 : 6 + nj], ext["J"]),
        "psi": unpack_psi(plan, px + out[6 + nj :], dict.fromkeys(keys), spec),
    }
    layout = plan.layout
    return jax.tree_util.tree_map(
        lambda x: jax.lax.with_sharding_constraint(x, layout.sharding(x.ndim, split_axis(x, plan.shape))), new
    )


def _per_slab(plan, fn, fields: list) -> list:
    """``fn(fields) -> fields`` on each device's slabs (x-split arrays in and out)."""
    xs = [P(AXIS)] * len(fields)
    return jax.shard_map(fn, mesh=plan.layout.mesh, in_specs=(xs,), out_specs=xs)(fields)


def _psi_spec(plan, dtype):
    """What :func:`.cuda_advance.pack_psi` and ``unpack_psi`` read of a spec: the CPML's
    widths, the grid's shape and the dtype."""
    return SimpleNamespace(pml=tuple(plan.pml), shape=tuple(plan.shape), dtype=str(np.dtype(dtype)))


#: XLA passes left out of the sharded pass loop. The async wrapper of dynamic-slice copies
#: makes XLA copy each field before its halo planes are written (a whole extra read and
#: write of the state per pass): 4 x H200, 512^3 per device, 36.9 -> 49.5 G cell/s per
#: device without it.
COMPILER_OPTIONS = {"xla_disable_hlo_passes": "dynamic-slice-copy-fusion-async-wrapper"}


@partial(
    jax.jit,
    static_argnames=(
        "plan",
        "steps",
        "th",
        "block",
        "split_cpml",
        "emulate",
        "ring",
        "groups",
        "extended",
        "box",
    ),
    donate_argnames=("state",),
    compiler_options=COMPILER_OPTIONS,
)
def _advance(plan, arrays, state, steps, th, block, split_cpml, emulate, ring, groups, extended, box=None):
    layout = plan.layout
    n, nx = layout.n, plan.shape[0]
    m = nx // n
    dtype = state["E"][0].dtype
    spec = make_spec(plan, arrays, dtype, th, block, ring, box)
    rest_spec = make_spec(plan, arrays, dtype, steps % th, block, ring, box) if steps % th else None
    static, prof = static_inputs(plan, arrays, spec)
    lx = plan.pml[0]
    npsi_x = 4 if lx else 0
    if extended:  # already in the slabs' layout (extend)
        psi_x, psi_yz = list(state["psi"][0]), list(state["psi"][1])
    else:
        psi = pack_psi(plan, state["psi"], spec)
        psi_x = [jnp.tile(v, (n, 1, 1)) for v in psi[:npsi_x]]  # the x-CPML's, one per device
        psi_yz = psi[npsi_x:]
    run = _emulated if emulate else cuda.gpu_pass
    specs = [sp for sp in (spec, rest_spec) if sp is not None]
    tables = {sp.th: _tables(sp, n, split_cpml, th) for sp in specs}
    # every halo sent before the last kernel, where it writes none of the send planes
    early = (
        {sp.th: last_spares_sends(sp, n, th) for sp in specs} if split_cpml and groups == "before-x" else {}
    )
    # else on two devices: the bulk's part of the send planes is sent before the CPML kernels
    rects = {}
    if n == 2 and split_cpml and groups in ("psi", "before-x"):
        rects = {sp.th: interior(sp, n, th) for sp in specs if not early.get(sp.th)}
    src_cb = arrays["src_cb"] if plan.sources else jnp.zeros((0,), dtype)
    sax = [max(np.ndim(v) - 3, 0) for v in static]  # static arrays' x axes (the grid's last three)
    split_static = [np.ndim(v) >= 3 for v in static]

    def local(E, H, static, prof, psi_x, psi_yz, xr, tabs, src_cb, n0, dft, aux):
        if not extended:
            E = [halos.extend(f, th, n) for f in E]
            H = [halos.extend(f, th, n) for f in H]
            psi_yz = [halos.extend(v, th, n) for v in psi_yz]
        static = [halos.extend(v, th, n, ax) if sp else v for v, ax, sp in zip(static, sax, split_static)]

        def one(sp, cur, dst, step_n, acc):  # acc: the running DFTs and the TF/SF 1-D grid
            dft, aux = acc
            xr_k = xr[sp.th][0]
            tab = tabs[sp.th][0] if sp.th in tabs else None
            sv = _sv(plan, {"src_cb": src_cb}, step_n, sp.th, dtype) if sp.sources else None
            inc = None
            if sp.tfsf is not None:  # every device advances the same 1-D line
                aux, inc = incidence.lines(plan, aux, step_n, sp.th, dtype)
            lsp = replace(sp, nxa=m + 2 * th, xhalo=th)
            Ec, Hc, psc = cur
            rect, sent = rects.get(sp.th), {}

            def after_bulk(fields):
                sent["got"], fields = halos.send_interior(fields, rect, th)
                return fields

            def before_last(fields, psi):  # every halo, while the last kernel runs
                moved, sent["all"] = halos.send_group(list(fields) + list(psi[npsi_x:]), th, n)
                return moved[: len(fields)], list(psi[:npsi_x]) + moved[len(fields) :]

            # the poles' state rides after H (extended and exchanged like it)
            out_E, out_H, out_psi, rec, mrec, out_J = _one_pass(
                lsp,
                static,
                sv,
                prof,
                Ec,
                Hc[:3],
                list(psc[0]) + list(psc[1]),
                run,
                dst,
                split_cpml,
                xr_k,
                tab,
                **_cuts(sp, n),
                inc=inc,
                J=Hc[3:],
                after_bulk=after_bulk if rect is not None else None,
                before_last=before_last if early.get(sp.th) else None,
            )
            out_H = tuple(out_H) + tuple(out_J)
            out_px, pyz = out_psi[:npsi_x], list(out_psi[npsi_x:])
            if "all" in sent:  # sent before the last kernel: written into the halos now
                moved = halos.receive_group(list(out_E) + list(out_H) + pyz, sent["all"], th, n)
                ne, nh = len(out_E), len(out_H)
                out_E, out_H, out_pyz = tuple(moved[:ne]), tuple(moved[ne : ne + nh]), moved[ne + nh :]
            elif "got" in sent:  # the frame and the psi slabs now, the bulk's part sent earlier
                moved, out_pyz = halos.finish_interior(list(out_E) + list(out_H), pyz, sent["got"], rect, th)
                out_E, out_H = tuple(moved[:3]), tuple(moved[3:])
            elif groups == "all":  # E, H and the psi slabs in one ppermute per direction
                moved = halos.exchange_group(list(out_E) + list(out_H) + pyz, th, n)
                ne, nh = len(out_E), len(out_H)
                out_E, out_H, out_pyz = tuple(moved[:ne]), tuple(moved[ne : ne + nh]), moved[ne + nh :]
            else:
                if groups == "kinds":
                    out_E = tuple(halos.exchange_group(list(out_E), th, n))
                    out_H = tuple(halos.exchange_group(list(out_H), th, n))
                else:
                    out_E = tuple(halos.exchange(f, th, n) for f in out_E)
                    out_H = tuple(halos.exchange(f, th, n) for f in out_H)
                if groups == "each" or not pyz:
                    out_pyz = [halos.exchange(v, th, n) for v in pyz]
                else:
                    out_pyz = halos.exchange_group(pyz, th, n)
            nprobe = len(sp.probes)
            # each device's records of its own probes (zeros elsewhere), summed once per call
            rec = rec.reshape(sp.th, nprobe) if nprobe else jnp.zeros((sp.th, 0), dtype)
            if sp.boxes:  # each device wrote its own cells into zeros
                dft = records.accumulate(plan, dft, jax.lax.psum(mrec, AXIS), sp, step_n, plan.dt)
            return (out_E, out_H, (out_px, out_pyz)), rec, (dft, aux)

        cur = (tuple(E), tuple(H), (list(psi_x), list(psi_yz)))
        # the second buffers of the passes: the halos zero (on the grid's first and last slabs
        # the outer one is read by the bulk's march and never written)
        ends = lambda f: f.at[:th].set(0).at[-th:].set(0)  # noqa: E731
        other = jax.tree_util.tree_map(jnp.empty_like, cur)
        other = (
            tuple(map(ends, other[0])),
            tuple(map(ends, other[1])),
            (other[2][0], list(map(ends, other[2][1]))),
        )
        n_pass = steps // th
        recs = []

        def body(carry, _):
            a, b, step_n, acc = carry
            b, r1, acc = one(spec, a, _flat(b), step_n, acc)
            a, r2, acc = one(spec, b, _flat(a), step_n + th, acc)
            return (a, b, step_n + 2 * th, acc), jnp.concatenate([r1, r2])

        step_n, acc = n0, (dft, aux)
        if n_pass // 2:
            (cur, other, step_n, acc), rec = jax.lax.scan(
                body, (cur, other, step_n, acc), None, length=n_pass // 2
            )
            recs.append(rec.reshape(2 * th * (n_pass // 2), len(spec.probes)))
        for sp in ([spec] if n_pass % 2 else []) + ([rest_spec] if rest_spec else []):
            new, rec, acc = one(sp, cur, _flat(other), step_n, acc)
            cur, other = new, cur
            recs.append(rec)
            step_n = step_n + sp.th
        E, H, (px, pyz) = cur
        # the fields' own planes finite (what the outer halos at x's ends hold never reaches
        # them: the x walls cut it off)
        mine = lambda f: jax.lax.slice_in_dim(f, th, th + m, axis=0)  # noqa: E731
        bad = sum(jnp.any(~jnp.isfinite(mine(f))).astype(jnp.int32) for f in list(E) + list(H)[:3])
        finite = jax.lax.psum(bad, AXIS) == 0
        own = (lambda f: f) if extended else mine
        rec = jnp.concatenate(recs) if recs else jnp.zeros((0, len(spec.probes)), dtype)
        rec = jax.lax.psum(rec, AXIS)
        return [own(f) for f in E], [own(f) for f in H], px, [own(v) for v in pyz], rec, finite, *acc

    xs = P(AXIS)
    xr_all = {t: jnp.asarray(v[0]) for t, v in tables.items()}
    tab_all = {t: jnp.asarray(v[1]) for t, v in tables.items() if v[1] is not None}
    static_specs = [P(*([None] * ax), AXIS) if sp else P() for ax, sp in zip(sax, split_static)]
    nj = len(jax.tree_util.tree_leaves(state["J"]))
    in_specs = (
        [xs] * 3,
        [xs] * (3 + nj),
        static_specs,
        [P()] * len(prof),
        [xs] * len(psi_x),
        [xs] * len(psi_yz),
        {t: xs for t in tables},
        {t: xs for t in tab_all},
        P(),
        P(),
        P(),
        P(),
    )
    out_specs = ([xs] * 3, [xs] * (3 + nj), [xs] * len(psi_x), [xs] * len(psi_yz), P(), P(), P(), P())
    E, H, px, pyz, rec, finite, dft, aux = jax.shard_map(
        local, mesh=layout.mesh, in_specs=in_specs, out_specs=out_specs, check_vma=False
    )(
        list(state["E"]),
        list(state["H"]) + list(poles_flat(state["J"])),
        list(static),
        list(prof),
        psi_x,
        list(psi_yz),
        xr_all,
        tab_all,
        src_cb,
        state["n"],
        tuple(state["dft"]),
        tuple(state["aux"]),
    )
    H, J = H[:3], poles_nested(H[3:], state["J"])
    if extended:
        new = {**state, "E": tuple(E), "H": tuple(H), "J": J, "psi": (list(px), list(pyz))}
        return {**new, "n": state["n"] + steps, "dft": dft, "aux": aux}, rec, finite
    # the x-CPML's psi: the low slab from device 0, the high one from device n - 1
    px = [jnp.concatenate([v[:lx], v[(n - 1) * 2 * lx + lx :]]) for v in px]
    new_psi = unpack_psi(plan, px + list(pyz), state["psi"], spec)
    new = {
        **state,
        "E": tuple(E),
        "H": tuple(H),
        "J": J,
        "psi": new_psi,
        "n": state["n"] + steps,
        "dft": dft,
        "aux": aux,
    }
    # the placement of fdtd.sharded: x-split where an array spans x, else replicated
    new = jax.tree_util.tree_map(
        lambda x: jax.lax.with_sharding_constraint(x, layout.sharding(x.ndim, split_axis(x, plan.shape))), new
    )
    return new, rec, finite


def _flat(c):
    E, H, (px, pyz) = c
    return (E, H, list(px) + list(pyz))
