"""The FDTD engine's one-device step: the static plan, the coefficients, the initial state,
the 2nd/4th-order Yee update with CPML, sources, probes and monitors (:func:`step`), and
:func:`advance` (``lax.scan`` of it, jitted). The drivers call down into this module:
:func:`emjax.fdtd.simulation.run` (in memory), :mod:`emjax.fdtd.window` (out of core),
:mod:`emjax.fdtd.sharded` (several devices), :mod:`emjax.fdtd.adjoint` (the transposed
step); it imports none of them. The several-device halo exchange of the x-differences is
:mod:`emjax.fdtd.halo` (a plan with a layout).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import ConfigError
from ..layout import Layout, as_layout
from ..materials import DrudePole
from . import dispersive, halo, subpixel, subpixel_slabs, terms
from . import monitors as mon_mod
from . import pml as pml_mod
from . import tfsf as tfsf_mod
from .grid import CPML, PEC
from .sheets import CurrentSheet
from .sources import PlaneSource, PointDipole
from .spec import GridSimulation, is_traced, traced_inputs
from .tfsf import TFSF
from .update import d_backward, d_forward

# How CPML corrections and sources reach the fields: None = by backend (terms.inplace_default);
# a tuple of three bools forces it per axis (x: also the sources). Tests compare the ways.
INPLACE = None
# How the subpixel corrections reach E: "region" (a region-sized array, placed like the
# sources) or "grid" (scattered into the field); benchmarks compare them.
SUB_SCATTER = os.environ.get("EMJAX_SUB_SCATTER", "region")


@dataclass(frozen=True)
class Plan:
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
    pmc: tuple = (False, False, False)  # per axis: a PMC wall on the H plane i = 1/2 (grid.CPML)
    # several devices: the subpixel nodes dealt out by slab (subpixel_slabs.localize), or None
    subpixel_slabs: subpixel_slabs.Slabs | None = None


def coefficients(sim: GridSimulation, dtype):
    g = sim.grid
    dt = g.dt
    traced = is_traced(traced_inputs(sim))  # initial is None here
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
        walls = tuple(isinstance(b, (PEC, CPML)) for b in g.boundary)
        arrays.update(subpixel.coefficients(sim.subpixel, cb, dt, dtype, g.shape, g.bloch_phases, walls))
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
        if isinstance(s, CurrentSheet) and s.field == "H":  # magnetic: H -= dt M (mu = 1)
            return jnp.asarray(dt * s.amplitude * s.values, dtype)
        c = dispersive.component(cb_full, s.component)[s.index if isinstance(s, PointDipole) else s.slices]
        if isinstance(s, CurrentSheet):
            return jnp.asarray(c * s.amplitude * s.values, dtype)
        profile = s.profile(g) if isinstance(s, PlaneSource) else None
        if profile is None:
            return jnp.asarray(c * s.amplitude, dtype)
        return jnp.asarray(c * s.amplitude * profile, jnp.result_type(dtype, jnp.complex64))

    arrays["src_cb"] = tuple(src_coefficient(s) for s in sim.sources if not isinstance(s, TFSF))
    return arrays, tuple(pml)


def initial_state(sim, plan, dtype, initial):
    g = sim.grid
    if g.is_complex:  # Bloch fields: complex state, real coefficients
        dtype = jnp.result_type(dtype, jnp.complex64)
    # on several devices the zeros start on the host (untouched pages cost no memory) and are
    # placed slab by slab: made on the first device, a grid larger than it would not fit
    zeros = np.zeros if plan.layout is not None else jnp.zeros
    if initial is None:
        E = tuple(zeros(g.shape, dtype) for _ in range(3))
        H = tuple(zeros(g.shape, dtype) for _ in range(3))
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
                            psi[f"{kind}{ax}{comp}{side}"] = zeros(shp, dtype)
    cdtype = jnp.result_type(dtype, jnp.complex64)
    dft = tuple(mon_mod.zeros(m, g.shape, cdtype) for m in plan.monitors)
    J = dispersive.zeros(
        plan.n_poles, plan.n_lorentz, g.shape, dtype, xp=np if plan.layout is not None else jnp
    )
    aux = (jnp.zeros(plan.aux_len, dtype), jnp.zeros(plan.aux_len, dtype)) if plan.aux_len else ()
    sub = ()
    if plan.subpixel_poles:
        sub = subpixel.pole_zeros(plan.subpixel_poles, dtype)
    state = {"E": E, "H": H, "psi": psi, "dft": dft, "J": J, "aux": aux, "n": jnp.zeros((), jnp.int32)}
    block = ()
    if plan.subpixel_inline:  # the corrections' region, carried: each step sets the nodes only
        block = jnp.zeros(3 * math.prod(b - a for a, b in plan.subpixel), E[0].dtype)
    return {**state, "sub": sub, "sub_block": block}


def curl(plan, arrays, F, kind, psi):
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
        win = None  # several devices: the x faces' planes, replicated (halo.edge_windows)
        if axis == 0 and plan.layout is not None and halo.halo_ok(plan):  # halo exchange
            v = halo.diff_x(f, kind == "H", inv_dx, plan.order, plan.bloch[0], plan.layout)
        else:  # one device, or x split unevenly (XLA partitions the roll)
            v = diff(f, axis, inv_dx, plan.order, plan.bloch[axis])
        if axis == 0 and plan.layout is not None and (L or (plan.order == 4 and plan.walls[0])):
            win = halo.edge_windows(f, min(L + 4, plan.shape[0]), plan.layout)
        if plan.order == 4 and plan.walls[axis]:
            if win is None:
                wall = pml_mod.wall_terms_4(f, axis, kind == "H", inv_dx)
            else:
                wall = halo.wall_terms_4(*win, kind == "H", inv_dx, plan.shape[0])
            for start, term in wall:
                if win is not None:
                    term = halo.replicated(term, plan.layout)
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
                    p, term = halo.replicated((p, term), plan.layout)
                new[key] = p
                v = add(v, out, sign, axis, start, term)
        return v

    Fx, Fy, Fz = F
    cx = d(Fz, 1, 2, 0, 1) - d(Fy, 2, 1, 0, -1)
    cy = d(Fx, 2, 0, 1, 1) - d(Fz, 0, 2, 1, -1)
    cz = d(Fy, 0, 1, 2, 1) - d(Fx, 1, 0, 2, -1)
    return (cx, cy, cz), new, slabs


def step(plan, arrays, state, _, z=None):
    """One time step; ``z`` (None, or E-shaped) is added to the updated E before the
    monitors and probes read it (the generic adjoint takes E's cotangent through it)."""
    E, H, psi, n = state["E"], state["H"], state["psi"], state["n"]
    dt = plan.dt
    # fields are tuples of components: separate buffers fuse into one pass each
    tf = next((s for s in plan.sources if isinstance(s, TFSF)), None)
    aux = state["aux"]
    inv_dx = 1.0 / plan.dx
    courant = dt / plan.dx
    cE, newH, slabsH = curl(plan, arrays, E, "H", psi)
    if tf is not None:  # TF/SF: incident E at step n, then the 1-D grid's H to n + 1/2
        t_e = n.astype(E[0].dtype) * dt
        corr = tfsf_mod.correction_h(tf, plan.shape, aux[0], aux[1], inv_dx, E[0].dtype, t_e, dt)
        cE = tuple(c + k for c, k in zip(cE, corr))
        aux = (aux[0], tfsf_mod.aux_step_h(tf, aux[0], aux[1], courant))
    H = tuple(h - dt * c for h, c in zip(H, cE))
    if slabsH:
        H = terms.add_slabs(H, slabsH, -dt)
    H = _add_sources(plan, arrays, H, "H", n.astype(jnp.finfo(E[0].dtype).dtype) * dt)
    H = terms.pmc(plan, H, "H")
    cH, newE, slabsE = curl(plan, arrays, H, "E", psi)
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
    if plan.subpixel_slabs is not None:  # several devices: each corrects its slab's nodes
        E, sub, slab_block = subpixel_slabs.correct(plan, arrays, E, H, E_old, sub, state["sub_block"])
    elif plan.subpixel is not None and plan.subpixel_inline:  # one gather fusion, one scatter
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
    E = _add_sources(plan, arrays, E, "E", t)
    E = terms.pmc(plan, E, "E")
    if z is not None:
        E = tuple(e + zc for e, zc in zip(E, z))
    psi = {**psi, **newH, **newE}
    dft = tuple(mon_mod.accumulate(m, acc, E, H, n, dt) for m, acc in zip(plan.monitors, state["dft"]))
    rec = [(E if p.field == "E" else H)[p.component][tuple(p.index)] for p in plan.probes]
    out = jnp.stack(rec) if rec else jnp.zeros((0,), dtype)
    if plan.subpixel_slabs is not None:
        block = slab_block
    else:
        block = acc if plan.subpixel_inline else state["sub_block"]
    new = {"E": E, "H": H, "psi": psi, "dft": dft, "J": J, "aux": aux, "n": n + 1}
    return {**new, "sub": sub, "sub_block": block}, out


def _add_sources(plan, arrays, F, kind: str, t):
    """Add the current sources driving ``kind`` ("E": electric currents at ``t = (n + 1/2)
    dt``; "H": the magnetic sheets at ``t = n dt``) to the fields ``F``."""
    dtype = jnp.finfo(F[0].dtype).dtype
    F = list(F)
    for s_i, src in enumerate(s for s in plan.sources if not isinstance(s, TFSF)):
        if (src.field if isinstance(src, CurrentSheet) else "E") != kind:
            continue
        where = tuple(src.index) if isinstance(src, PointDipole) else src.slices
        c = src.component
        value = -arrays["src_cb"][s_i] * src.waveform(t).astype(dtype)
        sl, block = terms.source_term(plan, value, where, c, dtype)
        if plan.pml_inplace[0]:  # the sources follow the x slabs (terms.inplace_default)
            F[c] = F[c].at[sl].add(block)
        else:
            F[c] = F[c] + terms.placed(block, sl, plan.shape)
    return tuple(F)


@partial(jax.jit, static_argnames=("plan", "steps"), donate_argnames=("state",))
def advance(plan, arrays, state, steps: int):
    state, rec = jax.lax.scan(partial(step, plan, arrays), state, None, length=steps)
    finite = jnp.all(jnp.stack([jnp.all(jnp.isfinite(f)) for f in state["E"] + state["H"]]))
    return state, rec, finite


def make_plan(sim: GridSimulation, steps: int, dtype, arrays: dict, pml: tuple, layout=None) -> Plan:
    """The static description of ``sim``'s step (what :func:`run` steps; the calculation
    window builds its slabs' plans from it). Pops the subpixel entries ``sub_region`` and
    ``sub_inline`` from ``arrays`` (coefficients of :func:`coefficients`)."""
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
    pmc = tuple(isinstance(b, CPML) and b.wall == "pmc" for b in g.boundary)
    if any(pmc) and as_layout(layout) is not None:
        raise ConfigError("PMC walls (even mirror symmetry) run on one device")
    return Plan(
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
        pmc,
    )
