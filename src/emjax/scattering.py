"""Scattering quantities shared by DDA, FDTD and FDFD.

Conventions (Bohren & Huffman): incidence along +z, scattering direction
``n = (sin t cos p, sin t sin p, cos t)``; the scattering plane contains z and n. Unit
vectors: parallel incident ``e_par_i = (cos p, sin p, 0)``, perpendicular incident
``e_perp_i = (sin p, -cos p, 0)``; parallel scattered ``theta_hat``, perpendicular
scattered ``-phi_hat``. The amplitude matrix relates the far fields,

    [E_par_s, E_perp_s] = exp(ik(r - z)) / (-ikr) [[S2, S3], [S4, S1]] [E_par_i, E_perp_i],

and the Mueller matrix follows BH eq. (3.16). ADDA's default scattering plane is yz
(``phi = 90 deg``), where "parallel" incidence is y-polarized and "perpendicular" is x.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import ConfigError, require_floats, require_int, require_length

__all__ = [
    "PlaneWave",
    "angles_deg",
    "euler_matrix",
    "euler_angles",
    "scattering_basis",
    "mueller_from_amplitude",
    "degree_of_polarization",
    "clenshaw_curtis",
    "romberg_cos_beta",
    "OrientationAverage",
]


def angles_deg(name: str, value) -> tuple:
    """Angles in degrees from one number or a 1-D list/array of numbers, as a tuple of
    floats; anything else is one :class:`ConfigError` naming ``name`` and what is accepted
    (a string such as ``"0:180"`` is no range here)."""
    what = (
        f"{name} must be a non-empty list of finite angles in degrees (a list or 1-D array, "
        "e.g. numpy.arange(0, 181) or [0, 90, 180], or one number)"
    )
    if isinstance(value, (str, bytes)):
        raise ConfigError(f"{what}, got the string {value!r}")
    try:
        a = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ConfigError(f"{what}, got {value!r}") from None
    if a.ndim > 1:
        raise ConfigError(f"{what}, got an array of shape {a.shape}")
    if a.size == 0 or not np.all(np.isfinite(a)):
        raise ConfigError(f"{what}, got {' '.join(repr(value).split())[:120]}")
    return tuple(float(t) for t in np.atleast_1d(a))


def euler_matrix(alpha: float, beta: float, gamma: float) -> np.ndarray:
    """ZYZ rotation ``Rz(alpha) Ry(beta) Rz(gamma)`` (angles in degrees) as a 3x3 array."""
    a, b, g = np.deg2rad([alpha, beta, gamma])

    def rz(t):
        c, s = np.cos(t), np.sin(t)
        return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])

    cb, sb = np.cos(b), np.sin(b)
    ry = np.array([[cb, 0.0, sb], [0.0, 1.0, 0.0], [-sb, 0.0, cb]])
    return rz(a) @ ry @ rz(g)


def euler_angles(R) -> tuple[float, float, float]:
    """ZYZ Euler angles (alpha, beta, gamma) in degrees of a rotation matrix (inverse of
    :func:`euler_matrix`); at beta = 0 or 180 the split between alpha and gamma is
    arbitrary and gamma = 0 is returned."""
    R = np.asarray(R, dtype=float)
    beta = np.arccos(np.clip(R[2, 2], -1.0, 1.0))
    if np.hypot(R[0, 2], R[1, 2]) < 1e-12:
        alpha, gamma = np.arctan2(R[1, 0], R[0, 0]) if R[2, 2] > 0 else np.arctan2(-R[1, 0], -R[0, 0]), 0.0
    else:
        alpha = np.arctan2(R[1, 2], R[0, 2])
        gamma = np.arctan2(R[2, 1], -R[2, 0])
    return tuple(float(v) for v in np.rad2deg([alpha, beta, gamma]))


def scattering_basis(theta_deg, phi_deg):
    """Direction ``n``, ``theta_hat`` and ``phi_hat`` for angles (degrees), each ``(..., 3)``."""
    t = np.deg2rad(np.asarray(theta_deg, dtype=float))
    p = np.deg2rad(np.asarray(phi_deg, dtype=float))
    t, p = np.broadcast_arrays(t, p)
    st, ct, sp, cp = np.sin(t), np.cos(t), np.sin(p), np.cos(p)
    n = np.stack([st * cp, st * sp, ct], axis=-1)
    th = np.stack([ct * cp, ct * sp, -st], axis=-1)
    ph = np.stack([-sp, cp, np.zeros_like(p)], axis=-1)
    return n, th, ph


class PlaneWave:
    """Unit-amplitude plane wave ``e exp(i k k_hat . r)`` in the lab frame.

    ``direction`` and ``polarization`` are unit 3-vectors (polarization orthogonal to the
    direction; complex for elliptical polarization). DDA uses it as its incident field,
    FDTD as its TF/SF source.
    """

    def __init__(self, direction=(0.0, 0.0, 1.0), polarization=(1.0, 0.0, 0.0)):
        d = require_floats("direction", direction, "a finite real 3-vector")
        e = require_floats("polarization", polarization, "a finite 3-vector (complex allowed)", complex)
        if d.shape != (3,) or e.shape != (3,) or not np.all(np.isfinite(d)) or not np.all(np.isfinite(e)):
            raise ConfigError(
                f"direction and polarization must be finite 3-vectors, got {direction!r}, {polarization!r}"
            )
        if not np.linalg.norm(d) > 0 or not np.linalg.norm(e) > 0:
            raise ConfigError(
                f"direction and polarization must be non-zero, got {direction!r}, {polarization!r}"
            )
        d = d / np.linalg.norm(d)
        e = e / np.linalg.norm(e)
        if abs(np.dot(d, e)) > 1e-9:
            raise ValueError("polarization must be orthogonal to the direction")
        self.direction, self.polarization = d, e

    def rotated(self, R: np.ndarray) -> PlaneWave:
        """The same wave expressed in a frame rotated by ``R`` (vectors become ``R @ v``)."""
        return PlaneWave(R @ self.direction, R @ self.polarization)

    def field(self, k: float, points: np.ndarray) -> np.ndarray:
        """``E(points)``, points ``(..., 3)`` -> ``(..., 3)`` complex."""
        phase = np.exp(1j * k * (np.asarray(points) @ self.direction))
        return phase[..., None] * self.polarization


def mueller_from_amplitude(S1, S2, S3, S4) -> np.ndarray:
    """4x4 Mueller matrix (BH 3.16) from amplitude elements; output ``(..., 4, 4)``."""
    S1, S2, S3, S4 = (np.asarray(s) for s in (S1, S2, S3, S4))
    a1, a2, a3, a4 = (np.abs(s) ** 2 for s in (S1, S2, S3, S4))
    c = np.conj
    M = np.empty(S1.shape + (4, 4))
    M[..., 0, 0] = 0.5 * (a2 + a1 + a4 + a3)
    M[..., 0, 1] = 0.5 * (a2 - a1 + a4 - a3)
    M[..., 0, 2] = np.real(S2 * c(S3) + S1 * c(S4))
    M[..., 0, 3] = np.imag(S2 * c(S3) - S1 * c(S4))
    M[..., 1, 0] = 0.5 * (a2 - a1 - a4 + a3)
    M[..., 1, 1] = 0.5 * (a2 + a1 - a4 - a3)
    M[..., 1, 2] = np.real(S2 * c(S3) - S1 * c(S4))
    M[..., 1, 3] = np.imag(S2 * c(S3) + S1 * c(S4))
    M[..., 2, 0] = np.real(S2 * c(S4) + S1 * c(S3))
    M[..., 2, 1] = np.real(S2 * c(S4) - S1 * c(S3))
    M[..., 2, 2] = np.real(S1 * c(S2) + S3 * c(S4))
    M[..., 2, 3] = np.imag(S2 * c(S1) + S4 * c(S3))
    M[..., 3, 0] = np.imag(c(S2) * S4 + c(S3) * S1)
    M[..., 3, 1] = np.imag(c(S2) * S4 - c(S3) * S1)
    M[..., 3, 2] = np.imag(S1 * c(S2) - S3 * c(S4))
    M[..., 3, 3] = np.real(S1 * c(S2) - S3 * c(S4))
    return M


def degree_of_polarization(M: np.ndarray) -> np.ndarray:
    """``sqrt(M21**2 + M31**2 + M41**2) / M11`` for unpolarized incidence (ADDA paper eq. 9)."""
    M = np.asarray(M)
    return np.sqrt(M[..., 1, 0] ** 2 + M[..., 2, 0] ** 2 + M[..., 3, 0] ** 2) / M[..., 0, 0]


# --- orientation quadratures ----------------------------------------------------------------


def clenshaw_curtis(level: int) -> tuple[np.ndarray, np.ndarray]:
    """Clenshaw-Curtis rule on [-1, 1] with ``2**level + 1`` nodes ``cos(pi k / N)``.

    Returns (nodes, weights), weights summing to 2. Nested: level ``j - 1``'s nodes are every
    other node of level ``j``. As a rule in ``mu = cos(beta)`` its nodes are uniform in
    ``beta`` (``beta_k = 180 k / N`` degrees); ADDA's Romberg scheme uses as many points
    uniform in ``mu`` (:func:`romberg_cos_beta`).
    """
    n = 2**level
    k = np.arange(n + 1)
    theta = np.pi * k / n
    w = np.ones(n + 1)
    for j in range(1, n // 2 + 1):
        b = 1.0 if 2 * j == n else 2.0
        w -= b / (4 * j * j - 1) * np.cos(2 * j * theta)
    c = np.full(n + 1, 2.0)
    c[0] = c[-1] = 1.0
    return np.cos(theta), c * w / n


def romberg_cos_beta(values: np.ndarray) -> float:
    """Romberg estimate of ``(1/2) int_{-1}^{1} f(mu) d mu`` from ``2**J + 1`` samples of ``f``
    uniform in ``mu = cos(beta)`` (both ends included) - ADDA's scheme for beta, kept to
    compare rules with :func:`clenshaw_curtis`."""
    values = np.asarray(values, dtype=float)
    n = values.size - 1
    levels = int(round(np.log2(max(n, 1))))
    if n < 1 or 2**levels != n:
        raise ValueError("romberg_cos_beta needs 2**J + 1 samples")
    table = []
    for j in range(levels + 1):
        g = values[:: n // 2**j]
        h = 2.0 / 2**j
        table.append([h * (g.sum() - 0.5 * (g[0] + g[-1])) / 2])
    for m in range(1, levels + 1):
        for j in range(m, levels + 1):
            table[j].append(table[j][m - 1] + (table[j][m - 1] - table[j - 1][m - 1]) / (4**m - 1))
    return float(table[levels][levels])


@dataclass(frozen=True)
class OrientationAverage:
    """How to average over random orientation.

    Parameters
    ----------
    eps : relative accuracy goal for the averaged Cext and Cabs (refinement stops below it).
    beta_levels : (min, max) levels of the beta rule: ``2**level + 1`` nodes in [0, 180].
    gamma_levels : (min, max) levels of the gamma rule: ``2**level`` nodes in [0, 360/n_fold).
    n_alpha : alpha values (uniform in [0, 360)) for the Mueller matrix; no solves.
    n_fold : the particle is unchanged by a rotation of 360/n_fold degrees about its z axis
        (1: no symmetry; 6: hexagonal prism; 0: axisymmetric, one gamma).
    c2_x : the particle is unchanged by a rotation of 180 degrees about its x axis, so
        (alpha, beta, gamma) ~ (alpha + 180, 180 - beta, -gamma) and beta > 90 needs no solve.

    ``eps=0`` with ``min == max`` levels gives a fixed rule. Defaults: ADDA's (eps 1e-3, beta
    levels 2..4, gamma 2..4, 32 alpha values) with one more level allowed each and gamma
    starting at 8 nodes: a nested rule cannot see what its coarsest level aliases - a particle
    on a cubic lattice is nearly 4-fold symmetric about z, so 4 gamma nodes (0, 90, 180, 270)
    and 2 agree and the refinement would stop there with an error estimate of 0 (measured:
    0.3% actual error on a spheroid). Keep the minimum levels above the particle's symmetry.
    """

    eps: float = 1e-3
    beta_levels: tuple = (2, 5)
    gamma_levels: tuple = (3, 5)
    n_alpha: int = 32
    n_fold: int = 1
    c2_x: bool = False

    def __post_init__(self):
        if (
            isinstance(self.eps, bool)
            or not isinstance(self.eps, (int, float, np.floating, np.integer))
            or not (np.isfinite(self.eps) and 0 <= self.eps < 1)
        ):
            raise ConfigError(f"eps must be in [0, 1), got {self.eps!r}")
        for name in ("beta_levels", "gamma_levels"):
            lv = require_length(name, getattr(self, name), 2, "(min, max) Romberg levels in [1, 10]")
            lo = require_int(f"{name}[0]", lv[0], 1, 10)
            hi = require_int(f"{name}[1]", lv[1], 1, 10)
            if hi < lo:
                raise ConfigError(f"{name}: max {hi} < min {lo}")
            object.__setattr__(self, name, (lo, hi))
        object.__setattr__(self, "n_alpha", require_int("n_alpha", self.n_alpha, 1, 100_000))
        object.__setattr__(self, "n_fold", require_int("n_fold", self.n_fold, 0, 360))

    @property
    def gamma_period(self) -> float:
        return 360.0 / self.n_fold if self.n_fold else 0.0

    # -- nodes on the finest grids, as integer keys (ib, ig) --------------------------------
    def _sizes(self):
        nb = 2 ** self.beta_levels[1]
        ng = 2 ** self.gamma_levels[1] if self.n_fold else 1
        return nb, ng

    def _canonical(self, ib, ig):
        nb, ng = self._sizes()
        if self.c2_x and 2 * ib > nb:
            ib, ig = nb - ib, (-ig) % ng
        if ib in (0, nb):
            ig = 0
        return ib, ig

    def key(self, beta: float, gamma: float):
        """Node key of the orientation (0, beta, gamma) if it lies on this rule's finest grids
        (up to the symmetries), else None."""
        nb, ng = self._sizes()
        ib = beta / 180.0 * nb
        ig = gamma / self.gamma_period * ng if self.n_fold else 0.0
        if self.n_fold == 0 and 0 < round(ib) < nb and abs(gamma) > 1e-9:
            return None  # axisymmetric rule: only gamma = 0 nodes
        if abs(ib - round(ib)) > 1e-9 or abs(ig - round(ig)) > 1e-6:
            return None
        return self._canonical(int(round(ib)), int(round(ig)) % ng)

    def angles(self, key) -> tuple[float, float]:
        """(beta, gamma) in degrees of a node key."""
        nb, ng = self._sizes()
        return 180.0 * key[0] / nb, self.gamma_period * key[1] / ng

    def weights(self, jb: int, jg: int) -> dict:
        """Node key -> weight (summing to 1) of the rule at levels (jb, jg)."""
        nb, ng = self._sizes()
        _, wb = clenshaw_curtis(jb)
        n_gamma = 2**jg if self.n_fold else 1
        out: dict = {}
        for kb, w in enumerate(wb / 2):
            for kg in range(n_gamma):
                key = self._canonical(kb * nb // 2**jb, kg * ng // n_gamma)
                out[key] = out.get(key, 0.0) + w / n_gamma
        return out
