"""A layered map's groups integrated on one or several devices of this process, each
device's work queued before any of its results is read.

Three passes over the groups of :mod:`emjax.layered.groups`:

1. every group's quadrature path is refined on a sample of its points, the groups dealt
   out over the devices, each device's groups together round by round in its own thread
   (:mod:`emjax.layered.refine`: one host round-trip per round). A group's refinement
   depends on its points and its own random sample only, so the paths are the same on any
   number of devices;
2. every group's points are integrated: each group's points dealt out whole, one
   contiguous run per device; each device's thread queues the chunks of its runs of all
   groups :data:`AHEAD` chunks ahead of the one it reads back, so the device never waits
   for the host between chunks (nor between groups). Each chunk is finished on its device
   right after its integration (error estimates, tensors or fields: see
   :mod:`emjax.layered.assemble`), so only the results come back and the host's share is
   writing them into the map's arrays;
3. the groups whose points the sample missed (error estimate above rtol) are refined again
   with those points and integrated again.

A point's integrals are the same operations whichever device and chunk computes them, so
the map equals the one-device map to rounding (bit for bit on the CPU). One device runs the
same code with one run per group.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass

import jax
import numpy as np

from ..layout import Layout, on_each
from . import sommerfeld as som
from .assemble import finish_chunk
from .blocks import extreme
from .groups import _all_octaves, _octaves, build, point_chunk, put_chunks
from .refine import _edge, refine_groups, slots_per_call


class _Progress:
    """Reports of the map to a :func:`emjax.layered.groups.reporting` callback, one at a time
    (devices report from their threads): ``done`` counts points integrated in all."""

    def __init__(self, callback, groups):
        self.callback, self.lock = callback, threading.Lock()
        self.total = sum(len(g.idx) for g in groups)
        self.left = [len(g.idx) for g in groups]
        self.done = 0

    def __call__(self, k: int, stage: str, points: int = 0) -> None:
        if self.callback is None:
            return
        with self.lock:
            self.done += points
            self.left[k] -= points
            stages = [stage] + (["done"] if points and self.left[k] == 0 else [])
            for st in stages:
                info = dict(done=self.done, total=self.total, group=k + 1, groups=len(self.left), stage=st)
                self.callback(info)


@dataclass(frozen=True)
class Finish:
    """What the end of every chunk of points (:func:`emjax.layered.assemble.finish_chunk`)
    takes besides the chunk: the static flags of the assembly (``sel``, ``want_h``,
    ``want_e``, ``total``, ``contract``), the source's wavenumber ``ks`` (complex, ()) and
    ``k0`` for the direct term, the moment times k0^2 ``pm`` (3,) where the fields are asked
    for (else None), and the complex type of the results."""

    statics: dict
    ks: np.ndarray
    k0: np.float64
    pm: np.ndarray | None
    cdtype: object

    def outputs(self, N: int) -> list:
        """The map's result arrays (A, B) as the assembly returns them (None: not asked)."""
        f = self.statics
        shape = (N, 3) if f["contract"] else (N, 3, 3)
        want = (f["want_e"] if f["contract"] else True, f["want_h"])
        return [np.zeros(shape, self.cdtype) if w else None for w in want]


def integrate_map(ctx, sel, batch: int, devices, fin: Finish, callback=None, timings=None):
    """Every point of the map of ``ctx`` integrated and finished on ``devices`` (see the
    module docstring): (A, B the assembled results of ``fin``, err (N,) relative error
    estimates, per-group stats, largest node count, the groups). ``timings``: a dict that
    gets the wall seconds of the stages (``groups``, ``refine``, ``integrate``,
    ``second_pass``) and per device the seconds its thread waited for results
    (``device_wait``)."""
    timings = {} if timings is None else timings
    t0 = time.perf_counter()
    gs = build(ctx, sel)
    devices = list(devices)
    prog = _Progress(callback, gs)
    refine_s = [0.0] * len(gs)
    t1 = time.perf_counter()
    _refine(gs, list(range(len(gs))), [()] * len(gs), devices, prog, refine_s)
    warm_counts(gs, list(range(len(gs))), devices, batch)
    N = len(ctx["pts"])
    out = (*fin.outputs(N), np.zeros(N))  # A, B, err
    t2 = time.perf_counter()
    bad, back, wait = _integrate(gs, list(range(len(gs))), devices, batch, prog, t2, out, fin, count=True)
    t3 = time.perf_counter()
    # the sample missed these points: refine with them and integrate the group again
    again = [(i, b[:64]) for i, b in enumerate(bad) if len(b)]
    if again:
        which = [i for i, _ in again]
        _refine(gs, which, [b for _, b in again], devices, prog, refine_s)
        warm_counts(gs, which, devices, batch)
        _, back2, wait2 = _integrate(gs, which, devices, batch, prog, t2, out, fin, count=False)
        wait = [w + w2 for w, w2 in zip(wait, wait2)]
        for i, t in zip(which, back2):
            back[i] = t
    t4 = time.perf_counter()
    timings.update(groups=t1 - t0, refine=t2 - t1, integrate=t3 - t2, second_pass=t4 - t3, device_wait=wait)
    A, B, err = out
    second = {i for i, _ in again}
    stats = [_group_stats(g, i in second, refine_s[i], back[i]) for i, g in enumerate(gs)]
    n_nodes = max(g.path.n_panels * 15 for g in gs)
    return A, B, err, tuple(stats), n_nodes, gs


