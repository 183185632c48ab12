"""Differentiable orientation average: :func:`efficiencies_averaged`, the
traceable twin of :func:`emjax.dda.average` over a fixed set of orientations.

What a user fitting a measured phase function of randomly oriented particles needs::

    jax.config.update("jax_enable_x64", True)
    q = dda.OrientationAverage(eps=0, beta_levels=(2, 2), gamma_levels=(2, 2), n_alpha=8)

    def loss(n, k):
        prob = dda.DDAProblem(geometry.Ellipsoid(...), m=n + 1j * k, eq_rad=0.5, grid=8,
                              theta=tuple(range(0, 181, 10)))
        avg = dda.efficiencies_averaged(prob, q)
        return jnp.sum((jnp.log(avg.mueller[:, 0, 0]) - jnp.log(s11_measured)) ** 2)

    dn, dk = jax.jit(jax.grad(loss, argnums=(0, 1)))(1.5, 0.01)

The orientations are constants: a fixed :class:`~emjax.scattering.OrientationAverage`
rule (``beta_levels`` and ``gamma_levels`` each with min = max: Clenshaw-Curtis in
cos(beta), trapezoid in gamma, as ``dda.average`` at those levels, with its symmetries
``n_fold`` and ``c2_x``) or explicit ``(beta, gamma)`` pairs in degrees with weights. No
adaptive refinement (that would make the node set depend on the traced values); the
average over the first Euler angle alpha is done without solves on ``n_alpha`` scattering
planes, as in ``dda.average``: ``M(theta, phi; alpha, beta, gamma) = M(theta, phi - alpha;
0, beta, gamma)``.

Each orientation is two solves (X and Y polarization) with the same interaction matrix;
the orientations run one after another in a ``lax.map`` (``batch`` of them vmapped
together: worth it on a GPU, not on a CPU - see :func:`emjax.dda.average`). Reverse mode
is one adjoint QMR solve per forward solve (the matrix is complex symmetric), the scan
keeps one solution per orientation and polarization, no iterations.

Differentiable in ``m`` (each domain) and the size (``size_x``/``eq_rad`` at a fixed
``grid``), as :func:`emjax.dda.efficiencies`; no substrate, no ``prop`` (an average covers
every incidence), ``problem.orientation`` (0, 0, 0), ``problem.phi`` unused.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import krylov
from ..backend import precision, precision_scope
from ..errors import ConfigError, require_int
from ..scattering import OrientationAverage, euler_matrix, scattering_basis
from . import interaction, observables
from .matvec import DDAOperator, sqrt_alpha_grid
from .orientation_batch import _incident
from .polarizability import FCD

__all__ = ["AveragedTracedResult", "efficiencies_averaged", "orientation_nodes"]


class AveragedTracedResult(NamedTuple):
    """What :func:`efficiencies_averaged` returns, JAX arrays (a pytree).

    ``Qext``, ``Qabs``, ``Qsca``: orientation- and polarization-averaged efficiencies
    ``<C> / (pi a_eq^2)`` (``Qsca = Qext - Qabs``); ``Cext``, ``Cabs``: the averaged cross
    sections; ``mueller``: (n_theta, 4, 4), the averaged Mueller matrix at ``problem.theta``
    (as ``AveragedResult.mueller``; S11 = ``mueller[:, 0, 0]``, the unnormalized phase
    function); ``Cext_xy``, ``Cabs_xy``, ``iterations``, ``residual``, ``converged``:
    (n_orientations, 2), per orientation and polarization; ``beta``, ``gamma``,
    ``weights``: the nodes (degrees) and their weights (summing to 1)."""

    Qext: jax.Array
    Qabs: jax.Array
    Qsca: jax.Array
    Cext: jax.Array
    Cabs: jax.Array
    a_eq: jax.Array
    mueller: jax.Array
    Cext_xy: jax.Array
    Cabs_xy: jax.Array
    iterations: jax.Array
    residual: jax.Array
    converged: jax.Array
    beta: jax.Array
    gamma: jax.Array
    weights: jax.Array


def orientation_nodes(orientations, weights=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(beta, gamma, weights)`` (degrees, weights summing to 1) of a fixed rule: an
    :class:`OrientationAverage` with ``beta_levels`` and ``gamma_levels`` each (j, j) (the
    nodes and weights :func:`emjax.dda.average` uses at those levels), or an (N, 2) array of
    (beta, gamma) in degrees with ``weights`` (N,) >= 0 (normalized to sum 1)."""
    if isinstance(orientations, OrientationAverage):
        q = orientations
        if weights is not None:
            raise ConfigError(
                "weights: an OrientationAverage brings its own; give weights only with (beta, gamma) pairs"
            )
        if q.beta_levels[0] != q.beta_levels[1] or q.gamma_levels[0] != q.gamma_levels[1]:
            raise ConfigError(
                "orientations: a traceable average uses a fixed rule (no adaptive refinement); give "
                f"beta_levels=(j, j) and gamma_levels=(j, j), got {q.beta_levels} and {q.gamma_levels}"
            )
        w = q.weights(q.beta_levels[1], q.gamma_levels[1])
        keys = sorted(w)
        angles = np.array([q.angles(key) for key in keys], dtype=float)
        return angles[:, 0], angles[:, 1], np.array([w[key] for key in keys])
    try:
        a = np.asarray(orientations, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            "orientations must be an OrientationAverage or (N, 2) (beta, gamma) in degrees, "
            f"got {orientations!r}"
        ) from exc
    if a.ndim != 2 or a.shape[1] != 2 or len(a) == 0 or not np.all(np.isfinite(a)):
        raise ConfigError(
            f"orientations: an (N, 2) array of finite (beta, gamma) in degrees, got shape {a.shape}"
        )
    if weights is None:
        raise ConfigError("weights: give one weight per (beta, gamma) pair (>= 0, normalized to sum 1)")
    w = np.asarray(weights, dtype=float).ravel()
    if w.shape != (len(a),) or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise ConfigError(f"weights: {len(a)} finite values >= 0 with a positive sum, got {weights!r}")
    return a[:, 0], a[:, 1], w / w.sum()


