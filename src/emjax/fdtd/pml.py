"""Convolutional PML (Roden & Gedney 2000) with its state confined to the boundary slabs.

In a CPML along axis ``a`` every derivative ``d_a f`` in the curls becomes
``d_a f / kappa + psi``, with ``psi <- b psi + c d_a f``, ``b = exp(-(sigma/kappa + alpha) dt)``,
``c = sigma (b - 1) / (sigma kappa + kappa^2 alpha)`` (eps0 = 1). Only the two slabs of
``thickness`` cells hold ``psi``; the correction ``(1/kappa - 1) d_a f + psi`` (``psi`` alone
with kappa = 1) is computed on the slabs and, on a GPU, padded with zeros to the full array
inside the same expression as the bulk update, so XLA fuses it into one pass (``.at[].add``
after it copies the array there); on the CPU it is added to the slabs in place
(terms.inplace_default). With the 4th-order stencil the slab derivatives and the
planes next to the wall use the fields' images across the PEC wall (``imaged``,
``wall_terms_4``).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .grid import CPML
from .update import C1, C3


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


def imaged(f, axis: int, lo: int, hi: int, forward: bool):
    """Planes ``lo .. hi-1`` of ``f`` along ``axis``, continued past a PEC wall at i = 0 (= n)
    by its images: E tangential (``forward``: nodes at i, zero on the wall) is odd,
    f(-k) = -f(k), f(n+k) = -f(n-k); H tangential (nodes at i + 1/2, stored at i) is even,
    h[-k] = h[k-1], h[n-1+k] = h[n-k]. Built as a sum of zero-padded pieces (which XLA
    fuses into the consumer) rather than a concatenate (a kernel of its own)."""
    n = f.shape[axis]
    length = hi - lo
    a, b = max(lo, 0), min(hi, n)
    out = pad_to(take(f, axis, a, b), axis, a - lo, hi - b)
    for k in list(range(lo, a)) + list(range(b, hi)):
        if forward:
            src, sgn = (-k, -1.0) if k < 0 else ((2 * n - k, -1.0) if k > n else (0, 1.0))
        else:
            src, sgn = (-k - 1, 1.0) if k < 0 else (2 * n - 1 - k, 1.0)
        out = out + pad_to(sgn * take(f, axis, src, src + 1), axis, k - lo, length - (k - lo) - 1)
    return out


def wall_terms_4(f, axis: int, forward: bool, inv_dx):
    """[(plane, term)]: what the 4th-order stencil (C3 = -1/24) needs added on the planes
    next to a PEC wall at i = 0 (= n) where the periodic (wrapped) differences reached
    across it, so that they use the images instead (see ``imaged``)."""
    n = f.shape[axis]
    if forward:  # H update: d(E_t) at i + 1/2 for i = 0 and n - 1
        t = C3 * inv_dx * (take(f, axis, 1, 2) + take(f, axis, n - 1, n))
        return [(0, t), (n - 1, -t)]
    t = C3 * inv_dx * (take(f, axis, n - 1, n) - take(f, axis, 0, 1))  # E update, i = 1, n - 1
    return [(1, t), (n - 1, t)]


def slab_derivative(f, axis: int, start: int, length: int, forward: bool, inv_dx, order: int = 2):
    """Derivative on one slab computed from slices of ``f`` alone, so that the full-size
    derivative keeps a single consumer (the bulk update) and stays fused. 4th order
    (9/8, -1/24) reads two planes beyond the slab, continued by images past the wall."""
    if order == 4:
        lo = start - 1 if forward else start - 2
        e = imaged(f, axis, lo, lo + length + 3, forward)
        return (
            C1 * (take(e, axis, 2, length + 2) - take(e, axis, 1, length + 1))
            + C3 * (take(e, axis, 3, length + 3) - take(e, axis, 0, length))
        ) * inv_dx
    if forward:
        return (shifted(f, axis, start + 1, length) - take(f, axis, start, start + length)) * inv_dx
    return (take(f, axis, start, start + length) - shifted(f, axis, start - 1, length)) * inv_dx
