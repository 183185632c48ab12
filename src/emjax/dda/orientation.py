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
beta, the points of ADDA's Romberg scheme, but a spectrally accurate rule; see
:func:`emjax.scattering.clenshaw_curtis` and the test comparing it with Romberg on the same
solves), the periodic trapezoid rule in gamma (optimal for a smooth periodic function) and in
alpha. Both beta and gamma rules are nested; each is refined (doubled) until halving it changes
the averaged Cext and Cabs by less than ``eps`` times Cext, or up to its maximum level - the
accuracy control of ADDA's ``avg_params.dat`` (eps, Jmin, Jmax).
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from .. import krylov
from ..backend import device_memory_bytes, precision, precision_scope
from ..errors import ConfigError, require_int
from ..scattering import clenshaw_curtis, euler_matrix, mueller_from_amplitude, scattering_basis
from . import interaction, observables
from .matvec import DDAOperator
from .solve import _KRYLOV_VECTORS, DDAProblem

_LAB = np.eye(3)


@dataclass(frozen=True)
class OrientationAverage:
    """How to average over random orientation.

    Parameters
    ----------
    eps : relative accuracy goal for the averaged Cext and Cabs (refinement stops below it).
    beta_levels : (min, max) levels of the beta rule: ``2**level + 1`` nodes in [0, 180].
    gamma_levels : (min, max) levels of the gamma rule: ``2**level`` nodes in [0, 360/n_fold).
    n_alpha : alpha values (uniform in [0, 360)) for the Mueller matrix; no solves.
    n_fold : the particle is unchanged by a rotation of 360/n_fold degrees about its z axis
        (1: no symmetry; 6: hexagonal prism; 0: axisymmetric, one gamma).
    c2_x : the particle is unchanged by a rotation of 180 degrees about its x axis, so
        (alpha, beta, gamma) ~ (alpha + 180, 180 - beta, -gamma) and beta > 90 needs no solve.

    ``eps=0`` with ``min == max`` levels gives a fixed rule. Defaults: ADDA's (eps 1e-3, beta
    levels 2..4, gamma 2..4, 32 alpha values) with one more level allowed each and gamma
    starting at 8 nodes: a nested rule cannot see what its coarsest level aliases - a particle
    on a cubic lattice is nearly 4-fold symmetric about z, so 4 gamma nodes (0, 90, 180, 270)
    and 2 agree and the refinement would stop there with an error estimate of 0 (measured:
    0.3% actual error on a spheroid). Keep the minimum levels above the particle's symmetry.
    """

    eps: float = 1e-3
    beta_levels: tuple = (2, 5)
    gamma_levels: tuple = (3, 5)
    n_alpha: int = 32
    n_fold: int = 1
    c2_x: bool = False

    def __post_init__(self):
        if not (np.isfinite(self.eps) and 0 <= self.eps < 1):
            raise ConfigError(f"eps must be in [0, 1), got {self.eps!r}")
        for name in ("beta_levels", "gamma_levels"):
            lv = getattr(self, name)
            if len(lv) != 2:
                raise ConfigError(f"{name} must be (min, max), got {lv!r}")
            lo = require_int(f"{name}[0]", lv[0], 1, 10)
            hi = require_int(f"{name}[1]", lv[1], 1, 10)
            if hi < lo:
                raise ConfigError(f"{name}: max {hi} < min {lo}")
            object.__setattr__(self, name, (lo, hi))
        object.__setattr__(self, "n_alpha", require_int("n_alpha", self.n_alpha, 1, 100_000))
        object.__setattr__(self, "n_fold", require_int("n_fold", self.n_fold, 0, 360))

    @property
    def gamma_period(self) -> float:
        return 360.0 / self.n_fold if self.n_fold else 0.0

    # -- nodes on the finest grids, as integer keys (ib, ig) --------------------------------
    def _sizes(self):
        nb = 2 ** self.beta_levels[1]
        ng = 2 ** self.gamma_levels[1] if self.n_fold else 1
        return nb, ng

    def _canonical(self, ib, ig):
        nb, ng = self._sizes()
        if self.c2_x and 2 * ib > nb:
            ib, ig = nb - ib, (-ig) % ng
        if ib in (0, nb):
            ig = 0
        return ib, ig

    def angles(self, key) -> tuple[float, float]:
        """(beta, gamma) in degrees of a node key."""
        nb, ng = self._sizes()
        return 180.0 * key[0] / nb, self.gamma_period * key[1] / ng

    def weights(self, jb: int, jg: int) -> dict:
        """Node key -> weight (summing to 1) of the rule at levels (jb, jg)."""
        nb, ng = self._sizes()
        _, wb = clenshaw_curtis(jb)
        n_gamma = 2**jg if self.n_fold else 1
        out: dict = {}
        for kb, w in enumerate(wb / 2):
            for kg in range(n_gamma):
                key = self._canonical(kb * nb // 2**jb, kg * ng // n_gamma)
                out[key] = out.get(key, 0.0) + w / n_gamma
        return out


@dataclass(frozen=True, eq=False)
class AveragedResult:
    """Orientation-averaged DDA result and the per-orientation results it came from.

    Per-orientation arrays run over the solved (beta, gamma) nodes (alpha = 0) and have a
    last axis of 2 for the X and Y incident polarizations. ``mueller`` (n_theta, 4, 4) is the
    average (independent of the scattering plane for random orientation);
    ``mueller_orientations`` (n, n_theta, 4, 4) is each node's Mueller matrix in the yz plane.
    ``error`` holds the refinement's estimates (relative to Cext) per dimension.
    """

    problem: DDAProblem
    quadrature: OrientationAverage
    lattice: object
    beta: np.ndarray
    gamma: np.ndarray
    weights: np.ndarray
    Cext_xy: np.ndarray
    Cabs_xy: np.ndarray
    Csca_int_xy: np.ndarray | None
    g_xy: np.ndarray | None
    theta: np.ndarray
    mueller: np.ndarray
    mueller_orientations: np.ndarray
    iterations: np.ndarray
    converged: np.ndarray
    levels: tuple
    error: dict
    history: tuple
    batch_size: int
    seconds: float
    timings: dict

    def _avg(self, per_node) -> float:
        return float(np.sum(self.weights * np.mean(per_node, axis=-1)))

    @property
    def Cext(self) -> float:
        return self._avg(self.Cext_xy)

    @property
    def Cabs(self) -> float:
        return self._avg(self.Cabs_xy)

    @property
    def Csca(self) -> float:
        return self.Cext - self.Cabs

    @property
    def Csca_integrated(self) -> float | None:
        return None if self.Csca_int_xy is None else self._avg(self.Csca_int_xy)

    @property
    def g(self) -> float | None:
        if self.g_xy is None:
            return None
        return self._avg(self.g_xy * self.Csca_int_xy) / self.Csca_integrated

    @property
    def a_eq(self) -> float:
        return self.lattice.a_eq

    @property
    def geometric_cross_section(self) -> float:
        return math.pi * self.a_eq**2

    @property
    def Qext(self) -> float:
        return self.Cext / self.geometric_cross_section

    @property
    def Qabs(self) -> float:
        return self.Cabs / self.geometric_cross_section

    @property
    def Qsca(self) -> float:
        return self.Csca / self.geometric_cross_section

    @property
    def n_orientations(self) -> int:
        """Solved orientations (beta, gamma), each for two polarizations."""
        return int(self.beta.size)

    @property
    def all_converged(self) -> bool:
        return bool(np.all(self.converged))

    def summary(self) -> dict:
        return {
            "Cext": self.Cext,
            "Cabs": self.Cabs,
            "Csca": self.Csca,
            "Csca_integrated": self.Csca_integrated,
            "Qext": self.Qext,
            "Qabs": self.Qabs,
            "Qsca": self.Qsca,
            "g": self.g,
            "a_eq": self.a_eq,
            "n_dipoles": self.lattice.n_dipoles,
            "grid": list(self.lattice.shape),
            "orient": "avg",
            "n_orientations": self.n_orientations,
            "n_alpha": self.quadrature.n_alpha,
            "levels": {"beta": self.levels[0], "gamma": self.levels[1]},
            "error_estimate": self.error,
            "iterations_max": int(np.max(self.iterations)),
            "converged": self.all_converged,
            "batch_size": self.batch_size,
            "seconds": self.seconds,
        }

    def to_xarray(self):
        from ..io import averaged_to_xarray

        return averaged_to_xarray(self)

    def save(self, path):
        from ..io import save_dataset

        return save_dataset(self.to_xarray(), path)


@partial(jax.jit, static_argnames=("grid",))
def _incident(grid, d, k, direction, polarization):
    x, y, z = observables.lattice_axes(grid, d, jnp.float64)
    a = direction
    phase = jnp.exp(1j * k * (a[0] * x[:, None, None] + a[1] * y[None, :, None] + a[2] * z[None, None, :]))
    return polarization[:, None, None, None] * phase[None]


_incident_many = jax.jit(jax.vmap(_incident, in_axes=(None, None, None, 0, 0)), static_argnums=0)


def _batch_rhs(problem, q, ms, d, k, grid, budget) -> int:
    """Right-hand sides per batch that fit in ``budget`` bytes (an even number >= 2)."""
    n = math.prod(grid)
    c = np.dtype(precision(problem.precision).complex).itemsize
    fft = math.prod(interaction.fft_shape(grid))
    per_rhs = (_KRYLOV_VECTORS + 6) * 3 * n * 16 + 3 * fft * c * 3
    fixed = problem.memory_bytes(grid)
    return max(2, 2 * int(max(budget - fixed, 0) // (2 * per_rhs)))


def average(
    problem: DDAProblem,
    quadrature: OrientationAverage | None = None,
    solver: krylov._Method | None = None,
    *,
    batch: int | None = None,
    max_batch: int | None = None,
    progress: Callable[[str, int, float], None] | None = None,
    variant: str = "pruned",
) -> AveragedResult:
    """Average the DDA over random orientation of ``problem``'s particle.

    ``batch``: orientations solved together (each two right-hand sides); default: as many as
    fit in half of the free device memory, at most ``max_batch`` (default 64 on a GPU, 1 on a
    CPU: there a batch does not make a matvec cheaper per right-hand side, and a large one
    falls out of cache - measured at 16^3, 2.2 ms per right-hand side in batches of 8,
    3.9 ms in batches of 52). ``batch=1`` solves one orientation (both
    polarizations) at a time. ``progress(label, iterations, residual)`` is
    called between solver chunks. ``problem.orientation`` must be (0, 0, 0); ``problem.phi``
    is not used (random orientation makes the averaged Mueller matrix the same in every
    scattering plane).
    """
    q = quadrature or OrientationAverage()
    if not isinstance(q, OrientationAverage):
        raise ConfigError(f"quadrature must be an OrientationAverage, got {q!r}")
    if tuple(problem.orientation) != (0.0, 0.0, 0.0):
        raise ConfigError("orientation: an averaged run needs the default (0, 0, 0); it averages over all")
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
    with precision_scope():
        return _average(problem, q, solver, batch, max_batch, progress, variant)


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


def _average(problem, q, solver, batch, max_batch, progress, variant):
    t_start = time.perf_counter()
    timings = {"solve_s": 0.0, "far_field_s": 0.0}
    cdt = precision(problem.precision).complex
    vdt = np.complex128
    lat = problem.lattice()
    grid, k, d = lat.shape, problem.k, lat.d
    ms = problem.refractive_indices()
    pol = problem.polarizability
    t0 = time.perf_counter()
    Dhat = interaction.interaction_fft(
        grid, d, k, cdt, kind=pol.interaction, layout=interaction.LAYOUTS[variant]
    )
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
    rhs_per_batch = (
        2 * batch
        if batch
        else min(2 * max_batch, _batch_rhs(problem, q, ms, d, k, grid, 0.5 * device_memory_bytes()))
    )
    nodes_per_batch = max(1, rhs_per_batch // 2)

    results: dict = {}  # key -> per-node record

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
        res = krylov.solve_batched(
            op, s[:, None] * E, solver, in_axes=DDAOperator(None, 0, variant), progress=cb
        )
        timings["solve_s"] += time.perf_counter() - t_solve
        t_ff = time.perf_counter()
        for i, key in enumerate(keys):
            R = Rs[i]
            dirs_p = jnp.asarray(dirs.lab @ R, dtype=np.float64)  # lab -> particle frame
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
                P = s[2 * i + j] * r.x
                inv_alpha = jnp.where(mask, 1 / alphas[2 * i + j][dom_idx], 0)
                ce, ca = observables.cross_sections(P, E[2 * i + j], inv_alpha, mask, k)
                if sparse:
                    amp = observables.far_field_points(P.reshape(3, -1)[:, occ], positions, dirs_p, k)
                else:
                    amp = observables.far_field_sum(P, dirs_p, d, k)
                rec["Cext"].append(float(ce))
                rec["Cabs"].append(float(ca))
                rec["F"].append((-1j * k**3) * (np.asarray(amp) @ R.T))  # back to the lab frame
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
            solve_nodes(chunk, label)
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
