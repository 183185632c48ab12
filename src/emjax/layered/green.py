"""Dyadic Green's tensor and dipole fields in a planar stack (public API of emjax.layered).

Conventions: time dependence ``exp(-i omega t)``, ``Im eps > 0`` lossy, ``k0 = 2 pi /
wavelength``. The Green tensor solves ``curl curl G - k0^2 eps(z) G = I delta(r - r')``, so
a dipole ``p`` at ``r'`` radiates ``E = (k0^2 / eps0) G p``. :func:`dipole_fields` returns
``E = k0^2 G p`` and ``H`` in natural units (``eps0 = mu0 = c = 1``: E in units of ``p /
(eps0 L^3)``, H as ``Z0 H`` in the same units), ``H = curl E / (i k0)``.
"""

from __future__ import annotations

import time
from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np

from ..backend import precision, precision_scope
from ..errors import ConfigError, is_one_of, require_floats, require_int, require_positive, require_range
from ..layout import as_layout
from . import mapping
from . import sommerfeld as som
from .assemble import _assemble_cs, _finish, _finish_on, _finish_spec, _free_space
from .blocks import in_blocks
from .groups import _PROGRESS, reporting_for
from .mapping import warm
from .results import DipoleFields, GreenResult
from .stack import Stack
from .traced import concrete, integrals, is_traced, wavelength_scaled

E_INTEGRALS = (0, 1, 2, 3, 4)
H_INTEGRALS = (5, 6, 7, 8)
PARTS = ("total", "scattered")


def _host(name, x):
    """Concrete values of a possibly traced input (ConfigError inside jit/vmap)."""
    return concrete(name, x) if is_traced(x) else x


def _check(stack, wavelength, source, points, part, rtol, prec):
    if not isinstance(stack, Stack):
        raise ConfigError(f"stack must be an emjax.layered.Stack, got {type(stack).__name__}")
    wavelength = require_positive("wavelength", wavelength)
    src = require_floats("source", _host("source", source), "3 finite coordinates (x, y, z)")
    if src.shape != (3,) or not np.all(np.isfinite(src)):
        raise ConfigError(f"source must be 3 finite coordinates (x, y, z), got {source!r}")
    pts = require_floats("points", _host("points", points), "an (N, 3) array of finite coordinates")
    if pts.ndim == 1 and pts.shape == (3,):
        pts = pts[None, :]
    if pts.ndim != 2 or pts.shape[1] != 3 or pts.shape[0] == 0:
        raise ConfigError(f"points must have shape (N, 3) with N >= 1, got {np.shape(points)}")
    finite = np.ones(len(pts), bool)  # in blocks side by side: 1e8 points take ~0.3 s serially

    def check(b):
        finite[b] = np.isfinite(pts[b]).all(axis=1)

    in_blocks(len(pts), check)
    if not finite.all():
        raise ConfigError("points must be finite (found NaN/Inf)")
    if not is_one_of(part, PARTS):
        raise ConfigError(f"part must be one of {PARTS}, got {part!r}")
    rtol = require_range("rtol", rtol, 1e-13, 0.1)
    p = precision(prec)
    if p.name == "single" and rtol < 1e-6:
        raise ConfigError(f"rtol = {rtol:g} is below what single precision can reach; allowed >= 1e-6")
    return wavelength, src, pts, rtol, p


def free_space(k, k0, R):
    """Direct terms (N, 3, 3) in a homogeneous medium of wavenumber k: G0 and G0_H
    (``H = k0^2 G0_H p``); R (N, 3) = r - r' (nonzero). NumPy in, NumPy out."""
    with precision_scope():
        G, GH = _free_space(jnp.asarray(k, jnp.complex128), k0, jnp.asarray(R, jnp.float64))
        return np.asarray(G), np.asarray(GH)


