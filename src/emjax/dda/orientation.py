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
import threading
import time
from collections.abc import Callable
from pathlib import Path

import jax
import numpy as np

from .. import krylov
from .. import progress as progress_bars
from ..backend import check_memory, device_memory_bytes, precision, precision_scope
from ..errors import ConfigError, require_int
from ..io import check_output_file
from ..layout import as_layout, on_each
from ..scattering import OrientationAverage, scattering_basis
from . import average_checkpoint, interaction, observables
from .orientation_batch import _Env, solve_part
from .problem import _KRYLOV_VECTORS, DDAProblem
from .results import AveragedResult


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
    matrix the same in every scattering plane). ``checkpoint``: an ``.npz`` file updated
    after every batch; a run given an existing one resumes from it (same problem, any
    quadrature; see :mod:`emjax.dda.average_checkpoint`).
    ``layout``: devices to deal the orientations out to (a Layout, a count or a device list;
    None: one device). Each batch is dealt out whole, one contiguous run of orientations per
    device, and every device solves its run as its own batch with its own solver loop and
    computes its observables, side by side (:func:`emjax.layout.on_each`; no communication
    until the records come back); the result equals one device's to rounding. The default
    batch is then the one-device default times the device count. A layout spanning several
    processes splits each batch's right-hand sides over all its devices instead
    (:mod:`emjax.dda.distributed`); each process then holds the whole batch's incident fields
    and solutions on its default device (where the observables are computed), so the
    default batch is what one device holds (at most ``max_batch`` times the device count).

    Traced inputs (``jax.grad``/``jit``/``vmap`` of ``m`` or the size, see
    :class:`~emjax.dda.DDAProblem`): the average is :func:`emjax.dda.efficiencies_averaged`
    over the fixed rule of ``quadrature`` (which must then have ``beta_levels`` and
    ``gamma_levels`` (j, j): no refinement that depends on the traced values), returning its
    :class:`~emjax.dda.AveragedTracedResult` of JAX arrays (``Qext``, ``Cext``, ``mueller``
    (n_theta, 4, 4), ...) equal to this function's values at those levels; ``batch``
    (default 1) orientations are vmapped together; no progress, checkpoint or layout.
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
    if problem.traced:
        return _average_traced(problem, q, solver, batch, variant, checkpoint, layout)
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


def _average_traced(problem, q, solver, batch, variant, checkpoint, layout):
    """``average`` with traced inputs: :func:`emjax.dda.efficiencies_averaged` on ``q``'s rule."""
    for name, value in (("checkpoint", checkpoint), ("layout", layout)):
        if value is not None:
            raise ConfigError(f"{name}: not available for traced inputs (jax.grad/jit/vmap); leave it None")
    if q.beta_levels[0] != q.beta_levels[1] or q.gamma_levels[0] != q.gamma_levels[1]:
        raise ConfigError(
            "quadrature: with traced inputs (jax.grad/jit/vmap) the orientations must not depend on them "
            "(no adaptive refinement); give OrientationAverage(beta_levels=(j, j), gamma_levels=(j, j)), "
            f"got beta_levels={q.beta_levels}, gamma_levels={q.gamma_levels}"
        )
    from .differentiable_average import efficiencies_averaged

    return efficiencies_averaged(problem, q, solver, batch=batch or 1, variant=variant)


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
    # one process: orientations dealt out whole, each device its own batch and solver loop;
    # several processes: each batch's right-hand sides split over all their devices
    dealt = lay is not None and lay.local
    if dealt:
        Dhats = [jax.device_put(Dhat, dev) for dev in lay.devices]
    elif lay is not None:
        from . import distributed

        Dhat = distributed.replicate(Dhat, lay)
    Dhat.block_until_ready()
    timings["interaction_s"] = time.perf_counter() - t0

    n_box = math.prod(grid)
    sparse = lat.n_dipoles * 4 < n_box
    occupied = np.flatnonzero(np.asarray(lat.domains).ravel() >= 0) if sparse else None
    dirs = _Directions(problem, q, lat)
    # directions per far-field step: temporaries of ~2^23 complex numbers per right-hand side
    cells = lat.n_dipoles if sparse else 3 * grid[0] * grid[1]
    ff_batch = int(min(256, max(4, 2**23 // cells)))
    fixed, per_rhs = _memory(problem, grid)
    share = 1 if lay is None else lay.n
    # several processes: each batch's incident fields and gathered solutions sit whole on
    # every process's default device, so the batch is sized for one device
    whole = lay is not None and not dealt
    if batch:
        nodes_per_batch = batch
        per_device = batch if whole else -(-batch // share)  # each device's share
        check_memory(fixed + 2 * per_device * per_rhs, f"an orientation batch of {per_device} on {grid}")
    else:  # as many as fit in half the free memory
        fit = int(max(0.5 * device_memory_bytes() - fixed, 0) // (2 * per_rhs))
        if whole:
            nodes_per_batch = max(1, min(max_batch * share, fit))
        else:
            nodes_per_batch = max(1, min(max_batch, fit)) * share

    env = _Env(
        problem=problem,
        q=q,
        grid=grid,
        k=k,
        d=d,
        ms=ms,
        pol=pol,
        variant=variant,
        solver=solver,
        dirs=dirs,
        ff_batch=ff_batch,
        sparse=sparse,
        domains=np.asarray(lat.domains),
        occupied=occupied,
        positions=np.asarray(lat.positions(), dtype=np.float64) if sparse else None,
    )
    lock = threading.Lock()

    def solve_nodes(keys, label):
        if not dealt:
            out = [solve_part(env, keys, Dhat, label, progress, lay)]
        else:
            runs = [(i, r) for i, r in enumerate(lay.deal(len(keys))) if len(r)]
            latest = {}  # device -> (iterations, residual): one report for the batch, the worst

            def report(dev, it, r):
                with lock:  # devices report from their threads
                    latest[dev] = (it, r)
                    progress(label, max(v[0] for v in latest.values()), max(v[1] for v in latest.values()))

            out = on_each(
                [lay.devices[i] for i, _ in runs],
                lambda dev, part, D: solve_part(
                    env, part, D, dev, progress and (lambda _, it, r: report(dev, it, r))
                ),
                [[keys[j] for j in r] for _, r in runs],
                [Dhats[i] for i, _ in runs],
            )
        for recs, _, _ in out:
            results.update(recs)
        # the devices ran side by side: the slowest one's time
        timings["solve_s"] += max(o[1] for o in out)
        timings["far_field_s"] += max(o[2] for o in out)

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


def _integrate(results, weights) -> dict:
    cext = sum(w * results[key]["Cext"].mean() for key, w in weights.items())
    cabs = sum(w * results[key]["Cabs"].mean() for key, w in weights.items())
    return {"Cext": float(cext), "Cabs": float(cabs)}


def _change(a, b) -> float:
    return max(abs(a["Cext"] - b["Cext"]), abs(a["Cabs"] - b["Cabs"])) / abs(a["Cext"])
