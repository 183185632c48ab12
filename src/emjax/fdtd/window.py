"""FDTD beyond the device's memory: a calculation window with temporal blocking.

Design
------
The whole state (E, H, CPML psi, Drude/Lorentz currents, DFT sums) and the per-cell
coefficients live in host memory (see "Host memory" below). The grid is cut into slabs of ``slab``
planes along x; in each *pass* every slab is brought to the device with ``G`` ghost planes
per side, advanced ``th`` time steps by the unchanged jitted step
(:func:`emjax.fdtd.step.advance` of a sub-problem :class:`~emjax.fdtd.step.Plan`
of the slab's shape: its slice of the coefficients, the x-CPML faces only where the slab
reaches them, sources/probes/monitors/TF/SF box re-indexed into it), and its own planes are
written back. The physics is not forked: the slab runs the same ``_step``.

Traversal: ghost zones. The Yee stencil reaches ``r`` planes per time step along x (``r = 1``
for the 2nd order, 3 for the 4th: two half steps of reach 1 + 2), so after ``k`` steps only
the planes ``r k`` or more away from the slab's cut ("seam", where the sub-grid's periodic
wrap joins unrelated planes) are still exact; with ``G = th r + 1`` ghost planes (the 1:
the x-normal DFT planes read H one plane below) the slab's own planes are exact after ``th``
steps, bit for bit the in-memory run's numbers. Chosen over the skewed (wavefront) traversal
because each slab is independent within a pass (no device-resident boundary history, any
slab order, the next slab's upload overlaps the current compute) and is exact by
construction; it costs ``2 G / slab`` redundant cell updates, small for the slabs an
out-of-core run uses (slab >> th r). The skew removes that redundancy and is the natural next
step (the same sub-plans, slab k reading slab k-1's stored boundary planes per step).

Slabs whose ghost region meets the x boundary are "edge" rings: the sub-grid holds planes
``[0, e)`` then ``[s, nx)``, so that its own wrap is the grid's (the PEC wall i = 0 = nx, the
CPML faces, the 4th order's wall terms land where the one-grid code puts them) and its seam
sits between ``e - 1`` and ``s``. Other slabs are "interior": contiguous planes, no x
boundary code. Where ``e >= s`` the ring is the whole grid.

Within a pass the slab results are written back only once no later slab of the pass reads
those planes (the ghost regions overlap the neighbours; the last slab's edge ring reads the
first slab's planes), so the host keeps one copy of the state plus a few slabs' results.
Async dispatch overlaps: slab k + 1 is sent while slab k runs, slab k's owned planes come
back while slab k + 1 runs.

Host memory. Two paths (:func:`host_memory_path`; ``run_window(host_memory=...)``):

* ``"pinned"`` (the default where the device has a ``pinned_host`` memory kind: GPUs, and
  the CPU backend of JAX >= 0.10, so the CPU tests run it): the x-split leaves (E, H, the
  CPML psi, J/P, the x-split coefficients) are JAX arrays in ``pinned_host`` memory, cut
  along x into chunks at every slab boundary, every ring piece's ends and the x-CPML's
  inner faces (:class:`_Chunks`), so a slab's ring is a list of whole chunks (the psi of
  the x faces, L planes each, go whole to the edge rings). A pass moves them with one batched
  ``jax.device_put`` to the device (page-locked: the full link rate, ~53 GB/s measured on
  the H100 against 1.4-9 GB/s from NumPy), concatenates the ring on the device, runs it, and
  ``device_put``-s only its owned chunks back to pinned memory, all asynchronous: slab
  k + 1's chunks go up while slab k runs and slab k's come back while slab k + 1 runs (the
  host waits for slab k - 1 before sending slab k + 1: about four slab states on the
  device, :func:`slab_for_budget`). The pass reads the chunks of the pass's start (a chunk
  is dropped after its last reader is sent; the new ones are kept apart), so no copy of the
  whole state is made. The small parts (DFT sums, probes, the TF/SF line) take the NumPy
  path's write-back (sent back through pinned memory too). On a GPU XLA's pinned pool is limited to
  ``XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB`` (default 64 GiB) and keeps what it allocated, so the
  chunks plus the result's NumPy E and H must fit host RAM: otherwise the NumPy path
  (a warning; a ResourceError when ``"pinned"`` was asked for).
* ``"numpy"``: NumPy arrays (pageable memory); the ring is gathered on the host,
  ``device_put``, its owned planes come back by ``copy_to_host_async`` and are written into
  the NumPy arrays by worker threads.

Rate model (the paper's section 3.3 analogue). Per pass and slab, with ``A = ny nz`` cells
per plane, ``S = slab``, ``G = th r + 1``:
    compute  T_c = (S + 2G) A th / R_dev       (R_dev: in-memory cell updates/s)
    transfer T_t = A ((S + 2G) b_in + S b_out) / B_link
(``b_in``: bytes per cell sent, state + coefficients; ``b_out``: state bytes returned). With
transfers overlapped, rate = S A th / max(T_c, T_t), i.e.
    rate = min(R_dev S / (S + 2G), B_link th S / ((S + 2G) b_in + S b_out)),
transfer bound (linear in th) at small th, compute bound (R_dev less the ghost overhead) at
large th; without overlap (the CPU, where "transfer" is host memcpy on the same cores) the
times add: rate = S A th / (T_c + T_t). A fixed host cost per slab and pass ``T_0``
(dispatch, one device_put per array: ~5 ms on the loaded 2-core CPU) adds to T_t; it
matters only for small planes. :func:`model_rate` evaluates all three. Where the two
directions run at once (full duplex: a GPU's separate copy engines) and are measured apart
(``B_up``, ``B_down``): T_t = A max((S + 2G) b_in / B_up, S b_out / B_down) (``b_down=``). ``S + 2G`` is at
most ``nx`` (a sub-grid is at most the grid), so at ``th r ~ nx`` every slab computes the
whole grid: the rate then falls as ``S / nx``; choose ``slab >> 2 th r``.

Re-indexing: sources and the TF/SF box act in every ring that holds their planes (ghost
planes must be exact too); probes and x-normal DFT planes belong to the slab that owns their
plane; DFT planes normal to y or z (and DFTField windows) span x, so every ring accumulates
its planes' samples into the running sums, which start from the host's sums and go back
to them (one copy per sample: a periodic edge's repeated sample is written from its plane).
The TF/SF box maps by its 1-D x masks (checked against the grid's on every ring plane but
those next to a seam, which are wrong from the first step anyway); with incidence along
y or z any ring works; along x the 1-D grid's index also has to match, which an edge ring
whose second piece ``[s, nx)`` cuts the box cannot do: refused with a ConfigError naming
it (keep the box clear of the last slab's ghosts, or use a smaller th).

Not supported (ConfigError): subpixel boxes, Bloch boundaries along x, oblique TF/SF
incidence, the TF/SF case above, traced (differentiated) inputs, several devices.

Checkpoints (``checkpoint``, ``chunk``): a pass ends at every ``chunk`` steps and the state
is written in :func:`emjax.fdtd.run`'s format (each run resumes the other's), the leaves in
pinned chunks gathered one at a time while the file is written.
"""

