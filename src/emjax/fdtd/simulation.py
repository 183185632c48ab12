"""FDTD simulation spec and the time loop (chunks of ``lax.scan`` on the device)."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from ..backend import check_memory, precision, precision_scope
from ..errors import ConfigError, ResourceError, require_int, require_positive
from ..layout import Layout, as_layout
from ..materials import DrudePole
from . import checkpoint as checkpoint_mod
from . import dispersive, sharded, subpixel, terms
from . import monitors as mon_mod
from . import pml as pml_mod
from . import tfsf as tfsf_mod
from .grid import CPML, PEC
from .results import FDTDResult
from .sources import PlaneSource, PointDipole
from .spec import GridSimulation, check_run_arguments, is_traced
from .tfsf import TFSF
from .update import d_backward, d_forward

# How CPML corrections and sources reach the fields: None = by backend (terms.inplace_default);
# a tuple of three bools forces it per axis (x: also the sources). Tests compare the ways.
INPLACE = None
# How the subpixel corrections reach E: "region" (a region-sized array, placed like the
# sources) or "grid" (scattered into the field); benchmarks compare them.
SUB_SCATTER = os.environ.get("EMJAX_SUB_SCATTER", "region")
# Reverse mode of traced runs: "custom" (emjax.fdtd.adjoint, where it applies) or "autodiff"
# (JAX's through the checkpointed scan); tests and benchmarks compare them.
ADJOINT = os.environ.get("EMJAX_FDTD_ADJOINT", "custom")


@dataclass(frozen=True)
class _Plan:
    """Hashable static description of one step (jit cache key)."""

    shape: tuple
    dx: float
    dt: float
    order: int
    walls: tuple  # per axis: True if a PEC wall at i = 0
    pml: tuple  # per axis: thickness or 0
    sources: tuple
    probes: tuple
    monitors: tuple
    n_poles: int = 0  # Drude poles (J-E scheme)
    aux_len: int = 0  # length of the TF/SF source's 1-D grid (0: none)
    n_lorentz: int = 0  # Lorentz poles (polarization P, central differences)
    has_pec: bool = False
    pml_kappa: tuple = (False, False, False)  # per axis: CPML with kappa_max > 1
    # CPML corrections added to the slabs in place after the bulk update (CPU: a padded
    # term in the bulk pass costs XLA:CPU 5x; GPU: in-place slab updates copy the array);
    # the x entry also decides the sources
    pml_inplace: tuple = (False, False, False)
    pml_faces: tuple = ((), (), ())  # per axis: the CPML's faces, ("lo", "hi") or one of them
    subpixel: tuple | None = None  # the subpixel corrections' region, (start, stop) per axis
    bloch: tuple = (None, None, None)  # per axis: exp(i k L) of a Bloch boundary, or None
    subpixel_poles: tuple | None = None  # dispersive interface nodes per component, if any
    subpixel_inline: bool = False  # the correction as one expression (subpixel.correction_inline)
    layout: Layout | None = None  # several devices: slabs along x (sharded.py); None: one device


def _coefficients(sim: GridSimulation, dtype):
    g = sim.grid
    dt = g.dt
    traced = is_traced((sim.eps, sim.sigma))
    xp = jnp if traced else np  # traced eps/sigma (jax.grad over them): coefficients in JAX
    eps = xp.asarray(sim.eps, dtype=float)
    sig = xp.asarray(sim.sigma, dtype=float)
    beta_sum = 0.0
    arrays = {}
    if sim.dispersive is not None:
        eps, beta_sum, pole_arrays = dispersive.coefficients(*sim.dispersive, eps, dt, dtype)
        arrays.update(pole_arrays)
    if sim.pec is not None:
        arrays["pec_keep"] = jnp.asarray(~np.asarray(sim.pec, bool), dtype)
    den = 2 * eps + sig * dt + beta_sum * dt
    ca = (2 * eps - sig * dt - beta_sum * dt) / den
    cb = 2 * dt / den
    if traced:  # lossless (sigma = 0, no poles) is ca = 1 whatever eps: decided on concrete inputs
        if sim.dispersive is None and not is_traced(sim.sigma) and np.all(np.asarray(sim.sigma) == 0):
            ca = np.float64(1.0)
    elif np.ndim(ca) and np.all(ca == 1):  # lossless: E' = E + cb curl H, one array less to read
        ca = np.float64(1.0)
    arrays.update({"ca": jnp.asarray(ca, dtype), "cb": jnp.asarray(cb, dtype)})
    if sim.subpixel is not None:
        arrays.update(subpixel.coefficients(sim.subpixel, cb, dt, dtype, g.shape, g.bloch_phases))
    pml = []
    for ax, b in enumerate(g.boundary):
        if isinstance(b, CPML):
            shape = [1, 1, 1]
            shape[ax] = b.thickness
            for kind, half in (("E", False), ("H", True)):
                for side, coefs in zip(("lo", "hi"), pml_mod.profile(b, g.shape[ax], g.dx, dt, half)):
                    if side not in b.faces:
                        continue
                    arrays[f"pml{kind}{ax}{side}"] = tuple(
                        jnp.asarray(v.reshape(shape), dtype) for v in coefs
                    )
            pml.append(b.thickness)
        else:
            pml.append(0)
    # the current source's coefficient is the E update's dt/eps at that node
    cb_full = xp.broadcast_to(cb, (3,) + g.shape) if np.ndim(cb) == 4 else xp.broadcast_to(cb, g.shape)

    def src_coefficient(s):
        c = dispersive.component(cb_full, s.component)[s.index if isinstance(s, PointDipole) else s.slices]
        profile = s.profile(g) if isinstance(s, PlaneSource) else None
        if profile is None:
            return jnp.asarray(c * s.amplitude, dtype)
        return jnp.asarray(c * s.amplitude * profile, jnp.result_type(dtype, jnp.complex64))

    arrays["src_cb"] = tuple(src_coefficient(s) for s in sim.sources if not isinstance(s, TFSF))
    return arrays, tuple(pml)


def _initial_state(sim, plan, dtype, initial):
    g = sim.grid
    if g.is_complex:  # Bloch fields: complex state, real coefficients
        dtype = jnp.result_type(dtype, jnp.complex64)
    if initial is None:
        E = tuple(jnp.zeros(g.shape, dtype) for _ in range(3))
        H = tuple(jnp.zeros(g.shape, dtype) for _ in range(3))
    else:
        if np.shape(initial[0]) != (3,) + g.shape or np.shape(initial[1]) != (3,) + g.shape:
            raise ConfigError(f"initial fields must have shape {(3,) + g.shape}")
        E = tuple(jnp.asarray(initial[0][c], dtype) for c in range(3))
        H = tuple(jnp.asarray(initial[1][c], dtype) for c in range(3))
    psi = {}
    for ax, L in enumerate(plan.pml):
        if L:
            shp = list(g.shape)
            shp[ax] = L
            for kind in "EH":
                for comp in range(3):
                    if comp != ax:
                        for side in plan.pml_faces[ax]:
                            psi[f"{kind}{ax}{comp}{side}"] = jnp.zeros(shp, dtype)
    cdtype = jnp.result_type(dtype, jnp.complex64)
    dft = tuple(mon_mod.zeros(m, g.shape, cdtype) for m in plan.monitors)
    J = dispersive.zeros(plan.n_poles, plan.n_lorentz, g.shape, dtype)
    aux = (jnp.zeros(plan.aux_len, dtype), jnp.zeros(plan.aux_len, dtype)) if plan.aux_len else ()
    sub = ()
    if plan.subpixel_poles:
        sub = subpixel.pole_zeros(plan.subpixel_poles, dtype)
    state = {"E": E, "H": H, "psi": psi, "dft": dft, "J": J, "aux": aux, "n": jnp.zeros((), jnp.int32)}
    block = ()
    if plan.subpixel_inline:  # the corrections' region, carried: each step sets the nodes only
        block = jnp.zeros(3 * math.prod(b - a for a, b in plan.subpixel), E[0].dtype)
    return {**state, "sub": sub, "sub_block": block}


def _curl(plan, arrays, F, kind, psi):
    """Curl with CPML slab corrections; returns (curl, updated psi entries, slab terms).

    The slab terms, ``(component, axis, start, term)``, are left for the caller to add in
    place when ``plan.pml_inplace``; otherwise they are already in the curl."""
    diff = d_forward if kind == "H" else d_backward  # H update differentiates E forward
    inv_dx = 1.0 / plan.dx
    new = {}
    slabs = []

    def add(v, out, sign, axis, start, term):
        if plan.pml_inplace[axis]:
            slabs.append((out, axis, start, term if sign > 0 else -term))
            return v
        n = plan.shape[axis]
        return v + pml_mod.pad_to(term, axis, start, n - start - term.shape[axis])

    def d(f, axis, comp, out, sign):
        L = plan.pml[axis]
        win = None  # several devices: the x faces' planes, replicated (sharded.edge_windows)
        if axis == 0 and plan.layout is not None and sharded.halo_ok(plan):  # halo exchange
            v = sharded.diff_x(f, kind == "H", inv_dx, plan.order, plan.bloch[0], plan.layout)
        else:  # one device, or x split unevenly (XLA partitions the roll)
            v = diff(f, axis, inv_dx, plan.order, plan.bloch[axis])
        if axis == 0 and plan.layout is not None and (L or (plan.order == 4 and plan.walls[0])):
            win = sharded.edge_windows(f, min(L + 4, plan.shape[0]), plan.layout)
        if plan.order == 4 and plan.walls[axis]:
            if win is None:
                wall = pml_mod.wall_terms_4(f, axis, kind == "H", inv_dx)
            else:
                wall = sharded.wall_terms_4(*win, kind == "H", inv_dx, plan.shape[0])
            for start, term in wall:
                if win is not None:
                    term = sharded.replicated(term, plan.layout)
                v = add(v, out, sign, axis, start, term)
        if L:
            n = plan.shape[axis]
            for side, start in (("lo", 0), ("hi", n - L)):
                if side not in plan.pml_faces[axis]:
                    continue
                key = f"{kind}{axis}{comp}{side}"
                b, c, km1 = arrays[f"pml{kind}{axis}{side}"]
                if win is None:
                    vs = pml_mod.slab_derivative(f, axis, start, L, kind == "H", inv_dx, plan.order)
                else:  # the same function on the replicated window of this face
                    # the high window's plane 0 stands for the wall plane n = 0 (imaged)
                    w = win[0] if side == "lo" else jnp.concatenate([win[0][:1], win[1][1:]])
                    s0 = 0 if side == "lo" else w.shape[0] - L
                    vs = pml_mod.slab_derivative(w, 0, s0, L, kind == "H", inv_dx, plan.order)
                p = b * psi[key] + c * vs
                # with kappa = 1 (the default) the correction is psi alone: the bulk pass
                # then reads the new psi and need not recompute the slab derivative
                term = km1 * vs + p if plan.pml_kappa[axis] else p
                if win is not None:  # computed replicated, not split along x by XLA
                    p, term = sharded.replicated((p, term), plan.layout)
                new[key] = p
                v = add(v, out, sign, axis, start, term)
        return v

    Fx, Fy, Fz = F
    cx = d(Fz, 1, 2, 0, 1) - d(Fy, 2, 1, 0, -1)
    cy = d(Fx, 2, 0, 1, 1) - d(Fz, 0, 2, 1, -1)
    cz = d(Fy, 0, 1, 2, 1) - d(Fx, 1, 0, 2, -1)
    return (cx, cy, cz), new, slabs


def _step(plan, arrays, state, _, z=None):
    """One time step; ``z`` (None, or E-shaped) is added to the updated E before the
    monitors and probes read it (the generic adjoint takes E's cotangent through it)."""
    E, H, psi, n = state["E"], state["H"], state["psi"], state["n"]
    dt = plan.dt
    # fields are tuples of components: separate buffers fuse into one pass each
    tf = next((s for s in plan.sources if isinstance(s, TFSF)), None)
    aux = state["aux"]
    inv_dx = 1.0 / plan.dx
    courant = dt / plan.dx
    cE, newH, slabsH = _curl(plan, arrays, E, "H", psi)
    if tf is not None:  # TF/SF: incident E at step n, then the 1-D grid's H to n + 1/2
        t_e = n.astype(E[0].dtype) * dt
        corr = tfsf_mod.correction_h(tf, plan.shape, aux[0], aux[1], inv_dx, E[0].dtype, t_e, dt)
        cE = tuple(c + k for c, k in zip(cE, corr))
        aux = (aux[0], tfsf_mod.aux_step_h(tf, aux[0], aux[1], courant))
    H = tuple(h - dt * c for h, c in zip(H, cE))
    if slabsH:
        H = terms.add_slabs(H, slabsH, -dt)
    cH, newE, slabsE = _curl(plan, arrays, H, "E", psi)
    if tf is not None:
        t_h = (n.astype(E[0].dtype) + 0.5) * dt
        corr = tfsf_mod.correction_e(tf, plan.shape, aux[0], aux[1], inv_dx, E[0].dtype, t_h, dt)
        cH = tuple(c + k for c, k in zip(cH, corr))
    ca, cb = arrays["ca"], arrays["cb"]
    J = state["J"]
    cH, new_lorentz = dispersive.before_e_update(plan.n_poles, plan.n_lorentz, arrays, J, E, cH, dt)
    E_old = E
    comp = dispersive.component
    E = tuple(comp(ca, i) * e + comp(cb, i) * c for i, (e, c) in enumerate(zip(E, cH)))
    sub = state["sub"]
    if plan.subpixel is not None and plan.subpixel_inline:  # one gather fusion, one scatter
        region = tuple(slice(a, b) for a, b in plan.subpixel)
        rshape = tuple(b - a for a, b in plan.subpixel)
        size = math.prod(rshape)
        delta = subpixel.correction_inline(arrays, H, 1.0 / plan.dx, plan.shape)
        # set (not add) into last step's buffer: the other cells stay 0, no zeroing pass
        acc = state["sub_block"].at[arrays["sub_local_all"]].set(delta.astype(E[0].dtype))
        if plan.subpixel_poles:
            d_pole, sub = subpixel.pole_step(arrays, E_old, state["sub"])
            for c, (_, local, d) in enumerate(d_pole):
                acc = acc.at[c * size + local].add(d.astype(E[0].dtype))
        E = list(E)
        for c in range(3):
            block = acc[c * size : (c + 1) * size].reshape(rshape)
            if plan.pml_inplace[0]:
                E[c] = E[c].at[region].add(block)
            else:
                E[c] = E[c] + terms.placed(block, region, plan.shape)
        E = tuple(E)
    elif plan.subpixel is not None:  # interface nodes: the tensors' correction, node by node
        parts = subpixel.correction(arrays, H, 1.0 / plan.dx)
        if plan.subpixel_poles:
            d_pole, sub = subpixel.pole_step(arrays, E_old, state["sub"])
            parts = parts + d_pole
        E = list(E)
        if SUB_SCATTER == "grid":  # straight into the field (XLA's scatter)
            for i, (nodes, _, d) in enumerate(parts):
                c = i % 3
                E[c] = E[c].reshape(-1).at[nodes].add(d.astype(E[c].dtype)).reshape(plan.shape)
        else:  # into a region-sized array, placed like the sources (fused on a GPU)
            region = tuple(slice(a, b) for a, b in plan.subpixel)
            rshape = tuple(b - a for a, b in plan.subpixel)
            acc = [jnp.zeros(math.prod(rshape), E[0].dtype) for _ in range(3)]
            for i, (_, local, d) in enumerate(parts):
                acc[i % 3] = acc[i % 3].at[local].add(d.astype(E[0].dtype))
            for c in range(3):
                block = acc[c].reshape(rshape)
                if plan.pml_inplace[0]:
                    E[c] = E[c].at[region].add(block)
                else:
                    E[c] = E[c] + terms.placed(block, region, plan.shape)
        E = tuple(E)
    E = terms.pec(plan, E)
    if slabsE:
        E = terms.add_slabs(E, slabsE, cb, terms.wall_masks(plan, E[0].dtype))
    if plan.has_pec:
        E = tuple(e * comp(arrays["pec_keep"], i) for i, e in enumerate(E))
    J = dispersive.after_e_update(plan.n_poles, arrays, J, E, E_old)
    J = J + new_lorentz
    dtype = jnp.finfo(E[0].dtype).dtype  # real (complex fields under Bloch boundaries)
    t = (n.astype(dtype) + 0.5) * dt
    if tf is not None:
        aux = (tfsf_mod.aux_step_e(tf, aux[0], aux[1], courant, (n + 1).astype(dtype) * dt), aux[1])
    E = list(E)
    for s_i, src in enumerate(s for s in plan.sources if not isinstance(s, TFSF)):
        where = tuple(src.index) if isinstance(src, PointDipole) else src.slices
        c = src.component
        value = -arrays["src_cb"][s_i] * src.waveform(t).astype(dtype)
        sl, block = terms.source_term(plan, value, where, c, dtype)
        if plan.pml_inplace[0]:  # the sources follow the x slabs (terms.inplace_default)
            E[c] = E[c].at[sl].add(block)
        else:
            E[c] = E[c] + terms.placed(block, sl, plan.shape)
    E = tuple(E)
    if z is not None:
        E = tuple(e + zc for e, zc in zip(E, z))
    psi = {**psi, **newH, **newE}
    dft = tuple(mon_mod.accumulate(m, acc, E, H, n, dt) for m, acc in zip(plan.monitors, state["dft"]))
    rec = [(E if p.field == "E" else H)[p.component][tuple(p.index)] for p in plan.probes]
    out = jnp.stack(rec) if rec else jnp.zeros((0,), dtype)
    block = acc if plan.subpixel_inline else state["sub_block"]
    new = {"E": E, "H": H, "psi": psi, "dft": dft, "J": J, "aux": aux, "n": n + 1}
    return {**new, "sub": sub, "sub_block": block}, out


@partial(jax.jit, static_argnames=("plan", "steps"), donate_argnames=("state",))
def _advance(plan, arrays, state, steps: int):
    state, rec = jax.lax.scan(partial(_step, plan, arrays), state, None, length=steps)
    finite = jnp.all(jnp.stack([jnp.all(jnp.isfinite(f)) for f in state["E"] + state["H"]]))
    return state, rec, finite


def default_chunk(steps: int, n_cells: int) -> int:
    """Steps per device call of a concrete run (progress and checkpoints come between
    calls): ~5% of the run, at least 50 steps, but no more than ~2 s of work at a
    conservative rate (1e10 cell updates/s on a GPU, 2e8 on a CPU), so a long run on a big
    grid reports every few seconds; one chunk length (plus the last) keeps it at one or two
    compilations."""
    rate = 2e8 if jax.default_backend() == "cpu" else 1e10
    cap = max(1, int(2.0 * rate / max(n_cells, 1)))
    return max(1, min(steps, max(steps // 20, 50), cap))


def remat_segment(steps: int) -> int:
    """Default steps per rematerialized segment of a traced run: ``round(sqrt(steps))``.

    Reverse mode keeps the state at each segment's start (``steps / K`` copies of the whole
    state: 6 field arrays, CPML psi, monitor sums) and, while it differentiates one segment,
    that segment's ``K`` steps' residuals (a few field arrays per step), recomputing the
    segment's forward pass once: memory ``O(steps / K + K)`` state-sized arrays, smallest
    at ``K ~ sqrt(steps)``, for one extra forward pass (the gradient costs ~ 2 forward passes
    + the backward one instead of 1 + 1)."""
    return max(1, int(round(math.sqrt(steps))))


def _scan_steps(plan, arrays, state, steps: int, remat: bool):
    step = partial(_step, plan, arrays)
    body = lambda s: jax.lax.scan(step, s, None, length=steps)
    return jax.checkpoint(body, prevent_cse=False)(state) if remat else body(state)


@partial(jax.jit, static_argnames=("plan", "steps", "segment"))
def _advance_traced(plan, arrays, state, steps: int, segment: int):
    """``steps`` steps as one traced computation: an outer ``lax.scan`` over segments of
    ``segment`` steps, each segment a ``jax.checkpoint``-ed inner ``lax.scan`` (remat), then
    the remaining ``steps % segment`` steps as one more checkpointed segment. ``segment =
    0``: one plain scan (reverse mode stores every step's residuals: memory O(steps))."""
    if segment <= 0 or segment >= steps:
        return _scan_steps(plan, arrays, state, steps, remat=segment > 0)
    n_seg, rest = divmod(steps, segment)
    outer = lambda s, _: _scan_steps(plan, arrays, s, segment, remat=True)
    state, rec = jax.lax.scan(outer, state, None, length=n_seg)
    rec = rec.reshape((n_seg * segment,) + rec.shape[2:])
    if rest:
        state, tail = _scan_steps(plan, arrays, state, rest, remat=True)
        rec = jnp.concatenate([rec, tail])
    return state, rec


def make_plan(sim: GridSimulation, steps: int, dtype, arrays: dict, pml: tuple, layout=None) -> _Plan:
    """The static description of ``sim``'s step (what :func:`run` steps; the calculation
    window builds its slabs' plans from it). Pops the subpixel entries ``sub_region`` and
    ``sub_inline`` from ``arrays`` (coefficients of :func:`_coefficients`)."""
    g = sim.grid
    region = arrays.pop("sub_region", None)
    inline = bool(arrays.pop("sub_inline", False)) and SUB_SCATTER == "region"
    walls = tuple(isinstance(b, (PEC, CPML)) for b in g.boundary)
    poles = sim.dispersive[0].poles if sim.dispersive is not None else ()
    n_poles = sum(isinstance(p, DrudePole) for p in poles)
    n_lorentz = len(poles) - n_poles
    tf = next((s for s in sim.sources if isinstance(s, TFSF)), None)
    aux_len = tfsf_mod.aux_length(tf, g.shape, steps, g.courant) if tf is not None else 0
    inplace = tuple(INPLACE) if INPLACE is not None else terms.inplace_default(g, dtype)
    if as_layout(layout) is not None:  # sharded: padded terms (an in-place slab update is a scatter)
        inplace = (False, False, False)
    return _Plan(
        g.shape,
        float(g.dx),
        float(g.dt),
        g.order,
        walls,
        pml,
        sim.sources,
        sim.probes,
        sim.monitors,
        n_poles,
        aux_len,
        n_lorentz,
        sim.pec is not None,
        tuple(isinstance(b, CPML) and b.kappa_max != 1 for b in g.boundary),
        inplace,
        tuple(b.faces if isinstance(b, CPML) else () for b in g.boundary),
        region,
        g.bloch_phases,
        subpixel.pole_counts(sim.subpixel)
        if sim.subpixel is not None and sim.subpixel.poles is not None
        else None,
        inline,
        as_layout(layout),
    )


def run(
    sim: GridSimulation,
    steps: int | None = None,
    *,
    until: float | None = None,
    chunk: int | None = None,
    initial=None,
    progress: Callable[[int, int], None] | None = None,
    checkpoint: str | Path | None = None,
    remat: int | None = None,
    layout=None,
    out_of_core=None,
) -> FDTDResult:
    """Advance ``steps`` time steps (or ``until`` a time, length / c) on the default device,
    or on several (``layout``).

    ``sim``: a physical-unit :class:`emjax.fdtd.Simulation` (returns its
    :class:`~emjax.fdtd.physical.Result`, monitors by name and normalized spectra) or the
    cell-index :class:`GridSimulation` (returns an :class:`FDTDResult`).

    The loop runs as ``lax.scan`` over chunks of ``chunk`` steps (default: ~steps/20, at
    least 50); between chunks the host checks for NaN/Inf (raising FloatingPointError with
    the step) and calls ``progress(done, steps)``. ``initial = (E, H)`` sets the fields at
    step 0 (E at t = 0, H at t = -dt/2).

    ``checkpoint``: a file (.npz) written atomically at every chunk boundary with the whole
    state and the probe records so far. If it exists when ``run`` starts, the run resumes
    from it (bit for bit the same as an uninterrupted run); delete it to start afresh.

    Differentiation: a :class:`GridSimulation` whose ``eps`` or ``sigma`` (or ``initial``)
    holds JAX tracers (``jax.grad``, ``jax.jvp``, ``jax.jit`` of a function of them) runs
    as one traced computation: no host checks between chunks, no ``progress`` calls, no
    ``checkpoint`` file; the result's ``probes``, ``dft`` sums, ``flux()`` and fields are JAX
    arrays to build an objective from. Reverse mode is checkpointed: segments of ``remat``
    steps (default :func:`remat_segment`, ``round(sqrt(steps))``) are recomputed in the
    backward pass, so a gradient keeps ``O(steps/remat + remat)`` state-sized arrays instead
    of ``O(steps)``; ``remat=0`` keeps every step's (3 arrays per step, no recomputation:
    faster, H100 3.8x the forward instead of 4.9x). Without subpixel corrections, dispersive
    poles or Bloch boundaries the adjoint is :mod:`emjax.fdtd.adjoint` (a transposed Yee
    step, per-node sensitivities of the E update); otherwise JAX's reverse mode of the
    ``jax.checkpoint``-ed scan. Jit the
    gradient (``jax.jit(jax.grad(loss))``): unjitted, every call traces and compiles the loop
    anew. A float64 grid needs 64-bit JAX around the whole ``jax.grad`` call (the backward
    pass runs after ``run`` returns): ``jax.config.update("jax_enable_x64", True)`` or
    ``with emjax.backend.precision_scope():``; float32 needs nothing. Measured on a 2-core
    CPU (32^3, CPML, 1000 steps, float32): the gradient takes ~11x the forward run (7x
    with ``remat=0``).

    ``layout``: None or 1 (one device, the default), a device count, a list of devices or an
    :class:`emjax.layout.Layout`: the grid split into slabs along x over the devices (see
    :mod:`emjax.fdtd.sharded`); the results equal the one-device run's to rounding. The
    result's ``E`` and ``H`` are then x-split arrays (NumPy arrays when ``nx`` does not
    divide by the device count), its probes and DFT sums NumPy arrays as on one device; a
    ``checkpoint`` is written per shard (readable by any layout). Concrete inputs only (a
    traced run stays on one device).

    ``out_of_core``: the calculation window of :mod:`emjax.fdtd.window` (issue 19): the
    state in host memory, slabs along x advanced ``th`` steps per visit on the device.
    ``None`` (default): used automatically when a concrete one-device run on a GPU does not
    fit the device's memory; ``False``: never; ``True`` or a dict ``{"th": ..., "slab": ...,
    "device_bytes": ..., "host_memory": ...}``: always (``device_bytes`` sets the slab from a
    device budget, default 80% of the device's free memory; ``th`` default: the rate model's best,
    :func:`emjax.fdtd.window.choose_th`; ``host_memory`` "pinned" or "numpy", default pinned
    where the device has it). ``checkpoint`` as above (every ``chunk`` steps, by default
    ~10 minutes of work, :func:`emjax.fdtd.window.checkpoint_every`; the same format: a
    window run resumes an in-memory run's checkpoint and the other way round);
    no layout with it (yet); bit for bit the in-memory result on the CPU. XLA caps pinned
    host memory on a GPU at ``XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB`` (default 64, read when
    JAX starts): set it higher for grids whose fields exceed it, or the window falls back
    to NumPy (slower link).
    """
    from . import physical

    check_run_arguments(progress, initial, checkpoint, out_of_core)
    if isinstance(sim, physical.Simulation):
        kw = dict(chunk=chunk, initial=initial, progress=progress, checkpoint=checkpoint, layout=layout)
        if out_of_core is not None:
            kw["out_of_core"] = out_of_core
        return physical.run(sim, steps, until=until, **kw)
    if not isinstance(sim, GridSimulation):
        raise ConfigError(f"run needs an emjax.fdtd.Simulation or GridSimulation, got {type(sim).__name__}")
    if until is not None:
        if steps is not None:
            raise ConfigError("give steps or until (a time in length / c), not both")
        steps = int(math.ceil(require_positive("until", until) / sim.grid.dt))
    steps = require_int("steps", steps, 1)
    if out_of_core is None and as_layout(layout) is None and jax.default_backend() != "cpu":
        if not is_traced((sim.eps, sim.sigma, initial)):
            from ..backend import device_memory_bytes

            out_of_core = sim.memory_bytes() > 0.9 * device_memory_bytes()
            from .window import unsupported

            why = unsupported(sim) if out_of_core else None
            if why is not None:  # too big for the device, and the window cannot take it
                shape_txt = "x".join(map(str, sim.grid.shape))
                raise ResourceError(
                    f"FDTD on a {shape_txt} grid needs about {sim.memory_bytes() / 1e9:.2f} GB, more "
                    f"than the {device_memory_bytes() / 1e9:.2f} GB free on the device; the out-of-core "
                    f"window (state in host memory) does not support {why}; use a coarser grid, "
                    "single precision, or a device with more memory"
                )
    if out_of_core:
        return _run_out_of_core(sim, steps, out_of_core, initial, progress, checkpoint, layout, remat, chunk)
    lay = as_layout(layout)
    shape_txt = "x".join(map(str, sim.grid.shape))
    if lay is None:
        check_memory(sim.memory_bytes(), f"FDTD on a {shape_txt} grid")
    else:  # each device holds its slab (plus replicated x-CPML windows: small)
        check_memory(sim.memory_bytes() // lay.n, f"FDTD on a {shape_txt} grid split over {lay.n} devices")
    chunk = default_chunk(steps, sim.grid.n_cells) if chunk is None else require_int("chunk", chunk, 1)
    if checkpoint is not None and not is_traced((sim.eps, sim.sigma, initial)):
        from ..io import check_output_file

        check_output_file(checkpoint, "checkpoint")  # before any step is computed
    if (
        sim.grid.precision == "double"
        and not jax.config.jax_enable_x64
        and is_traced((sim.eps, sim.sigma, initial))
    ):
        # the backward pass runs after run() returns, outside its 64-bit scope
        raise ConfigError(
            "differentiating a double-precision FDTD run needs 64-bit JAX around the whole "
            "jax.grad/jit call: jax.config.update('jax_enable_x64', True) or "
            "`with emjax.backend.precision_scope():` (or use Grid(precision='single'))"
        )
    with precision_scope():
        g = sim.grid
        dtype = precision(g.precision).real
        arrays, pml = _coefficients(sim, dtype)
        plan = make_plan(sim, steps, dtype, arrays, pml, layout)
        state = _initial_state(sim, plan, dtype, initial)
        if is_traced((arrays, state)):
            if plan.layout is not None:
                raise ConfigError("a traced (differentiated) FDTD run runs on one device: layout=None")
            return _run_traced(sim, plan, arrays, state, steps, checkpoint, remat)
        if plan.layout is not None:
            return _run_sharded(sim, plan, arrays, state, steps, chunk, checkpoint, progress)
        recs = []
        if checkpoint is not None and Path(checkpoint).exists():
            state, recs = checkpoint_mod.load(Path(checkpoint), state, plan)
        done = int(state["n"])
        if done > steps:
            raise ConfigError(f"checkpoint {checkpoint} is at step {done}, beyond steps = {steps}")
        compile_s = t_run = 0.0
        timed_steps = 0
        seen = set()
        while done < steps:
            n = min(chunk, steps - done)
            t0 = time.perf_counter()
            state, rec, finite = _advance(plan, arrays, state, n)
            finite = bool(finite)
            elapsed = time.perf_counter() - t0
            if n in seen:
                t_run += elapsed
                timed_steps += n
            else:  # the first call of each chunk length includes compiling
                compile_s += elapsed
                seen.add(n)
            recs.append(np.asarray(rec))
            done += n
            if not finite:
                raise FloatingPointError(
                    f"FDTD fields became NaN/Inf by step {done} (unstable: check courant, materials, "
                    "sources); the last checkpoint, if any, holds the state before this chunk"
                )
            if checkpoint is not None:
                checkpoint_mod.save(Path(checkpoint), state, recs, plan)
            if progress is not None:
                progress(done, steps)
        probes = np.concatenate(recs) if recs else np.zeros((0, len(sim.probes)))
        return FDTDResult(
            sim,
            probes,
            (np.arange(len(probes)) + 1) * g.dt,
            jnp.stack(state["E"]),
            jnp.stack(state["H"]),
            timed_steps if timed_steps else steps,
            t_run if timed_steps else compile_s,
            compile_s,
            tuple({k: np.asarray(v) for k, v in d.items()} for d in state["dft"]),
            int(state["n"]),
        )


def _run_traced(sim, plan, arrays, state, steps, checkpoint, remat) -> FDTDResult:
    """The run of traced inputs: one jitted computation (see :func:`run`)."""
    if checkpoint is not None:
        raise ConfigError("checkpoint files need concrete inputs (not under jax.grad / jax.jit)")
    segment = remat_segment(steps) if remat is None else require_int("remat", remat, 0)
    from . import adjoint

    if ADJOINT == "custom" and adjoint.applicable(plan):
        lossless = not is_traced(sim.sigma) and np.all(np.asarray(sim.sigma) == 0)
        state, rec = adjoint.advance(plan, arrays, state, steps, segment, lossy=not lossless)
    else:
        state, rec = _advance_traced(plan, arrays, state, steps, segment)
    return FDTDResult(
        sim,
        rec,
        (np.arange(steps) + 1) * sim.grid.dt,
        jnp.stack(state["E"]),
        jnp.stack(state["H"]),
        steps,
        0.0,
        0.0,
        tuple(dict(d) for d in state["dft"]),
        steps,
    )


def _run_sharded(sim, plan, arrays, state, steps, chunk, checkpoint, progress) -> FDTDResult:
    """The loop of :func:`run` on several devices (``plan.layout``; see sharded.py)."""
    g = sim.grid
    lay, nx = plan.layout, g.shape[0]
    axes = (sharded.axes_of(arrays, g.shape), sharded.axes_of(state, g.shape))
    arrays = sharded.place(arrays, axes[0], lay, nx)
    recs = []
    if checkpoint is not None and Path(checkpoint).exists():
        host, recs = checkpoint_mod.load_host(Path(checkpoint), state, plan)
        state = host
    state = sharded.place(state, axes[1], lay, nx)
    done = int(sharded.host_copy(state["n"]))
    if done > steps:
        raise ConfigError(f"checkpoint {checkpoint} is at step {done}, beyond steps = {steps}")
    compile_s = t_run = 0.0
    timed_steps = 0
    seen = set()
    while done < steps:
        n = min(chunk, steps - done)
        t0 = time.perf_counter()
        state, rec, finite = sharded.advance(plan, arrays, state, n, axes)
        finite = bool(sharded.host_copy(finite))
        elapsed = time.perf_counter() - t0
        if n in seen:
            t_run += elapsed
            timed_steps += n
        else:
            compile_s += elapsed
            seen.add(n)
        recs.append(sharded.host_copy(rec))
        done += n
        if not finite:
            raise FloatingPointError(
                f"FDTD fields became NaN/Inf by step {done} (unstable: check courant, materials, "
                "sources); the last checkpoint, if any, holds the state before this chunk"
            )
        if checkpoint is not None:
            checkpoint_mod.save_sharded(Path(checkpoint), state, recs, plan, axes[1])
        if progress is not None:
            progress(done, steps)
    probes = np.concatenate(recs) if recs else np.zeros((0, len(sim.probes)))
    if nx % lay.n == 0:
        E, H = _stack(state["E"]), _stack(state["H"])
    else:  # uneven: the logical fields on the host (a device array must split evenly)
        E = np.stack([np.asarray(e)[:nx] for e in state["E"]])
        H = np.stack([np.asarray(h)[:nx] for h in state["H"]])
    return FDTDResult(
        sim,
        probes,
        (np.arange(len(probes)) + 1) * g.dt,
        E,
        H,
        timed_steps if timed_steps else steps,
        t_run if timed_steps else compile_s,
        compile_s,
        tuple({k: sharded.host_copy(v) for k, v in d.items()} for d in state["dft"]),
        int(sharded.host_copy(state["n"])),
    )


@jax.jit
def _stack(F):
    return jnp.stack(F)


def _run_out_of_core(sim, steps, out_of_core, initial, progress, checkpoint, layout, remat, chunk=None):
    """``run`` through the calculation window (emjax.fdtd.window)."""
    from ..backend import device_memory_bytes
    from . import window

    if as_layout(layout) is not None or remat is not None:
        raise ConfigError("out_of_core: a window run takes no layout or remat (yet)")
    if chunk is not None:
        chunk = require_int("chunk", chunk, 1)
    if out_of_core is True:
        opts = {}
    elif isinstance(out_of_core, dict):
        unknown = set(out_of_core) - {"th", "slab", "device_bytes", "host_memory"}
        if unknown:
            raise ConfigError(
                f"out_of_core: unknown key(s) {sorted(unknown)}; allowed: th, slab, device_bytes, host_memory"
            )
        opts = dict(out_of_core)
    else:
        raise ConfigError(f"out_of_core must be None, True, False or a dict, got {out_of_core!r}")
    if opts.get("slab") is None and opts.get("device_bytes") is None:
        opts["device_bytes"] = int(0.8 * device_memory_bytes())  # the slab model's five states
    if opts.get("th") is None:  # the rate model's best for an H100-class device and link,
        # the two directions counted in series: on the H100 they contend (1200^3 th 16: between
        # the duplex and the serial model), and the serial model picks the measured best th
        budget = opts.get("device_bytes") or device_memory_bytes()
        opts["th"] = window.choose_th(sim, budget, 3.3e10, 5e10)[0]
    return window.run_window(
        sim, steps, initial=initial, progress=progress, checkpoint=checkpoint, chunk=chunk, **opts
    )
