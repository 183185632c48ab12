"""Points grouped by observation medium and decay distance, each with its own quadrature
path: the adaptive refinement on a sample and the integration of all points (the driver
behind green.py; the path, nodes and kernels are in sommerfeld.py).

Progress: within ``with reporting(callback):`` a map calls ``callback(info)`` as it goes,
``info`` a dict with ``done`` and ``total`` (points integrated so far and in all), ``group``
and ``groups`` (1-based index and count) and ``stage`` ("refine", "integrate" or "done").
It observes only; the numbers computed are the same with or without it.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from concurrent.futures import ThreadPoolExecutor

import jax
import numpy as np

from .. import progress as progress_bars
from . import sommerfeld as som
from .blocks import blocks_of, extreme, in_blocks, negated, per_block, present, side_by_side, where_equal

_PROGRESS = contextvars.ContextVar("emjax_layered_progress", default=None)


@contextlib.contextmanager
def reporting(callback):
    """Maps computed inside the block report their progress to ``callback(info)`` (see the
    module docstring): per group of points and per chunk of points integrated."""
    token = _PROGRESS.set(callback)
    try:
        yield
    finally:
        _PROGRESS.reset(token)


@contextlib.contextmanager
def reporting_for(progress, total: int):
    """A map's reporter: ``progress`` True a bar of its ``total`` points (:mod:`emjax.progress`;
    none inside a :func:`reporting` block, e.g. a command's own lines), a callable is called
    with each ``info`` dict, False or None nothing."""
    progress_bars.check(progress)
    if progress is True and _PROGRESS.get() is not None:
        yield
        return
    make = lambda: progress_bars.StepBar("layered", total, "point")  # noqa: E731
    with progress_bars.shown(progress, make) as report:
        if isinstance(report, progress_bars.StepBar):
            report = lambda info, _bar=report: _bar(info["done"], info["total"])  # noqa: E731
        with reporting(report):
            yield


class _Report:
    """Calls the callback with points counted from the groups before this one."""

    def __init__(self, callback, base: int, total: int, group: int, groups: int):
        self.callback, self.base, self.total = callback, base, total
        self.group, self.groups = group, groups

    def __call__(self, done_here: int, stage: str) -> None:
        self.callback(
            dict(
                done=self.base + done_here,
                total=self.total,
                group=self.group,
                groups=self.groups,
                stage=stage,
            )
        )


def _geometry(stack, src, pts, s, m):
    """rho, phi, z offsets from the layer's interfaces, and the decay distance h per point."""
    zi = stack.interfaces
    n = stack.n_media
    dx, dy = pts[:, 0] - src[0], pts[:, 1] - src[1]
    rho = np.hypot(dx, dy)
    phi = np.arctan2(dy, dx)
    z = pts[:, 2]
    zu = z - zi[m] if m < n - 1 else np.zeros_like(z)
    zd = z - zi[m - 1] if m > 0 else np.zeros_like(z)
    return rho, phi, zu, zd, _decay(stack, src, z, s, m)


def _decay(stack, src, z, s, m):
    """The decay distance h of points at heights ``z`` in medium ``m`` (source in ``s``): the
    path a reflected or transmitted wave travels along z."""
    zi = stack.interfaces
    n = stack.n_media
    zs = src[2]
    if m == s:
        cand = []
        if s < n - 1:
            cand.append((zs - zi[s]) + (z - zi[s]))
        if s > 0:
            cand.append((zi[s - 1] - zs) + (zi[s - 1] - z))
        h = np.min(np.stack(cand), axis=0)
    elif m < s:
        h = (zi[s - 1] - zs) + (zi[m] - zi[s - 1]) + (z - zi[m])
    else:
        h = (zs - zi[s]) + (zi[s] - zi[m - 1]) + (zi[m - 1] - z)
    return h