def _run(
    stack,
    wavelength,
    source,
    points,
    *,
    part,
    rtol,
    prec,
    sel_fn,
    batch,
    seed=0,
    moment=None,
    plan=None,
    layout=None,
    progress=False,
) -> GreenResult:
    if not isinstance(stack, Stack):
        raise ConfigError(f"stack must be an emjax.layered.Stack, got {type(stack).__name__}")
    if is_traced(wavelength):  # a length scale: G(wl; x) = s G(wl0; s x), s = wl0 / wl
        stack, wl0, source, points, s = wavelength_scaled(stack, wavelength, source, points)
        kw = dict(part=part, rtol=rtol, prec=prec, sel_fn=sel_fn, batch=batch, seed=seed, moment=moment)
        r = _run(stack, wl0, source, points, **kw)
        G, GH, E, H = (None if a is None else a * s**p for a, p in ((r.G, 1), (r.GH, 1), (r.E, 3), (r.H, 3)))
        return replace(r, G=G, GH=GH, E=E, H=H)
    if stack.traced or is_traced(source) or is_traced(points) or is_traced(moment):
        return _run_traced(
            stack,
            wavelength,
            source,
            points,
            part=part,
            rtol=rtol,
            prec=prec,
            sel_fn=sel_fn,
            batch=batch,
            seed=seed,
            moment=moment,
        )
    t_start = time.perf_counter()
    wavelength, src, pts, rtol, p = _check(stack, wavelength, source, points, part, rtol, prec)
    batch = (
        require_int("batch", batch, 1)
        if batch is not None
        else (65536 if jax.default_backend() == "gpu" else 2048)
    )
    eps = stack.permittivities(wavelength)
    k0 = 2 * np.pi / wavelength
    s = int(stack.layer_of(src[2]))
    layer = np.empty(len(pts), np.int64)

    def layers(b):
        layer[b] = stack.layer_of(pts[b, 2])

    in_blocks(len(pts), layers)
    sel = sel_fn
    R = pts - src if part == "total" else None  # the direct term's only use of it
    if R is not None and np.all(R == 0, axis=1).any():
        raise ConfigError(
            f"points: point {int(np.argmax(np.all(R == 0, axis=1)))} coincides with the source "
            "(the total field is singular there; part='scattered' is finite)"
        )
    lay = as_layout(layout)
    spmd = lay is not None and not lay.local
    # the devices that compute here (several processes: the points in SPMD chunks over all
    # their devices, the rest on this process's default device)
    devices = list(lay.devices) if lay is not None and not spmd else [som._device()]
    ctx = dict(
        stack=stack,
        src=src,
        pts=pts,
        s=s,
        layer=layer,
        k0=k0,
        eps=eps,
        rtol=rtol,
        wavelength=wavelength,
        cdtype=p.complex,
        rdtype=p.real,
        rng=np.random.default_rng(seed),
        layout=lay if spmd else None,
    )
    N = len(pts)
    want_h = any(i >= 5 for i in sel)
    want_e = any(i < 5 for i in sel)
    total = part == "total"
    contract = moment is not None
    in_s = layer == s
    ks = k0 * np.sqrt(complex(eps[s]))
    ks = -ks if ks.imag < 0 else ks
    pm = None
    if contract:  # contract on the device: only (N, 3) comes back
        cdt = np.dtype(p.complex)
        pm = np.asarray(moment, cdt) * cdt.type(k0**2)  # on the device in _finish_args
    fin = dict(sel=tuple(sel), want_h=want_h, want_e=want_e, total=total, contract=contract)
    timings = {}
    if spmd:  # devices of several processes: each chunk of points one SPMD program
        with precision_scope():
            if plan is None:
                warm(ctx, sel, batch, devices)
                som.warm(_finish, _finish_spec(N, len(sel), total, contract, p), device=devices[0], **fin)
            with reporting_for(progress, N):
                I, err, phi, stats, n_nodes, gs = mapping.integrate_map_spmd(ctx, sel, batch)
            rest = (R, in_s, ks, float(k0)) if total else (None,) * 4
            A, B = _finish_on(devices, (I, phi) + rest, pm, p, fin)
    else:  # one or several devices of this process: points dealt out whole, each chunk
        # integrated and finished on its device
        cdt = np.dtype(p.complex)
        finish = mapping.Finish(fin, np.asarray(ks, cdt), np.float64(k0), pm, cdt)
        with precision_scope():
            if plan is None:  # every compilation of the map started now, side by side
                warm(ctx, sel, batch, devices, finish)
            timings["setup"] = time.perf_counter() - t_start
            with reporting_for(progress, N):
                A, B, err, stats, n_nodes, gs = mapping.integrate_map(
                    ctx, sel, batch, devices, finish, _PROGRESS.get(), timings
                )
        timings["setup"] += timings.pop("groups")
    timings["total"] = time.perf_counter() - t_start
    if plan is not None:  # the nodes, for the traced path
        plan.extend((g.m, g.idx, g.path) for g in gs)
    if contract:
        E = A if want_e else None
        H = B if want_h else None
        return GreenResult(pts, None, None, err, n_nodes, part, tuple(stats), E, H, timings)
    G, GH = A, (B if want_h else None)
    return GreenResult(pts, G, GH, err, n_nodes, part, tuple(stats), timings=timings)


