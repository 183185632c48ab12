"""3-D near-to-far-field transform and the radar cross section.

Each Cartesian component u of the scattered E satisfies Helmholtz's equation outside the
scatterer, so Green's theorem on a closed box S around it (G = exp(ik|r - r'|) / (4 pi |r -
r'|), n' outward) gives far away ``u ~ F exp(ikr) / r`` with

    F(rhat) = -(1 / 4 pi) oint_S [du/dn' + i k (rhat . n') u] exp(-i k rhat . r') dS'

and ``sigma(rhat) = lim 4 pi r^2 |E_s|^2 / |E_inc|^2 = 4 pi |F_t|^2`` (F_t: F's part
transverse to rhat; its longitudinal part, which vanishes exactly, measures the transform's
error). Each component is integrated on a box of its own Yee lattice (no interpolation):
du/dn' by centred differences, the trapezoid rule on each face; second order. The phase
factorizes over the axes, so each face costs two small matrix products per direction.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import ConfigError

__all__ = ["cross_sections_3d", "far_field_3d", "rcs_3d", "plane_directions"]


def _trap(n: int, dx: float) -> np.ndarray:
    w = np.full(n, dx)
    w[0] = w[-1] = dx / 2
    return w


def far_field_3d(result, rhat, margin: int | None = None) -> np.ndarray:
    """The far-field amplitude F (P, 3) of ``result.Es`` in the directions ``rhat`` (P, 3):
    ``E_s ~ F exp(ikr) / r``. The box lies ``margin`` cells (default 2) inside the PML."""
    rhat = np.atleast_2d(np.asarray(rhat, float))
    rhat = rhat / np.linalg.norm(rhat, axis=1, keepdims=True)
    Es = np.asarray(result.Es)
    axes = (np.asarray(result.x), np.asarray(result.y), np.asarray(result.z))
    dx = result.dx
    k = 2 * math.pi * result.frequency
    m = 2 if margin is None else int(margin)
    L = result.pml_cells
    shape = Es.shape[1:]
    lo = [L + m] * 3
    hi = [n - 2 - L - m for n in shape]  # E_c along c ends one half-cell early: same box for all
    if any(h - lo_ < 4 for lo_, h in zip(lo, hi)):
        raise ConfigError("far field: the integration box leaves no room; enlarge the region")
    eps = result.eps
    F = np.zeros((len(rhat), 3), complex)
    for c in range(3):
        pos = [axes[a] + (0.5 * dx if a == c else 0.0) for a in range(3)]
        box = tuple(slice(lo[a], hi[a] + 1) for a in range(3))
        sub = eps[c][box]
        shell = np.ones(sub.shape, bool)
        shell[1:-1, 1:-1, 1:-1] = False
        if np.any(sub[shell] != 1):
            raise ConfigError("far field: the integration box crosses the scene; enlarge the region")
        u = Es[c]
        phase = [np.exp(-1j * k * np.outer(rhat[:, a], pos[a])) for a in range(3)]  # (P, n_a)
        for a in range(3):  # the two faces normal to axis a
            b1, b2 = [x for x in range(3) if x != a]
            w1 = _trap(hi[b1] - lo[b1] + 1, dx)
            w2 = _trap(hi[b2] - lo[b2] + 1, dx)
            s1, s2 = slice(lo[b1], hi[b1] + 1), slice(lo[b2], hi[b2] + 1)
            for i, sign in ((lo[a], -1.0), (hi[a], 1.0)):
                face = u[:, s1][:, :, s2] if a == 0 else (u[s1][:, :, s2] if a == 1 else u[s1][:, s2])
                val = np.take(face, i, axis=a)
                dn = sign * (np.take(face, i + 1, axis=a) - np.take(face, i - 1, axis=a)) / (2 * dx)
                integrand = (dn[None] + 1j * k * sign * rhat[:, a, None, None] * val[None]) * (
                    w1[:, None] * w2[None, :]
                )[None]  # (P, n1, n2)
                ph = phase[a][:, i]  # (P,)
                F[:, c] += ph * np.einsum("pjk,pj,pk->p", integrand, phase[b1][:, s1], phase[b2][:, s2])
    return -F / (4 * math.pi)  # n' points out of the box, into the exterior: u = oint [u dG/dn' - G du/dn']


def plane_directions(wave, theta_deg, plane: str) -> np.ndarray:
    """Unit directions (P, 3) at angles ``theta_deg`` from the incident direction in the
    E-plane (containing the incident E) or the H-plane (containing d x E)."""
    d = np.asarray(wave.direction, float)
    e = np.real(np.asarray(wave.polarization, complex))
    if np.linalg.norm(e) < 1e-12:
        e = np.imag(np.asarray(wave.polarization, complex))
    e = e - d * np.dot(d, e)
    e = e / np.linalg.norm(e)
    if plane.upper() == "E":
        t = e
    elif plane.upper() == "H":
        t = np.cross(d, e)
    else:
        raise ConfigError(f"plane must be 'E' or 'H', got {plane!r}")
    th = np.deg2rad(np.atleast_1d(np.asarray(theta_deg, float)))
    return np.cos(th)[:, None] * d[None] + np.sin(th)[:, None] * t[None]


def rcs_3d(result, theta_deg, plane: str = "E", margin: int | None = None) -> np.ndarray:
    """Bistatic radar cross section sigma (area) at ``theta_deg`` (degrees from the incident
    direction; 180 = backscatter) in the ``plane`` "E" or "H" of the incident wave."""
    if not hasattr(result.wave, "direction"):
        raise ConfigError("rcs_3d needs a plane-wave result (a dipole's far field: far_field_3d)")
    rhat = plane_directions(result.wave, theta_deg, plane)
    F = far_field_3d(result, rhat, margin)
    Ft = F - rhat * np.sum(rhat * F, axis=1, keepdims=True)
    return 4 * math.pi * np.sum(np.abs(Ft) ** 2, axis=1)


def cross_sections_3d(result, n_theta: int = 48, n_phi: int = 64, margin: int | None = None) -> dict:
    """``{"Csca", "Cext", "Cabs"}`` (areas) of a plane-wave result: Csca = oint |F_t|^2 dOmega
    (Gauss-Legendre in cos(theta) times the trapezoid in phi, about the incident direction),
    Cext from the optical theorem ``(4 pi / k) Im(e* . F(d))`` (unit incident amplitude), Cabs
    their difference."""
    if not hasattr(result.wave, "direction"):
        raise ConfigError("cross_sections_3d needs a plane-wave result")
    d = np.asarray(result.wave.direction, float)
    e = np.asarray(result.wave.polarization, complex)
    t1 = np.cross(d, [1.0, 0.0, 0.0] if abs(d[0]) < 0.9 else [0.0, 1.0, 0.0])
    t1 /= np.linalg.norm(t1)
    t2 = np.cross(d, t1)
    mu, w = np.polynomial.legendre.leggauss(n_theta)
    phi = 2 * np.pi * np.arange(n_phi) / n_phi
    st = np.sqrt(1 - mu**2)
    rhat = (
        mu[:, None, None] * d
        + (st[:, None] * np.cos(phi)[None])[..., None] * t1
        + (st[:, None] * np.sin(phi)[None])[..., None] * t2
    ).reshape(-1, 3)
    F = far_field_3d(result, np.vstack([rhat, d[None]]), margin)
    fwd, F = F[-1], F[:-1]
    Ft = F - rhat * np.sum(rhat * F, axis=1, keepdims=True)
    weights = (w[:, None] * np.full(n_phi, 2 * np.pi / n_phi)[None]).ravel()
    csca = float(np.sum(weights * np.sum(np.abs(Ft) ** 2, axis=1)))
    k = 2 * math.pi * result.frequency
    cext = float(4 * math.pi / k * np.imag(np.vdot(e, fwd)))
    return {"Csca": csca, "Cext": cext, "Cabs": cext - csca}
