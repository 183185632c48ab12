"""A slab's sub-problem: the plan, sources, probes, monitors and TF/SF box re-indexed into
its ring, its input state gathered from the host state, and its owned planes written back."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import jax
import numpy as np

from ...errors import ConfigError
from .. import tfsf as tfsf_mod
from ..monitors import DFTField, _extent
from ..sources import PointDipole
from ..spec import Probe
from ..tfsf import TFSF
from .slabs import _Ring, _seam_adjacent, _take, _x_split


def _local_tfsf(tf: TFSF, ring: _Ring, nx: int):
    """The TF/SF box in the ring's local x indices, its masks (and, along x, its 1-D grid
    indices) verified equal to the grid's on the ring's planes (but next to a seam);
    canonical where the box misses or covers the ring, so that such slabs share a plan."""
    planes = ring.planes
    m, keep = len(planes), ~_seam_adjacent(ring)
    lo, hi = tf.lo[0], tf.hi[0]
    near = (planes >= lo - 2) & (planes <= hi + 1) & keep  # the corrections read lo - 1 .. hi - 1
    e_in = (planes >= lo) & (planes <= hi - 1)
    h_in = (planes + 0.5 >= lo) & (planes + 0.5 <= hi - 1)
    offsets = np.unique((planes - np.arange(m))[near])
    if not near.any():
        lo2, hi2 = m + 4, m + 6
    elif tf.axis == 0:  # the 1-D grid's index follows the planes: a translation
        off = int(offsets[0])
        lo2, hi2 = lo - off, hi - off
        qa = int(np.nonzero(planes - np.arange(m) == off)[0][0])
        qb = qa + int(np.sum(planes - np.arange(m) == off))  # that piece: local [qa, qb)
        if tf.backward:  # the index reads hi: cut the box's other end at the seam
            lo2 = max(lo2, qa - 1)
        else:
            hi2 = min(hi2, qb + 1)
    elif e_in[keep].all() and h_in[keep].all():
        lo2, hi2 = -3, m + 3
    else:
        q = np.nonzero(e_in)[0]
        lo2, hi2 = (int(q[0]), int(q[-1]) + 1) if len(q) else (m + 4, m + 6)
    local = TFSF((lo2,) + tuple(tf.lo[1:]), (hi2,) + tuple(tf.hi[1:]), tf.wave, tf.waveform)
    ql = np.arange(m)
    ok = np.array_equal(((ql >= lo2) & (ql <= hi2 - 1))[keep], e_in[keep])
    ok &= np.array_equal(((ql + 0.5 >= lo2) & (ql + 0.5 <= hi2 - 1))[keep], h_in[keep])
    if tf.axis == 0 and near.any():
        for kind in "EH":
            want = tfsf_mod._aux_index(tf, nx, kind)[planes]
            ok &= np.array_equal(tfsf_mod._aux_index(local, m, kind)[near], want[near])
    if not ok:
        raise ConfigError(
            f"run_window: the TF/SF box along {'xyz'[tf.axis]} cannot be mapped into a slab whose "
            "ghost planes wrap around the x boundary (parts of the box on both sides of its "
            "sub-grid's cut); use a smaller th, incidence along y or z, or a box farther from "
            "the x faces"
        )
    return local


@dataclass(frozen=True)
class _Slot:
    """Stands for an x-split leaf kept in pinned chunks (``name``: see :class:`_Chunks`)."""

    name: tuple


@dataclass
class _Sub:
    """A slab's static sub-problem: plan, x-split arrays, and the maps back to the grid."""

    ring: _Ring
    plan: object
    arrays: dict
    probes: tuple  # global probe index per local probe
    monitors: tuple  # (global monitor index, kind) per local monitor
    step: object = None  # (arrays, state, n) -> step.advance's result (kernel.choose sets it)