def _group_stats(g, second_pass: bool, refine_s: float, integrated_by_s: float) -> dict:
    """One group's entry of a map's ``stats``."""
    return dict(
        medium=g.m,
        points=len(g.idx),
        h_min=float(g.h.min()),
        rho_max=float(g.rho.max()),
        nodes=g.path.n_panels * 15,
        rounds=g.rounds,
        second_pass=second_pass,
        refine_s=refine_s,
        integrated_by_s=integrated_by_s,
    )


def _refine(gs, which, extras, devices, prog, refine_s) -> None:
    """Refine the groups ``which`` (with the extra sample points ``extras``), dealt out over
    ``devices`` (every n-th group to a device), each device's groups together round by
    round in its own host thread (see :mod:`emjax.layered.refine`: a group's path depends on
    its points and its own sample only, so the paths are the same on any number of
    devices)."""
    for i in which:
        prog(i, "refine")
    n = max(1, min(len(devices), len(which)))
    parts = [list(range(d, len(which), n)) for d in range(n)]  # positions in ``which``

    def one(dev, pos):
        return refine_groups([gs[which[p]] for p in pos], [extras[p] for p in pos], dev)

    for pos, seconds in zip(parts, on_each(devices[:n], one, parts)):
        for p, t in zip(pos, seconds):
            refine_s[which[p]] += t


#: chunks of points a device has queued ahead of the one being read back (bounds the device
#: memory held by results not yet read, while the device never waits for the host)
AHEAD = 8


def _integrate(gs, which, devices, batch, prog, t0, out, fin: Finish, count: bool):
    """Integrate and finish the groups ``which``, each group's points dealt out whole over
    the devices; each device writes its points' results and relative error estimates into
    ``out`` = (A, B, err) of the map. Returns, per group, the indices (within the group) of
    its points whose error estimate is above rtol and when its last run came back (seconds
    after ``t0``), and per device the seconds its thread waited for results."""
    runs = {i: Layout(tuple(devices)).deal(len(gs[i].idx)) for i in which}
    A, B, err = out

    def run(dev, j):
        bad, back = {i: [] for i in which}, dict.fromkeys(which, 0.0)
        pending = deque()
        waited = 0.0
        pm = None if fin.pm is None else jax.device_put(fin.pm)  # this device's copy
        zeros = {}  # accumulators per chunk size: never donated, so shared by every chunk

        def read(i, a, b, res):
            nonlocal waited
            t = time.perf_counter()
            res = [None if x is None else np.asarray(x)[: b - a] for x in res]
            waited += time.perf_counter() - t
            a_, b_, e, above = res
            idx = gs[i].idx[a:b]
            for whole, part in ((A, a_), (B, b_)):
                if whole is not None:
                    whole[idx] = part
            err[idx] = e
            bad[i].append(a + np.nonzero(above)[0])
            back[i] = time.perf_counter() - t0
            if count:
                prog(i, "integrate", b - a)

        for i in which:
            if len(runs[i][j]):
                for item in _dispatch(gs[i], batch, runs[i][j], fin, pm, zeros):
                    pending.append((i, *item))
                    if len(pending) > AHEAD:
                        read(*pending.popleft())
        while pending:
            read(*pending.popleft())
        return bad, back, waited

    parts = on_each(devices, run, list(range(len(devices))))
    # each device's runs in order, the devices' runs in order: the group's points in order
    bad = [np.concatenate([b for part in parts for b in part[0][i]] or [np.zeros(0, int)]) for i in which]
    back = [max(part[1][i] for part in parts) for i in which]
    return bad, back, [part[2] for part in parts]


