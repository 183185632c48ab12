"""Resonances of a ringing signal by filter diagonalization (Mandelshtam and Taylor, J. Chem.
Phys. 107, 6756 (1997); the method of Harminv): the frequencies, decay rates, Q factors and
amplitudes of the damped sinusoids in a band, from a time series shorter than their decay.

The signal is taken as ``c_n = sum_k d_k u_k^n`` with ``u_k = exp(-i omega_k dt)`` and
``omega_k = 2 pi f_k - i gamma_k`` (decay rate ``gamma_k > 0``; a real signal holds each
resonance at +f and -f, and the band picks the positive one). With ``M = (N - 2) // 2`` and
``J`` basis frequencies ``f_j`` spread over the band (``z_j = exp(-i 2 pi f_j dt)``), the
Krylov matrices ``U^(p)_jk = sum_{n, m = 0}^{M} z_j^-n z_k^-m c_{n + m + p}`` (p = 0, 1, 2)
are summed over ``s = n + m`` with the geometric inner sums in closed form. The resonances
are the generalized eigenvalues ``U^(1) B = u U^(0) B`` in the span of ``U^(0)``'s
significant singular vectors (its noise floor cut), the amplitudes ``d_k = (B_k^T f)^2``
with ``f_j = sum_n z_j^-n c_n`` and ``B^T U^(0) B = 1``. The error estimate of each
resonance is ``|u_k^2 - B_k^T U^(2) B_k| / |u_k|^2`` (the second power must agree),
relative like Harminv's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import ConfigError

__all__ = ["Resonance", "resonances"]


@dataclass(frozen=True)
class Resonance:
    """One resonance: ``frequency`` (1 / the time unit of ``dt``), ``decay`` (the amplitude's
    decay rate gamma: the signal goes as ``exp(-gamma t)``), ``Q`` (= pi f / gamma),
    ``amplitude`` (complex, of ``exp(-i omega t)`` at t = 0) and ``error`` (relative)."""

    frequency: float
    decay: float
    Q: float
    amplitude: complex
    error: float


def _u_matrices(c, z, M):
    """U^(p)_jk = sum_{s=0}^{2M} c_{s+p} sum_{n=max(0,s-M)}^{min(s,M)} z_j^-n z_k^-(s-n) for
    p = 0, 1, 2. The inner sum is z_k^-s sum_n r^n with r = z_k / z_j, a geometric sum
    (r^a - r^(b+1)) / (1 - r) whose two powers are carried from one s to the next."""
    J = len(z)
    r = z[None, :] / z[:, None]
    same = np.abs(r - 1.0) < 1e-12
    inv = np.where(same, 0.0, 1.0 / np.where(same, 0.5, 1.0 - r))
    U = [np.zeros((J, J), complex) for _ in range(3)]
    zk_pow = np.ones(J, complex)  # z_k^-s
    zi = 1.0 / z
    ra = np.ones((J, J), complex)  # r^a, a = max(0, s - M)
    rb = r.copy()  # r^(b + 1), b = min(s, M)
    for s in range(2 * M + 1):
        a, b = max(0, s - M), min(s, M)
        geo = np.where(same, float(b - a + 1), (ra - rb) * inv) * zk_pow[None, :]
        for p in range(3):
            U[p] += c[s + p] * geo
        zk_pow = zk_pow * zi
        if s < M:
            rb = rb * r  # b grows with s up to M
        else:
            ra = ra * r  # then a grows
    return U


def resonances(
    signal,
    dt: float,
    fmin: float,
    fmax: float,
    *,
    density: float = 1.0,
    cutoff: float = 1e-10,
    max_error: float = 1e-2,
    min_amplitude: float = 1e-3,
    growing: bool = False,
) -> list[Resonance]:
    """The resonances with frequencies in ``[fmin, fmax]`` of ``signal`` sampled every
    ``dt`` (a 1-D real or complex array of at least 8 samples), ordered by frequency.

    ``density``: basis frequencies per ``1 / (N dt)`` of the band (Harminv uses ~1.1);
    ``cutoff``: singular values of U^(0) below ``cutoff`` times the largest are dropped
    (the signal's noise floor); resonances are kept with ``error <= max_error``,
    ``|amplitude| >= min_amplitude`` times the largest one and not growing (unless
    ``growing``): a decay >= -1e-6 / (the record's duration), so that a lossless mode,
    whose decay comes out as +- rounding, is kept. Noise in the signal gives weak modes of
    its own (amplitudes near the noise's): ``min_amplitude`` above the noise-to-signal ratio
    drops them. A resonance just outside the band leaks into it: take a band wider than the
    resonances of interest."""
    c = _check(signal, dt, fmin, fmax)
    out = [r for r in _fdm(c, dt, fmin, fmax, density, cutoff) if r.error <= max_error]
    # a lossless mode's decay comes out as +-rounding: growing means it grows measurably
    # (by more than 1e-6 of its amplitude over the record)
    span = (len(c) - 1) * dt
    out = [r for r in out if growing or r.decay * span >= -1e-6]
    if not out:
        return []
    top = max(abs(r.amplitude) for r in out)
    return [r for r in out if abs(r.amplitude) >= min_amplitude * top]


def _check(signal, dt, fmin, fmax):
    c = np.asarray(signal)
    if c.ndim != 1 or c.size < 8 or not np.all(np.isfinite(c)):
        raise ConfigError(f"signal must be a 1-D array of at least 8 finite samples, got shape {c.shape}")
    if not (np.isfinite(dt) and dt > 0):
        raise ConfigError(f"dt must be a positive number, got {dt!r}")
    if not (0 <= fmin < fmax <= 0.5 / dt):
        raise ConfigError(
            f"need 0 <= fmin < fmax <= 1 / (2 dt) = {0.5 / dt:g}, got fmin={fmin!r}, fmax={fmax!r}"
        )
    return c.astype(complex)


def _fdm(c, dt, fmin, fmax, density, cutoff) -> list[Resonance]:
    """Every eigenvalue of the pencil in the band (no filtering but the band)."""
    N = c.size
    M = (N - 3) // 2  # c_{2M+2} is the last sample U^(2) reads
    J = max(4, int(np.ceil(density * (fmax - fmin) * N * dt)) + 2)
    f_basis = np.linspace(fmin, fmax, J)
    z = np.exp(-2j * np.pi * f_basis * dt)
    U0, U1, U2 = _u_matrices(c, z, M)
    # the span of U0's significant singular vectors
    W, sv, Vh = np.linalg.svd(U0)
    keep = sv > cutoff * sv[0]
    if not np.any(keep):
        return []
    Wk, Vk, sk = W[:, keep], Vh[keep].conj().T, sv[keep]
    # U0 = W S V^H: in the basis Vk, U1 -> S^-1/2 W^H U1 V S^-1/2 (a similarity of the pencil)
    scale = 1.0 / np.sqrt(sk)
    A = (scale[:, None] * (Wk.conj().T @ U1 @ Vk)) * scale[None, :]
    u, Y = np.linalg.eig(A)
    # eigenvectors of the pencil in the z-basis (right: V S^-1/2 y, left: W S^-1/2 ...)
    B = Vk @ (scale[:, None] * Y)
    f_vec = np.array([np.sum(c[: M + 1] * zj ** (-np.arange(M + 1))) for zj in z])
    out = []
    for k in range(len(u)):
        b = B[:, k]
        norm = b @ U0 @ b  # complex-symmetric normalization B^T U0 B = 1
        if norm == 0:
            continue
        b = b / np.sqrt(norm)
        d = (b @ f_vec) ** 2
        u2 = b @ U2 @ b
        err = abs(u[k] ** 2 - u2) / max(abs(u[k]) ** 2, 1e-300)
        omega = 1j * np.log(u[k]) / dt
        f = omega.real / (2 * np.pi)
        gamma = -omega.imag
        if not (fmin <= f <= fmax):
            continue
        Q = np.pi * f / gamma if gamma != 0 else np.inf
        out.append(Resonance(float(f), float(gamma), float(Q), complex(d), float(err)))
    return sorted(out, key=lambda r: r.frequency)