def _sub_problem(sim, plan, arrays, ring: _Ring, slots: bool = False) -> _Sub:
    """``slots``: the x-split coefficient leaves as :class:`_Slot` (assembled on the device
    from the pinned chunks) instead of NumPy copies of the ring's planes."""
    nx = plan.shape[0]
    planes = ring.planes
    pos = {int(p): q for q, p in enumerate(planes)}
    m = ring.m
    shape = (m,) + tuple(plan.shape[1:])
    sources, src_cb = [], []
    cb_iter = iter(arrays["src_cb"])
    for s in plan.sources:
        if isinstance(s, TFSF):
            sources.append(_local_tfsf(s, ring, nx))
            continue
        cb = next(cb_iter)
        if isinstance(s, PointDipole):
            if s.index[0] in pos:
                sources.append(dataclasses.replace(s, index=(pos[s.index[0]],) + tuple(s.index[1:])))
                src_cb.append(cb)
        elif s.axis == 0:
            if s.index in pos:
                sources.append(dataclasses.replace(s, index=pos[s.index]))
                src_cb.append(cb)
        else:
            sources.append(s)
            src_cb.append(_take(np.asarray(cb), ring.pieces, 0))
    own = range(ring.lo, ring.hi)
    probes = [(i, p) for i, p in enumerate(plan.probes) if p.index[0] in own]
    local_probes = tuple(
        Probe((pos[p.index[0]],) + tuple(p.index[1:]), p.component, p.field) for _, p in probes
    )
    mons, local_mons = [], []
    for i, mon in enumerate(plan.monitors):
        if mon.axis == 0:
            if mon.index in own:
                mons.append((i, "plane"))
                local_mons.append(dataclasses.replace(mon, index=pos[mon.index]))
            continue
        ext = [_extent(mon, plan.shape, ax) for ax in range(3)]
        first = 1 if isinstance(mon, DFTField) else 0
        lo = tuple(first if ax == 0 else ext[ax][0] for ax in range(3))
        hi = tuple(m - 1 - first if ax == 0 else ext[ax][1] for ax in range(3))
        mons.append((i, "span"))
        local_mons.append(dataclasses.replace(mon, lo=lo, hi=hi))
    sub_arrays = {}
    for k, v in arrays.items():
        if k == "src_cb":
            sub_arrays[k] = tuple(src_cb)
        elif k.startswith("pml") and k[4] == "0":
            if ring.edge:
                sub_arrays[k] = v
        elif slots:
            leaves, tree = jax.tree_util.tree_flatten(v)
            leaves = [_Slot(("coef", k, i)) if _x_split(x, nx) else x for i, x in enumerate(leaves)]
            sub_arrays[k] = jax.tree_util.tree_unflatten(tree, leaves)
        else:
            sub_arrays[k] = jax.tree_util.tree_map(
                lambda x: _take(x, ring.pieces, np.ndim(x) - 3) if _x_split(x, nx) else x, v
            )
    x_code = {}
    if not ring.edge:  # no x boundary code: walls, CPML faces
        x_code = dict(
            walls=(False,) + plan.walls[1:],
            pml=(0,) + plan.pml[1:],
            pml_faces=((),) + plan.pml_faces[1:],
            pml_kappa=(False,) + plan.pml_kappa[1:],
        )
    sub_plan = dataclasses.replace(
        plan, shape=shape, sources=tuple(sources), probes=local_probes, monitors=tuple(local_mons), **x_code
    )
    return _Sub(ring, sub_plan, sub_arrays, tuple(i for i, _ in probes), tuple(mons))


def _span_samples(mon, shape):
    """Global x samples of a monitor spanning x: (axis of the sums, plane of each sample)."""
    lo, hi = _extent(mon, shape, 0)
    if isinstance(mon, DFTField):
        return 3, np.arange(lo - 1, hi + 2) % shape[0]
    return 2, np.arange(lo, hi + 1) % shape[0]


def _sub_state(sub: _Sub, host, plan, take=None):
    """The slab's input state: ``take(x)`` gives an x-split leaf's ring planes (default: the
    NumPy gather; the pinned path passes the leaves assembled on the device)."""
    ring = sub.ring
    if take is None:
        take = lambda x: _take(x, ring.pieces, 0)
    psi = {k: (take(v) if k[1] != "0" else v) for k, v in host["psi"].items() if k[1] != "0" or ring.edge}
    dft = []
    planes = ring.planes
    for i, kind in sub.monitors:
        d = host["dft"][i]
        if kind == "plane":
            dft.append(d)
            continue
        axis, samples = _span_samples(plan.monitors[i], plan.shape)
        first = {}
        for j, p in enumerate(samples):
            first.setdefault(int(p), j)
        idx = np.array([first.get(int(p), -1) for p in planes])
        out = {}
        for f in ("E", "H"):
            v = np.take(d[f], np.maximum(idx, 0), axis=axis)
            miss = idx < 0
            if miss.any():
                v[(slice(None),) * axis + (miss,)] = 0
            out[f] = v
        dft.append(out)
    return {
        "E": tuple(take(e) for e in host["E"]),
        "H": tuple(take(h) for h in host["H"]),
        "psi": psi,
        "dft": tuple(dft),
        "J": jax.tree_util.tree_map(take, host["J"]),
        "aux": host["aux"],
        "n": host["n"],
        "sub": (),
        "sub_block": (),
    }


def _write_back(sub: _Sub, out, host, plan, rec, probes_out, done, big=True):
    """The slab's owned planes into ``host``; ``big=False`` (the pinned path): only the
    small parts (DFT sums, probes), the x-split leaves and psi went back as chunks."""
    ring, nx = sub.ring, plan.shape[0]
    a, b = ring.lo, ring.hi
    for f in ("E", "H") if big else ():
        for c in range(3):
            host[f][c][a:b] = out[f][c]
    for k, v in out["psi"].items():
        if k[1] != "0":
            if big:
                host["psi"][k][a:b] = v
            continue
        L = v.shape[0]
        start = 0 if k.endswith("lo") else nx - L
        p0, p1 = max(a, start), min(b, start + L)
        if p0 < p1:
            host["psi"][k][p0 - start : p1 - start] = v[p0 - start : p1 - start]
    for hj, oj in zip(
        jax.tree_util.tree_leaves(host["J"]), jax.tree_util.tree_leaves(out["J"]) if big else ()
    ):
        hj[a:b] = oj
    q0 = ring.own[0]
    for (i, kind), d in zip(sub.monitors, out["dft"]):
        if kind == "plane":
            host["dft"][i] = {f: np.array(d[f]) for f in ("E", "H")}
            continue
        axis, samples = _span_samples(plan.monitors[i], plan.shape)
        js = np.nonzero((samples >= a) & (samples < b))[0]
        qs = samples[js] - a + q0
        for f in ("E", "H"):
            host["dft"][i][f][(slice(None),) * axis + (js,)] = np.take(d[f], qs, axis=axis)
    if sub.probes:
        probes_out[done : done + len(rec), list(sub.probes)] = rec
