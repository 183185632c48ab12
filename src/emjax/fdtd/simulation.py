"""FDTD simulation spec and the time loop (chunks of ``lax.scan`` on the device)."""

from __future__ import annotations

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
from ..errors import ConfigError, require_int
from ..materials import Dispersive, DrudePole, LorentzPole
from . import monitors as mon_mod
from . import pml as pml_mod
from . import tfsf as tfsf_mod
from .grid import CPML, PEC, Grid
from .monitors import DFTPlane
from .sources import PlaneSource, PointDipole
from .tfsf import TFSF
from .update import d_backward, d_forward


@dataclass(frozen=True)
class Probe:
    """Record ``field`` ("E" or "H") component ``component`` at node ``index`` every step."""

    index: tuple
    component: int
    field: str = "E"

    def __post_init__(self):
        if len(self.index) != 3:
            raise ConfigError(f"Probe.index must be (i, j, k), got {self.index!r}")
        require_int("Probe.component", self.component, 0, 2)
        if self.field not in ("E", "H"):
            raise ConfigError(f"Probe.field must be 'E' or 'H', got {self.field!r}")


@dataclass(frozen=True, eq=False)
class Simulation:
    """Grid + materials + sources + probes.

    ``eps`` and ``sigma`` are scalars or per-cell arrays ``(nx, ny, nz)`` (relative
    permittivity, conductivity in units of 1/length with eps0 = c = 1), applied to all
    three E components of a cell.
    """

    grid: Grid
    eps: object = 1.0
    sigma: object = 0.0
    sources: tuple = ()
    probes: tuple = ()
    monitors: tuple = ()
    dispersive: tuple | None = None  # (materials.Dispersive with Drude/Lorentz poles, bool mask)
    pec: object = None  # bool mask of perfectly conducting cells (all E nodes of a cell = 0)

    def __post_init__(self):
        if not isinstance(self.grid, Grid):
            raise ConfigError("grid must be an emjax.fdtd.Grid")
        for name in ("eps", "sigma"):
            v = getattr(self, name)
            if np.ndim(v) == 0:
                if not np.isfinite(v):
                    raise ConfigError(f"{name} must be finite, got {v!r}")
            elif np.shape(v) != self.grid.shape:
                raise ConfigError(f"{name} must be a scalar or of shape {self.grid.shape}, got {np.shape(v)}")
        if np.any(np.asarray(self.eps) < 1):
            raise ConfigError("eps must be >= 1 (dispersive or metallic media: use poles/PEC)")
        if np.any(np.asarray(self.sigma) < 0):
            raise ConfigError("sigma must be >= 0")
        object.__setattr__(self, "sources", tuple(self.sources))
        object.__setattr__(self, "probes", tuple(self.probes))
        object.__setattr__(self, "monitors", tuple(self.monitors))
        for s in self.sources:
            if not isinstance(s, (PointDipole, PlaneSource, TFSF)):
                raise ConfigError(f"sources must be PointDipole, PlaneSource or TFSF objects, got {s!r}")
            s.check(self.grid.shape)
        if sum(isinstance(s, TFSF) for s in self.sources) > 1:
            raise ConfigError("at most one TFSF source per simulation")
        if self.dispersive is not None:
            mat, mask = self.dispersive
            if (
                not isinstance(mat, Dispersive)
                or not mat.poles
                or not all(isinstance(p, (DrudePole, LorentzPole)) for p in mat.poles)
            ):
                raise ConfigError("dispersive must be (materials.Dispersive with Drude/Lorentz poles, mask)")
            for p in mat.poles:
                if isinstance(p, LorentzPole) and p.omega_0 * self.grid.dt >= 2:
                    raise ConfigError(
                        f"Lorentz pole omega_0 = {p.omega_0} needs dt < 2 / omega_0 "
                        f"(dt = {self.grid.dt:.3g}): refine the grid"
                    )
            if np.shape(mask) != self.grid.shape:
                raise ConfigError(f"dispersive mask must have shape {self.grid.shape}")
            if mat.eps_inf < 1:
                raise ConfigError("dispersive eps_inf must be >= 1")
        if self.pec is not None and np.shape(self.pec) != self.grid.shape:
            raise ConfigError(f"pec mask must have shape {self.grid.shape}")
        for m in self.monitors:
            if not isinstance(m, DFTPlane):
                raise ConfigError(f"monitors must be DFTPlane objects, got {m!r}")
            m.check(self.grid.shape)
        for p in self.probes:
            if not isinstance(p, Probe):
                raise ConfigError(f"probes must be Probe objects, got {p!r}")
            for ax, (i, n) in enumerate(zip(p.index, self.grid.shape)):
                require_int(f"Probe.index[{ax}]", i, 0, n - 1)

    def memory_bytes(self) -> int:
        item = np.dtype(precision(self.grid.precision).real).itemsize
        n = self.grid.n_cells
        arrays = 6 + (2 if np.ndim(self.eps) or np.ndim(self.sigma) else 0)
        psi = 0
        for ax, b in enumerate(self.grid.boundary):
            if isinstance(b, CPML):
                psi += 8 * 2 * b.thickness * n // self.grid.shape[ax]
        return (arrays * n + psi) * item * 2  # x2: XLA's double buffering of the carry


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


