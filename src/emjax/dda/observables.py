"""Cross sections and far fields from the dipole polarizations (Gaussian units, E0 = 1).

* ``Cext = 4 pi k sum_j Im(E_inc,j^* . P_j)``
* ``Cabs = 4 pi k sum_j (-Im(1/alpha_j) - 2 k^3 / 3) |P_j|^2`` (Draine's form, ADDA's default)
* far-field amplitude ``F(n) = -i k^3 (I - n n) sum_j P_j exp(-i k n . r_j)``, so that
  ``E_sca = exp(ikr) / (-ikr) F(n)``; the optical theorem reads
  ``Cext = (4 pi / k^2) Re(F(a) . e^*)``.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np


def lattice_axes(grid, d, dtype):
    """Cell-centre coordinates along each axis (relative to the lattice centre)."""
    return [((jnp.arange(n, dtype=dtype) + 0.5 - n / 2) * d) for n in grid]


def incident_field(grid, d, k, direction, polarization, cdtype):
    """``e exp(i k a . r)`` on the whole lattice, (3, nx, ny, nz)."""
    rdt = jnp.finfo(cdtype).dtype
    x, y, z = lattice_axes(grid, d, rdt)
    a = np.asarray(direction, dtype=float)
    phase = jnp.exp(1j * k * (a[0] * x[:, None, None] + a[1] * y[None, :, None] + a[2] * z[None, None, :]))
    e = jnp.asarray(np.asarray(polarization, dtype=complex), dtype=cdtype)
    return e[:, None, None, None] * phase.astype(cdtype)[None]


@jax.jit
def cross_sections(P, E_inc, inv_alpha_grid, mask, k):
    """(Cext, Cabs) for one solution; ``inv_alpha_grid`` is 1/alpha per cell (0 if empty)."""
    ext = 4 * jnp.pi * k * jnp.sum(jnp.imag(jnp.conj(E_inc) * P))
    p2 = jnp.sum(jnp.abs(P) ** 2, axis=0)
    weight = jnp.where(mask, -jnp.imag(inv_alpha_grid) - 2 * k**3 / 3, 0)
    absorb = 4 * jnp.pi * k * jnp.sum(weight * p2)
    return ext, absorb


@partial(jax.jit, static_argnames=("batch",))
def far_field_sum(P, directions, d, k, batch: int = 64):
    """``A(n) = sum_j P_j exp(-i k n . r_j)`` for directions (Nd, 3) -> (Nd, 3).

    The phase factorises over the lattice axes, so the sum is three successive contractions
    (a matrix product for the first), done ``batch`` directions at a time.
    """
    rdt = jnp.real(P).dtype
    grid = P.shape[1:]
    x, y, z = lattice_axes(grid, d, rdt)
    nd = directions.shape[0]
    pad = (-nd) % batch
    dirs = jnp.concatenate([directions, jnp.zeros((pad, 3), directions.dtype)]).reshape(-1, batch, 3)

    def one(nb):
        ex = jnp.exp(-1j * k * nb[:, 0:1] * x[None, :]).astype(P.dtype)  # (b, nx)
        ey = jnp.exp(-1j * k * nb[:, 1:2] * y[None, :]).astype(P.dtype)
        ez = jnp.exp(-1j * k * nb[:, 2:3] * z[None, :]).astype(P.dtype)
        t = jnp.einsum("cxyz,bz->bcxy", P, ez)
        t = jnp.einsum("bcxy,by->bcx", t, ey)
        return jnp.einsum("bcx,bx->bc", t, ex)

    out = jax.lax.map(one, dirs)
    return out.reshape(-1, 3)[:nd]


def sphere_quadrature(k_rmax: float, minimum: int = 24):
    """Gauss-Legendre in cos(theta) x uniform phi, exact for |F|^2 of a particle of radius
    ``rmax`` (an angular band limit of about ``2 k rmax``) with a safety margin.

    Returns theta (deg), phi (deg), weights (sum = 4 pi), each flat.
    """
    n_theta = max(minimum, int(np.ceil(1.2 * k_rmax)) + 12)
    n_phi = 2 * n_theta
    mu, w = np.polynomial.legendre.leggauss(n_theta)
    theta = np.degrees(np.arccos(mu))
    phi = np.arange(n_phi) * 360.0 / n_phi
    T, Ph = np.meshgrid(theta, phi, indexing="ij")
    W = np.repeat(w[:, None], n_phi, axis=1) * (2 * np.pi / n_phi)
    return T.ravel(), Ph.ravel(), W.ravel()


def amplitude_elements(FX, FY, phi_deg, theta_hat, phi_hat):
    """Amplitude matrix (S1, S2, S3, S4), stacked on a last axis of 4, from the far-field
    vectors ``FX``, ``FY`` (lab frame, ``(..., 3)``) of the x- and y-polarized incident waves,
    in the scattering planes ``phi_deg`` (broadcast against ``FX[..., 0]``). JAX arrays
    (tracers) in, a JAX array out; NumPy in, NumPy out."""
    xp = jnp if isinstance(FX, jax.Array) or isinstance(FY, jax.Array) else np
    cp = np.cos(np.deg2rad(phi_deg))[..., None]
    sp = np.sin(np.deg2rad(phi_deg))[..., None]
    F_par = cp * FX + sp * FY
    F_perp = sp * FX - cp * FY

    def dot(a, b):
        return xp.sum(a * b, axis=-1)

    S2, S4 = dot(F_par, theta_hat), dot(F_par, -phi_hat)
    S3, S1 = dot(F_perp, theta_hat), dot(F_perp, -phi_hat)
    return xp.stack([S1, S2, S3, S4], axis=-1)


def integrated_scattering(F, directions, weights, mu, k):
    """``(Csca, g)`` from far-field vectors ``F`` (Nq, 3) on a sphere quadrature
    (unit ``directions``, ``weights`` summing to 4 pi, ``mu`` = cos of the scattering angle)."""
    F = F - directions * np.sum(directions * F, axis=-1, keepdims=True)  # transverse part
    intensity = np.sum(np.abs(F) ** 2, axis=-1) / k**2
    c = float(np.sum(weights * intensity))
    return c, float(np.sum(weights * intensity * mu)) / c


@partial(jax.jit, static_argnames=("batch",))
def far_field_points(P, positions, directions, k, batch: int = 256):
    """``A(n) = sum_j P_j exp(-i k n . r_j)`` over listed dipoles: ``P`` (3, Nd),
    ``positions`` (Nd, 3), ``directions`` (Nn, 3) -> (Nn, 3). For sparse lattices (few
    occupied cells of the box) this beats :func:`far_field_sum`'s separable contraction."""
    nn = directions.shape[0]
    pad = (-nn) % batch
    dirs = jnp.concatenate([directions, jnp.zeros((pad, 3), directions.dtype)]).reshape(-1, batch, 3)
    rdt = jnp.real(P).dtype

    def one(nb):
        phase = jnp.exp(-1j * k * (nb.astype(rdt) @ positions.T.astype(rdt))).astype(P.dtype)
        return phase @ P.T

    return jax.lax.map(one, dirs).reshape(-1, 3)[:nn]