def _dispatch(g, batch: int, run: range, fin: Finish, pm, zeros: dict):
    """Queue the integration and the end (:func:`emjax.layered.assemble.finish_chunk`) of
    the group's points ``run`` on the default device, chunk by chunk (a bucketed size, the
    last padded with copies of its last point); yields each chunk's (start, stop, pending
    results). ``zeros``: the device's accumulators per chunk size, made here once."""
    c = g.ctx
    chunks = put_chunks(g.node_chunks())
    size = point_chunk(len(run), batch)
    S, rdt, cdt = len(g.sel), c["rdtype"], c["cdtype"]
    if size not in zeros:
        zeros[size] = tuple(jax.device_put(np.zeros((size, S), t)) for t in (cdt, rdt, cdt))
    direct = bool(fin.statics["total"] and g.m == c["s"])  # the direct term: the source's medium
    statics = dict(fin.statics, total=direct)
    w_last = np.float64(g.path.tail[1][-1] - g.path.tail[0][-1])
    rtol = np.float64(c["rtol"])
    for a in range(run.start, run.stop, size):
        b = min(a + size, run.stop)
        host = [_edge(v[a:b], size).astype(rdt) for v in (g.rho, g.z_up, g.zd, g.phi)]
        host.append(_edge(g.h[a:b], size))  # float64: the error estimate's tail factor
        if direct:
            host.append(_edge(c["pts"][g.idx[a:b]] - c["src"], size).astype(rdt))
        rho, zu, zd, phi, h, *R = jax.device_put(host)  # one transfer call
        acc = zeros[size]
        for k_, w_, coef_, kzm_, real, n_blocks in chunks:
            args = (acc, k_, w_, coef_, kzm_, rho, zu, zd)
            acc = som.call(som.integrate, *args, n_blocks=n_blocks, **g._statics(real))
        R = R[0] if R else None
        yield a, b, som.call(finish_chunk, acc, h, w_last, rtol, phi, R, fin.ks, fin.k0, pm, **statics)


def _run_sizes(n_points: int, n_dev: int, batch: int) -> set:
    """The point chunk sizes of a group of ``n_points`` dealt out to ``n_dev`` devices."""
    q, r = divmod(n_points, n_dev)
    return {point_chunk(c, batch) for c in {q, q + 1 if r else q} if c}