def _coefficients(sim: Simulation, dtype):
    g = sim.grid
    dt = g.dt
    eps = np.asarray(sim.eps, dtype=float)
    sig = np.asarray(sim.sigma, dtype=float)
    beta_sum = 0.0
    arrays = {}
    if sim.dispersive is not None:
        # Drude ADE (J-E coupling, Taflove ch. 9): J' = k J + beta (E' + E) per pole
        mat, mask = sim.dispersive
        mask = np.asarray(mask, bool)
        eps = np.where(mask, mat.eps_inf, eps)
        ks, betas, lor = [], [], []
        for p in mat.poles:
            if isinstance(p, DrudePole):
                k = (1 - p.gamma * dt / 2) / (1 + p.gamma * dt / 2)
                beta = (p.omega_p**2 * dt / 2) / (1 + p.gamma * dt / 2)
                ks.append(np.where(mask, k, 0.0))
                betas.append(np.where(mask, beta, 0.0))
            else:
                # P'' + gamma P' + w0^2 P = d_eps w0^2 E by central differences at step n:
                # P^(n+1) = c1 P^n + c2 P^(n-1) + c3 E^n
                damp = 1 + p.gamma * dt / 2
                c1 = (2 - (p.omega_0 * dt) ** 2) / damp
                c2 = -(1 - p.gamma * dt / 2) / damp
                c3 = np.where(mask, p.delta_eps * (p.omega_0 * dt) ** 2 / damp, 0.0)
                lor.append((jnp.asarray(c1, dtype), jnp.asarray(c2, dtype), jnp.asarray(c3, dtype)))
        beta_sum = sum(betas) if betas else 0.0
        arrays["pole_k"] = tuple(jnp.asarray(k, dtype) for k in ks)
        arrays["pole_beta"] = tuple(jnp.asarray(b, dtype) for b in betas)
        arrays["lorentz"] = tuple(lor)
    if sim.pec is not None:
        arrays["pec_keep"] = jnp.asarray(~np.asarray(sim.pec, bool), dtype)
    den = 2 * eps + sig * dt + beta_sum * dt
    ca = (2 * eps - sig * dt - beta_sum * dt) / den
    cb = 2 * dt / den
    arrays.update({"ca": jnp.asarray(ca, dtype), "cb": jnp.asarray(cb, dtype)})
    pml = []
    for ax, b in enumerate(g.boundary):
        if isinstance(b, CPML):
            shape = [1, 1, 1]
            shape[ax] = b.thickness
            for kind, half in (("E", False), ("H", True)):
                for side, coefs in zip(("lo", "hi"), pml_mod.profile(b, g.shape[ax], g.dx, dt, half)):
                    arrays[f"pml{kind}{ax}{side}"] = tuple(
                        jnp.asarray(v.reshape(shape), dtype) for v in coefs
                    )
            pml.append(b.thickness)
        else:
            pml.append(0)
    # the current source's coefficient is the E update's dt/eps at that cell
    cb_full = np.broadcast_to(cb, g.shape)
    arrays["src_cb"] = tuple(
        jnp.asarray(cb_full[s.index if isinstance(s, PointDipole) else s.slices] * s.amplitude, dtype)
        for s in sim.sources
        if not isinstance(s, TFSF)
    )
    return arrays, tuple(pml)


