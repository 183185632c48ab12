"""The Courant number a Drude-Lorentz medium allows in the FDTD's pole updates.

The Lorentz update couples ``P^(n+1)`` to ``E^n`` explicitly (:mod:`.dispersive`); at the
grid's highest spatial frequencies this lowers the permittivity the scheme sees to about
``eps_inf - sum delta_eps (omega_0 dt)**2 / 4``, and the Courant limit with it (by its square
root): a medium with ``eps_inf = 1`` and strong ultraviolet poles, as Rakić's metals and the
Sellmeier glasses, is unstable at the vacuum limit although every ``omega_0 dt < 2``.

The exact bound: one plane-wave mode of the homogeneous medium advances by a matrix acting
on ``(E, H, J per Drude pole, P^n and P^(n-1) per Lorentz pole)``, quadratic in ``u = s dt``
where ``s`` is the curl operator's singular value (``0 <= u <= 2 courant / limit``, the
limit's 2 at the vacuum bound). The run is stable where the spectral radius stays <= 1 for
every such ``u``.
"""

from __future__ import annotations

import functools

import numpy as np

from ..materials import Dispersive, DrudePole, LorentzPole, has_tracer

#: modes sampled across the grid's spatial frequencies, and the growth tolerated per step
MODES = 257
TOLERANCE = 1e-9


def _key(material) -> tuple:
    """The medium as plain floats (hashable whatever array types hold its parameters):
    ``(eps_inf, ((omega_p, gamma), ...), ((delta_eps, omega_0, gamma), ...))``."""
    drude = tuple((float(p.omega_p), float(p.gamma)) for p in material.poles if isinstance(p, DrudePole))
    lorentz = tuple(
        (float(p.delta_eps), float(p.omega_0), float(p.gamma))
        for p in material.poles
        if isinstance(p, LorentzPole)
    )
    return float(material.eps_inf), drude, lorentz


def _matrices(key: tuple, dt: float):
    """``(A0, A1, A2)`` with the one-step matrix ``A0 + u A1 + u**2 A2``."""
    eps_inf, drude, lorentz = key
    ks = [(1 - g * dt / 2) / (1 + g * dt / 2) for _, g in drude]
    betas = [(wp**2 * dt / 2) / (1 + g * dt / 2) for wp, g in drude]
    den = 2 * eps_inf + sum(betas) * dt
    ca, cb = (2 * eps_inf - sum(betas) * dt) / den, 2 * dt / den
    cl = [
        (
            (2 - (w0 * dt) ** 2) / (1 + g * dt / 2),
            -(1 - g * dt / 2) / (1 + g * dt / 2),
            de * (w0 * dt) ** 2 / (1 + g * dt / 2),
        )
        for de, w0, g in lorentz
    ]
    nd, nl = len(drude), len(lorentz)
    n = 2 + nd + 2 * nl

    def step(x, u):  # H scaled by dt: H' = H - u E, curl H = u H' / dt
        e, h, j = x[0], x[1], x[2 : 2 + nd]
        p, p_old = x[2 + nd : 2 + nd + nl], x[2 + nd + nl :]
        h_new = h - u * e
        p_new = np.array([c1 * a + c2 * b + c3 * e for (c1, c2, c3), a, b in zip(cl, p, p_old)])
        curl = u * h_new / dt - 0.5 * sum((1 + k) * jj for k, jj in zip(ks, j)) - (p_new - p).sum() / dt
        e_new = ca * e + cb * curl
        j_new = [k * jj + b * (e_new + e) for k, b, jj in zip(ks, betas, j)]
        return np.concatenate([[e_new, h_new], j_new, p_new, p])

    at = {u: np.stack([step(col, u) for col in np.eye(n)], axis=1) for u in (-1.0, 0.0, 1.0)}
    a1 = (at[1.0] - at[-1.0]) / 2
    a2 = (at[1.0] + at[-1.0]) / 2 - at[0.0]
    return at[0.0], a1, a2


def stable(material, dt: float, courant_fraction: float) -> bool:
    """Whether the homogeneous ``material`` is stable at time step ``dt`` with the Courant
    number at ``courant_fraction`` of the vacuum limit."""
    return _stable(_key(material), float(dt), float(courant_fraction))


@functools.lru_cache(maxsize=256)
def _stable(key: tuple, dt: float, courant_fraction: float) -> bool:
    a0, a1, a2 = _matrices(key, dt)
    u = np.linspace(0.0, 2 * courant_fraction, MODES)[:, None, None]
    radius = np.abs(np.linalg.eigvals(a0 + u * a1 + u**2 * a2)).max()
    return bool(radius <= 1 + TOLERANCE)


def max_courant(material, dx: float, limit: float) -> float:
    """The largest Courant number ``c dt / dx`` (at most the vacuum ``limit``) at which the
    homogeneous ``material`` is stable on a grid of spacing ``dx`` (bisection, 3 digits)."""
    return _max_courant(_key(material), float(dx), float(limit))


@functools.lru_cache(maxsize=64)
def _max_courant(key: tuple, dx: float, limit: float) -> float:
    lo, hi = 0.0, limit
    if _stable(key, hi * dx, 1.0):
        return limit
    for _ in range(12):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _stable(key, mid * dx, mid / limit) else (lo, mid)
    return lo


def default_courant(materials, grid) -> float:
    """The grid's default Courant number (0.99 of the vacuum limit), lowered to 0.99 of the
    largest one every Drude-Lorentz medium among ``materials`` allows."""
    from .grid import courant_limit

    limit = courant_limit(grid.order, grid.dimensions)
    c = grid.courant
    for m in materials:
        if (
            isinstance(m, Dispersive)
            and not has_tracer(m)
            and any(isinstance(p, LorentzPole) for p in m.poles)
        ):
            c = min(c, 0.99 * max_courant(m, grid.dx, limit))
    return c
