"""The grid of a 2-D FDFD solve: the inputs checked, the nodes laid out around the region
with the PML outside it, and the sources placed on it (a line source's node, the plane
waves' incident fields)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError, require_finite, require_positive
from .operators import SCPML, UPML
from .specs2d import LineSource, PlaneWave2D


def _plane_waves(source) -> list:
    """The plane waves of ``source`` (one, or a list: one factorization, many right sides)."""
    waves = list(source) if isinstance(source, (list, tuple)) else [source]
    return waves if waves and all(isinstance(w, PlaneWave2D) for w in waves) else []


def _incident(wave, omega, X, Y):
    phi = math.radians(wave.angle)
    return np.exp(1j * omega * (X * math.cos(phi) + Y * math.sin(phi)))


def _inner(shape, L) -> np.ndarray:
    inner = np.zeros(shape, bool)
    inner[L : shape[0] - L, L : shape[1] - L] = True
    return inner


@dataclass(frozen=True)
class _Grid:
    """The 2-D grid of a solve: nodes ``x``, ``y`` of the solved field, PML, frequency."""

    pml: SCPML
    frequency: float
    omega: float
    dx: float
    shape: tuple
    origin: tuple
    x: np.ndarray
    y: np.ndarray


def _grid(size, resolution, frequency, pml, center, averaging, half: bool) -> _Grid:
    """Checks the inputs and lays out the grid (``half``: the field at the cell centres)."""
    pml = SCPML() if pml is None else pml
    if not isinstance(pml, SCPML):
        raise ConfigError(f"pml must be an emjax.fdfd.SCPML, got {pml!r}")
    if isinstance(pml, UPML):
        raise ConfigError("pml: UPML is available in 3-D only (solve_3d); use SCPML in 2-D")
    res = require_positive("resolution", resolution)
    f = require_positive("frequency", frequency)
    if averaging not in ("subpixel", "staircase"):
        raise ConfigError(f"averaging must be subpixel or staircase, got {averaging!r}")
    if isinstance(size, str) or np.ndim(size) != 1 or len(size) != 2:
        raise ConfigError(f"size must be two positive lengths (sx, sy), got {size!r}")
    sx, sy = (require_positive(f"size[{k}]", v) for k, v in enumerate(size))
    if isinstance(center, str) or np.ndim(center) != 1 or len(center) != 2:
        raise ConfigError(f"center must be two finite numbers (x, y), got {center!r}")
    center = tuple(require_finite(f"center[{k}]", v) for k, v in enumerate(center))
    dx = 1.0 / res
    L = pml.thickness
    shape = (int(round(sx * res)) + 1 + 2 * L, int(round(sy * res)) + 1 + 2 * L)
    if shape[0] * shape[1] > 4e7:
        raise ConfigError(f"FDFD grid {shape[0]} x {shape[1]} is too large for the direct solver here")
    origin = (center[0] - (shape[0] - 1) / 2 * dx, center[1] - (shape[1] - 1) / 2 * dx)
    shift = 0.5 if half else 0.0
    x = origin[0] + (np.arange(shape[0]) + shift) * dx
    y = origin[1] + (np.arange(shape[1]) + shift) * dx
    return _Grid(pml, f, 2 * math.pi * f, dx, shape, origin, x, y)


def _source_node(source: LineSource, g: _Grid) -> tuple:
    """The node (i, j) nearest a line source; it must lie outside the PML."""
    i = int(round((source.position[0] - g.x[0]) / g.dx))
    j = int(round((source.position[1] - g.y[0]) / g.dx))
    L = g.pml.thickness
    if not (L <= i < g.shape[0] - L and L <= j < g.shape[1] - L):
        raise ConfigError(f"LineSource.position {source.position} lies outside the region (the PML excluded)")
    return i, j


def _incident_waves(source, g: _Grid) -> list:
    X, Y = np.meshgrid(g.x, g.y, indexing="ij")
    return [_incident(w, g.omega, X, Y) for w in _plane_waves(source)]


def _bad_source(source):
    return ConfigError(f"source must be LineSource or PlaneWave2D (or a list of them), got {source!r}")