def _run_traced(
    stack, wavelength, source, points, *, part, rtol, prec, sel_fn, batch, seed, moment
) -> GreenResult:
    """``_run`` with traced inputs: nodes from the primal values, integrand in JAX (see
    traced.py). Returns G, GH, E, H as (traced) jax Arrays."""
    stack0 = stack.primal()
    src0, pts0 = _host("source", source), _host("points", points)
    if not jax.config.jax_enable_x64:  # the reverse pass runs in the caller's types
        raise ConfigError(
            "emjax.layered with traced inputs (jax.grad/jvp) needs 64-bit types where the "
            "transformation runs: set JAX_ENABLE_X64=1 or jax.config.update('jax_enable_x64', True), "
            "or differentiate inside `with emjax.backend.precision_scope():`"
        )
    plan = []
    r0 = _run(
        stack0,
        wavelength,
        src0,
        pts0,
        part=part,
        rtol=rtol,
        prec=prec,
        sel_fn=sel_fn,
        batch=batch,
        seed=seed,
        plan=plan,
    )
    wavelength, src0, pts0, rtol, p = _check(stack0, wavelength, src0, pts0, part, rtol, prec)
    sel = sel_fn
    want_h = any(i >= 5 for i in sel)
    s = int(stack0.layer_of(src0[2]))
    layer = stack0.layer_of(pts0[:, 2])
    k0 = 2 * np.pi / wavelength
    with precision_scope():
        eps = jnp.asarray(stack.permittivities(wavelength), jnp.complex128)
        src = jnp.asarray(source, jnp.float64).reshape(3)
        pts = jnp.asarray(points, jnp.float64).reshape(-1, 3)
        ctx = dict(stack=stack0, src=src0, pts=pts0, s=s, k0=k0, cdtype=p.complex, rdtype=p.real)
        I, dx, dy = integrals(plan, ctx, sel, eps, stack.interfaces_traced(), src, pts)
        dx, dy = dx.astype(p.real), dy.astype(p.real)
        G, GH = _assemble_cs(I, dx, dy, dx * dx - dy * dy, 2 * dx * dy, tuple(sel), want_h)
        if part == "total":
            in_s = np.nonzero(layer == s)[0]
            if len(in_s):
                ks = k0 * jnp.sqrt(eps[s])
                ks = jnp.where(jnp.imag(ks) < 0, -ks, ks)
                G0, GH0 = _free_space(ks.astype(p.complex), k0, (pts - src)[in_s].astype(p.real))
                G = G.at[in_s].add(G0.astype(G.dtype))
                if want_h:
                    GH = GH.at[in_s].add(GH0.astype(G.dtype))
        E = H = None
        if moment is not None:
            hi = jax.lax.Precision.HIGHEST
            pm = jnp.asarray(moment).astype(G.dtype) * k0**2
            E = jnp.matmul(G, pm, precision=hi) if any(i < 5 for i in sel) else None
            H = jnp.matmul(GH, pm, precision=hi) if want_h else None
            G, GH = None, None
    return GreenResult(pts0, G, GH, r0.error, r0.n_nodes, part, r0.stats, E, H)


