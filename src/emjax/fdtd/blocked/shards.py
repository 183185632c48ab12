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
device that owns their cell and summed. The grid's first and last devices march from plane
0 and to plane nx (their outer halos receive nothing and are never read: x is walled).

On the host the same driver runs with the kernel emulated (one callback per device), which
is how the CPU tests check it on virtual devices.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from ...layout import AXIS
from ..sharded import split_axis
from . import cuda, incidence, records, split
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
    parts = split.split(spec, pieces(n, nx)) if split_cpml else None
    for k in range(n):
        lo, hi = k * m - th, (k + 1) * m + th
        planes = (max(lo, 0), min(hi, nx))
        xr.append((lo, planes[0], planes[1] - planes[0], k * m, (k + 1) * m))
        if parts is not None:
            tabs.append(split.clip(parts[3], planes, (k * m, (k + 1) * m)))
    tab = np.array(tabs, np.int32).reshape(n, -1, 10) if tabs else None
    return np.array(xr, np.int32), tab


def pieces(n: int, nx: int) -> int:
    """x pieces of the CPML kernel's y and z windows over the whole grid of ``nx`` planes on
    ``n`` devices: each slab of 384 planes or more gets the one-device count, a shorter slab
    3. Measured on 2 x H200, 512^3 float32 CPML (two runs each), strong scaling (slabs of 256):
    2 per slab 79.7%, 3 86.2 / 85.6%, 4 84.3 / 84.3%, 6 81.8%; weak (slabs of 512): 3 per slab
    94.0 / 94.1%, 4 95.7 / 95.8%. (2 x H100, an earlier kernel: 4 in all 72.5% / 78.4%, 8
    79.3% / 89.0%.)"""
    return (split.PIECES if nx // n >= 384 else 3) * n


def _pairs(n: int) -> tuple:
    """(to the left, to the right) neighbour pairs of ``n`` slabs: x is walled, so the first
    and last slabs send nothing past the grid's ends (their outer halos are never read and
    stay zero)."""
    return [(i, i - 1) for i in range(1, n)], [(i, i + 1) for i in range(n - 1)]


def _two_way(m: int, th: int):
    """Two devices: each sends one side, in one collective (where the two directions as two
    collectives run one after the other). Device 0 sends its last own planes and takes the
    others' first into its upper halo; device 1 the reverse. (send start, receive start, pairs)."""
    first = jax.lax.axis_index(AXIS) == 0
    return jnp.where(first, m, th), jnp.where(first, m + th, 0), [(0, 1), (1, 0)]


def _exchange(a, th: int, n: int, axis: int = 0):
    """Refresh the halos of an extended slab (own planes ``[th, th + m)`` along ``axis``)."""
    m = a.shape[axis] - 2 * th
    if n == 2:
        send, recv, pairs = _two_way(m, th)
        got = jax.lax.ppermute(jax.lax.dynamic_slice_in_dim(a, send, th, axis=axis), AXIS, pairs)
        return jax.lax.dynamic_update_slice_in_dim(a, got, recv, axis)
    to_left, to_right = _pairs(n)
    lo = jax.lax.ppermute(jax.lax.slice_in_dim(a, m, m + th, axis=axis), AXIS, to_right)
    hi = jax.lax.ppermute(jax.lax.slice_in_dim(a, th, 2 * th, axis=axis), AXIS, to_left)
    a = jax.lax.dynamic_update_slice_in_dim(a, lo, 0, axis)
    return jax.lax.dynamic_update_slice_in_dim(a, hi, m + th, axis)


def _exchange_group(arrays, th: int, n: int):
    """:func:`_exchange` of several arrays (x first) in one ``ppermute`` per direction."""
    if len(arrays) == 1:
        return [_exchange(arrays[0], th, n)]
    m = arrays[0].shape[0] - 2 * th
    if n == 2:
        send, recv, pairs = _two_way(m, th)
        got = jnp.concatenate([jnp.ravel(jax.lax.dynamic_slice_in_dim(a, send, th)) for a in arrays])
        got = jax.lax.ppermute(got, AXIS, pairs)
        out, at = [], 0
        for a in arrays:
            k = th * int(np.prod(a.shape[1:]))
            piece = got[at : at + k].reshape((th,) + a.shape[1:])
            out.append(jax.lax.dynamic_update_slice_in_dim(a, piece, recv, 0))
            at += k
        return out
    to_left, to_right = _pairs(n)
    lo = jnp.concatenate([jnp.ravel(a[m : m + th]) for a in arrays])
    hi = jnp.concatenate([jnp.ravel(a[th : 2 * th]) for a in arrays])
    lo, hi = jax.lax.ppermute(lo, AXIS, to_right), jax.lax.ppermute(hi, AXIS, to_left)
    out, at = [], 0
    for a in arrays:
        k = th * int(np.prod(a.shape[1:]))
        shape = (th,) + a.shape[1:]
        a = jax.lax.dynamic_update_slice_in_dim(a, lo[at : at + k].reshape(shape), 0, 0)
        out.append(jax.lax.dynamic_update_slice_in_dim(a, hi[at : at + k].reshape(shape), m + th, 0))
        at += k
    return out


#: how the halos travel: "each" (a ppermute per array and direction), "psi" (the CPML's psi
#: slabs together), "kinds" (E, H and the psi slabs in three), "all" (everything in one
#: per direction). Read by :func:`advance` at
#: each call (part of the compiled program's key). Not yet told apart by measurement: the
#: 2 x H100 rows of the three (76-79% strong, 88-89% weak at 512^3) ran in one process
#: where the first compiled program was reused for all three (BENCHMARKS.md).
GROUPS = "psi"


def _extend(a, th: int, n: int, axis: int = 0):
    pad = [(0, 0)] * a.ndim
    pad[axis] = (th, th)
    return _exchange(jnp.pad(a, pad), th, n, axis)


def _emulated(spec, args, dest):
    shapes = [jax.ShapeDtypeStruct(s, np.dtype(spec.dtype)) for _, s in cuda.outputs(spec)]

    def host(*a):
        k = len(cuda.inputs(spec))
        return cuda.emulate_pass(spec, [np.asarray(v) for v in a[:k]], [np.asarray(v) for v in a[k:]])

    return jax.pure_callback(host, shapes, *args, *dest)


def advance(plan, arrays, state, steps: int, th: int, block: tuple, split_cpml: bool = True, emulate=False):
    """``steps`` steps of a run on ``plan.layout``'s devices (x-split state, as
    :func:`emjax.fdtd.sharded.advance`), in passes of the blocked kernel."""
    ring = cuda.ring_setting()
    # settings read here, outside jit, are part of the compiled program's key
    return _advance(plan, arrays, state, steps, th, block, split_cpml, emulate, ring, GROUPS)


#: XLA passes left out of the sharded pass loop. The async wrapper of dynamic-slice copies
#: makes XLA copy each field before its halo planes are written (a whole extra read and
#: write of the state per pass): 4 x H200, 512^3 per device, 36.9 -> 49.5 G cell/s per
#: device without it.
COMPILER_OPTIONS = {"xla_disable_hlo_passes": "dynamic-slice-copy-fusion-async-wrapper"}


@partial(
    jax.jit,
    static_argnames=("plan", "steps", "th", "block", "split_cpml", "emulate", "ring", "groups"),
    donate_argnames=("state",),
    compiler_options=COMPILER_OPTIONS,
)
def _advance(plan, arrays, state, steps, th, block, split_cpml, emulate, ring, groups):
    layout = plan.layout
    n, nx = layout.n, plan.shape[0]
    m = nx // n
    dtype = state["E"][0].dtype
    spec = make_spec(plan, arrays, dtype, th, block, ring)
    rest_spec = make_spec(plan, arrays, dtype, steps % th, block, ring) if steps % th else None
    static, prof = static_inputs(plan, arrays, spec)
    psi = pack_psi(plan, state["psi"], spec)
    lx = plan.pml[0]
    npsi_x = 4 if lx else 0
    # the x-CPML's packed psi, one copy per device
    psi_x = [jnp.tile(v, (n, 1, 1)) for v in psi[:npsi_x]]
    psi_yz = psi[npsi_x:]
    run = _emulated if emulate else cuda.gpu_pass
    tables = {sp.th: _tables(sp, n, split_cpml, th) for sp in (spec, rest_spec) if sp is not None}
    src_cb = arrays["src_cb"] if plan.sources else jnp.zeros((0,), dtype)
    sax = [max(np.ndim(v) - 3, 0) for v in static]  # static arrays' x axes (the grid's last three)
    split_static = [np.ndim(v) >= 3 for v in static]

    def local(E, H, static, prof, psi_x, psi_yz, xr, tabs, src_cb, n0, dft, aux):
        E = [_extend(f, th, n) for f in E]
        H = [_extend(f, th, n) for f in H]
        psi_yz = [_extend(v, th, n) for v in psi_yz]
        static = [_extend(v, th, n, ax) if sp else v for v, ax, sp in zip(static, sax, split_static)]

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
                pieces(n, nx),
                inc=inc,
                J=Hc[3:],
            )
            out_H = tuple(out_H) + tuple(out_J)
            out_px, pyz = out_psi[:npsi_x], list(out_psi[npsi_x:])
            if groups == "all":  # E, H and the psi slabs in one ppermute per direction
                moved = _exchange_group(list(out_E) + list(out_H) + pyz, th, n)
                ne, nh = len(out_E), len(out_H)
                out_E, out_H, out_pyz = tuple(moved[:ne]), tuple(moved[ne : ne + nh]), moved[ne + nh :]
            else:
                if groups == "kinds":
                    out_E = tuple(_exchange_group(list(out_E), th, n))
                    out_H = tuple(_exchange_group(list(out_H), th, n))
                else:
                    out_E = tuple(_exchange(f, th, n) for f in out_E)
                    out_H = tuple(_exchange(f, th, n) for f in out_H)
                if groups == "each" or not pyz:
                    out_pyz = [_exchange(v, th, n) for v in pyz]
                else:
                    out_pyz = _exchange_group(pyz, th, n)
            nprobe = len(sp.probes)
            # each device's records of its own probes (zeros elsewhere), summed once per call
            rec = rec.reshape(sp.th, nprobe) if nprobe else jnp.zeros((sp.th, 0), dtype)
            if sp.boxes:  # each device wrote its own cells into zeros
                dft = records.accumulate(plan, dft, jax.lax.psum(mrec, AXIS), sp, step_n, plan.dt)
            return (out_E, out_H, (out_px, out_pyz)), rec, (dft, aux)

        cur = (tuple(E), tuple(H), (list(psi_x), list(psi_yz)))
        other = jax.tree_util.tree_map(jnp.empty_like, cur)
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
        own = lambda f: jax.lax.slice_in_dim(f, th, th + m, axis=0)  # noqa: E731
        rec = jnp.concatenate(recs) if recs else jnp.zeros((0, len(spec.probes)), dtype)
        rec = jax.lax.psum(rec, AXIS)
        return [own(f) for f in E], [own(f) for f in H], px, [own(v) for v in pyz], rec, *acc

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
    out_specs = ([xs] * 3, [xs] * (3 + nj), [xs] * len(psi_x), [xs] * len(psi_yz), P(), P(), P())
    E, H, px, pyz, rec, dft, aux = jax.shard_map(
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
    # the x-CPML's psi: the low slab from device 0, the high one from device n - 1
    px = [jnp.concatenate([v[:lx], v[(n - 1) * 2 * lx + lx :]]) for v in px]
    new_psi = unpack_psi(plan, px + list(pyz), state["psi"], spec)
    H, J = H[:3], poles_nested(H[3:], state["J"])
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
    finite = jnp.all(jnp.stack([jnp.all(jnp.isfinite(f)) for f in E + H]))
    return new, rec, finite


def _flat(c):
    E, H, (px, pyz) = c
    return (E, H, list(px) + list(pyz))