from __future__ import annotations

import dataclasses
import os
import time
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from ..backend import precision, precision_scope
from ..errors import ConfigError, ResourceError, require_int
from . import checkpoint as checkpoint_mod
from . import step as engine
from . import tfsf as tfsf_mod
from .monitors import DFTField, _extent
from .results import FDTDResult
from .sources import PointDipole
from .spec import GridSimulation, Probe, is_traced
from .tfsf import TFSF


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


def _global_setup(sim: GridSimulation, steps: int, dtype, initial):
    """The plan, coefficients and initial state of :func:`emjax.fdtd.run` (host copies)."""
    cpu = jax.devices("cpu")[0]
    with jax.default_device(cpu):
        arrays, pml = engine.coefficients(sim, dtype)
        plan = engine.make_plan(sim, steps, dtype, arrays, pml)
        if initial is None:  # zeros straight in host memory (lazily paged in), no device copy
            shapes = jax.eval_shape(lambda: engine.initial_state(sim, plan, dtype, None))
            state = jax.tree_util.tree_map(lambda x: np.zeros(x.shape, x.dtype), shapes)
        else:
            state = jax.tree_util.tree_map(np.array, engine.initial_state(sim, plan, dtype, initial))
    for f in ("E", "H"):  # one (3, nx, ny, nz) array each, the result's (no stacking copy at the end)
        whole = np.zeros((3,) + state[f][0].shape, state[f][0].dtype)
        if initial is not None:
            for c in range(3):
                whole[c] = state[f][c]
        state[f] = tuple(whole)  # views
    return plan, jax.tree_util.tree_map(np.asarray, arrays), state


def unsupported(sim: GridSimulation) -> str | None:
    """Why the window cannot run ``sim`` (None: it can)."""
    if is_traced((sim.eps, sim.sigma)):
        return "traced (differentiated) inputs (use fdtd.run)"
    if sim.subpixel is not None:
        return 'subpixel averaging (a Simulation with averaging="staircase" can use it)'
    if sim.grid.bloch_phases[0] is not None:
        return "a Bloch boundary along x (the slab axis)"
    for s in sim.sources:
        if isinstance(s, TFSF) and s.oblique:
            return (
                "oblique TF/SF incidence (its incident field is evaluated at absolute positions; "
                "use incidence along an axis)"
            )
    return None


def _check(sim: GridSimulation, th: int):
    if not isinstance(sim, GridSimulation):
        raise ConfigError("run_window needs a GridSimulation (a physical Simulation: its .to_grid()[0])")
    why = unsupported(sim)
    if why is not None:
        raise ConfigError(f"run_window: the window does not support {why}")


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


def _to_device(tree, device):
    """A copy on ``device``: the CPU's device_put aliases NumPy arrays, whose planes the
    write-backs change while the slab may still be running."""
    if device.platform == "cpu":
        tree = jax.tree_util.tree_map(np.array, tree)
    return jax.device_put(tree, device)


def _owned(state, q0: int, q1: int):
    """The owned planes of the x-split leaves (one dispatch), psi of the x faces whole."""
    take = lambda x: jax.lax.slice_in_dim(x, q0, q1, axis=0)
    psi = {k: (take(v) if k[1] != "0" else v) for k, v in state["psi"].items()}
    return {
        "E": tuple(take(e) for e in state["E"]),
        "H": tuple(take(h) for h in state["H"]),
        "psi": psi,
        "dft": state["dft"],
        "J": jax.tree_util.tree_map(take, state["J"]),
        "aux": state["aux"],
        "n": state["n"],
    }


_owned_jit = jax.jit(_owned, static_argnames=("q0", "q1"))


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


