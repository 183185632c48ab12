"""3-D FDFD's grid and its waves (:mod:`.maxwell3d` solves on them): the plane wave and
point dipole sources, the Yee grid with its SC-PML around a region, the grid's own plane
wave (the discrete dispersion relation), the result of a solve and fields at points."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import ConfigError, require_finite, require_positive
from .operators import SCPML


@dataclass(frozen=True)
class PlaneWave3D:
    """A unit plane wave ``E = polarization exp(i k direction . r)`` (vectors normalized;
    the polarization must be orthogonal to the direction)."""

    direction: tuple = (1.0, 0.0, 0.0)
    polarization: tuple = (0.0, 0.0, 1.0)

    def __post_init__(self):
        d = _unit("PlaneWave3D.direction", self.direction)
        p = np.asarray(self.polarization, complex)
        if p.shape != (3,) or not np.all(np.isfinite(p)) or np.linalg.norm(p) == 0:
            raise ConfigError(
                f"PlaneWave3D.polarization must be a non-zero 3-vector, got {self.polarization!r}"
            )
        p = p / np.linalg.norm(p)
        if abs(np.dot(d, p)) > 1e-6:
            raise ConfigError(
                f"PlaneWave3D.polarization {self.polarization!r} must be orthogonal to the direction "
                f"{self.direction!r} (|d.e| = {abs(np.dot(d, p)):.2g})"
            )
        object.__setattr__(self, "direction", tuple(float(v) for v in d))
        object.__setattr__(self, "polarization", tuple(complex(v) if v.imag else float(v.real) for v in p))


@dataclass(frozen=True)
class PointDipole3D:
    """An electric point dipole of moment ``moment`` (3-vector, complex allowed) at
    ``position``: the current ``J = -i omega p delta(r - r0)``, each component spread over
    the eight E_c nodes around it (trilinear weights). The result's ``E`` and ``Es`` are the
    total field (no incident wave); in vacuum ``E = k^2 / (4 pi) [(rhat x p) x rhat / r +
    (3 rhat (rhat.p) - p)(1/(k^2 r^3) - i/(k r^2))] exp(ikr)``."""

    position: tuple = (0.0, 0.0, 0.0)
    moment: tuple = (0.0, 0.0, 1.0)

    def __post_init__(self):
        try:
            pos = tuple(float(v) for v in self.position)
            p = np.asarray(self.moment, complex)
        except (TypeError, ValueError):
            raise ConfigError(f"PointDipole3D: position and moment must be 3-vectors, got {self!r}") from None
        if len(pos) != 3 or p.shape != (3,) or not np.all(np.isfinite(p)) or not np.all(np.isfinite(pos)):
            raise ConfigError(f"PointDipole3D: position and moment must be finite 3-vectors, got {self!r}")
        if not np.any(p):
            raise ConfigError("PointDipole3D.moment must be non-zero")
        object.__setattr__(self, "position", pos)


def _unit(name, v) -> np.ndarray:
    try:
        a = np.asarray(v, float)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be three numbers, got {v!r}") from None
    if a.shape != (3,) or not np.all(np.isfinite(a)) or np.linalg.norm(a) == 0:
        raise ConfigError(f"{name} must be a non-zero finite 3-vector, got {v!r}")
    return a / np.linalg.norm(a)


@dataclass(frozen=True, eq=False)
class Result3D:
    """One plane wave's solution: ``E`` total and ``Es`` scattered fields (3, nx, ny, nz) at
    the Yee E nodes (E_c at ``(x, y, z)`` shifted by dx/2 along c), ``x, y, z`` the node
    coordinates, ``eps`` (3, nx, ny, nz) at the E nodes (inf on PEC edges), ``wave`` the
    incident :class:`PlaneWave3D`, ``stats`` the solve's statistics."""

    x: np.ndarray
    y: np.ndarray
    z: np.ndarray
    frequency: float
    wave: PlaneWave3D
    E: np.ndarray
    Es: np.ndarray
    eps: np.ndarray
    pml_cells: int
    stats: dict = field(default_factory=dict)

    @property
    def dx(self) -> float:
        return float(self.x[1] - self.x[0])

    def __repr__(self) -> str:
        s = self.stats
        return (
            f"Result3D(grid {len(self.x)} x {len(self.y)} x {len(self.z)}, frequency {self.frequency:g}, "
            f"{s.get('solver')}, converged {s.get('converged')}, iterations {s.get('iterations')}, "
            f"residual {s.get('residual', 0):.2e}, {s.get('seconds', 0):.2f} s)"
        )


@dataclass(frozen=True)
class _Grid3:
    pml: SCPML
    frequency: float
    omega: float
    dx: float
    shape: tuple
    origin: tuple
    axes: tuple


def _grid3(size, resolution, frequency, pml, center) -> _Grid3:
    pml = SCPML() if pml is None else pml
    if not isinstance(pml, SCPML):
        raise ConfigError(f"pml must be an emjax.fdfd.SCPML or UPML, got {pml!r}")
    res = require_positive("resolution", resolution)
    f = require_positive("frequency", frequency)
    try:
        size = tuple(float(v) for v in size)
        center = tuple(float(v) for v in center)
    except (TypeError, ValueError):
        raise ConfigError(f"size and center must be three numbers, got {size!r}, {center!r}") from None
    if len(size) != 3 or len(center) != 3:
        raise ConfigError(f"size and center must be three numbers each, got {size!r}, {center!r}")
    for k, v in enumerate(size):
        require_positive(f"size[{k}]", v)
    for k, v in enumerate(center):
        require_finite(f"center[{k}]", v)
    if res / f < 5:
        raise ConfigError(
            f"resolution {res:g} per unit length is {res / f:.2f} cells per wavelength; at least 5 are needed"
        )
    dx = 1.0 / res
    L = pml.thickness
    shape = tuple(int(round(s * res)) + 1 + 2 * L for s in size)
    origin = tuple(c - (n - 1) / 2 * dx for c, n in zip(center, shape))
    axes = tuple(o + np.arange(n) * dx for o, n in zip(origin, shape))
    return _Grid3(pml, f, 2 * math.pi * f, dx, shape, origin, axes)


