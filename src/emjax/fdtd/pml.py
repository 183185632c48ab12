"""Convolutional PML (Roden & Gedney 2000) with its state confined to the boundary slabs.

In a CPML along axis ``a`` every derivative ``d_a f`` in the curls becomes
``d_a f / kappa + psi``, with ``psi <- b psi + c d_a f``, ``b = exp(-(sigma/kappa + alpha) dt)``,
``c = sigma (b - 1) / (sigma kappa + kappa^2 alpha)`` (eps0 = 1). Only the two slabs of
``thickness`` cells hold ``psi``; the correction ``(1/kappa - 1) d_a f + psi`` is computed on
the slabs and padded with zeros to the full array inside the same expression as the bulk
update, so XLA fuses it into one pass (DESIGN.md: ``.at[].add`` costs a pass per slab).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .grid import CPML


def profile(pml: CPML, n: int, dx: float, dt: float, half: bool):
    """((b, c, kinv_minus_1) on the low slab, the same on the high slab) along one axis.

    ``half``: the nodes sit at i + 1/2 (derivatives of E for the H update) instead of i.
    The PEC wall is the plane i = 0 (= n); depth runs from 0 at the slab's inner face to 1
    at the wall.
    """
    L = pml.thickness
    off = 0.5 if half else 0.0
    depth_lo = (L - (np.arange(L) + off)) / L
    depth_hi = (np.arange(n - L, n) + off - (n - L)) / L
    sigma_max = pml.sigma_max if pml.sigma_max is not None else 0.8 * (pml.order + 1) / dx
    out = []
    for u in (np.clip(depth_lo, 0, 1), np.clip(depth_hi, 0, 1)):
        sigma = sigma_max * u**pml.order
        kappa = 1 + (pml.kappa_max - 1) * u**pml.order
        alpha = pml.alpha_max * (1 - u)
        b = np.exp(-(sigma / kappa + alpha) * dt)
        den = sigma * kappa + kappa**2 * alpha
        c = np.where(den > 0, sigma * (b - 1) / np.where(den > 0, den, 1.0), 0.0)
        out.append((b, c, 1 / kappa - 1))
    return tuple(out)


def take(d, axis: int, start: int, stop: int):
    idx = [slice(None)] * d.ndim
    idx[axis] = slice(start, stop)
    return d[tuple(idx)]


def pad_to(s, axis: int, before: int, after: int):
    """Zero-pad a slab term to the full array inside the update expression (fuses)."""
    widths = [(0, 0)] * s.ndim
    widths[axis] = (before, after)
    return jnp.pad(s, widths)


def shifted(f, axis: int, start: int, length: int):
    """Planes ``start .. start+length-1`` along ``axis``, where the one plane outside the
    array (``-1`` or ``n``) reads as zero instead of wrapping around.

    Used on a CPML face, which is backed by a PEC wall at i = 0 (= n): the differentiated
    components are tangential to that wall, so E there is zero; the H plane at -1/2 only
    enters the update of E on the wall plane itself, which the wall zeroes. A zero pad
    fuses into the psi update where a wrap-around concatenate was a kernel of its own."""
    n = f.shape[axis]
    lo, hi = max(start, 0), min(start + length, n)
    return pad_to(take(f, axis, lo, hi), axis, lo - start, start + length - hi)


def slab_derivative(f, axis: int, start: int, length: int, forward: bool, inv_dx):
    """2nd-order derivative on one slab computed from slices of ``f`` alone, so that the
    full-size derivative keeps a single consumer (the bulk update) and stays fused."""
    if forward:
        return (shifted(f, axis, start + 1, length) - take(f, axis, start, start + length)) * inv_dx
    return (take(f, axis, start, start + length) - shifted(f, axis, start - 1, length)) * inv_dx