def model_times(r_dev, b_link, th, slab, order, *, nx, bytes_in, bytes_out, plane=1, b_down=None) -> tuple:
    """(compute, transfer) seconds of one slab and pass, ``plane`` cells per x plane;
    ``b_down``: the directions overlap (``b_link`` up, ``b_down`` down), else they add."""
    S = min(slab, nx)
    m = min(S + 2 * ghost(order, th), nx)  # a sub-grid is at most the grid
    if b_down is not None:
        return m * th * plane / r_dev, max(m * bytes_in / b_link, S * bytes_out / b_down) * plane
    return m * th * plane / r_dev, (m * bytes_in + S * bytes_out) * plane / b_link


def model_rate(
    r_dev: float,
    b_link: float,
    th: int,
    slab: int,
    order: int,
    *,
    nx: int,
    bytes_in: float,
    bytes_out: float,
    overlap: bool = True,
    plane: int = 1,
    overhead: float = 0.0,
    b_down: float | None = None,
) -> float:
    """Expected cell updates/s of the window (see the module docstring): ``r_dev`` the
    in-memory rate (cells/s), ``b_link`` the host link bandwidth (bytes/s), ``bytes_in``/
    ``bytes_out`` per cell sent/returned per pass; a slab's sub-grid is at most the grid
    (``nx`` planes). ``overlap=False``: transfers and compute add up (the CPU).
    ``overhead``: fixed host seconds per slab and pass (dispatch, one transfer per array),
    on the host's side of the overlap; it matters for small planes only (``plane`` cells).
    ``b_down``: full duplex, ``b_link`` the host -> device and ``b_down`` the device -> host
    rate (:func:`model_times`)."""
    kw = dict(nx=nx, bytes_in=bytes_in, bytes_out=bytes_out, plane=plane, b_down=b_down)
    t_c, t_t = model_times(r_dev, b_link, th, slab, order, **kw)
    total = max(t_c, t_t + overhead) if overlap else t_c + t_t + overhead
    return min(slab, nx) * plane * th / total


def bytes_per_cell(sim: GridSimulation, steps: int = 1) -> tuple:
    """(sent, returned) bytes per cell per pass: the x-split state and coefficient arrays."""
    with precision_scope():
        dtype = precision(sim.grid.precision).real
        _, arrays, state = _global_setup(sim, steps, dtype, None)
    nx, n = sim.grid.shape[0], sim.grid.n_cells
    size = lambda t: sum(x.nbytes for x in jax.tree_util.tree_leaves(t) if _x_split(x, nx))
    st = size({k: state[k] for k in ("E", "H", "J")}) + sum(
        v.nbytes for k, v in state["psi"].items() if k[1] != "0"
    )
    co = size({k: v for k, v in arrays.items() if not k.startswith("pml")})
    return (st + co) / n, st / n