def _initial_state(sim, plan, dtype, initial):
    g = sim.grid
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
                        for side in ("lo", "hi"):
                            psi[f"{kind}{ax}{comp}{side}"] = jnp.zeros(shp, dtype)
    cdtype = jnp.result_type(dtype, jnp.complex64)
    dft = tuple(mon_mod.zeros(m, g.shape, cdtype) for m in plan.monitors)
    J = tuple(tuple(jnp.zeros(g.shape, dtype) for _ in range(3)) for _ in range(plan.n_poles))
    # Lorentz: (P^n, P^(n-1)) per pole and component
    J = J + tuple(
        tuple((jnp.zeros(g.shape, dtype), jnp.zeros(g.shape, dtype)) for _ in range(3))
        for _ in range(plan.n_lorentz)
    )
    aux = (jnp.zeros(plan.aux_len, dtype), jnp.zeros(plan.aux_len, dtype)) if plan.aux_len else ()
    return {"E": E, "H": H, "psi": psi, "dft": dft, "J": J, "aux": aux, "n": jnp.zeros((), jnp.int32)}


def _curl(plan, arrays, F, kind, psi):
    """Curl with CPML slab corrections; returns (curl, updated psi entries)."""
    diff = d_forward if kind == "H" else d_backward  # H update differentiates E forward
    inv_dx = 1.0 / plan.dx
    new = {}

    def d(f, axis, comp):
        v = diff(f, axis, inv_dx, plan.order)
        L = plan.pml[axis]
        if L:
            n = plan.shape[axis]
            for side, (start, before, after) in (("lo", (0, 0, n - L)), ("hi", (n - L, n - L, 0))):
                key = f"{kind}{axis}{comp}{side}"
                b, c, km1 = arrays[f"pml{kind}{axis}{side}"]
                vs = pml_mod.slab_derivative(f, axis, start, L, kind == "H", inv_dx)
                p = b * psi[key] + c * vs
                new[key] = p
                v = v + pml_mod.pad_to(km1 * vs + p, axis, before, after)
        return v

    Fx, Fy, Fz = F
    cx = d(Fz, 1, 2) - d(Fy, 2, 1)
    cy = d(Fx, 2, 0) - d(Fz, 0, 2)
    cz = d(Fy, 0, 1) - d(Fx, 1, 0)
    return (cx, cy, cz), new


def _pec(plan, E):
    """Zero tangential E on the wall planes i = 0 of walled axes (1-D masks, fused)."""
    if not any(plan.walls):
        return E
    masks = []
    for ax, (n, wall) in enumerate(zip(plan.shape, plan.walls)):
        m = jnp.ones((n,), E[0].dtype)
        if wall:
            m = m.at[0].set(0)
        shape = [1, 1, 1]
        shape[ax] = n
        masks.append(m.reshape(shape))
    out = []
    for c in range(3):
        f = E[c]
        for ax in range(3):
            if ax != c and plan.walls[ax]:
                f = f * masks[ax]
        out.append(f)
    return tuple(out)


