"""Differentiable DDA: efficiencies and the amplitude/Mueller matrices as JAX
functions of the refractive index and the size.

:func:`efficiencies` is the traceable twin of :func:`emjax.dda.solve`: the same lattice,
polarizability, FFT interaction and observables, but the two polarizations are solved by
:func:`emjax.krylov.linear_solve` (one ``lax.while_loop`` each, no host round trips) and
everything is returned as JAX arrays, so it runs under ``jax.grad``, ``jax.jit``,
``jax.jvp`` and ``jax.vmap``::

    jax.config.update("jax_enable_x64", True)

    def qext(n, k):
        prob = dda.DDAProblem(geometry.Sphere(), m=n + 1j * k, eq_rad=0.5, grid=16)
        return dda.efficiencies(prob).Qext

    dn, dk = jax.jit(jax.grad(qext, argnums=(0, 1)))(1.5, 0.01)

64-bit types must be on where the transformation runs (``jax.config.update("jax_enable_x64",
True)`` or ``with emjax.backend.precision_scope():`` around the ``jax.grad`` call): the
reverse pass runs in the caller's context. Wrap the gradient in ``jax.jit``: un-jitted,
JAX dispatches it op by op (on a 2-core CPU ~35 s for an 8^3 sphere, ~9 s jitted with the
compile).

Gradients use the adjoint system, never the iterations: the interaction matrix ``I - s G s``
is complex symmetric, so reverse mode is one more QMR solve with the same operator and
memory does not grow with the iteration count (:mod:`emjax.krylov.adjoint`). With respect to
``m`` the polarizabilities carry the dependence; with respect to the size (``size_x`` or
``eq_rad``, traced at a fixed ``grid``) the dipole spacing ``d`` does, through the
interaction tensor (point interaction: CM, RR, LDR; FCD's correction is a host table and
is refused for a traced size), the incident field and the far-field phases.

A particle on a substrate (``problem.substrate``) goes to
:mod:`emjax.dda.differentiable_surface`: gradients with respect to ``m`` (under ``jit``
too), the size and the substrate (a traced complex index or a ``layered.Stack`` with traced
permittivities; these two outside ``jit``, the reflected-interaction table's Sommerfeld
nodes are chosen from concrete values). The orientation average over a fixed set of
orientations is :func:`emjax.dda.efficiencies_averaged`
(:mod:`emjax.dda.differentiable_average`).

Not here (use :func:`emjax.dda.solve` for those): Csca and g by integration over the
sphere or the hemispheres (``Qsca`` is ``Qext - Qabs``), progress reports and the residual
histories. Convergence is not checked on the host: ``converged`` and ``iterations`` are in
the result.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .. import krylov
from ..backend import precision, precision_scope
from ..errors import ConfigError
from ..scattering import euler_matrix, scattering_basis
from . import interaction, observables
from .matvec import DDAOperator, sqrt_alpha_grid
from .polarizability import FCD
from .traced_result import TracedResult, mueller_jax, solve_infos, traced_result

__all__ = ["TracedResult", "efficiencies", "mueller_jax"]


def efficiencies(problem, solver: krylov._Method | None = None, *, variant: str = "pruned") -> TracedResult:
    """Solve ``problem`` (a :class:`emjax.dda.DDAProblem`) traceably; see the module doc.

    ``solver``: ``QMR()`` (default, rtol 1e-5) or ``BiCG()``, whose ``rtol`` also bounds
    the gradient's accuracy (the adjoint solve stops on the same rule); ``maxiter`` caps
    each solve. ``BiCGStab`` works too (it does not need the symmetry).

    With ``problem.substrate`` set: see :mod:`emjax.dda.differentiable_surface` (``S`` and
    ``mueller`` in ADDA's surface scattering plane, shape (1, n_theta, ...); traced size or
    substrate only outside ``jax.jit``; ``variant`` must be "pruned").
    """
    solver = solver or krylov.QMR()
    if not isinstance(solver, krylov._Method):
        raise ConfigError(f"solver must be QMR(), BiCG() or BiCGStab(), got {solver!r}")
    if variant not in interaction.LAYOUTS:
        raise ConfigError(f"variant must be one of {sorted(interaction.LAYOUTS)}, got {variant!r}")
    if isinstance(problem.polarizability, FCD) and problem._traced_size() is not None:
        raise ConfigError(
            "dda.efficiencies: FCD's interaction correction is a host table, not differentiable "
            "in the size; use LDR(), CM() or RR() for a traced size"
        )
    if problem.traced and not jax.config.jax_enable_x64:
        # the backward pass runs in the caller's context: with 32-bit types there, JAX's
        # transposes mix float32 constants into the float64 computation and fail
        raise ConfigError(
            "emjax.dda with traced inputs (jax.grad/jit/vmap) needs 64-bit types where the "
            "transformation runs: set JAX_ENABLE_X64=1 or jax.config.update('jax_enable_x64', True), "
            "or call the transformed function inside `with emjax.backend.precision_scope():`"
        )
    with precision_scope():
        if problem.substrate is not None:
            from .differentiable_surface import surface_efficiencies

            return surface_efficiencies(problem, solver, variant)
        return _efficiencies(problem, solver, variant)


def _frame(problem):
    """(to_particle, prop, (e_x, e_y)) as in :func:`emjax.dda.problem._solve`."""
    R = euler_matrix(*problem.orientation)
    to_particle = R.T
    if problem.prop is not None:
        from .substrate import beam_vectors

        bp, beX, beY = beam_vectors(problem.incidence_direction())
        to_particle = R.T @ np.column_stack([beX, beY, bp])
    prop = to_particle @ np.array([0.0, 0.0, 1.0])
    pols = (to_particle @ np.array([1.0, 0.0, 0.0]), to_particle @ np.array([0.0, 1.0, 0.0]))
    return to_particle, prop, pols


def _efficiencies(problem, solver, variant) -> TracedResult:
    cdt = precision(problem.precision).complex  # of the interaction tensor and FFTs
    vdt = np.complex128  # of the Krylov vectors (see dda.solve)
    lat = problem.lattice()
    grid, d, k = lat.shape, lat.d, problem.k
    pol = problem.polarizability
    ms = problem.refractive_indices()
    Dhat = interaction.interaction_fft(
        grid, d, k, cdt, kind=pol.interaction, layout=interaction.LAYOUTS[variant]
    )
    to_particle, prop, pols = _frame(problem)
    domains = jnp.asarray(lat.domains)
    mask = domains >= 0

    T, Ph = np.meshgrid(np.asarray(problem.theta), np.asarray(problem.phi))  # (n_phi, n_theta)
    n_lab, th_lab, ph_lab = scattering_basis(T, Ph)
    dirs_p = jnp.asarray(n_lab.reshape(-1, 3) @ to_particle.T, dtype=np.float64)

    # the two incident polarizations one after the other: on an H100 (64^3 sphere, double,
    # ~525 iterations each) two device loops took 1.05 s (dda.solve's chunked loop 1.27 s),
    # one vmapped loop over both 1.72 s (a batched while_loop selects every carried vector at
    # every step and runs until the slower one stops)
    Cext, Cabs, F, infos = [], [], [], []
    for e in pols:
        alpha = jnp.stack([jnp.asarray(pol(m, d, k, prop, e)).astype(vdt) for m in ms])
        s = sqrt_alpha_grid(lat.domains, alpha, vdt)
        inv_alpha = jnp.where(mask, 1 / alpha[jnp.clip(domains, 0)], 0)
        E = observables.incident_field(grid, d, k, prop, e, vdt)
        x, info = krylov.linear_solve(DDAOperator(Dhat, s, variant), s * E, solver, return_info=True)
        P = s * x
        ce, ca = observables.cross_sections(P, E, inv_alpha, mask, k)
        Cext.append(ce)
        Cabs.append(ca)
        amp = observables.far_field_sum(P, dirs_p, d, k)  # particle frame
        F.append((-1j * k**3) * (amp @ jnp.asarray(to_particle)))  # lab-frame rows
        infos.append(info)
    FX, FY = (f.reshape(T.shape + (3,)) for f in F)
    S = observables.amplitude_elements(FX, FY, Ph, th_lab, ph_lab)
    mueller = mueller_jax(*jnp.moveaxis(S, -1, 0))
    return traced_result(lat, jnp.stack(Cext), jnp.stack(Cabs), S, mueller, *solve_infos(infos))
