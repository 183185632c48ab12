"""Orientation averaging, with many orientations solved at once (batched right-hand sides).

The DDA matrix of one particle (the FFT of its interaction tensor) does not depend on the
particle's orientation; the incident field, LDR's polarizability and the scattering directions
do. So the orientations are right-hand sides of one system, and :func:`average` solves a batch
of them per matvec (batched FFTs) instead of one after another as ADDA does.

Orientation (alpha, beta, gamma): ZYZ Euler angles of the particle in degrees (as ADDA). The
incident direction in the particle frame depends on (beta, gamma) only; alpha turns the
incident polarization and the scattering plane together, so the X and Y solves at
(0, beta, gamma) give every alpha without new solves:

    M(theta, phi; alpha, beta, gamma) = M(theta, phi - alpha; 0, beta, gamma),

and cross sections for unpolarized light do not depend on alpha at all. At beta = 0 and 180
all gamma are the same orientation up to alpha, so one gamma is solved there.

Quadrature (:class:`OrientationAverage`): Clenshaw-Curtis in cos(beta) (nodes uniform in
beta; ADDA uses Romberg on as many points uniform in cos(beta)) - a spectrally accurate rule;
see :func:`emjax.scattering.clenshaw_curtis` and the test comparing it with Romberg at equal
numbers of solves), the periodic trapezoid rule in gamma (optimal for a smooth periodic function) and in
alpha. Both beta and gamma rules are nested; each is refined (doubled) until halving it changes
the averaged Cext and Cabs by less than ``eps`` times Cext, or up to its maximum level - the
accuracy control of ADDA's ``avg_params.dat`` (eps, Jmin, Jmax).
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from .. import krylov
from .. import progress as progress_bars
from ..backend import check_memory, device_memory_bytes, precision, precision_scope
from ..errors import ConfigError, require_int
from ..io import check_output_file
from ..layout import as_layout
from ..scattering import OrientationAverage, euler_matrix, mueller_from_amplitude, scattering_basis
from . import average_checkpoint, interaction, observables
from .matvec import DDAOperator
from .problem import _KRYLOV_VECTORS, DDAProblem
from .results import AveragedResult

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


def _memory(problem, grid) -> tuple[int, int]:
    """(bytes shared by all right-hand sides, bytes per right-hand side) of a batched solve:
    the Krylov vectors, incident field and scaling per system, and the FFT work arrays."""
    n = math.prod(grid)
    c = np.dtype(precision(problem.precision).complex).itemsize
    fft = math.prod(interaction.fft_shape(grid))
    return problem.memory_bytes(grid), (_KRYLOV_VECTORS + 6) * 3 * n * 16 + 3 * fft * c * 3


def average(
    problem: DDAProblem,
    quadrature: OrientationAverage | None = None,
    solver: krylov._Method | None = None,
    *,
    batch: int | None = None,
    max_batch: int | None = None,
    progress: bool | Callable[[str, int, float], None] = True,
    variant: str = "pruned",
    checkpoint: str | Path | None = None,
    layout=None,
) -> AveragedResult:
    """Average the DDA over random orientation of ``problem``'s particle.

    ``batch``: orientations solved together (each two right-hand sides); default: as many as
    fit in half of the free device memory, at most ``max_batch`` (default 64 on a GPU, 1 on a
    CPU: there a batch does not make a matvec cheaper per right-hand side, and a large one
    falls out of cache - measured at 16^3, 2.2 ms per right-hand side in batches of 8,
    3.9 ms in batches of 52). ``batch=1`` solves one orientation (both
    polarizations) at a time. ``progress``: True (default) one bar for the whole average,
    orientations solved of those the current quadrature level needs, with the time left
    (:mod:`emjax.progress`); False none; a callable is called as ``progress(label,
    iterations, residual)`` between solver chunks. ``problem.orientation`` must be
    (0, 0, 0); ``problem.phi`` is not used (random orientation makes the averaged Mueller
    matrix the same in every scattering plane). ``checkpoint``: an ``.npz`` file updated after every batch; a run
    given an existing one resumes from it (same problem, any quadrature; see
    :mod:`emjax.dda.average_checkpoint`).
    ``layout``: devices to split each batch of right-hand sides over (a Layout, a count or a
    device list; None: one device); the default batch is then the one-device default times
    the device count (see :mod:`emjax.dda.distributed`).
    """
    q = quadrature or OrientationAverage()
    if not isinstance(q, OrientationAverage):
        raise ConfigError(f"quadrature must be an OrientationAverage, got {q!r}")
    if tuple(problem.orientation) != (0.0, 0.0, 0.0):
        raise ConfigError("orientation: an averaged run needs the default (0, 0, 0); it averages over all")
    if getattr(problem, "substrate", None) is not None:
        raise ConfigError(
            "substrate: a particle on a substrate has a fixed orientation (ADDA's surface mode); "
            "orientation averaging needs substrate=None"
        )
    if getattr(problem, "prop", None) is not None:
        raise ConfigError("prop: an orientation average covers all incidence directions; leave prop unset")
    solver = solver or krylov.QMR()
    if not isinstance(solver, krylov._Method):
        raise ConfigError(f"solver must be QMR(), BiCG() or BiCGStab(), got {solver!r}")
    if batch is not None:
        batch = require_int("batch", batch, 1, 1_000_000)
    if max_batch is None:
        max_batch = 1 if jax.default_backend() == "cpu" else 64
    max_batch = require_int("max_batch", max_batch, 1, 1_000_000)
    if variant not in interaction.LAYOUTS:
        raise ConfigError(f"variant must be one of {sorted(interaction.LAYOUTS)}, got {variant!r}")
    if checkpoint is not None:  # before any solve: a mistyped folder is not created
        check_output_file(checkpoint, "checkpoint", create_folder=False)
    make = lambda: progress_bars.StepBar("dda average", None, "orientation")  # noqa: E731
    with precision_scope(), progress_bars.shown(progress, make) as report:
        bar = report if isinstance(report, progress_bars.StepBar) else None
        report = None if bar is not None else report
        return _average(problem, q, solver, batch, max_batch, report, variant, checkpoint, layout, bar)


class _Directions:
    """Lab-frame scattering directions: theta x alpha planes, forward, sphere quadrature."""

    def __init__(self, problem, q, lat):
        k = problem.k
        self.theta = np.asarray(problem.theta)
        alpha = 360.0 * np.arange(q.n_alpha) / q.n_alpha
        self.planes = 90.0 - alpha  # M(theta, 90 - alpha; 0, b, g) is M(theta, 90; alpha, b, g)
        T, Ph = np.meshgrid(self.theta, self.planes)  # (n_alpha, n_theta)
        self.T, self.Ph = T, Ph
        n, self.th, self.ph = scattering_basis(T, Ph)
        dirs = [n.reshape(-1, 3), [[0.0, 0.0, 1.0]]]
        self.n_ang = T.size
        self.quad = None
        if problem.integrate:
            rmax = 0.5 * lat.d * math.sqrt(sum(m * m for m in lat.shape))
            qt, qp, qw = observables.sphere_quadrature(k * rmax)
            qn, _, _ = scattering_basis(qt, qp)
            self.quad = (qn, qw, np.cos(np.deg2rad(qt)))
            dirs.append(qn)
        self.lab = np.concatenate(dirs)


def _average(problem, q, solver, batch, max_batch, progress, variant, checkpoint, layout=None, bar=None):
    t_start = time.perf_counter()
    timings = {"solve_s": 0.0, "far_field_s": 0.0}
    cdt = precision(problem.precision).complex
    vdt = np.complex128
    lat = problem.lattice()
    results: dict = {}  # key -> per-node record (a checkpoint first: refused before any set-up)
    fp = average_checkpoint.fingerprint(problem, lat, q.n_alpha, solver)
    if checkpoint is not None:
        for (beta, gamma), rec in average_checkpoint.load(checkpoint, fp).items():
            key = q.key(beta, gamma)
            if key is not None:
                results.setdefault(key, rec)
        timings["resumed_orientations"] = len(results)
    grid, k, d = lat.shape, problem.k, lat.d
    ms = problem.refractive_indices()
    pol = problem.polarizability
    t0 = time.perf_counter()
    Dhat = interaction.interaction_fft(
        grid, d, k, cdt, kind=pol.interaction, layout=interaction.LAYOUTS[variant]
    )
    lay = as_layout(layout)  # None: one device
    if lay is not None:
        from . import distributed

        Dhat = distributed.replicate(Dhat, lay)
    Dhat.block_until_ready()
    timings["interaction_s"] = time.perf_counter() - t0

    domains = jnp.asarray(lat.domains)
    mask = domains >= 0
    dom_idx = jnp.clip(domains, 0)
    n_box = math.prod(grid)
    sparse = lat.n_dipoles * 4 < n_box
    if sparse:
        occupied = np.flatnonzero(np.asarray(lat.domains).ravel() >= 0)
        occ = jnp.asarray(occupied)
        positions = jnp.asarray(lat.positions(), dtype=np.float64)
    dirs = _Directions(problem, q, lat)
    # directions per far-field step: temporaries of ~2^23 complex numbers per right-hand side
    cells = lat.n_dipoles if sparse else 3 * grid[0] * grid[1]
    ff_batch = int(min(256, max(4, 2**23 // cells)))
    fixed, per_rhs = _memory(problem, grid)
    if batch:
        nodes_per_batch = batch
        check_memory(fixed + 2 * batch * per_rhs, f"an orientation batch of {batch} on {grid}")
    else:  # as many as fit in half the free memory
        fit = int(max(0.5 * device_memory_bytes() - fixed, 0) // (2 * per_rhs))
        nodes_per_batch = max(1, min(max_batch, fit)) * (1 if lay is None else lay.n)

    def solve_nodes(keys, label):
        t_solve = time.perf_counter()
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
                alphas.append([pol(m, d, k, prop, e) for m in ms])
        alphas = jnp.asarray(np.array(alphas), vdt)  # (B, n_domains)
        s = jnp.where(mask[None], jnp.sqrt(alphas)[:, dom_idx], 0).astype(vdt)
        E = _incident_many(grid, d, k, jnp.asarray(np.array(props)), jnp.asarray(np.array(pols), vdt))
        op = DDAOperator(Dhat, s, variant)
        cb = None if progress is None else (lambda it, r: progress(label, it, r))
        if cb is not None:
            cb(0, 1.0)
        if lay is None:
            res = krylov.solve_batched(
                op, s[:, None] * E, solver, in_axes=DDAOperator(None, 0, variant), progress=cb
            )
        else:  # the right-hand sides split over the devices
            res = distributed.solve_batched(Dhat, s, s[:, None] * E, solver, variant, lay, progress=cb)
        timings["solve_s"] += time.perf_counter() - t_solve
        t_ff = time.perf_counter()
        X = jnp.stack([r.x for r in res])
        P = s[:, None] * X
        inv_alpha = jnp.where(mask[None], 1 / alphas[:, dom_idx], 0)
        ce, ca = _cross_sections_many(P, E, inv_alpha, mask, k)
        ce, ca = np.asarray(ce), np.asarray(ca)
        # far fields, many right-hand sides per call (a loop of small calls is launch-bound
        # on a GPU); directions in each orientation's particle frame
        dirs_p = np.repeat(np.stack([dirs.lab @ R for R in Rs]), 2, axis=0)
        amps = []
        for start in range(0, P.shape[0], _FAR_FIELD_GROUP):
            sl = slice(start, start + _FAR_FIELD_GROUP)
            dp = jnp.asarray(dirs_p[sl], dtype=np.float64)
            if sparse:
                Pocc = P[sl].reshape(P[sl].shape[0], 3, -1)[:, :, occ]
                amps.append(np.asarray(_far_points_many(Pocc, positions, dp, k, ff_batch)))
            else:
                amps.append(np.asarray(_far_sum_many(P[sl], dp, d, k, ff_batch)))
        amps = np.concatenate(amps)
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
                        stacklevel=4,
                    )
                rec["Cext"].append(float(ce[2 * i + j]))
                rec["Cabs"].append(float(ca[2 * i + j]))
                rec["F"].append((-1j * k**3) * (amps[2 * i + j] @ R.T))  # back to the lab frame
                rec["it"].append(r.iterations)
                rec["conv"].append(r.converged)
            results[key] = _finish_node(rec, dirs, k)
        timings["far_field_s"] += time.perf_counter() - t_ff

    jb, jg = q.beta_levels[0], q.gamma_levels[0]
    history = []
    while True:
        w = q.weights(jb, jg)
        todo = [key for key in w if key not in results]
        for start in range(0, len(todo), nodes_per_batch):
            chunk = todo[start : start + nodes_per_batch]
            label = f"orientations {start + 1}-{start + len(chunk)} of {len(todo)} (levels {jb},{jg})"
            if bar is not None:  # the level's orientations: those done (resumed too) of all
                bar(len(w) - len(todo) + start, len(w))
            solve_nodes(chunk, label)
            if bar is not None:
                bar(len(w) - len(todo) + start + len(chunk), len(w))
            if checkpoint is not None:
                average_checkpoint.save(checkpoint, fp, {q.angles(key): rec for key, rec in results.items()})
        total = _integrate(results, w)
        err_b = _change(total, _integrate(results, q.weights(jb - 1, jg))) if jb > 1 else float("inf")
        err_g = _change(total, _integrate(results, q.weights(jb, jg - 1))) if q.n_fold and jg > 1 else 0.0
        history.append(
            {
                "levels": (jb, jg),
                "n_orientations": len(results),
                **total,
                "error_beta": err_b,
                "error_gamma": err_g,
            }
        )
        more_b = err_b > q.eps and jb < q.beta_levels[1]
        more_g = q.n_fold > 0 and err_g > q.eps and jg < q.gamma_levels[1]
        if not (more_b or more_g):
            break
        jb += int(more_b)
        jg += int(more_g)

    keys = sorted(results)
    w = q.weights(jb, jg)
    rec = [results[key] for key in keys]
    weights = np.array([w.get(key, 0.0) for key in keys])
    stack = lambda name: np.array([r[name] for r in rec])  # noqa: E731
    mueller = np.tensordot(weights, stack("M_avg"), axes=1)
    angles = np.array([q.angles(key) for key in keys])
    return AveragedResult(
        problem=problem,
        quadrature=q,
        lattice=lat,
        beta=angles[:, 0],
        gamma=angles[:, 1],
        weights=weights,
        Cext_xy=stack("Cext"),
        Cabs_xy=stack("Cabs"),
        Csca_int_xy=stack("Csca_int") if dirs.quad else None,
        g_xy=stack("g") if dirs.quad else None,
        theta=dirs.theta,
        mueller=mueller,
        mueller_orientations=stack("M_yz"),
        iterations=stack("it"),
        converged=stack("conv"),
        levels=(jb, jg),
        error={"beta": history[-1]["error_beta"], "gamma": history[-1]["error_gamma"]},
        history=tuple(history),
        batch_size=nodes_per_batch,
        seconds=time.perf_counter() - t_start,
        timings=timings,
    )


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


def _integrate(results, weights) -> dict:
    cext = sum(w * results[key]["Cext"].mean() for key, w in weights.items())
    cabs = sum(w * results[key]["Cabs"].mean() for key, w in weights.items())
    return {"Cext": float(cext), "Cabs": float(cabs)}


def _change(a, b) -> float:
    return max(abs(a["Cext"] - b["Cext"]), abs(a["Cabs"] - b["Cabs"])) / abs(a["Cext"])