def discrete_wave(wave: PlaneWave3D, omega: float, dx: float) -> tuple:
    """The grid's plane wave along ``wave.direction``: (k~ d, e) with k~ from the Yee
    dispersion relation (Newton) and ``e`` transverse to the discrete wave vector."""
    d = np.asarray(wave.direction)
    k = omega
    for _ in range(50):
        s = np.sin(k * d * dx / 2)
        g = np.sum((2 / dx * s) ** 2) - omega**2
        dg = np.sum(2 * (2 / dx * s) * (2 / dx) * np.cos(k * d * dx / 2) * d * dx / 2)
        step = g / dg
        k -= step
        if abs(step) < 1e-15 * k:
            break
    kt = 2 / dx * np.sin(k * d * dx / 2)  # the discrete wave vector (differences see this)
    e = np.asarray(wave.polarization, complex)
    e = e - kt * np.dot(kt, e) / np.dot(kt, kt)
    return k * d, e / np.linalg.norm(e)


def incident_3d(wave: PlaneWave3D, g: _Grid3) -> np.ndarray:
    """The grid's incident E (3, nx, ny, nz) at the E nodes."""
    kvec, e = discrete_wave(wave, g.omega, g.dx)
    out = np.empty((3, *g.shape), complex)
    for c in range(3):
        ph = [np.exp(1j * kvec[a] * (g.axes[a] + (0.5 * g.dx if a == c else 0.0))) for a in range(3)]
        out[c] = e[c] * ph[0][:, None, None] * ph[1][None, :, None] * ph[2][None, None, :]
    return out


def _waves(source) -> list:
    waves = list(source) if isinstance(source, (list, tuple)) else [source]
    if not waves or not all(isinstance(w, (PlaneWave3D, PointDipole3D)) for w in waves):
        raise ConfigError(f"source must be a PlaneWave3D or PointDipole3D, or a list of them, got {source!r}")
    return waves


def _trilinear(position, axes, dx: float, c: int):
    """Nodes and weights of E_c's lattice around ``position``: [(index tuple, weight)]."""
    u = [(position[a] - axes[a][0]) / dx - (0.5 if a == c else 0.0) for a in range(3)]
    i0 = [int(np.floor(v)) for v in u]
    f = [v - i for v, i in zip(u, i0)]
    out = []
    for corner in np.ndindex(2, 2, 2):
        w = float(np.prod([f[a] if corner[a] else 1 - f[a] for a in range(3)]))
        out.append((tuple(i0[a] + corner[a] for a in range(3)), w))
    return out, i0


def field_at(result, points) -> np.ndarray:
    """E (P, 3) at ``points`` (P, 3) by trilinear interpolation of each component on its own
    lattice (the transpose of how :class:`PointDipole3D` spreads its current)."""
    if not hasattr(result, "z") or np.ndim(getattr(result, "E", None)) != 4:
        raise ConfigError(
            f"field_at needs a 3-D result of solve_3d, got {type(result).__name__} (a 2-D result holds "
            "its field on the grid: result.Ez at result.x, result.y)"
        )
    try:
        pts = np.atleast_2d(np.asarray(points, float))
    except (TypeError, ValueError):
        raise ConfigError(f"field_at: points must be (x, y, z) triples, got {points!r}") from None
    if pts.ndim != 2 or pts.shape[1] != 3 or not len(pts):
        raise ConfigError(f"field_at: points must be (x, y, z) triples, shape (P, 3); got shape {pts.shape}")
    if not np.all(np.isfinite(pts)):
        raise ConfigError("field_at: points must be finite (x, y, z) triples; got NaN or inf")
    axes = (np.asarray(result.x), np.asarray(result.y), np.asarray(result.z))
    E = np.asarray(result.E)
    out = np.zeros((len(pts), 3), complex)
    for p, pt in enumerate(pts):
        for c in range(3):
            nodes, i0 = _trilinear(pt, axes, result.dx, c)
            if not all(0 <= i and i + 1 < len(a) for i, a in zip(i0, axes)):
                box = ", ".join(f"[{a[0] + result.dx / 2:g}, {a[-1]:g})" for a in axes)
                raise ConfigError(f"field_at: point {pt.tolist()} lies outside the grid (x, y, z in {box})")
            out[p, c] = sum(w * E[c][idx] for idx, w in nodes)
    return out


def dipole_current(dip: PointDipole3D, g: _Grid3) -> np.ndarray:
    """``i omega J`` (3, nx, ny, nz): the dipole's right side of ``A E = i omega J``."""
    b = np.zeros((3, *g.shape), complex)
    L = g.pml.thickness
    for c in range(3):
        # trilinear weights on E_c's lattice: the dipole's position is kept to second order
        # (the nearest node alone would move it by up to half a cell)
        nodes, i0 = _trilinear(dip.position, g.axes, g.dx, c)
        if not all(L <= i and i + 1 < n - L for i, n in zip(i0, g.shape)):
            raise ConfigError(
                f"PointDipole3D.position {dip.position} lies outside the region (the PML excluded)"
            )
        for idx, w in nodes:
            b[c][idx] += w * g.omega**2 * complex(dip.moment[c]) / g.dx**3  # i omega (-i omega p) / dx^3
    return b