def warm(ctx, sel, batch: int, devices=None, fin: Finish | None = None) -> None:
    """Start compiling (in the background, side by side) every kernel the map of ``ctx``
    will call on each of ``devices`` (default: the default device; each group's points
    dealt out over them as above): the refinement's and the
    integration's, complex (ellipse) and real (tail) nodes, for each kind of medium (one- or
    two-sided) and point chunk size, and the end of a chunk (``fin``, with or without the
    direct term). Each group's quadrature path is chosen first, so a map refused for it
    (ConfigError) starts no compilation."""
    if ctx.get("layout") is not None:
        return
    devices = list(devices) if devices is not None else [som._device()]
    n_dev = len(devices)
    S, n = len(sel), ctx["stack"].n_media
    cdt, rdt = np.dtype(ctx["cdtype"]), np.dtype(ctx["rdtype"])
    orders = som.orders_of(sel)

    def spec(shape, dtype):
        return jax.ShapeDtypeStruct(shape, dtype)

    i32 = spec((), np.int32)
    block, RC, C = 30, som.REFINE_CHUNK, som.CHUNK
    seen = set()
    for m in _all_octaves(ctx):
        two = 0 < m < n - 1
        sizes = set()
        for idx, geo in _octaves(ctx, m)[2]:  # each group
            # the group's path first: a map that cannot be integrated fails before compiling
            som.choose_path(
                ctx["k0"],
                ctx["eps"],
                extreme(geo[0], np.max),
                extreme(geo[4], np.min),
                ctx["rtol"],
                ctx["wavelength"],
            )
            sizes |= _run_sizes(len(idx), n_dev, batch)
        for real in (False, True):
            kdt = rdt if real else cdt
            wdt = np.dtype(np.float64) if real else np.dtype(np.complex128)
            statics = dict(orders=orders, bessel_real=real, has_up=True, has_dn=two)
            if ("refine", two, real) not in seen:  # on every device (the groups dealt out)
                seen.add(("refine", two, real))
                B = slots_per_call(devices[0])
                pts = [spec((B, som.REFINE_POINTS), rdt)] * 3
                args = (
                    spec((B, RC), kdt),
                    spec((B, RC), cdt),
                    spec((B, RC), cdt),
                    spec((B, RC, S, 2), cdt),
                    spec((B, RC), cdt),
                )
                for dev in devices:
                    som.warm(som.refine_sums, args + tuple(pts), dict(n_blocks=i32), device=dev, **statics)
            for size in sizes:
                if ("integrate", two, real, size) in seen:
                    continue
                seen.add(("integrate", two, real, size))
                acc = (spec((size, S), cdt), spec((size, S), rdt), spec((size, S), cdt))
                args = (
                    acc,
                    spec((C,), kdt),
                    spec((C // block, block, 5), wdt),
                    spec((C, S, 2), cdt),
                    spec((C,), cdt),
                )
                for dev in devices:
                    if dev.platform in som.STATIC_COUNTS:
                        continue  # static block counts: compiled once the paths are known
                    pts = (spec((size,), rdt),) * 3
                    som.warm(som.integrate, args + pts, dict(n_blocks=i32), device=dev, **statics)
        if fin is not None:
            direct = bool(fin.statics["total"] and m == ctx["s"])
            f64 = np.dtype(np.float64)
            for size in sizes:
                if ("finish", direct, size) in seen:
                    continue
                seen.add(("finish", direct, size))
                acc = (spec((size, S), cdt), spec((size, S), rdt), spec((size, S), cdt))
                args = (acc, spec((size,), f64), spec((), f64), spec((), f64), spec((size,), rdt))
                args += (spec((size, 3), rdt) if direct else None, spec((), cdt), spec((), f64))
                args += (None if fin.pm is None else spec((3,), cdt),)
                for dev in devices:
                    som.warm(finish_chunk, args, device=dev, **dict(fin.statics, total=direct))


def warm_counts(gs, which, devices, batch: int) -> None:
    """On GPUs: start compiling the integration kernels the refined groups ``which`` call,
    with their static block counts (see :mod:`emjax.layered.sommerfeld`), on each device."""
    devices = [d for d in devices if d.platform in som.STATIC_COUNTS]
    if not devices:
        return
    n_dev = len(devices)
    for i in which:
        g = gs[i]
        c, S = g.ctx, len(g.sel)
        cdt, rdt = np.dtype(c["cdtype"]), np.dtype(c["rdtype"])
        sizes = _run_sizes(len(g.idx), n_dev, batch)
        for k_, w_, coef_, kzm_, real, n_blocks in g.node_chunks():
            nodes = tuple(jax.ShapeDtypeStruct(np.shape(a), a.dtype) for a in (k_, w_, coef_, kzm_))
            statics = g._statics(real)
            for size in sizes:
                acc = tuple(jax.ShapeDtypeStruct((size, S), t) for t in (cdt, rdt, cdt))
                pts = (jax.ShapeDtypeStruct((size,), rdt),) * 3
                for dev in devices:
                    args = (acc, *nodes, *pts)
                    som.warm(som.integrate, args, dict(n_blocks=n_blocks), device=dev, **statics)


def integrate_map_spmd(ctx, sel, batch: int):
    """The map's groups one after another, each group refined on the default device and its
    points integrated in SPMD chunks over ``ctx["layout"]``, a layout spanning several
    processes (see :mod:`emjax.layered.distributed`); returns (I (N, nsel) complex, err
    (N,) relative error estimates, phi (N,), per-group stats, largest node count, the
    groups), the map then finished by :func:`emjax.layered.assemble._finish_on`."""
    from .groups import groups

    N = len(ctx["pts"])
    I = np.zeros((N, len(sel)), complex)
    err = np.zeros(N)
    phi = np.zeros(N)
    stats, gs = [], []
    for g in groups(ctx, sel):
        t0 = time.perf_counter()
        g.refine()
        t1 = time.perf_counter()
        k, e = g.evaluate(batch)
        scale = np.maximum(np.linalg.norm(k, axis=1), 1e-300)
        bad = np.nonzero(e.sum(1) > ctx["rtol"] * scale)[0]
        if len(bad):  # the sample missed these: refine with them and integrate again
            g.refine(extra=bad[:64])
            k, e = g.evaluate(batch)
            scale = np.maximum(np.linalg.norm(k, axis=1), 1e-300)
        stats.append(_group_stats(g, bool(len(bad)), t1 - t0, time.perf_counter() - t1))
        gs.append(g)
        I[g.idx] = k
        err[g.idx] = e.sum(1) / scale
        phi[g.idx] = g.phi
    return I, err, phi, tuple(stats), max(g.path.n_panels * 15 for g in gs), gs