class _Group:
    """Points of one observation medium with similar decay distances, and their path."""

    def __init__(self, ctx, m, sel, idx, geometry, rng=None):
        self.ctx, self.m, self.sel = ctx, m, sel
        self.idx = idx
        # the group's own random sample: its refinement depends on its points alone, not on
        # which groups were refined before it (nor on which device refines it)
        self.rng = rng if rng is not None else ctx["rng"].spawn(1)[0]
        self.report = None  # a _Report within reporting()
        self.rounds = 0  # refinement rounds so far
        self._cache = {}  # per kind of node: the panels and their tables (see _tables)
        self._chunks = None  # the integration's node chunks of the current path (host)
        self._lock = threading.Lock()
        self.rho, self.phi, self.zu, self.zd, self.h = geometry
        n = ctx["stack"].n_media
        self.has_up, self.has_dn = m < n - 1, m > 0
        # the kernels see a one-sided medium as "up" only: below the stack's last interface
        # exp(-i kz zd) = exp(i kz (-zd)) with the down coefficients (bit for bit the same
        # products), so the top and bottom media share one compiled kernel
        self.flip = self.has_dn and not self.has_up
        self.z_up = negated(self.zd) if self.flip else self.zu
        self.orders = som.orders_of(sel)
        rho_max, h_min = extreme(self.rho, np.max), extreme(self.h, np.min)
        self.path = som.choose_path(ctx["k0"], ctx["eps"], rho_max, h_min, ctx["rtol"], ctx["wavelength"])

    def _tables(self):
        """Per kind of node (ellipse, tail): the path's nodes, weights, coefficients and kz,
        flat (n_panels * 15,). Each panel's values are kept from the previous call while the
        panel is unchanged (a refinement round computes only the bisected panels')."""
        out = []
        for which, real in (("ellipse", False), ("tail", True)):
            lo, hi = getattr(self.path, which)
            old = self._cache.get(which)
            if old is None:
                tables = self._panel_tables(which, lo, hi)
            else:  # the panels kept (same ends) where they are now, the new ones computed
                at = np.minimum(np.searchsorted(old[0], lo), len(old[0]) - 1)
                new = (old[0][at] != lo) | (old[1][at] != hi)
                tables = [o[at] for o in old[2:]]
                if new.any():
                    for t, f in zip(tables, self._panel_tables(which, lo[new], hi[new])):
                        t[new] = f
            self._cache[which] = (lo, hi, *tables)
            kr, wk, wg, coef, kzm = (a.reshape((-1,) + a.shape[2:]) for a in tables)
            out.append((kr, wk, wg, coef, kzm, real))
        return out

    def _panel_tables(self, which: str, lo, hi):
        """(kr, wK, wG, coefficients, kz) of the panels [lo, hi], each (n, 15, ...)."""
        c = self.ctx
        kr, wk, wg = self.path.nodes_of(which, lo, hi)
        coef, kzm = som.coefficient_table(
            kr.ravel(),
            c["k0"],
            c["eps"],
            c["stack"].interfaces,
            c["src"][2],
            c["s"],
            self.m,
            self.sel,
            c["cdtype"],
        )
        if self.flip:
            coef = coef[..., ::-1]
        n = len(lo)
        return kr, wk, wg, coef.reshape((n, 15) + coef.shape[1:]), kzm.reshape(n, 15)

    def _statics(self, real):
        return dict(
            orders=self.orders,
            bessel_real=real,
            has_up=self.has_up or self.has_dn,
            has_dn=self.has_up and self.has_dn,
        )

    def refine(self, extra=()):
        """Refine the path on the group's sample (and the point indices ``extra``): see
        :mod:`emjax.layered.refine` (a map refines its groups together there)."""
        from .refine import refine_groups

        if self.report is not None:
            self.report(0, "refine")
        refine_groups([self], [extra])

    def node_chunks(self, block_panels: int = 2) -> list:
        """The path's nodes as the integration takes them, host arrays (computed once per
        path, whichever device thread asks first; each device puts its own copy): chunks
        of ``som.CHUNK`` nodes (the last padded; the kernel loops over the valid blocks
        only), each (nodes, weight matrix, coefficients, kz, real, valid blocks)."""
        with self._lock:
            key = (block_panels, self.path.n_panels)
            if self._chunks is None or self._chunks[0] != key:
                self._chunks = (key, self._node_chunks(block_panels))
            return self._chunks[1]

    def _node_chunks(self, block_panels: int) -> list:
        c = self.ctx
        block = 15 * block_panels
        chunks = []
        for t, (kr, wk, wg, coef, kzm, real) in enumerate(self._tables()):
            wl = np.zeros_like(wk)
            if t == 1:
                wl[-15:] = wk[-15:]
            for a in range(0, len(kr), som.CHUNK):
                sl = slice(a, a + som.CHUNK)
                k_, w_, coef_, kzm_ = _padded(
                    kr[sl].real if real else kr[sl],
                    np.stack([wk[sl], wk[sl] - wg[sl], wl[sl]], 1),
                    coef[sl],
                    kzm[sl],
                    som.CHUNK,
                )
                W = som.weight_matrix(w_, block)
                n_blocks = np.int32(-(-len(kr[sl]) // block))
                kdt = c["rdtype"] if real else c["cdtype"]
                chunks.append((k_.astype(kdt), W, coef_, kzm_, real, n_blocks))
        return chunks

    def evaluate(self, batch: int, block_panels: int = 2):
        """Integrals (P, nsel) of every point and their error estimates: the Gauss-Kronrod
        differences plus the truncated tail beyond k_max, estimated from the last panel
        as for an exp(-h k_rho) decay: |K_last| q / (1 - q), q = exp(-h w), times 2."""
        c = self.ctx
        n = len(self.idx)
        lay = c.get("layout")  # None: one device (see distributed.py for several)
        if lay is None:
            size = point_chunk(n, batch)
        else:
            from . import distributed

            size = distributed.chunk_size(n, batch, lay)
        S = len(self.sel)
        chunks = self.node_chunks(block_panels)
        chunks = put_chunks(chunks) if lay is None else distributed.replicate(chunks, lay)
        res_k = np.zeros((n, S), complex)
        res_e = np.zeros((n, S))
        w_last = self.path.tail[1][-1] - self.path.tail[0][-1]
        rdt = c["rdtype"]
        for a in range(0, n, size):
            sl = slice(a, a + size)
            P = len(self.rho[sl])
            if lay is None:
                pts = [
                    _put(np.pad(v[sl], (0, size - P), mode="edge"), rdt)
                    for v in (self.rho, self.z_up, self.zd)
                ]
                acc = tuple(_put(np.zeros((size, S)), t) for t in (c["cdtype"], rdt, c["cdtype"]))
            else:  # points split over the devices, node tables replicated
                pts = [distributed.put_points(v[sl], size, rdt, lay) for v in (self.rho, self.z_up, self.zd)]
                acc = tuple(distributed.zeros((size, S), t, lay) for t in (c["cdtype"], rdt, c["cdtype"]))
            for k_, w_, coef_, kzm_, real, n_blocks in chunks:
                acc = som.call(
                    som.integrate, acc, k_, w_, coef_, kzm_, *pts, n_blocks=n_blocks, **self._statics(real)
                )
            # several processes: every process gathers the whole chunk (the others' parts too)
            K, err, last = (np.asarray(x)[:P] if lay is None else lay.gather(x)[:P] for x in acc)
            q = np.exp(-self.h[sl] * w_last)
            res_k[sl] = K
            res_e[sl] = err + 2 * np.abs(last) * (q / (1 - q))[:, None]
            if self.report is not None:
                self.report(a + P, "integrate")
        return res_k, res_e


def _padded(kr, w, coef, kzm, size: int):
    """Node arrays padded to ``size`` with zero-weight copies of the last node (host)."""
    pad = size - len(kr)
    kr_ = np.concatenate([kr, np.full(pad, kr[-1])])
    w_ = np.concatenate([w, np.zeros((pad,) + w.shape[1:], w.dtype)])
    coef_ = np.concatenate([coef, np.repeat(coef[-1:], pad, 0)])
    kzm_ = np.concatenate([kzm, np.repeat(kzm[-1:], pad, 0)])
    return kr_, w_, coef_, kzm_


def put_chunks(chunks) -> list:
    """:meth:`_Group.node_chunks` on the default device (their arrays, in one transfer)."""
    arrays = jax.device_put([ch[:4] for ch in chunks])
    return [(*a, *ch[4:]) for a, ch in zip(arrays, chunks)]


def _put(a, dtype) -> jax.Array:
    """A host array on the default device in ``dtype`` (a transfer: ``jnp.asarray`` of a
    NumPy array without a dtype compiles a small program per shape)."""
    return jax.device_put(np.ascontiguousarray(a, dtype=dtype))


#: smallest point chunk on a GPU: below ~8192 points x 30 nodes per step the device is not
#: filled, so padding a small group up to it costs little and saves compilations
GPU_MIN_POINTS = 8192


def point_chunk(n: int, batch: int, platform: str | None = None) -> int:
    """Points per integration call for a group of ``n`` points: ``batch`` for groups that
    fill it, else the smallest of floor * 4^j that holds them (floor 16 on a CPU, 8192 on a
    GPU), at most ``batch``: a few sizes per map, each one compilation per kernel."""
    if n >= batch:
        return batch
    platform = platform or jax.default_backend()
    size = 16 if platform == "cpu" else GPU_MIN_POINTS
    while size < n:
        size *= 4
    return min(size, batch)


def _octave_order(idx, octave):
    """(``idx`` stably sorted by ``octave``, the count per octave 0 ... 12): a counting sort
    of :data:`.blocks.SETUP_BLOCK`-point blocks side by side in threads (each block's points of an
    octave go after those of the blocks before it), equal to ``idx[np.argsort(octave,
    kind="stable")]``."""
    blocks = blocks_of(len(idx))
    sorted_ = per_block(
        len(idx), lambda b: (np.argsort(octave[b], kind="stable"), np.bincount(octave[b], minlength=13))
    )
    order = [o for o, _ in sorted_]
    per = np.array([c for _, c in sorted_], np.int64).reshape(-1, 13)  # points of each octave per block
    counts = per.sum(0)
    # where block j's octave-v points start in the output
    start = np.cumsum(counts) - counts + np.cumsum(per, 0) - per
    out = np.empty_like(idx)

    def scatter(j):
        b, at = blocks[j], 0
        mine = idx[b][order[j]]
        for v in np.flatnonzero(per[j]):
            out[start[j, v] : start[j, v] + per[j, v]] = mine[at : at + per[j, v]]
            at += per[j, v]

    side_by_side(scatter, len(blocks))
    return out, counts


def _octaves(ctx, m: int):
    """The medium's point indices and each point's group (octave of h), and the groups'
    (point indices, geometry); computed once per map (kept in ``ctx``). The decay distance
    h needs only z, so the points are put in group order first and the geometry is computed
    straight into that order (no gather of the five geometry arrays afterwards)."""
    cache = ctx.setdefault("_octaves", {})
    if m not in cache:
        idx = where_equal(ctx["layer"], m)
        n = len(idx)
        pts, stack, src, s = ctx["pts"], ctx["stack"], ctx["src"], ctx["s"]
        octave = np.zeros(n, np.int8)  # small maps: one group
        if n >= 8192:  # octaves 0 ... 12 (small integers: a radix sort below)
            h = np.empty(n)

            def decay(b):
                h[b] = _decay(stack, src, pts[idx[b], 2], s, m)

            in_blocks(n, decay)
            h_min = max(extreme(h, np.min), 1e-300)

            def octaves(b):
                octave[b] = np.minimum(np.floor(np.log2(np.maximum(h[b], 1e-300) / h_min)), 12)

            in_blocks(n, octaves)
            del h
        idx_o, counts = _octave_order(idx, octave)
        geo = tuple(np.empty(n) for _ in range(5))

        def geometry(b):
            for whole, part in zip(geo, _geometry(stack, src, pts[idx_o[b]], s, m)):
                whole[b] = part

        in_blocks(n, geometry)
        starts = np.cumsum(counts[counts > 0])[:-1]
        cols = [np.split(a, starts) for a in (idx_o, *geo)]
        parts = [(c[0], tuple(c[1:])) for c in zip(*cols)]
        cache[m] = (idx, octave, parts)
    return cache[m]


def _all_octaves(ctx) -> list[int]:
    """The media of the map's points, their octaves computed side by side (one thread per
    medium: NumPy's array operations run without the GIL)."""
    if "_media" not in ctx:
        ctx["_media"] = present(ctx["layer"], ctx["stack"].n_media)
    media = ctx["_media"]
    todo = [m for m in media if m not in ctx.get("_octaves", {})]
    if len(todo) > 1 and len(ctx["pts"]) >= 1 << 16:
        ctx.setdefault("_octaves", {})
        with ThreadPoolExecutor(max_workers=len(todo)) as pool:
            list(pool.map(lambda m: _octaves(ctx, m), todo))
    return media


def build(ctx, sel) -> list:
    """Every group of the map (see :func:`groups`), in order, without progress reports."""
    out = []
    for m in _all_octaves(ctx):
        out.extend(_Group(ctx, m, sel, idx, geo) for idx, geo in _octaves(ctx, m)[2])
    return out


def groups(ctx, sel):
    """One group per observation medium and octave of the decay distance h: the reflected
    and transmitted waves decay as exp(-h k_rho), so a group integrates only as far as its
    smallest h needs (a field map spanning h = 10 ... 500 needs ~10x fewer nodes per point).
    Small sets stay one group: there the refinement, not the integration, costs the time.
    Within :func:`reporting`, each group reports its progress."""
    callback = _PROGRESS.get()
    gs = build(ctx, sel)
    total, done = len(ctx["pts"]), 0
    for k, g in enumerate(gs, 1):
        if callback is not None:
            g.report = _Report(callback, done, total, k, len(gs))
        yield g
        done += len(g.idx)
        if callback is not None:
            g.report(len(g.idx), "done")