def efficiencies_averaged(
    problem,
    orientations,
    solver: krylov._Method | None = None,
    *,
    weights=None,
    n_alpha: int | None = None,
    batch: int = 1,
    variant: str = "pruned",
) -> AveragedTracedResult:
    """Orientation-averaged efficiencies and Mueller matrix of ``problem`` (a
    :class:`emjax.dda.DDAProblem`), traceably; see the module doc.

    ``orientations``: a fixed :class:`OrientationAverage` (min = max levels) or (N, 2)
    (beta, gamma) degrees with ``weights``. ``n_alpha``: scattering planes averaged over
    (default: the rule's ``n_alpha``, 32 for explicit pairs). ``solver``: ``QMR()``
    (default, rtol 1e-5; it bounds the gradient's accuracy too). ``batch``: orientations
    vmapped together inside the ``lax.map``. Convergence is not checked on the host: see
    ``converged``.
    """
    solver = solver or krylov.QMR()
    if not isinstance(solver, krylov._Method):
        raise ConfigError(f"solver must be QMR(), BiCG() or BiCGStab(), got {solver!r}")
    if variant not in interaction.LAYOUTS:
        raise ConfigError(f"variant must be one of {sorted(interaction.LAYOUTS)}, got {variant!r}")
    if tuple(problem.orientation) != (0.0, 0.0, 0.0):
        raise ConfigError("orientation: an averaged run needs the default (0, 0, 0); it averages over all")
    if problem.substrate is not None:
        raise ConfigError(
            "substrate: a particle on a substrate has a fixed orientation; averaging needs substrate=None"
        )
    if problem.prop is not None:
        raise ConfigError("prop: an orientation average covers all incidence directions; leave prop unset")
    if isinstance(problem.polarizability, FCD) and problem._traced_size() is not None:
        raise ConfigError(
            "FCD's interaction correction is a host table, not differentiable in the size; "
            "use LDR(), CM() or RR()"
        )
    beta, gamma, w = orientation_nodes(orientations, weights)
    if n_alpha is None:
        n_alpha = orientations.n_alpha if isinstance(orientations, OrientationAverage) else 32
    n_alpha = require_int("n_alpha", n_alpha, 1, 100_000)
    batch = require_int("batch", batch, 1, 1_000_000)
    if problem.traced and not jax.config.jax_enable_x64:
        raise ConfigError(
            "emjax.dda with traced inputs (jax.grad/jit/vmap) needs 64-bit types where the "
            "transformation runs: set JAX_ENABLE_X64=1 or jax.config.update('jax_enable_x64', True), "
            "or call the transformed function inside `with emjax.backend.precision_scope():`"
        )
    with precision_scope():
        return _averaged(problem, solver, variant, beta, gamma, w, n_alpha, batch)


class _Static(NamedTuple):
    grid: tuple
    k: float
    pol: object
    solver: object
    variant: str
    cdt: str
    theta: tuple
    n_alpha: int
    batch: int