def slab_for_budget(sim: GridSimulation, th: int, device_bytes: float) -> int:
    """The largest slab (planes) whose sub-grids fit ``device_bytes`` with ghosts: the device
    holds up to five states (the next slab's input chunks, the running slab's input being
    concatenated, its carry and XLA's copy of it, the previous slab's owned planes on their
    way back) and two coefficient sets. (H100, 1200^3 float32 CPML, th 32: a peak of 71.2 GB
    with a 60 GB budget counted as four states, 4.7 states; budgets of five keep under.)"""
    b_in, b_out = bytes_per_cell(sim)
    plane = sim.grid.n_cells // sim.grid.shape[0]
    per_plane = plane * (5 * b_out + 2 * (b_in - b_out))
    s = int(device_bytes // per_plane) - 2 * ghost(sim.grid.order, th)
    if s < 1:
        raise ConfigError(
            f"run_window: a device budget of {device_bytes / 1e9:.3g} GB holds no slab with "
            f"th = {th} (ghosts 2 x {ghost(sim.grid.order, th)} planes of {per_plane / 1e6:.3g} MB)"
        )
    return min(s, sim.grid.shape[0])


def choose_th(
    sim: GridSimulation,
    device_bytes: float,
    r_dev: float,
    b_up: float,
    b_down: float | None = None,
    ths=(1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128),
) -> tuple:
    """(th, slab, model rate): the steps per pass among ``ths`` that the rate model
    (:func:`model_rate`, transfers overlapped) rates best for ``sim`` with a device budget
    of ``device_bytes`` (the slab from :func:`slab_for_budget`), the in-memory rate
    ``r_dev`` (cells/s) and the link rates (bytes/s; ``b_down`` given: the two directions
    overlap). Larger th hides the link, but the ghosts (``th r + 1`` planes a side) eat
    the slab: the best th is where the two meet."""
    b_in, b_out = bytes_per_cell(sim)
    nx = sim.grid.shape[0]
    kw = dict(nx=nx, bytes_in=b_in, bytes_out=b_out, plane=sim.grid.n_cells // nx, b_down=b_down)
    best = None
    for th in ths:
        try:
            slab = slab_for_budget(sim, th, device_bytes)
        except ConfigError:  # no slab fits with these ghosts
            continue
        rate = model_rate(r_dev, b_up, th, slab, sim.grid.order, **kw)
        if best is None or rate > best[2]:
            best = (th, slab, rate)
    if best is None:
        raise ConfigError(
            f"choose_th: a device budget of {device_bytes / 1e9:.3g} GB holds no slab for any th"
        )
    return best


def host_memory_kind(device=None) -> str | None:
    """``"pinned_host"`` where ``device`` offers that memory kind (GPUs; the CPU backend of
    JAX 0.10 does too), else None (the NumPy path)."""
    device = jax.devices()[0] if device is None else device
    try:
        kinds = {m.kind for m in device.addressable_memories()}
    except Exception:  # a backend without memory kinds
        return None
    return "pinned_host" if "pinned_host" in kinds else None


def host_memory_path(host_memory: str | None = None, device=None) -> str:
    """The path :func:`run_window` takes: ``"pinned"`` (the state as JAX arrays in the
    device's ``pinned_host`` memory, per-slab chunks) or ``"numpy"`` (NumPy arrays, pageable
    memory); ``host_memory=None``: pinned where the device offers it."""
    if host_memory not in (None, "pinned", "numpy"):
        raise ConfigError(f"run_window: host_memory must be None, 'pinned' or 'numpy', got {host_memory!r}")
    available = host_memory_kind(device) is not None
    if host_memory == "pinned" and not available:
        raise ConfigError(
            "run_window: host_memory='pinned' but this device has no pinned_host memory kind; "
            "use host_memory=None or 'numpy'"
        )
    return host_memory or ("pinned" if available else "numpy")


def pinned_pool_limit(device=None) -> int | None:
    """Bytes XLA lets the ``pinned_host`` memory of ``device`` hold: on a GPU a BFC pool of
    ``XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB`` GiB (default 64; read when the backend starts),
    which keeps what it once allocated; None on the CPU (ordinary host memory)."""
    device = jax.devices()[0] if device is None else device
    if device.platform == "cpu":
        return None
    return int(os.environ.get("XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB", "64")) << 30


def _pinned_fits(need: int, fields: int, device) -> str | None:
    """Why ``need`` bytes of pinned chunks do not fit (None: they do): the pool's limit,
    or host RAM for the pool (kept to the end) plus the NumPy E and H of the result."""
    limit = pinned_pool_limit(device)
    if limit is None:
        return None
    if need > limit:
        return (
            f"the pinned chunks need {need / 2**30:.1f} GiB, more than XLA's pinned host pool "
            f"({limit / 2**30:.0f} GiB: set XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB before JAX starts, "
            "or call emjax.backend.raise_pinned_host_limit())"
        )
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if need + fields > 0.95 * ram:
        return (
            f"the pinned chunks ({need / 2**30:.1f} GiB, held by XLA's pool to the end) and the "
            f"result's E and H ({fields / 2**30:.1f} GiB) exceed the host's {ram / 2**30:.0f} GiB"
        )
    return None


@partial(jax.jit, static_argnames=("axes",))
def _concat(lists, axes):
    """Each leaf's ring planes from its chunks (on the device)."""
    return tuple(x[0] if len(x) == 1 else jnp.concatenate(x, axis=a) for x, a in zip(lists, axes))


@partial(jax.jit, static_argnames=("bounds", "axes"))
def _split(leaves, bounds, axes):
    """The owned chunks of each leaf: its local planes ``bounds`` (one (start, stop) per chunk)."""
    return tuple(
        tuple(jax.lax.slice_in_dim(x, a, b, axis=ax) for a, b in bd)
        for x, bd, ax in zip(leaves, bounds, axes)
    )


@jax.jit
def _owned_small(state):
    """What the pinned path returns besides the chunks: the DFT sums, the TF/SF line, the step."""
    return {"E": (), "H": (), "psi": {}, "dft": state["dft"], "J": (), "aux": state["aux"], "n": state["n"]}


class _Chunks:
    """The x-split leaves (E, H, the CPML psi, dispersive currents J and the x-split
    coefficients) as JAX arrays in the device's ``pinned_host`` memory, each cut along x at
    ``cuts``: every slab boundary, every ring piece's ends and the x-CPML's inner faces, so
    that a slab's owned planes and its ring are whole chunks. ``data[name][c]``: chunk
    ``c`` of leaf ``name``, global planes ``[cuts[c], cuts[c + 1])``, None outside the
    leaf's planes ``[start, stop)`` (the x-face psi: the L planes at its face, held whole
    by the edge rings); names ``("E", c)``, ``("H", c)``, ``("psi", key)``, ``("J", i)``
    (state) and ``("coef", key, i)`` (coefficients, never written)."""

    def __init__(self, subs, host, arrays, nx, device, zero_state: bool = False):
        self.pinned = jax.sharding.SingleDeviceSharding(device, memory_kind="pinned_host")
        self.dev = jax.sharding.SingleDeviceSharding(device, memory_kind=device.default_memory().kind)
        self.start, self.stop, self.axes, self.data = {}, {}, {}, {}
        state = [(("E", c), x) for c, x in enumerate(host["E"])] + [
            (("H", c), x) for c, x in enumerate(host["H"])
        ]
        for k, v in host["psi"].items():
            name = ("psi", k)
            state.append((name, v))
            if k[1] == "0":  # the x faces: L planes
                L = np.shape(v)[0]
                self.start[name] = 0 if k.endswith("lo") else nx - L
                self.stop[name] = self.start[name] + L
        self.J_tree = jax.tree_util.tree_structure(host["J"])
        state += [(("J", i), x) for i, x in enumerate(jax.tree_util.tree_leaves(host["J"]))]
        coef = []
        for k, v in arrays.items():
            if k == "src_cb" or (k.startswith("pml") and k[4] == "0"):
                continue
            coef += [
                (("coef", k, i), x) for i, x in enumerate(jax.tree_util.tree_leaves(v)) if _x_split(x, nx)
            ]
        cuts = {0, nx} | set(self.start.values()) | set(self.stop.values())
        for s in subs:
            cuts |= {s.ring.lo, s.ring.hi} | {p for piece in s.ring.pieces for p in piece}
        self.cuts = sorted(cuts)
        nc = len(self.cuts) - 1
        span = lambda a, b: [c for c in range(nc) if a <= self.cuts[c] and self.cuts[c + 1] <= b]
        self.ring_ids = [sum((span(a, b) for a, b in s.ring.pieces), []) for s in subs]
        self.own_ids = [span(s.ring.lo, s.ring.hi) for s in subs]
        self.last_reader = [max(k for k, ids in enumerate(self.ring_ids) if c in ids) for c in range(nc)]
        for name, x in state + coef:
            self.add(name, x, 0 if name[0] != "coef" else np.ndim(x) - 3, zero_state and name[0] != "coef")
        self.state_names = tuple(n for n, _ in state)
        self.coef_names = tuple(n for n, _ in coef)
        self.resident = None  # one slab: the coefficients stay on the device
        if len(subs) == 1:
            lists = jax.device_put([self.ring(0, n) for n in self.coef_names], self.dev)
            self.resident = dict(zip(self.coef_names, _concat(lists, axes=self.axes_of(self.coef_names))))
        # per ring: the leaves sent (the x-face psi to edge rings only), those returned with
        # their owned chunks and those chunks' planes in the leaf's ring-local array
        names = self.state_names + (self.coef_names if self.resident is None else ())
        self.up, self.down = [], []
        for k, s in enumerate(subs):
            self.up.append(tuple(n for n in names if s.ring.edge or n not in self.start))
            down = []
            for n in self.state_names:
                ids = [c for c in self.own_ids[k] if self.data[n][c] is not None]
                if ids and (s.ring.edge or n not in self.start):
                    # the leaf's local plane of global plane p: through the ring's pieces
                    # (full leaves) or from the face (x-face psi, held whole)
                    if n in self.start:
                        q = lambda p, n=n: p - self.start[n]
                    else:
                        q = lambda p, s=s: s.ring.own[0] + p - s.ring.lo
                    down.append((n, tuple(ids), tuple((q(self.cuts[c]), q(self.cuts[c + 1])) for c in ids)))
            self.down.append(tuple(down))
        # each sub's small coefficient leaves, on the device once
        self.small = []
        for s in subs:
            leaves = jax.tree_util.tree_leaves(s.arrays)
            self.small.append(jax.device_put([x for x in leaves if not isinstance(x, _Slot)], self.dev))
        size = lambda n, ids: sum(self.data[n][c].nbytes for c in ids if self.data[n][c] is not None)
        self.bytes_up = sum(
            size(n, self.ring_ids[k]) for k in range(len(subs)) for n in self.up[k]
        )  # per pass
        self.bytes_down = sum(size(n, ids) for d in self.down for n, ids, _ in d)

    def ring(self, k, name, data=None) -> list:
        """Ring ``k``'s chunks of leaf ``name``, in the ring's plane order (from ``data``
        where it holds ``name``: the next pass's state)."""
        src = data[name] if data is not None and name in data else self.data[name]
        return [src[c] for c in self.ring_ids[k] if src[c] is not None]

    @property
    def ahead(self) -> bool:
        """Whether the next pass's first ring goes up while this pass's last slab runs (two
        slabs or more; its chunks of the last slab's planes come from the device)."""
        return len(self.ring_ids) >= 2

    def add(self, name, x, axis, zero=False):
        """Leaf ``x`` (NumPy) as pinned chunks, one at a time (device_put copies: the NumPy
        array is never aliased); ``zero``: ``x`` is zeros, made on the device and sent."""
        x = np.asarray(x)
        a0, a1 = self.start.get(name, 0), self.stop.get(name, self.cuts[-1])
        ids = [c for c in range(len(self.cuts) - 1) if a0 <= self.cuts[c] and self.cuts[c + 1] <= a1]
        sl = lambda c: x[(slice(None),) * axis + (slice(self.cuts[c] - a0, self.cuts[c + 1] - a0),)]
        self.data[name] = [None] * (len(self.cuts) - 1)
        zeros = {}  # one device buffer per chunk shape, copied to each chunk
        for c in ids:
            if zero:
                shape = sl(c).shape
                if shape not in zeros:
                    zeros[shape] = jnp.zeros(shape, x.dtype, device=self.dev)
                self.data[name][c] = jax.device_put(zeros[shape], self.pinned)
            else:
                self.data[name][c] = jax.device_put(np.ascontiguousarray(sl(c)), self.pinned)
        jax.block_until_ready(self.data[name])
        self.axes[name] = axis

    def axes_of(self, names):
        return tuple(self.axes[n] for n in names)

    def leaf(self, state, name):
        if name[0] == "J":
            return jax.tree_util.tree_leaves(state["J"])[name[1]]
        return state[name[0]][name[1]]

    def slots(self, host):
        """``host`` with the chunked state leaves replaced by :class:`_Slot` (NumPy freed)."""
        host["E"] = tuple(_Slot(("E", c)) for c in range(3))
        host["H"] = tuple(_Slot(("H", c)) for c in range(3))
        host["psi"] = {k: _Slot(("psi", k)) for k in host["psi"]}
        n_j = self.J_tree.num_leaves
        host["J"] = jax.tree_util.tree_unflatten(self.J_tree, [_Slot(("J", i)) for i in range(n_j)])

    def gather(self, field: str, shape, dtype) -> np.ndarray:
        """E or H as one NumPy (3, nx, ny, nz) array, each chunk freed once copied."""
        out = np.empty((3,) + tuple(shape), dtype)
        for c in range(3):
            chunks = self.data[(field, c)]
            for i in range(len(chunks)):
                out[c, self.cuts[i] : self.cuts[i + 1]] = np.asarray(chunks[i])
                chunks[i].delete()
                chunks[i] = None
        return out


def checkpoint_every(steps: int, n_cells: int, th: int) -> int:
    """Default steps between a window run's checkpoints: ~10 minutes of work at a
    conservative rate (2e10 cell updates/s on a GPU, 2e8 on a CPU), a multiple of ``th``:
    a checkpoint writes the whole state (~25 bytes per cell in float32 with a CPML; 50 GB
    for 1200^3), so the in-memory run's ~2 s chunks would spend most of the time writing."""
    rate = 2e8 if jax.default_backend() == "cpu" else 2e10
    every = int(600.0 * rate / max(n_cells, 1))
    return min(steps, max(th, every - every % th))


class _Gathered:
    """A leaf in pinned chunks, assembled into one NumPy array when NumPy asks for it (a
    checkpoint writes one leaf at a time)."""

    def __init__(self, store: _Chunks, name):
        self.store, self.name = store, name

    def __array__(self, dtype=None, copy=None):
        parts = [np.asarray(x) for x in self.store.data[self.name] if x is not None]
        x = np.concatenate(parts, axis=self.store.axes[self.name])
        return x if dtype is None else x.astype(dtype)


def _save_checkpoint(path, host, store, probes, fp) -> None:
    """The window's state in :func:`emjax.fdtd.checkpoint.save`'s format (the in-memory
    state's leaves in its order), each chunked leaf gathered only while it is written."""
    state = dict(host)
    state["dft"] = tuple(host["dft"])
    leaves = jax.tree_util.tree_leaves(state)
    leaves = [_Gathered(store, x.name) if isinstance(x, _Slot) else np.asarray(x) for x in leaves]
    checkpoint_mod.save_leaves(path, leaves, probes, fp)


def _pass_numpy(subs, host, plan, n, probes, done, pool, last_reader, device, dev_arrays):
    """One pass, the state in NumPy arrays (pageable host memory)."""

    def finish(j, out, rec, fin, done):  # in a worker: device -> host, then the copies
        out = jax.tree_util.tree_map(np.asarray, out)
        _write_back(subs[j], out, host, plan, np.asarray(rec), probes, done)
        return bool(fin)

    pending, futures, prev = [], [], None
    for k, s in enumerate(subs):
        # on the device (a copy) before any write-back of the planes it reads starts
        st = _to_device(_sub_state(s, host, plan), device)
        arr = dev_arrays[k] if dev_arrays else jax.device_put(s.arrays, device)
        jax.block_until_ready(st)
        res, rec, fin = engine.advance(s.plan, arr, st, n)
        q0, q1 = s.ring.own
        out = _owned_jit(res, q0=q0, q1=q1)
        for x in jax.tree_util.tree_leaves((out, rec, fin)):
            x.copy_to_host_async()
        if prev is not None:
            pending.append(prev)
        prev = (k, out, rec, fin)
        for p in pending:
            if last_reader[p[0]] <= k:  # no later slab of this pass reads its planes
                futures.append(pool.submit(finish, *p, done))
        pending = [p for p in pending if last_reader[p[0]] > k]
    futures += [pool.submit(finish, *p, done) for p in pending + [prev]]
    return all([f.result() for f in futures]), prev[1]


def _pass_pinned(
    subs, store: _Chunks, host, plan, n, probes, done, pool, last_reader, wait, first=None, ahead=False
):
    """One pass, the x-split leaves in pinned chunks: slab k + 1's chunks go to the device
    (``device_put``, asynchronous) while slab k runs, slab k's owned chunks come back to
    pinned memory while slab k + 1 runs; a slab's ring is concatenated on the device. The
    small parts (x-face psi, DFT sums, probes) take the NumPy path's write-back. ``first``:
    slab 0's ring, uploaded by the previous pass; ``ahead`` (:attr:`_Chunks.ahead`): the
    next pass's first ring goes up while this pass's last slab runs (returned third), so
    that no pass starts with the device waiting for its first upload."""
    nxt = {name: list(store.data[name]) for name in store.state_names}

    def upload(k, data, later=frozenset()):
        """Ring k's chunks to the device, per leaf in ring order; chunks in ``later`` (of
        state leaves) are left as their ids, to be filled by the caller."""
        want = []
        for nm in store.up[k]:
            src = data[nm] if nm in data else store.data[nm]
            ids = [c for c in store.ring_ids[k] if src[c] is not None]
            want.append((ids, [src[c] for c in ids if c not in later or nm not in data]))
        sent = jax.device_put([x for _, x in want], store.dev)
        lists = []
        for nm, (ids, _), got in zip(store.up[k], want, sent):
            it = iter(got)
            lists.append([c if c in later and nm in data else next(it) for c in ids])
        for c in store.ring_ids[k]:  # the pass's input chunk is not read again (its new version is in nxt)
            if store.last_reader[c] == k and c not in later:
                for nm in store.state_names:
                    data[nm][c] = None
        return lists

    def finish(j, out, rec, fin, done):  # in a worker: the small parts (pinned: views) to NumPy
        out = jax.tree_util.tree_map(np.asarray, out)
        _write_back(subs[j], out, host, plan, np.asarray(rec), probes, done, big=False)
        return bool(fin)

    pending, futures, prev, prev_fin, following = [], [], None, None, None
    lists = first if first is not None else upload(0, store.data)
    for k, s in enumerate(subs):
        ring_in, lists = lists, None  # dropped once concatenated
        big = dict(zip(store.up[k], _concat(ring_in, axes=store.axes_of(store.up[k]))))
        del ring_in
        if store.resident is not None:
            big.update(store.resident)
        leaves, tree = jax.tree_util.tree_flatten(_sub_state(s, host, plan, take=lambda x: x))
        # the small parts: fresh copies (the write-backs change host arrays in place)
        small = jax.device_put([np.array(x) for x in leaves if not isinstance(x, _Slot)], store.dev)
        it = iter(small)
        st = jax.tree_util.tree_unflatten(
            tree, [big[x.name] if isinstance(x, _Slot) else next(it) for x in leaves]
        )
        leaves, tree = jax.tree_util.tree_flatten(s.arrays)
        it = iter(store.small[k])
        arr = jax.tree_util.tree_unflatten(
            tree, [big[x.name] if isinstance(x, _Slot) else next(it) for x in leaves]
        )
        del big, small, leaves
        if prev_fin is not None:  # slab k - 1 done: bounds the device's memory
            t0 = time.perf_counter()
            prev_fin.block_until_ready()
            wait[0] += time.perf_counter() - t0
        # slab k + 1's chunks are enqueued before slab k's computation: a copy waits for the
        # work enqueued on the device before it, so an upload issued after slab k's dispatch
        # would run after slab k instead of beside it (benchmarks/pinned_overlap.py, H100:
        # six 2 GB slabs 0.407 s this way, the overlapped model's 0.407 s; 0.615 s the other way)
        t1 = time.perf_counter()
        if k + 1 < len(subs):
            lists = upload(k + 1, store.data)
        elif ahead:  # slabs 0 .. K - 2 have sent their new chunks (pending copies) to nxt;
            # the last slab's (wall or ghost planes) are taken from its result on the device
            late = frozenset(store.ring_ids[0]) & frozenset(store.own_ids[k])
            following = upload(0, nxt, later=late)
        t2 = time.perf_counter()
        res, rec, fin = engine.advance(s.plan, arr, st, n)
        wait[1] += t2 - t1  # host seconds between slab k - 1's end and slab k's dispatch:
        wait[2] += time.perf_counter() - t2  # issuing the upload, dispatching the step loop
        del st, arr
        prev_fin = fin  # on the device: ready when slab k has run (its copies back may still go on)
        down = store.down[k]
        outs = _split(
            tuple(store.leaf(res, nm) for nm, _, _ in down),
            bounds=tuple(bd for _, _, bd in down),
            axes=store.axes_of([nm for nm, _, _ in down]),
        )
        if following is not None:  # the next pass's first ring: the last slab's chunks as they are
            mine = {(nm, c): x for (nm, ids, _), xs in zip(down, outs) for c, x in zip(ids, xs)}
            following = [
                [x if not isinstance(x, int) else mine[nm, x] for x in xs]
                for nm, xs in zip(store.up[0], following)
            ]
        out = _owned_small(res)
        del res
        # everything back to pinned memory (page-locked: the link's rate; np.asarray a view)
        back, (out, rec, fin) = jax.device_put((outs, (out, rec, fin)), store.pinned)
        del outs
        for (nm, ids, _), chunks in zip(down, back):
            for c, x in zip(ids, chunks):
                nxt[nm][c] = x
        if prev is not None:
            pending.append(prev)
        prev = (k, out, rec, fin)
        for p in pending:
            if last_reader[p[0]] <= k:  # no later slab of this pass reads its planes
                futures.append(pool.submit(finish, *p, done))
        pending = [p for p in pending if last_reader[p[0]] > k]
    futures += [pool.submit(finish, *p, done) for p in pending + [prev]]
    finite = all([f.result() for f in futures])
    store.data.update(nxt)
    return finite, prev[1], following


def run_window(
    sim: GridSimulation,
    steps: int,
    *,
    th: int,
    slab: int | None = None,
    device_bytes: float | None = None,
    initial=None,
    progress: Callable[[int, int], None] | None = None,
    host_memory: str | None = None,
    stats: dict | None = None,
    chunk: int | None = None,
    checkpoint=None,
) -> FDTDResult:
    """Advance ``steps`` steps with the state in host memory, slab by slab (see the module
    docstring): the same :class:`FDTDResult` as :func:`emjax.fdtd.run` (bit for bit on the
    CPU). ``th``: steps per pass (temporal blocking); ``slab``: planes along x per slab,
    or chosen from ``device_bytes`` (:func:`slab_for_budget`) when None (a budget smaller
    than the grid forces the window; neither given: the whole grid is one slab).
    ``progress(done, steps)`` after each pass. ``host_memory``: None (pinned where the
    device offers it), ``"pinned"`` or ``"numpy"`` (:func:`host_memory_path`). ``stats``: a
    dict, filled with the path taken, the bytes moved per pass each way, the chunk count
    and the seconds the host waited for the device (pinned path). ``checkpoint``: a file
    written atomically every ``chunk`` steps (a pass ends there) in the format of
    :func:`emjax.fdtd.run`'s (either run resumes the other's); if it exists, the run resumes
    from it. Returns E, H as NumPy arrays."""
    _check(sim, th)
    steps = require_int("steps", steps, 1)
    th = require_int("th", th, 1)
    if checkpoint is not None:
        from ..io import check_output_file

        checkpoint = Path(checkpoint)
        check_output_file(checkpoint, "checkpoint", create_folder=False)  # before any step
        chunk = checkpoint_every(steps, sim.grid.n_cells, th) if chunk is None else chunk
        chunk = require_int("chunk", chunk, 1)
    nx = sim.grid.shape[0]
    if slab is None:
        slab = slab_for_budget(sim, th, device_bytes) if device_bytes is not None else nx
    slab = require_int("slab", slab, 1, nx)
    device = jax.devices()[0]
    path = host_memory_path(host_memory, device)
    with precision_scope():
        g = sim.grid
        dtype = precision(g.precision).real
        plan, arrays, host = _global_setup(sim, steps, dtype, initial)
        fp = None if checkpoint is None else checkpoint_mod.Fingerprint(plan, arrays, initial)
        resumed = None
        if checkpoint is not None and checkpoint.exists():  # into the host state, leaf by leaf
            resumed = checkpoint_mod.load_into(checkpoint, jax.tree_util.tree_leaves(host), fp)
            if int(host["n"]) > steps:
                at = int(host["n"])
                raise ConfigError(f"checkpoint {checkpoint} is at step {at}, beyond steps = {steps}")
        host["dft"] = list(host["dft"])
        field_dtype = host["E"][0].dtype
        walled = g.bloch_phases[0] is not None or plan.walls[0]
        L = plan.pml[0]
        w_lo = max(L if "lo" in plan.pml_faces[0] else 0, 2) if walled else 0
        w_hi = max(L if "hi" in plan.pml_faces[0] else 0, 2) if walled else 0
        why = None
        if path == "pinned":  # the pool must hold the chunks (+ ~3 slabs in flight)
            leaves = jax.tree_util.tree_leaves((host["E"], host["H"], host["psi"], host["J"], arrays))
            need = sum(x.nbytes for x in leaves if _x_split(x, nx))
            need += 3 * need * min(slab, nx) // nx
            why = _pinned_fits(need, sum(x.nbytes for x in host["E"] + host["H"]), device)
            if why is not None and host_memory == "pinned":
                raise ResourceError(f"run_window: host_memory='pinned': {why}")
            if why is not None:
                warnings.warn(
                    f"run_window: the NumPy host path instead of pinned memory: {why}", stacklevel=2
                )
                path = "numpy"
        subs = [
            _sub_problem(sim, plan, arrays, r, slots=path == "pinned")
            for r in rings(nx, slab, ghost(g.order, th), walled, w_lo, w_hi)
        ]
        # the last slab (of this pass) that reads each slab's owned planes
        last_reader = []
        for k, s in enumerate(subs):
            own = set(range(s.ring.lo, s.ring.hi))
            readers = [j for j, t in enumerate(subs) if j != k and own & set(t.ring.planes.tolist())]
            last_reader.append(max(readers, default=-1))
        probes = np.zeros((steps, len(sim.probes)), field_dtype)
        if resumed is not None and resumed.size:
            probes[: len(resumed)] = resumed
        done, compile_s, t_run, timed, seen = int(host["n"]), 0.0, 0.0, 0, set()
        store, dev_arrays, wait = None, None, [0.0, 0.0, 0.0]
        if path == "pinned":
            store = _Chunks(subs, host, arrays, nx, device, zero_state=initial is None and resumed is None)
            store.slots(host)
        elif len(subs) == 1:
            dev_arrays = [jax.device_put(subs[0].arrays, device)]
        del arrays
        if stats is not None:
            stats.update(host_memory=path, slabs=len(subs), slab=slab, fallback=why)
            if store is not None:
                kind = store.data[("E", 0)][0].sharding.memory_kind  # where the chunks are
                stats.update(
                    chunks=len(store.cuts) - 1,
                    bytes_up=store.bytes_up,
                    bytes_down=store.bytes_down,
                    memory_kind=kind,
                    ahead=store.ahead,
                )
        # the workers write into host: none may outlive the run, whatever ends it
        with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
            first = None  # the pinned path: the next pass's first ring, already on its way up
            while done < steps:
                n = min(th, steps - done)
                saving = False
                if checkpoint is not None:  # a pass ends at each checkpoint
                    n = min(n, (done // chunk + 1) * chunk - done)
                    saving = (done + n) % chunk == 0 or done + n == steps
                t0 = time.perf_counter()
                if store is not None:
                    ahead = store.ahead and done + n < steps and not saving
                    finite, last, first = _pass_pinned(
                        subs, store, host, plan, n, probes, done, pool, last_reader, wait, first, ahead
                    )
                else:
                    finite, last = _pass_numpy(
                        subs, host, plan, n, probes, done, pool, last_reader, device, dev_arrays
                    )
                host["aux"] = tuple(np.asarray(x) for x in last["aux"])
                host["n"] = np.asarray(last["n"])
                done += n
                elapsed = time.perf_counter() - t0
                if n in seen:
                    t_run += elapsed
                    timed += n
                else:
                    compile_s += elapsed
                    seen.add(n)
                if not finite:
                    raise FloatingPointError(
                        f"FDTD fields became NaN/Inf by step {done} (window run); the last checkpoint, "
                        "if any, holds the state before this pass"
                    )
                if saving:
                    _save_checkpoint(checkpoint, host, store, probes[:done], fp)
                if progress is not None:
                    progress(done, steps)
        if stats is not None:
            stats["wait_s"] = wait[0]
            stats["upload_issue_s"], stats["dispatch_s"] = wait[1], wait[2]
        if store is not None:
            E = store.gather("E", g.shape, field_dtype)
            H = store.gather("H", g.shape, field_dtype)
        else:
            E = host["E"][0].base if host["E"][0].base is not None else np.stack(host["E"])
            H = host["H"][0].base if host["H"][0].base is not None else np.stack(host["H"])
        return FDTDResult(
            sim,
            probes,
            (np.arange(steps) + 1) * g.dt,
            E,
            H,
            timed if timed else steps,
            t_run if timed else compile_s,
            compile_s,
            tuple({k: np.asarray(v) for k, v in d.items()} for d in host["dft"]),
            int(host["n"]),
        )
