"""Slow but obvious implementations used to cross-check the fast ones (NumPy only)."""

from __future__ import annotations

import numpy as np


def point_green(r: np.ndarray, k: float) -> np.ndarray:
    """Free-space dyadic field of a point dipole (Gaussian units): E = G p, for r (N, 3).

    Written from E = exp(ikR)/R^3 {k^2 R^2 (n x p) x n + (1 - ikR) [3 n (n.p) - p]}.
    """
    R = np.linalg.norm(r, axis=-1)
    n = r / R[:, None]
    eikr = np.exp(1j * k * R) / R**3
    eye = np.eye(3)
    nn = n[:, :, None] * n[:, None, :]
    far = ((k * R) ** 2)[:, None, None] * (eye - nn)
    near = (1 - 1j * k * R)[:, None, None] * (3 * nn - eye)
    return eikr[:, None, None] * (far + near)


def dense_interaction_matrix(positions: np.ndarray, k: float) -> np.ndarray:
    """The full 3N x 3N matrix of G(r_i - r_j) (zero blocks on the diagonal)."""
    N = len(positions)
    A = np.zeros((N, 3, N, 3), dtype=complex)
    for i in range(N):
        r = positions[i] - positions
        mask = np.arange(N) != i
        A[i, :, mask, :] = point_green(r[mask], k)
    return A.reshape(3 * N, 3 * N)
