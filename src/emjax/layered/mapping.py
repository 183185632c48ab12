"""A layered map's groups integrated on one or several devices of this process, each
device's work queued before any of its results is read.

Three passes over the groups of :mod:`emjax.layered.groups`:

1. every group's quadrature path is refined on a sample of its points, all groups together
   round by round on the first device (:mod:`emjax.layered.refine`: one host round-trip
   per round). A group's refinement depends on its points and its own random sample only,
   so the paths are the same on any number of devices;
2. every group's points are integrated: each group's points dealt out whole, one
   contiguous run per device; each device's thread queues the chunks of its runs of all
   groups :data:`AHEAD` chunks ahead of the one it reads back, so the device never waits
   for the host between chunks (nor between groups);
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

import jax
import numpy as np

from ..layout import Layout, on_each
from . import sommerfeld as som
from .groups import _all_octaves, _octaves, _put, build, point_chunk
from .refine import refine_groups, slots_per_call


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


def integrate_map(ctx, sel, batch: int, devices, callback=None):
    """The integrals of every point of the map of ``ctx`` on ``devices`` (see the module
    docstring): (I (N, nsel) complex, err (N,) relative error estimates, phi (N,), per-group
    stats, largest node count, the groups)."""
    gs = build(ctx, sel)
    devices = list(devices)
    prog = _Progress(callback, gs)
    refine_s = [0.0] * len(gs)
    _refine(gs, list(range(len(gs))), [()] * len(gs), devices, prog, refine_s)
    N = len(ctx["pts"])
    out = (np.zeros((N, len(sel)), complex), np.zeros(N), np.zeros(N))  # I, err, phi
    t0 = time.perf_counter()
    bad, back = _integrate(gs, list(range(len(gs))), devices, batch, prog, t0, out, count=True)
    # the sample missed these points: refine with them and integrate the group again
    again = [(i, b[:64]) for i, b in enumerate(bad) if len(b)]
    if again:
        which = [i for i, _ in again]
        _refine(gs, which, [b for _, b in again], devices, prog, refine_s)
        _, back2 = _integrate(gs, which, devices, batch, prog, t0, out, count=False)
        for i, t in zip(which, back2):
            back[i] = t
    I, err, phi = out
    second = {i for i, _ in again}
    stats = [_group_stats(g, i in second, refine_s[i], back[i]) for i, g in enumerate(gs)]
    n_nodes = max(g.path.n_panels * 15 for g in gs)
    return I, err, phi, tuple(stats), n_nodes, gs


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
    """Refine the groups ``which`` (with the extra sample points ``extras``) together, round
    by round, on the first of ``devices`` (see :mod:`emjax.layered.refine`: the same paths
    whatever the number of devices)."""
    for i in which:
        prog(i, "refine")
    seconds = refine_groups([gs[i] for i in which], list(extras), devices[0])
    for i, t in zip(which, seconds):
        refine_s[i] += t


#: chunks of points a device has queued ahead of the one being read back (bounds the device
#: memory held by results not yet read, while the device never waits for the host)
AHEAD = 8


def _integrate(gs, which, devices, batch, prog, t0, out, count: bool):
    """Integrate the groups ``which``, each group's points dealt out whole over the devices;
    each device writes its points' integrals, relative error estimates and azimuths into
    ``out`` = (I, err, phi) of the map. Returns, per group, the indices (within the group)
    of its points whose error estimate is above rtol, and when its last run came back
    (seconds after ``t0``)."""
    runs = {i: Layout(tuple(devices)).deal(len(gs[i].idx)) for i in which}
    I, err, phi = out
    rtol = gs[which[0]].ctx["rtol"] if which else 0.0

    def run(dev, j):
        bad, back = {i: [] for i in which}, dict.fromkeys(which, 0.0)
        pending = deque()

        def read(i, a, b, acc):
            g = gs[i]
            k, e = _collect(g, a, b, acc)
            scale = np.maximum(np.linalg.norm(k, axis=1), 1e-300)
            e = e.sum(1)
            idx = g.idx[a:b]
            I[idx], err[idx], phi[idx] = k, e / scale, g.phi[a:b]
            bad[i].append(a + np.nonzero(e > rtol * scale)[0])
            back[i] = time.perf_counter() - t0
            if count:
                prog(i, "integrate", b - a)

        for i in which:
            if len(runs[i][j]):
                for item in _dispatch(gs[i], batch, runs[i][j]):
                    pending.append((i, *item))
                    if len(pending) > AHEAD:
                        read(*pending.popleft())
        while pending:
            read(*pending.popleft())
        return bad, back

    parts = on_each(devices, run, list(range(len(devices))))
    # each device's runs in order, the devices' runs in order: the group's points in order
    bad = [np.concatenate([b for part in parts for b in part[0][i]] or [np.zeros(0, int)]) for i in which]
    back = [max(part[1][i] for part in parts) for i in which]
    return bad, back


def _dispatch(g, batch: int, run: range):
    """Queue the integration of the group's points ``run`` on the default device, chunk by
    chunk (a bucketed size, the last padded with copies of its last point); yields each
    chunk's (start, stop, pending accumulators)."""
    c = g.ctx
    chunks = g.node_chunks()
    size = point_chunk(len(run), batch)
    S, rdt, cdt = len(g.sel), c["rdtype"], c["cdtype"]
    for a in range(run.start, run.stop, size):
        b = min(a + size, run.stop)
        pts = [_put(np.pad(v[a:b], (0, size - (b - a)), mode="edge"), rdt) for v in (g.rho, g.z_up, g.zd)]
        acc = tuple(_put(np.zeros((size, S)), t) for t in (cdt, rdt, cdt))
        for k_, w_, coef_, kzm_, real, n_blocks in chunks:
            args = (acc, k_, w_, coef_, kzm_, *pts)
            acc = som.call(som.integrate, *args, n_blocks=n_blocks, **g._statics(real))
        yield a, b, acc