def _averaged(problem, solver, variant, beta, gamma, w, n_alpha, batch):
    lat = problem.lattice()
    d = lat.d
    Rs = np.stack([euler_matrix(0.0, b, g) for b, g in zip(beta, gamma)])  # particle -> lab
    static = _Static(
        grid=lat.shape,
        k=problem.k,
        pol=problem.polarizability,
        solver=solver,
        variant=variant,
        cdt=np.dtype(precision(problem.precision).complex).name,
        theta=tuple(problem.theta),
        n_alpha=n_alpha,
        batch=batch,
    )
    ms = problem.refractive_indices()
    pol, k = problem.polarizability, problem.k
    # the polarizabilities here (LDR's depends on the concrete incidence and polarization):
    # lab x, y, z in the particle frame are the rows of R
    alphas = jnp.stack(
        [
            jnp.stack([jnp.stack([jnp.asarray(pol(m, d, k, R[2], e)) for m in ms]) for e in (R[0], R[1])])
            for R in Rs
        ]
    ).astype(np.complex128)  # (N, 2, n_domains)
    Cext_xy, Cabs_xy, M, its, res, conv = _core(alphas, d, jnp.asarray(lat.domains), jnp.asarray(Rs), static)
    wj = jnp.asarray(w)
    Cext = wj @ jnp.mean(Cext_xy, axis=1)
    Cabs = wj @ jnp.mean(Cabs_xy, axis=1)
    a_eq = (3 * lat.n_dipoles / (4 * np.pi)) ** (1 / 3) * d
    area = np.pi * a_eq**2
    return AveragedTracedResult(
        Qext=Cext / area,
        Qabs=Cabs / area,
        Qsca=(Cext - Cabs) / area,
        Cext=Cext,
        Cabs=Cabs,
        a_eq=jnp.asarray(a_eq),
        mueller=jnp.tensordot(wj, M, axes=1),
        Cext_xy=Cext_xy,
        Cabs_xy=Cabs_xy,
        iterations=its,
        residual=res,
        converged=conv,
        beta=jnp.asarray(beta),
        gamma=jnp.asarray(gamma),
        weights=wj,
    )


@partial(jax.jit, static_argnums=(4,))
def _core(alphas, d, domains, Rs, static):
    from .traced_result import mueller_jax, solve_infos

    grid, k, pol = static.grid, static.k, static.pol
    vdt = np.complex128
    Dhat = interaction.interaction_fft(
        grid, d, k, np.dtype(static.cdt), kind=pol.interaction, layout=interaction.LAYOUTS[static.variant]
    )
    mask = domains >= 0
    # the scattering planes 90 - alpha (dda.average's): M(theta, 90 - alpha; 0, b, g) is
    # M(theta, 90; alpha, b, g), the same in every plane after the average over alpha
    planes = 90.0 - 360.0 * np.arange(static.n_alpha) / static.n_alpha
    T, Ph = np.meshgrid(np.asarray(static.theta), planes)  # (n_alpha, n_theta)
    n_lab, th_lab, ph_lab = scattering_basis(T, Ph)
    dirs_lab = jnp.asarray(n_lab.reshape(-1, 3))

    def one(node):
        R, alpha_xy = node
        # lab vectors in the particle frame are R^T v: incidence along lab z, fields along x, y
        prop = R[2]
        Cext, Cabs, F, infos = [], [], [], []
        for e, alpha in zip((R[0], R[1]), alpha_xy):
            s = sqrt_alpha_grid(domains, alpha, vdt)
            inv_alpha = jnp.where(mask, 1 / alpha[jnp.clip(domains, 0)], 0)
            E = _incident(grid, d, k, prop, e.astype(vdt)).astype(vdt)
            x, info = krylov.linear_solve(
                DDAOperator(Dhat, s, static.variant), s * E, static.solver, return_info=True
            )
            P = s * x
            ce, ca = observables.cross_sections(P, E, inv_alpha, mask, k)
            amp = observables.far_field_sum(P, dirs_lab @ R, d, k)  # directions in the particle frame
            F.append(((-1j * k**3) * (amp @ R.T)).reshape(T.shape + (3,)))  # back to the lab frame
            Cext.append(ce)
            Cabs.append(ca)
            infos.append(info)
        S = observables.amplitude_elements(F[0], F[1], Ph, th_lab, ph_lab)
        M = jnp.mean(mueller_jax(*jnp.moveaxis(S, -1, 0)), axis=0)  # (n_theta, 4, 4)
        return (jnp.stack(Cext), jnp.stack(Cabs), M, *solve_infos(infos))

    return jax.lax.map(one, (Rs, alphas), batch_size=static.batch if static.batch > 1 else None)