def _step(plan, arrays, state, _):
    E, H, psi, n = state["E"], state["H"], state["psi"], state["n"]
    dt = plan.dt
    # fields are tuples of components: separate buffers fuse into one pass each
    tf = next((s for s in plan.sources if isinstance(s, TFSF)), None)
    aux = state["aux"]
    inv_dx = 1.0 / plan.dx
    courant = dt / plan.dx
    cE, newH = _curl(plan, arrays, E, "H", psi)
    if tf is not None:  # TF/SF: incident E at step n, then the 1-D grid's H to n + 1/2
        corr = tfsf_mod.correction_h(tf, plan.shape, aux[0], aux[1], inv_dx, E[0].dtype)
        cE = tuple(c + k for c, k in zip(cE, corr))
        aux = (aux[0], tfsf_mod.aux_step_h(tf, aux[0], aux[1], courant))
    H = tuple(h - dt * c for h, c in zip(H, cE))
    cH, newE = _curl(plan, arrays, H, "E", psi)
    if tf is not None:
        corr = tfsf_mod.correction_e(tf, plan.shape, aux[0], aux[1], inv_dx, E[0].dtype)
        cH = tuple(c + k for c, k in zip(cH, corr))
    ca, cb = arrays["ca"], arrays["cb"]
    J = state["J"]
    if plan.n_poles:
        # curl H - (1/2) sum_p (1 + k_p) J_p, then J_p' = k_p J_p + beta_p (E' + E)
        cH = tuple(
            c - 0.5 * sum((1 + arrays["pole_k"][p]) * J[p][i] for p in range(plan.n_poles))
            for i, c in enumerate(cH)
        )
    lorentz = J[plan.n_poles :]
    new_lorentz = ()
    if plan.n_lorentz:
        # P^(n+1) from E^n, then -(P^(n+1) - P^n)/dt enters Ampere's law
        new_lorentz = tuple(
            tuple((c1 * P[i][0] + c2 * P[i][1] + c3 * E[i], P[i][0]) for i in range(3))
            for (c1, c2, c3), P in zip(arrays["lorentz"], lorentz)
        )
        cH = tuple(
            c - sum(Pn[i][0] - Po[i][0] for Pn, Po in zip(new_lorentz, lorentz)) / dt
            for i, c in enumerate(cH)
        )
    E_old = E
    E = _pec(plan, tuple(ca * e + cb * c for e, c in zip(E, cH)))
    if plan.has_pec:
        E = tuple(e * arrays["pec_keep"] for e in E)
    if plan.n_poles:
        J = tuple(
            tuple(
                arrays["pole_k"][p] * J[p][i] + arrays["pole_beta"][p] * (E[i] + E_old[i]) for i in range(3)
            )
            for p in range(plan.n_poles)
        )
    J = tuple(J[: plan.n_poles]) + new_lorentz
    dtype = E[0].dtype
    t = (n.astype(dtype) + 0.5) * dt
    if tf is not None:
        aux = (tfsf_mod.aux_step_e(tf, aux[0], aux[1], courant, (n + 1).astype(dtype) * dt), aux[1])
    E = list(E)
    for s_i, src in enumerate(s for s in plan.sources if not isinstance(s, TFSF)):
        where = tuple(src.index) if isinstance(src, PointDipole) else src.slices
        c = src.component
        E[c] = E[c].at[where].add(-arrays["src_cb"][s_i] * src.waveform(t).astype(dtype))
    E = tuple(E)
    psi = {**psi, **newH, **newE}
    dft = tuple(mon_mod.accumulate(m, acc, E, H, n, dt) for m, acc in zip(plan.monitors, state["dft"]))
    rec = [(E if p.field == "E" else H)[p.component][tuple(p.index)] for p in plan.probes]
    out = jnp.stack(rec) if rec else jnp.zeros((0,), dtype)
    return {"E": E, "H": H, "psi": psi, "dft": dft, "J": J, "aux": aux, "n": n + 1}, out


@partial(jax.jit, static_argnames=("plan", "steps"), donate_argnames=("state",))
def _advance(plan, arrays, state, steps: int):
    state, rec = jax.lax.scan(partial(_step, plan, arrays), state, None, length=steps)
    finite = jnp.all(jnp.stack([jnp.all(jnp.isfinite(f)) for f in state["E"] + state["H"]]))
    return state, rec, finite


