"""Interaction terms and their FFT on the circulant embedding of the block-Toeplitz matrix.

The field at dipole i from dipole j is ``E_i = G(r_i - r_j) P_j`` with the point-dipole
Green's tensor (Gaussian units, ``R = |r|``, ``q = r / R``)

    G(r) = exp(ikR) / R**3 [ (k**2 R**2 + ikR - 1) I - (k**2 R**2 + 3ikR - 3) q q ],

or, for FCD, that tensor plus the filtered correction of Gay-Balmaz & Martin / Piller (as in
ADDA, with the sine and cosine integrals of ``(pi/d +- k) R``). ``G(0) = 0``.

On a lattice G depends only on the index difference, so the interaction is a discrete
convolution: zero-pad each axis of length n to the smallest 2^a 3^b 5^c 7^d >= 2n - 1,
embed G circulantly, and multiply in Fourier space (paper eqs. 4-6, 13-14). The six
independent components of the FFT of G (xx, xy, xz, yy, yz, zz) are computed once on the
device and kept there.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from scipy import special

COMPONENTS = ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))
# parity of each component under r_axis -> -r_axis (odd for q_a q_b with a != b)
_ODD_AXES = {0: (), 1: (0, 1), 2: (0, 2), 3: (), 4: (1, 2), 5: ()}
_INDEX = {(a, b): c for c, (a, b) in enumerate(COMPONENTS)}
_INDEX.update({(b, a): c for (a, b), c in list(_INDEX.items())})


def fft_size(n: int) -> int:
    """Smallest 2^a 3^b 5^c 7^d >= 2n - 1."""
    target = max(2 * n - 1, 1)
    best = None
    p2 = 1
    while p2 < 2 * target:
        p3 = p2
        while p3 < 2 * target:
            p5 = p3
            while p5 < 2 * target:
                p7 = p5
                while p7 < 2 * target:
                    if p7 >= target and (best is None or p7 < best):
                        best = p7
                    p7 *= 7
                p5 *= 5
            p3 *= 3
        p2 *= 2
    return best


def fft_shape(grid: tuple[int, int, int]) -> tuple[int, int, int]:
    return tuple(fft_size(n) for n in grid)


def _octant_coordinates(grid, d, xp):
    nx, ny, nz = grid
    x = xp.arange(nx, dtype=xp.float64)[:, None, None] * d
    y = xp.arange(ny, dtype=xp.float64)[None, :, None] * d
    z = xp.arange(nz, dtype=xp.float64)[None, None, :] * d
    return x, y, z


def point_green_octant(grid, d: float, k: float) -> jax.Array:
    """G for non-negative index differences, shape (6, nx, ny, nz), complex128, G(0) = 0."""
    x, y, z = _octant_coordinates(grid, d, jnp)
    r2 = x * x + y * y + z * z
    rs = jnp.sqrt(jnp.where(r2 == 0, 1.0, r2))  # no sqrt(0): its derivative (d traced) is NaN
    kr = k * rs
    e = jnp.exp(1j * kr) / rs**3
    t1 = e * (kr**2 - 1 + 1j * kr)
    t2 = e * (3 - kr**2 - 3j * kr)
    q = (x / rs, y / rs, z / rs)
    out = []
    for a, b in COMPONENTS:
        g = t2 * q[a] * q[b] + (t1 if a == b else 0)
        out.append(jnp.where(r2 == 0, 0, g))
    return jnp.stack(out)


def fcd_correction_octant(grid, d: float, k: float) -> np.ndarray:
    """Real correction added to the point G by FCD, shape (6, nx, ny, nz), float64 (host)."""
    x, y, z = _octant_coordinates(grid, d, np)
    r = np.sqrt(x * x + y * y + z * z)
    rs = np.where(r == 0, 1.0, r)
    kr = k * rs
    kfr = np.pi * rs / d
    ci1, si1 = special.sici(kfr + kr)[::-1]
    ci2, si2 = special.sici(kfr - kr)[::-1]
    ci = ci1 - ci2
    si = np.pi - si1 - si2
    inv_r3 = 1 / rs**3
    cos_e, sin_e = np.cos(kr) * inv_r3, np.sin(kr) * inv_r3
    g0 = (sin_e * ci + cos_e * si) / np.pi
    g2 = (kr * (cos_e * ci - sin_e * si) + 2 / 3 * inv_r3 * (kfr * np.cos(kfr) - 4 * np.sin(kfr))) / np.pi
    g2 = g2 - g0
    t = g0 * kr**2
    q = (x / rs, y / rs, z / rs)
    out = np.empty((6,) + tuple(grid))
    for c, (a, b) in enumerate(COMPONENTS):
        corr = q[a] * q[b] * (t + 3 * g2)
        if a == b:
            corr = corr - (t + g2)
        out[c] = np.where(r == 0, 0.0, corr)
    return out


def _embed(g, axis: int, M: int, odd: bool):
    """Circulant embedding along ``axis``: [g(0..n-1), 0..., +-g(n-1..1)]."""
    n = g.shape[axis]
    head = g
    tail = jnp.flip(lax_slice(g, axis, 1, n), axis=axis)
    if odd:
        tail = -tail
    zshape = list(g.shape)
    zshape[axis] = M - (2 * n - 1)
    return jnp.concatenate([head, jnp.zeros(zshape, g.dtype), tail], axis=axis)


def lax_slice(a, axis, start, stop):
    idx = [slice(None)] * a.ndim
    idx[axis] = slice(start, stop)
    return a[tuple(idx)]


LAYOUTS = {"pruned": "yzx", "full": "xyz"}


def interaction_fft(grid, d: float, k: float, dtype, kind: str = "point", layout: str = "yzx") -> jax.Array:
    """FFT of the circulantly embedded interaction tensor of ``dtype``: (6, Mx, My, Mz) in
    the "xyz" layout, (6, My, Mz, Mx) in the "yzx" layout used by :func:`convolve`."""
    octant = point_green_octant(grid, d, k)
    if kind == "fcd":
        octant = octant + jnp.asarray(fcd_correction_octant(grid, d, k))
    elif kind != "point":
        raise ValueError(f"unknown interaction {kind!r}")
    M = fft_shape(grid)
    octant = octant.astype(dtype)
    comps = []
    for c in range(6):
        g = octant[c]
        for axis in range(3):
            g = _embed(g, axis, M[axis], axis in _ODD_AXES[c])
        g = jnp.fft.fftn(g)
        comps.append(jnp.moveaxis(g, 0, 2) if layout == "yzx" else g)
    return jnp.stack(comps)


def convolve(Dhat: jax.Array, p: jax.Array) -> jax.Array:
    """``(G * p)_i = sum_j G(r_i - r_j) p_j`` for p of shape (3, nx, ny, nz).

    ``Dhat`` is in the "yzx" layout (6, My, Mz, Mx). The forward transform does the (y, z)
    pair on the nx unpadded planes only, moves x last, and transforms x; the product is
    formed in that layout, and the inverse crops x before moving it back, so the zero
    half of the padding along x is never transformed.
    """
    _, nx, ny, nz = p.shape
    My, Mz, Mx = Dhat.shape[1:]
    q = jnp.fft.fft2(p, s=(My, Mz), axes=(2, 3))
    q = jnp.fft.fft(jnp.moveaxis(q, 1, 3), n=Mx, axis=3)
    y = _tensor_product(Dhat, q)
    y = jnp.moveaxis(jnp.fft.ifft(y, axis=3)[..., :nx], 3, 1)
    return jnp.fft.ifft2(y, axes=(2, 3))[:, :, :ny, :nz]


def _tensor_product(D, q):
    return jnp.stack(
        [
            D[0] * q[0] + D[1] * q[1] + D[2] * q[2],
            D[1] * q[0] + D[3] * q[1] + D[4] * q[2],
            D[2] * q[0] + D[4] * q[1] + D[5] * q[2],
        ]
    )


def convolve_full(Dhat: jax.Array, p: jax.Array) -> jax.Array:
    """Same as :func:`convolve` with plain padded 3-D FFTs; ``Dhat`` in "xyz" layout
    (6, Mx, My, Mz)."""
    _, nx, ny, nz = p.shape
    Mx, My, Mz = Dhat.shape[1:]
    q = jnp.fft.fftn(jnp.pad(p, ((0, 0), (0, Mx - nx), (0, My - ny), (0, Mz - nz))), axes=(1, 2, 3))
    y = _tensor_product(Dhat, q)
    return jnp.fft.ifftn(y, axes=(1, 2, 3))[:, :nx, :ny, :nz]


def dhat_bytes(grid, complex_dtype) -> int:
    return 6 * math.prod(fft_shape(grid)) * np.dtype(complex_dtype).itemsize