def green_tensor(
    stack: Stack,
    wavelength: float,
    source,
    points,
    *,
    part: str = "total",
    rtol: float = 1e-8,
    precision: str = "double",
    batch: int | None = None,
    layout=None,
    progress=True,
) -> np.ndarray:
    """The dyadic Green tensor G(points, source), shape (N, 3, 3), complex.

    ``source``: (x, y, z) of the dipole; ``points``: (N, 3). ``part="scattered"``: without
    the direct (homogeneous-medium) term for points in the source's medium (equal to the
    total elsewhere). ``rtol``: relative accuracy of the integrated part (Gauss-Kronrod
    estimate, relative to the norm of that part's tensor at each point). Units: lengths in
    the wavelength's unit; G in 1 / length.

    Differentiable (``jax.grad``, ``jacfwd``, ``jacrev``, ``jvp``; not inside ``jit``/``vmap``)
    with respect to ``source``, ``points``, the ``wavelength`` and the stack's ``eps``
    (complex), ``thickness`` and ``z_top``: with any of them traced, G is a ``jax.Array``
    whose derivative is that of the quadrature rule the concrete values choose (see
    ``emjax.layered.traced``; a traced wavelength is a scale of every length there).

    ``layout``: devices to deal the points out to (an ``emjax.layout.Layout``, a device
    count or a device list; None: one device): each device integrates a contiguous run of
    every group's points with its own host loop, the groups' quadrature refinements shared
    out among the devices (see ``emjax.layered.mapping``). ``batch`` is then per device. The
    result equals the one-device run to rounding (each point's integrals are computed
    alike); traced inputs (gradients) run on one device.

    ``progress``: True (default) a bar of the points with the time left (:mod:`emjax.progress`;
    none for traced inputs), False none, a callable is called with a dict of ``done``,
    ``total``, ``group``, ``groups`` and ``stage`` (see :mod:`emjax.layered.groups`).
    """
    return _run(
        stack,
        wavelength,
        source,
        points,
        part=part,
        rtol=rtol,
        prec=precision,
        sel_fn=E_INTEGRALS,
        batch=batch,
        layout=layout,
        progress=progress,
    ).G


def dipole_fields(
    stack: Stack,
    wavelength: float,
    source,
    points,
    p=(0, 0, 1),
    *,
    part: str = "total",
    rtol: float = 1e-8,
    precision: str = "double",
    batch: int | None = None,
    fields: str = "EH",
    layout=None,
    progress=True,
) -> DipoleFields:
    """E and H (N, 3) of a dipole of moment ``p`` (3 complex) at ``source``.

    Units: ``E = k0^2 G p`` (so E in ``p / (eps0 L^3)``) and ``H`` as ``Z0 H`` in the same
    units. ``fields``: "E", "H" or "EH" (which integrals to compute; a field not computed
    is all NaN, a read-only array). Differentiable as
    :func:`green_tensor` (and in ``p``); with traced inputs E and H are ``jax.Array``.
    ``layout``: the points spread over devices and ``progress``, as in :func:`green_tensor`.
    """
    traced_p = is_traced(p)
    pv = require_floats("p", _host("p", p), "3 finite (complex) components", complex)
    if pv.shape != (3,) or not np.all(np.isfinite(pv)):
        raise ConfigError(f"p must be 3 finite (complex) components, got {p!r}")
    if not is_one_of(fields, ("E", "H", "EH")):
        raise ConfigError(f"fields must be 'E', 'H' or 'EH', got {fields!r}")
    lateral, vertical = bool(np.any(pv[:2] != 0)), bool(pv[2] != 0)
    if traced_p:  # derivatives along every component need every integral
        lateral = vertical = True
    sel = []
    if "E" in fields:
        sel += ([0, 1, 3] if lateral else []) + ([2, 4] if vertical else [])
    if "H" in fields:
        sel += ([5, 6, 7] if lateral else []) + ([8] if vertical else [])
    sel = tuple(sorted(sel)) or (4,)
    t0 = time.perf_counter()
    r = _run(
        stack,
        wavelength,
        source,
        points,
        part=part,
        rtol=rtol,
        prec=precision,
        sel_fn=sel,
        batch=batch,
        moment=p if traced_p else pv,
        layout=layout,
        progress=progress,
    )
    traced = is_traced(r.E) or is_traced(r.H)
    nan = np.broadcast_to(np.complex128(np.nan), (len(r.points), 3))  # read-only: no copy of N x 3
    E = r.E if ("E" in fields and r.E is not None) else nan
    H = r.H if ("H" in fields and r.H is not None) else nan
    return DipoleFields(
        stack,
        wavelength if is_traced(wavelength) else float(wavelength),
        source if traced else np.asarray(source, float),
        p if traced else pv,
        points if traced else r.points,
        E,
        H,
        r.error,
        part,
        time.perf_counter() - t0,
        r.stats,
        r.timings,
    )


fields = dipole_fields