@dataclass(frozen=True, eq=False)
class FDTDResult:
    """Probe time series ``(steps, n_probes)`` at times ``(n + 1) dt`` (E) and the fields."""

    simulation: Simulation
    probes: np.ndarray
    times: np.ndarray
    E: jax.Array
    H: jax.Array
    steps: int
    seconds: float
    compile_seconds: float
    dft: tuple = ()  # per monitor: {"E": (nf, 2, n1, n2), "H": ...} complex

    def flux(self, monitor: int = 0) -> np.ndarray:
        """Flux spectrum through DFT monitor ``monitor`` (towards +axis)."""
        d = self.dft[monitor]
        return mon_mod.flux(d["E"], d["H"], self.simulation.grid.dx**2)

    def flux_difference(self, other: FDTDResult, monitor: int = 0) -> np.ndarray:
        """Flux of (this - other) fields: e.g. the reflected flux, with ``other`` the run
        without the scatterer (same sources and monitors)."""
        a, b = self.dft[monitor], other.dft[monitor]
        return mon_mod.flux(a["E"] - b["E"], a["H"] - b["H"], self.simulation.grid.dx**2)

    @property
    def cells_per_second(self) -> float:
        return self.simulation.grid.n_cells * self.steps / max(self.seconds, 1e-12)


def run(
    sim: Simulation,
    steps: int,
    *,
    chunk: int | None = None,
    initial=None,
    progress: Callable[[int, int], None] | None = None,
    checkpoint: str | Path | None = None,
) -> FDTDResult:
    """Advance ``steps`` time steps on the default device.

    The loop runs as ``lax.scan`` over chunks of ``chunk`` steps (default: ~steps/20, at
    least 50); between chunks the host checks for NaN/Inf (raising FloatingPointError with
    the step) and calls ``progress(done, steps)``. ``initial = (E, H)`` sets the fields at
    step 0 (E at t = 0, H at t = -dt/2).

    ``checkpoint``: a file (.npz) written atomically at every chunk boundary with the whole
    state and the probe records so far. If it exists when ``run`` starts, the run resumes
    from it (bit for bit the same as an uninterrupted run); delete it to start afresh.
    """
    steps = require_int("steps", steps, 1)
    check_memory(sim.memory_bytes(), f"FDTD on a {'x'.join(map(str, sim.grid.shape))} grid")
    chunk = chunk or max(1, min(steps, max(steps // 20, 50)))
    with precision_scope():
        g = sim.grid
        dtype = precision(g.precision).real
        arrays, pml = _coefficients(sim, dtype)
        walls = tuple(isinstance(b, (PEC, CPML)) for b in g.boundary)
        poles = sim.dispersive[0].poles if sim.dispersive is not None else ()
        n_poles = sum(isinstance(p, DrudePole) for p in poles)
        n_lorentz = len(poles) - n_poles
        tf = next((s for s in sim.sources if isinstance(s, TFSF)), None)
        aux_len = tfsf_mod.aux_length(tf, g.shape, steps, g.courant) if tf is not None else 0
        plan = _Plan(
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
        )
        state = _initial_state(sim, plan, dtype, initial)
        recs = []
        if checkpoint is not None and Path(checkpoint).exists():
            state, recs = _load_checkpoint(Path(checkpoint), state, plan)
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
                _save_checkpoint(Path(checkpoint), state, recs, plan)
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
        )


def _fingerprint(plan) -> str:
    return repr(
        (
            plan.shape,
            plan.dx,
            plan.dt,
            plan.order,
            plan.pml,
            plan.walls,
            len(plan.probes),
            len(plan.monitors),
            plan.n_poles,
            plan.n_lorentz,
            plan.has_pec,
            plan.aux_len,
        )
    )


def _save_checkpoint(path: Path, state, recs, plan) -> None:
    leaves = jax.tree_util.tree_leaves(state)
    data = {f"leaf{i}": np.asarray(v) for i, v in enumerate(leaves)}
    data["probes"] = np.concatenate(recs) if recs else np.zeros((0,))
    data["fingerprint"] = np.array(_fingerprint(plan))
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez(tmp, **data)
    os.replace(tmp, path)  # atomic: a crash never leaves a half-written checkpoint


def _load_checkpoint(path: Path, template, plan):
    with np.load(path) as f:
        if str(f["fingerprint"]) != _fingerprint(plan):
            raise ConfigError(f"checkpoint {path} belongs to a different simulation")
        leaves, treedef = jax.tree_util.tree_flatten(template)
        loaded = [jnp.asarray(f[f"leaf{i}"], dtype=leaf.dtype) for i, leaf in enumerate(leaves)]
        probes = f["probes"]
    state = jax.tree_util.tree_unflatten(treedef, loaded)
    return state, ([probes] if probes.size else [])