def _collect(g, a: int, b: int, acc):
    """The integrals and error estimates of the group's points a..b from their accumulators:
    the Gauss-Kronrod differences plus the truncated tail beyond k_max, estimated from the
    last panel as for an exp(-h k_rho) decay: |K_last| q / (1 - q), q = exp(-h w), times 2."""
    w_last = g.path.tail[1][-1] - g.path.tail[0][-1]
    K, err, last = (np.asarray(x)[: b - a] for x in acc)
    q = np.exp(-g.h[a:b] * w_last)
    return K, err + 2 * np.abs(last) * (q / (1 - q))[:, None]


def warm(ctx, sel, batch: int, devices=None) -> None:
    """Start compiling (in the background, side by side) every kernel the map of ``ctx``
    will call on each of ``devices`` (default: the default device; each group's points
    dealt out over them as above): the refinement's and the integration's, complex
    (ellipse) and real (tail) nodes, for each kind of medium (one- or two-sided) and point
    chunk size. Each group's quadrature path is chosen first, so a map refused for it
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
        for idx, geo in _octaves(ctx, m)[3]:  # each group
            # the group's path first: a map that cannot be integrated fails before compiling
            som.choose_path(
                ctx["k0"],
                ctx["eps"],
                float(geo[0].max()),
                float(geo[4].min()),
                ctx["rtol"],
                ctx["wavelength"],
            )
            q, r = divmod(len(idx), n_dev)  # the runs dealt out to the devices
            sizes |= {point_chunk(c, batch) for c in {q, q + 1 if r else q} if c}
        for real in (False, True):
            kdt = rdt if real else cdt
            wdt = np.dtype(np.float64) if real else np.dtype(np.complex128)
            statics = dict(orders=orders, bessel_real=real, has_up=True, has_dn=two)
            if ("refine", two, real) not in seen:  # on the first device only
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
                som.warm(som.refine_sums, args + tuple(pts), dict(n_blocks=i32), device=devices[0], **statics)
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
                    pts = (spec((size,), rdt),) * 3
                    som.warm(som.integrate, args + pts, dict(n_blocks=i32), device=dev, **statics)


def integrate_map_spmd(ctx, sel, batch: int):
    """The map's groups one after another, each group refined on the default device and its
    points integrated in SPMD chunks over ``ctx["layout"]``, a layout spanning several
    processes (see :mod:`emjax.layered.distributed`); returns what :func:`integrate_map`
    does."""
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
