"""What the differentiable DDA calls return (:func:`emjax.dda.efficiencies` and its
substrate and orientation-averaged forms): :class:`TracedResult` and the helpers that fill
it from the solves (cross sections per polarization, amplitude matrix, Mueller matrix)."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["TracedResult", "mueller_jax", "solve_infos", "traced_result"]


class TracedResult(NamedTuple):
    """What :func:`efficiencies` returns, JAX arrays (a pytree).

    ``Cext_xy``, ``Cabs_xy``: per incident polarization (x, y of the beam frame);
    ``Qext``, ``Qabs``, ``Qsca``: polarization-averaged efficiencies ``C / (pi a_eq^2)``;
    ``S``: amplitude matrix (n_phi, n_theta, 4) as (S1, S2, S3, S4); ``mueller``:
    (n_phi, n_theta, 4, 4) at ``problem.theta``, ``problem.phi``; ``iterations``,
    ``residual``, ``converged``: of the two forward solves."""

    Qext: jax.Array
    Qabs: jax.Array
    Qsca: jax.Array
    Cext_xy: jax.Array
    Cabs_xy: jax.Array
    a_eq: jax.Array
    S: jax.Array
    mueller: jax.Array
    iterations: jax.Array
    residual: jax.Array
    converged: jax.Array

    @property
    def Cext(self) -> jax.Array:
        """Polarization-averaged extinction cross section (as ``DDAResult.Cext``)."""
        return jnp.mean(self.Cext_xy)

    @property
    def Cabs(self) -> jax.Array:
        return jnp.mean(self.Cabs_xy)

    @property
    def Csca(self) -> jax.Array:
        return self.Cext - self.Cabs


def solve_infos(infos):
    """(iterations, residual, converged), each stacked over the solves' SolveInfo."""
    return tuple(jnp.stack([getattr(i, f) for i in infos]) for f in ("iterations", "residual", "converged"))


def traced_result(lat, Cext, Cabs, S, mueller, iterations, residual, converged) -> TracedResult:
    """The TracedResult of per-polarization cross sections on lattice ``lat`` (its ``d``
    possibly traced): efficiencies ``C / (pi a_eq^2)``."""
    a_eq = (3 * lat.n_dipoles / (4 * np.pi)) ** (1 / 3) * lat.d
    area = np.pi * a_eq**2
    qext, qabs = jnp.mean(Cext) / area, jnp.mean(Cabs) / area
    return TracedResult(
        Qext=qext,
        Qabs=qabs,
        Qsca=qext - qabs,
        Cext_xy=Cext,
        Cabs_xy=Cabs,
        a_eq=jnp.asarray(a_eq),
        S=S,
        mueller=mueller,
        iterations=iterations,
        residual=residual,
        converged=converged,
    )


def mueller_jax(S1, S2, S3, S4):
    """:func:`emjax.scattering.mueller_from_amplitude` in ``jax.numpy`` (BH 3.16), ``(..., 4, 4)``."""
    c = jnp.conj
    a1, a2, a3, a4 = (jnp.abs(s) ** 2 for s in (S1, S2, S3, S4))
    rows = [
        [
            0.5 * (a2 + a1 + a4 + a3),
            0.5 * (a2 - a1 + a4 - a3),
            jnp.real(S2 * c(S3) + S1 * c(S4)),
            jnp.imag(S2 * c(S3) - S1 * c(S4)),
        ],
        [
            0.5 * (a2 - a1 - a4 + a3),
            0.5 * (a2 + a1 - a4 - a3),
            jnp.real(S2 * c(S3) - S1 * c(S4)),
            jnp.imag(S2 * c(S3) + S1 * c(S4)),
        ],
        [
            jnp.real(S2 * c(S4) + S1 * c(S3)),
            jnp.real(S2 * c(S4) - S1 * c(S3)),
            jnp.real(S1 * c(S2) + S3 * c(S4)),
            jnp.imag(S2 * c(S1) + S4 * c(S3)),
        ],
        [
            jnp.imag(c(S2) * S4 + c(S3) * S1),
            jnp.imag(c(S2) * S4 - c(S3) * S1),
            jnp.imag(S1 * c(S2) - S3 * c(S4)),
            jnp.real(S1 * c(S2) - S3 * c(S4)),
        ],
    ]
    return jnp.stack([jnp.stack(r, axis=-1) for r in rows], axis=-2)
