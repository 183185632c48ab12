"""2-D near-to-far-field transform and the scattering width (radar cross section per length).

A field u (E_z for TM, H_z for TE; fields ~ exp(-i omega t)) that satisfies Helmholtz's
equation outside a closed contour C is, by Green's theorem with G = (i/4) H0^(1)(k|r - r'|),
``u(r) = oint [G du/dn' - u dG/dn'] dl'`` (n' outward). Far away, ``G ~ (i/4) sqrt(2 / (pi k
rho)) exp(i (k rho - pi/4)) exp(-i k rhat.r')`` and ``dG/dn' ~ -i k (rhat.n') G``, so

    sigma(phi) = lim 2 pi rho |u_s|^2 / |u_inc|^2
               = (1 / (4 k)) |oint [du/dn' + i k (rhat.n') u] exp(-i k rhat.r') dl'|^2

for a unit incident wave. The contour is a rectangle of grid samples in vacuum around the
scatterer (outside the PML); du/dn' by centred differences, the trapezoid rule along each
side: second order.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import ConfigError


def scattering_width(result, phi_deg, margin: int | None = None, pml: int = 12) -> np.ndarray:
    """sigma(phi) (length) of a plane-wave result of :func:`solve_tm` / :func:`solve_te` at
    the angles ``phi_deg`` (degrees from +x), from the scattered field on the rectangle
    ``margin`` samples inside the PML (``pml``: its thickness in cells; default margin 3)."""
    if result.Es is None:
        raise ConfigError("scattering_width needs a plane-wave result (its scattered field)")
    u = np.asarray(result.Es)
    x, y = np.asarray(result.x), np.asarray(result.y)
    m = 3 if margin is None else int(margin)
    i0, i1 = pml + m, len(x) - 1 - pml - m
    j0, j1 = pml + m, len(y) - 1 - pml - m
    if i1 - i0 < 4 or j1 - j0 < 4:
        raise ConfigError("scattering_width: the contour leaves no room; enlarge the region")
    if np.any(result.eps[i0 : i1 + 1, j0 : j1 + 1][[0, -1]] != 1) or np.any(
        result.eps[i0 : i1 + 1, j0 : j1 + 1][:, [0, -1]] != 1
    ):
        raise ConfigError("scattering_width: the contour crosses the scene; enlarge the region")
    dx = x[1] - x[0]
    k = 2 * math.pi * result.frequency
    phi = np.deg2rad(np.atleast_1d(np.asarray(phi_deg, float)))
    rhat = np.stack([np.cos(phi), np.sin(phi)], -1)  # (P, 2)

    def trap(n):
        w = np.ones(n)
        w[0] = w[-1] = 0.5
        return w * dx

    total = np.zeros(len(phi), complex)
    sides = [
        # (positions (N, 2), u, du/dn, normal)
        (
            np.stack([x[i0 : i1 + 1], np.full(i1 - i0 + 1, y[j0])], -1),
            u[i0 : i1 + 1, j0],
            -(u[i0 : i1 + 1, j0 + 1] - u[i0 : i1 + 1, j0 - 1]) / (2 * dx),
            (0.0, -1.0),
        ),
        (
            np.stack([x[i0 : i1 + 1], np.full(i1 - i0 + 1, y[j1])], -1),
            u[i0 : i1 + 1, j1],
            (u[i0 : i1 + 1, j1 + 1] - u[i0 : i1 + 1, j1 - 1]) / (2 * dx),
            (0.0, 1.0),
        ),
        (
            np.stack([np.full(j1 - j0 + 1, x[i0]), y[j0 : j1 + 1]], -1),
            u[i0, j0 : j1 + 1],
            -(u[i0 + 1, j0 : j1 + 1] - u[i0 - 1, j0 : j1 + 1]) / (2 * dx),
            (-1.0, 0.0),
        ),
        (
            np.stack([np.full(j1 - j0 + 1, x[i1]), y[j0 : j1 + 1]], -1),
            u[i1, j0 : j1 + 1],
            (u[i1 + 1, j0 : j1 + 1] - u[i1 - 1, j0 : j1 + 1]) / (2 * dx),
            (1.0, 0.0),
        ),
    ]
    for pos, val, dn, normal in sides:
        w = trap(len(val))
        phase = np.exp(-1j * k * pos @ rhat.T)  # (N, P)
        rn = rhat @ np.asarray(normal)  # (P,)
        total += ((dn * w) @ phase) + 1j * k * rn * ((val * w) @ phase)
    return np.abs(total) ** 2 / (4 * k)
