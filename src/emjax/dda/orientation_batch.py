"""One batch of orientations of an orientation average: the incident fields and
polarizabilities of its orientations (both polarizations each), the batched solve, the cross
sections and far fields, on one device (the device of the interaction tensor it is given).
:func:`emjax.dda.orientation.average` runs one batch per device side by side when a layout
deals the orientations out whole."""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from .. import krylov
from ..scattering import OrientationAverage, euler_matrix, mueller_from_amplitude
from . import observables
from .matvec import DDAOperator
from .problem import DDAProblem

_LAB = np.eye(3)


@partial(jax.jit, static_argnames=("grid",))
def _incident(grid, d, k, direction, polarization):
    x, y, z = observables.lattice_axes(grid, d, jnp.float64)
    a = direction
    phase = jnp.exp(1j * k * (a[0] * x[:, None, None] + a[1] * y[None, :, None] + a[2] * z[None, None, :]))
    return polarization[:, None, None, None] * phase[None]


_incident_many = jax.jit(jax.vmap(_incident, in_axes=(None, None, None, 0, 0)), static_argnums=0)
_cross_sections_many = jax.jit(jax.vmap(observables.cross_sections, in_axes=(0, 0, 0, None, None)))


@partial(jax.jit, static_argnames=("batch",))
def _far_points_many(P, positions, directions, k, batch):
    return jax.vmap(lambda p, n: observables.far_field_points(p, positions, n, k, batch=batch))(P, directions)


@partial(jax.jit, static_argnames=("batch",))
def _far_sum_many(P, directions, d, k, batch):
    return jax.vmap(lambda p, n: observables.far_field_sum(p, n, d, k, batch=batch))(P, directions)


#: right-hand sides per far-field call (bounds the temporaries of the separable sum)
_FAR_FIELD_GROUP = 8


@dataclass(frozen=True)
class _Env:
    """What every batch of orientations shares (host data: each device makes its own copies)."""

    problem: DDAProblem
    q: OrientationAverage
    grid: tuple
    k: float
    d: float
    ms: tuple
    pol: object
    variant: str
    solver: object
    dirs: object  # orientation._Directions
    ff_batch: int
    sparse: bool
    domains: np.ndarray
    occupied: np.ndarray | None
    positions: np.ndarray | None


