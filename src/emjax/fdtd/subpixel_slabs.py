"""The subpixel corrections on several devices: each device corrects the interface nodes of
its own x slab, with no collective over the node lists.

On one device the corrections are node lists (:mod:`emjax.fdtd.subpixel`): gathers of H
at the interface nodes and their neighbours, the correction per node, set into a carried
region-sized buffer that is added to E inside the fused update. Left to XLA's partitioner
on an x-split grid, every device gathered the nodes it holds into vectors of all the nodes,
an all-reduce of ~20 such vectors ran every half step and every device computed every
node's correction (measured on 2 x H100, 512^3 eps 2.25 sphere: 41% strong-scaling
efficiency against vacuum's 71-86%).

Here the node lists are dealt out by the slab that owns each node (device ``k`` holds the
planes ``[k m, (k + 1) m)``), padded to a common length (``shard_map`` needs equal shapes;
the padding has zero weights and writes a spare slot), and the correction runs inside
``jax.shard_map`` on each device's planes:

* The averaging stencil reaches one plane along x: E_x's node of plane ``i`` reads H at
  ``i - 1 .. i + 1``, E_y's and E_z's at ``i - 1, i`` (and a dispersive node's pole reads
  E the same way). A node whose reads stay in its slab ("interior") runs
  :func:`emjax.fdtd.subpixel.correction_inline` on the local planes, flat indices local.
  The others ("edge": E_x on the slab's first or last plane, E_y and E_z on its first) run
  the same function on a six-plane window ``[s - 1, s + 2)`` and ``[s + m - 2, s + m + 1)``
  built from the local planes and one plane per face received from each neighbour by
  ``ppermute`` (a plane, whatever the node count). When no node of any device is an edge
  node (an object inside one slab), there is no exchange at all.
* Each device sets its corrections into its own carried buffer (its nodes' box, in local
  planes) and adds it to its planes of E in the update, as the one-device path does.
* Dispersive interface nodes (:func:`emjax.fdtd.subpixel.pole_step`) are dealt the same
  way; their polarizations live on the device that owns the node.

It applies where the one-device step uses the inline correction (every node two cells
inside the grid, no Bloch phase: ``Plan.subpixel_inline``) and each device holds at least two
planes; otherwise the partitioner's path runs (correct, with the collectives above). Sizes
that do not divide by the device count are padded to the devices' storage around the
``shard_map`` (the slow path of :mod:`emjax.fdtd.sharded`). Checkpoints keep the one-device
layout of the node state (:meth:`Local.to_global`), so they cross layouts as before.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec

from ..layout import AXIS
from . import subpixel
from .halo import resize

#: the axis marker (:func:`emjax.fdtd.sharded.axes_of`) of leaves whose leading axis is one
#: entry per device
DEALT = "dealt"
#: the top-level keys of the arrays and the state holding dealt leaves
KEYS = ("sub_slabs", "sub", "sub_block")


@dataclass(frozen=True)
class Slabs:
    """Static description of the dealt corrections (part of the plan, so a jit key)."""

    box_lo: tuple  # the per-device buffer's box: first local plane, y, z
    box_shape: tuple  # (bx, by, bz)
    groups: tuple  # node groups present: "int" (local planes), "edge" (the window)
    left: bool  # some edge node reads the plane before its slab (exchange it)
    right: bool  # some edge node reads the plane after its slab
    poles: tuple  # pole node groups present


@dataclass
class Local:
    """:func:`localize`'s answer: the plan, arrays and state of the sharded loop, the keys of
    the dealt leaves and the way back to the one-device state (for checkpoints)."""

    plan: object
    arrays: dict
    state: dict
    dealt: tuple = ()
    perms: dict | None = None  # pole state: group -> per component (n, L) one-device positions
    counts: tuple = ()  # pole nodes per component (one device)
    block_len: int = 0  # the one-device buffer's length

    def to_global(self, state: dict) -> dict:
        """``state`` with its dealt node state in the one-device layout (host arrays)."""
        if not self.dealt:
            return state
        gather = self.plan.layout.gather
        sub = ()
        if self.perms:
            comps = []
            for c, count in enumerate(self.counts):
                leaves = [np.zeros(count, np.dtype(state["E"][0].dtype)) for _ in range(8)]
                for g, per in self.perms.items():
                    perm = per[c]
                    ok = perm >= 0
                    for q, x in enumerate(jax.tree_util.tree_leaves(state["sub"][g][c])):
                        leaves[q][perm[ok]] = gather(x)[ok]
                comps.append((tuple(leaves[0:3]), tuple(leaves[3:6]), leaves[6], leaves[7]))
            sub = tuple(comps)
        block = np.zeros(self.block_len, np.dtype(state["E"][0].dtype)) if self.block_len else ()
        return {**state, "sub": sub, "sub_block": block}


def _why_not(plan, arrays) -> str | None:
    if plan.layout is None or plan.subpixel is None:
        return "no subpixel box on several devices"
    if not plan.subpixel_inline:
        return "nodes near the grid's faces or Bloch phases (the partitioned path)"
    if plan.layout.padded(plan.shape[0]) // plan.layout.n < 2:
        return "fewer than two planes per device"
    if "sub_pole" in arrays:
        for c, comp in enumerate(arrays["sub_pole"]["comp"]):
            if not np.all(np.isin(np.asarray(comp["nodes"]), np.asarray(arrays["sub_nodes"][c]))):
                return "dispersive nodes outside the corrected nodes"
    return None


def _deal(dev, sel, n):
    """(n, L) positions in the node list of the selected nodes of each device (-1: padding)."""
    idx = [np.flatnonzero(sel & (dev == k)) for k in range(n)]
    out = np.full((n, max(len(i) for i in idx)), -1, np.int64)
    for k, i in enumerate(idx):
        out[k, : len(i)] = i
    return out


def _take(a, perm, fill=None):
    """Per device, ``a[..., perm]``: shape (n, ..., L); at the padding ``fill``, or (None) a
    real entry of ``a`` (so that the padding's gathers stay in bounds)."""
    a = np.asarray(a)
    out = np.moveaxis(a[..., np.maximum(perm, 0)], -2, 0)
    if fill is None:
        real = perm[perm >= 0]
        fill = a[..., real[0]][..., None] if len(real) else 0
    mask = perm >= 0 if out.ndim == 2 else (perm >= 0)[:, None, :]
    return np.where(mask, out, fill).astype(a.dtype)


def localize(plan, arrays: dict, state: dict) -> Local:
    """Deal the subpixel node lists of ``arrays`` (:func:`emjax.fdtd.step.coefficients`) and
    the node state of ``state`` (one-device layout, host or device arrays) out to the devices
    of ``plan.layout`` by slab; returns them with a plan whose step runs :func:`correct`. A
    plan this does not apply to (see the module docstring) comes back as it is."""
    if _why_not(plan, arrays) is not None:
        return Local(plan, arrays, state)
    nx, ny, nz = plan.shape
    area = ny * nz
    n = plan.layout.n
    m = plan.layout.padded(nx) // n

    def where(c, t):
        """Per node: device, group ("edge" or not), frame origin plane, position."""
        t = np.asarray(t, np.int64)
        i, y, z = np.unravel_index(t, plan.shape)
        dev = i // m
        loc = i - dev * m
        lo_edge = loc == 0
        hi_edge = (loc == m - 1) & ~lo_edge if c == 0 else np.zeros_like(lo_edge)
        edge = lo_edge | hi_edge
        origin = np.where(lo_edge, dev * m - 1, np.where(hi_edge, dev * m + m - 5, dev * m))
        return dev, edge, lo_edge, hi_edge, origin, (loc, y, z)

    nodes = [where(c, t) for c, t in enumerate(arrays["sub_nodes"])]
    pole = arrays.get("sub_pole")
    pnodes = [where(c, comp["nodes"]) for c, comp in enumerate(pole["comp"])] if pole else []
    pos = [np.concatenate([w[5][a] for w in nodes]) for a in range(3)]
    box_lo = tuple(int(p.min()) for p in pos)
    box_shape = tuple(int(p.max()) + 1 - lo for p, lo in zip(pos, box_lo))
    size = int(np.prod(box_shape))
    spare = 3 * size  # the padding's slot
    index = np.int32 if max(spare, (m + 6) * area) < 2**31 else np.int64

    def slot(c, w):
        (loc, y, z), (bx, by, bz) = w[5], box_lo
        return c * size + np.ravel_multi_index((loc - bx, y - by, z - bz), box_shape)

    groups = {"int": lambda w: ~w[1], "edge": lambda w: w[1]}
    dealt, slots = {}, []
    present = []
    for g, sel in groups.items():
        perms = [_deal(w[0], sel(w), n) for w in nodes]
        if not any(p.shape[1] for p in perms):
            continue
        present.append(g)
        ts, ws = [], []
        for c, (w, perm) in enumerate(zip(nodes, perms)):
            t_local = np.asarray(arrays["sub_nodes"][c], np.int64) - w[4] * area
            ts.append(_take(t_local, perm).astype(index))
            d, wc = arrays["sub_w"][c]
            ws.append((_take(d, perm, 0), None if wc is None else _take(wc, perm, 0)))
            slots.append(_take(slot(c, w), perm, spare).astype(index))
        dealt[g] = {"sub_nodes": tuple(ts), "sub_w": tuple(ws)}
    dealt["slots"] = np.concatenate(slots, axis=1)
    edge_nodes = [w for w in nodes + pnodes]
    left = any(np.any(w[2]) for w in edge_nodes)
    right = any(np.any(w[3]) for w in edge_nodes)
    pole_present, pole_perms = [], {}
    sub = ()
    if pole:
        dealt["pole"] = {}
        sub = {}
        for g, sel in groups.items():
            perms = [_deal(w[0], sel(w), n) for w in pnodes]
            if not any(p.shape[1] for p in perms):
                continue
            pole_present.append(g)
            pole_perms[g] = perms
            comps, states = [], []
            for c, (w, perm, comp) in enumerate(zip(pnodes, perms, pole["comp"])):
                shift = w[4] * area
                nbr = {
                    j: (_take(np.asarray(idx, np.int64) - shift, perm).astype(index), _take(wt, perm, 0))
                    for j, (idx, wt) in comp["nbr"].items()
                }
                coef = {k: tuple(_take(v, perm, 0) for v in comp[k]) for k in ("n", "m", "par", "perp")}
                t_local = np.asarray(comp["nodes"], np.int64) - shift
                comps.append(
                    {
                        "nodes": _take(t_local, perm).astype(index),
                        "local": _take(slot(c, w), perm, spare).astype(index),
                        "nbr": nbr,
                        **coef,
                    }
                )
                P, P_old, p, p_old = state["sub"][c]
                states.append(
                    (
                        tuple(_take(x, perm, 0) for x in P),
                        tuple(_take(x, perm, 0) for x in P_old),
                        _take(p, perm, 0),
                        _take(p_old, perm, 0),
                    )
                )
            dealt["pole"][g] = tuple(comps)
            sub[g] = tuple(states)
        dealt["c2"] = np.full(n, np.asarray(pole["c2"]), np.asarray(pole["c2"]).dtype)
    slabs = Slabs(box_lo, box_shape, tuple(present), bool(left), bool(right), tuple(pole_present))
    new_arrays = {k: v for k, v in arrays.items() if not k.startswith("sub_")}
    new_arrays["sub_slabs"] = dealt
    dtype = np.dtype(state["E"][0].dtype)
    new_state = {**state, "sub": sub, "sub_block": np.zeros((n, spare + 1), dtype)}
    block_len = int(np.size(state["sub_block"]))
    counts = tuple(len(np.asarray(c["nodes"])) for c in pole["comp"]) if pole else ()
    new_plan = dataclasses.replace(plan, subpixel_slabs=slabs)
    return Local(new_plan, new_arrays, new_state, KEYS, pole_perms or None, counts, block_len)


#: the components whose plane before / after the slab the corrections read: of H (curl
#: of H at E_y, E_z nodes of the plane before; at E_x nodes of the plane after), of E (the
#: poles' averages: E_x at E_y's and E_z's nodes, E_y and E_z at E_x's)
READS = {"H": ((1, 2), (0, 1, 2)), "E": ((0,), (1, 2))}


def _window(f, left: bool, right: bool, n: int):
    """The six planes ``[s - 1, s + 2)`` and ``[s + m - 2, s + m + 1)`` of a device's planes
    ``f`` (``[s, s + m)``), the outer ones from the neighbours (zeros where unneeded)."""
    m = f.shape[0]
    zero = jnp.zeros_like(f[:1])
    before = jax.lax.ppermute(f[m - 1 :], AXIS, [(i, (i + 1) % n) for i in range(n)]) if left else zero
    after = jax.lax.ppermute(f[:1], AXIS, [(i, (i - 1) % n) for i in range(n)]) if right else zero
    return jnp.concatenate([before, f[:2], f[m - 2 :], after])


def correct(plan, arrays, E, H, E_old, sub, block):
    """The subpixel corrections added to the updated ``E`` (x-split components), each device
    its own nodes (see the module docstring); returns ``(E, sub, block)``: the corrected
    fields, the dispersive nodes' new state and the carried buffer."""
    sl: Slabs = plan.subpixel_slabs
    lay = plan.layout
    n, nx = lay.n, plan.shape[0]
    m = lay.padded(nx) // n
    inv_dx = 1.0 / plan.dx
    poles = bool(sl.poles)

    def store(F):  # an unevenly split array padded to the devices' storage (a local operation)
        return tuple(jax.lax.with_sharding_constraint(resize(f, 0, n * m), lay.sharding(3, 0)) for f in F)

    def local(E, H, E_old, dealt, sub, block):
        dealt, sub, block = jax.tree_util.tree_map(lambda x: x[0], (dealt, sub, block))
        dtype = E[0].dtype
        frames = {"int": (H, (m,) + plan.shape[1:])}
        if "edge" in sl.groups or "edge" in sl.poles:
            lo, hi = READS["H"]
            win = tuple(_window(h, sl.left and a in lo, sl.right and a in hi, n) for a, h in enumerate(H))
            frames["edge"] = (win, (6,) + plan.shape[1:])
        deltas = [
            subpixel.correction_inline(dealt[g], frames[g][0], inv_dx, frames[g][1]).astype(dtype)
            for g in sl.groups
        ]
        acc = block.at[dealt["slots"]].set(jnp.concatenate(deltas))
        new_sub = {}
        if poles:
            e_frames = {"int": E_old}
            if "edge" in sl.poles:
                lo, hi = READS["E"]
                e_frames["edge"] = tuple(
                    _window(e, sl.left and a in lo, sl.right and a in hi, n) for a, e in enumerate(E_old)
                )
            for g in sl.poles:
                pole = {"sub_pole": {"comp": dealt["pole"][g], "c2": dealt["c2"]}}
                d_pole, new_sub[g] = subpixel.pole_step(pole, e_frames[g], sub[g])
                for _, slot, d in d_pole:
                    acc = acc.at[slot].add(d.astype(dtype))
        size = int(np.prod(sl.box_shape))
        pads = [(lo, full - lo - b) for lo, b, full in zip(sl.box_lo, sl.box_shape, (m,) + plan.shape[1:])]
        E = tuple(
            e + jnp.pad(acc[c * size : (c + 1) * size].reshape(sl.box_shape), pads) for c, e in enumerate(E)
        )
        return jax.tree_util.tree_map(lambda x: x[None], (new_sub if poles else (), acc)), E

    uneven = nx % n != 0
    if uneven:
        E, H = store(E), store(H)
        E_old = store(E_old) if poles else ()
    elif not poles:
        E_old = ()
    spec = PartitionSpec(AXIS)
    (sub, block), E = jax.shard_map(
        local, mesh=lay.mesh, in_specs=(spec,) * 6, out_specs=((spec, spec), spec)
    )(E, H, E_old, arrays["sub_slabs"], sub, block)
    if uneven:
        E = tuple(resize(e, 0, nx) for e in E)
    return E, sub, block
