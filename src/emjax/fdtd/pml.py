"""Convolutional PML (Roden & Gedney 2000) with its state confined to the boundary slabs.

In a CPML along axis ``a`` every derivative ``d_a f`` in the curls becomes
``d_a f / kappa + psi``, with ``psi <- b psi + c d_a f``, ``b = exp(-(sigma/kappa + alpha) dt)``,
``c = sigma (b - 1) / (sigma kappa + kappa^2 alpha)`` (eps0 = 1). Only the two slabs of
``thickness`` cells hold ``psi``; the correction ``(1/kappa - 1) d_a f + psi`` is computed on
the slabs and padded with zeros to the full array inside the same expression as the bulk
update, so XLA fuses it into one pass (DESIGN.md: ``.at[].add`` costs a pass per slab).
"""

from __future__ import annotations

import numpy as np

from .grid import CPML


def profile(pml: CPML, n: int, dx: float, dt: float, half: bool):
    """(b, c, kinv_minus_1) along one axis on the 2L slab nodes (low slab, then high slab).

    ``half``: the nodes sit at i + 1/2 (derivatives of E for the H update) instead of i.
    """
    L = pml.thickness
    i = np.arange(L, dtype=float) + (0.5 if half else 0.0)
    depth_lo = (L - i) / L
    j = np.arange(n - L, n, dtype=float) + (0.5 if half else 0.0)
    depth_hi = (j - (n - L)) / L
    u = np.clip(np.concatenate([depth_lo, depth_hi]), 0.0, 1.0)
    sigma_max = pml.sigma_max if pml.sigma_max is not None else 0.8 * (pml.order + 1) / dx
    sigma = sigma_max * u**pml.order
    kappa = 1 + (pml.kappa_max - 1) * u**pml.order
    alpha = pml.alpha_max * (1 - u)
    b = np.exp(-(sigma / kappa + alpha) * dt)
    den = sigma * kappa + kappa**2 * alpha
    c = np.where(den > 0, sigma * (b - 1) / np.where(den > 0, den, 1.0), 0.0)
    return b, c, 1 / kappa - 1


def slab(d, axis: int, L: int):
    """The two slabs (first and last L planes along ``axis``) of ``d``, concatenated."""
    n = d.shape[axis]
    lo = [slice(None)] * 3
    hi = [slice(None)] * 3
    lo[axis] = slice(0, L)
    hi[axis] = slice(n - L, n)
    import jax.numpy as jnp

    return jnp.concatenate([d[tuple(lo)], d[tuple(hi)]], axis=axis)


def unslab(s, axis: int, n: int):
    """Pad slab values back to the full length ``n`` along ``axis`` (zeros in between)."""
    import jax.numpy as jnp

    L = s.shape[axis] // 2
    lo = [slice(None)] * 3
    hi = [slice(None)] * 3
    lo[axis] = slice(0, L)
    hi[axis] = slice(L, 2 * L)
    zshape = list(s.shape)
    zshape[axis] = n - 2 * L
    return jnp.concatenate([s[tuple(lo)], jnp.zeros(zshape, s.dtype), s[tuple(hi)]], axis=axis)