def solve_part(env: _Env, keys, Dhat, label, progress, layout=None):
    """Solve the orientations ``keys`` (both polarizations each, one batch) with the
    interaction tensor ``Dhat`` and compute their observables, all on ``Dhat``'s device (or,
    with a ``layout`` spanning processes, split over it). Returns ({key: record}, solve
    seconds, far-field seconds)."""
    t_solve = time.perf_counter()
    grid, k, d, q, vdt = env.grid, env.k, env.d, env.q, np.complex128
    domains = jnp.asarray(env.domains)
    mask = domains >= 0
    dom_idx = jnp.clip(domains, 0)
    props, pols, alphas, Rs = [], [], [], []
    for key in keys:
        beta, gamma = q.angles(key)
        R = euler_matrix(0.0, beta, gamma)
        to_particle = R.T
        prop = to_particle @ _LAB[2]
        Rs.append(R)
        for e in (to_particle @ _LAB[0], to_particle @ _LAB[1]):
            props.append(prop)
            pols.append(e)
            alphas.append([env.pol(m, d, k, prop, e) for m in env.ms])
    alphas = jnp.asarray(np.array(alphas), vdt)  # (B, n_domains)
    s = jnp.where(mask[None], jnp.sqrt(alphas)[:, dom_idx], 0).astype(vdt)
    E = _incident_many(grid, d, k, jnp.asarray(np.array(props)), jnp.asarray(np.array(pols), vdt))
    cb = None if progress is None else (lambda it, r: progress(label, it, r))
    if cb is not None:
        cb(0, 1.0)
    if layout is None:
        op = DDAOperator(Dhat, s, env.variant)
        res = krylov.solve_batched(
            op, s[:, None] * E, env.solver, in_axes=DDAOperator(None, 0, env.variant), progress=cb
        )
    else:  # the right-hand sides split over the devices of several processes
        from . import distributed

        res = distributed.solve_batched(Dhat, s, s[:, None] * E, env.solver, env.variant, layout, progress=cb)
    solve_s = time.perf_counter() - t_solve
    t_ff = time.perf_counter()
    X = jnp.stack([r.x for r in res])
    P = s[:, None] * X
    inv_alpha = jnp.where(mask[None], 1 / alphas[:, dom_idx], 0)
    ce, ca = _cross_sections_many(P, E, inv_alpha, mask, k)
    # far fields, many right-hand sides per call (a loop of small calls is launch-bound
    # on a GPU); directions in each orientation's particle frame
    dirs = env.dirs
    dirs_p = np.repeat(np.stack([dirs.lab @ R for R in Rs]), 2, axis=0)
    if env.sparse:
        occ = jnp.asarray(env.occupied)
        positions = jnp.asarray(env.positions, dtype=np.float64)
    amps = []  # every call queued before any result is read
    for start in range(0, P.shape[0], _FAR_FIELD_GROUP):
        sl = slice(start, start + _FAR_FIELD_GROUP)
        dp = jnp.asarray(dirs_p[sl], dtype=np.float64)
        if env.sparse:
            Pocc = P[sl].reshape(P[sl].shape[0], 3, -1)[:, :, occ]
            amps.append(_far_points_many(Pocc, positions, dp, k, env.ff_batch))
        else:
            amps.append(_far_sum_many(P[sl], dp, d, k, env.ff_batch))
    ce, ca = np.asarray(ce), np.asarray(ca)
    amps = np.concatenate([np.asarray(a) for a in amps])
    out = {}
    for i, key in enumerate(keys):
        R = Rs[i]
        rec = {"Cext": [], "Cabs": [], "F": [], "it": [], "conv": []}
        for j in (0, 1):
            r = res[2 * i + j]
            if not r.converged:
                warnings.warn(
                    f"DDA orientation beta={q.angles(key)[0]:g}, gamma={q.angles(key)[1]:g} "
                    f"polarization {'XY'[j]}: {r.message}",
                    RuntimeWarning,
                    stacklevel=5,
                )
            rec["Cext"].append(float(ce[2 * i + j]))
            rec["Cabs"].append(float(ca[2 * i + j]))
            rec["F"].append((-1j * k**3) * (amps[2 * i + j] @ R.T))  # back to the lab frame
            rec["it"].append(r.iterations)
            rec["conv"].append(r.converged)
        out[key] = _finish_node(rec, dirs, k)
    return out, solve_s, time.perf_counter() - t_ff


def _finish_node(rec, dirs, k) -> dict:
    FX, FY = rec["F"]
    shape = dirs.T.shape + (3,)
    S = observables.amplitude_elements(
        FX[: dirs.n_ang].reshape(shape), FY[: dirs.n_ang].reshape(shape), dirs.Ph, dirs.th, dirs.ph
    )
    M = mueller_from_amplitude(*np.moveaxis(S, -1, 0))  # (n_alpha, n_theta, 4, 4)
    out = {
        "Cext": np.array(rec["Cext"]),
        "Cabs": np.array(rec["Cabs"]),
        "M_avg": M.mean(axis=0),
        "M_yz": M[0],
        "it": np.array(rec["it"]),
        "conv": np.array(rec["conv"]),
    }
    if dirs.quad:
        qn, qw, mu = dirs.quad
        cg = [observables.integrated_scattering(F[dirs.n_ang + 1 :], qn, qw, mu, k) for F in (FX, FY)]
        out["Csca_int"] = np.array([c for c, _ in cg])
        out["g"] = np.array([g for _, g in cg])
    return out
