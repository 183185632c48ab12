"""Auxiliary-differential-equation updates of Drude and Lorentz poles.

Drude poles use the J-E coupled scheme (Taflove & Hagness ch. 9): with
``k = (1 - gamma dt/2)/(1 + gamma dt/2)`` and ``beta = (omega_p^2 dt/2)/(1 + gamma dt/2)``,
``J^(n+1) = k J^n + beta (E^(n+1) + E^n)``, and Ampere's law gets
``- (1/2) sum (1 + k) J^n`` with ``beta`` folded into the E update's coefficients.
Lorentz poles ``P'' + gamma P' + omega_0^2 P = delta_eps omega_0^2 E`` use central
differences at step n, ``P^(n+1) = c1 P^n + c2 P^(n-1) + c3 E^n``, and Ampere's law gets
``-(P^(n+1) - P^n)/dt``. Both reproduce materials.permittivity(omega) to O((omega dt)^2)
(tests/fdtd/test_dispersive.py).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..materials import DrudePole


def component(a, c: int):
    """Component ``c`` of a coefficient that is a scalar, a per-cell array ``(nx, ny, nz)``
    or a per-component array ``(3, nx, ny, nz)``."""
    return a[c] if jnp.ndim(a) == 4 else a


def coefficients(material, mask, eps, dt: float, dtype):
    """(eps with the medium's eps_inf, sum of Drude betas, arrays for the step).

    ``mask``: bool per cell (the medium fills the cell's E nodes), or the medium's fill
    fraction ``w`` in [0, 1] per cell or per component ``(3, nx, ny, nz)`` (subpixel
    averaging: a node is the parallel mixture ``w medium + (1 - w) background``, i.e. the
    susceptibility and eps_inf are volume-averaged; then eps and the betas come back per
    component)."""
    from ..materials import has_tracer

    xp = jnp if has_tracer(material) else np  # traced pole parameters: the coefficients in JAX
    w = np.asarray(mask)
    w = w.astype(float) if w.dtype == bool else np.clip(w.astype(float), 0.0, 1.0)
    inside = w > 0
    eps = w * material.eps_inf + (1 - w) * eps
    ks, betas, lorentz = [], [], []
    for p in material.poles:
        if isinstance(p, DrudePole):
            damp = 1 + p.gamma * dt / 2
            ks.append(xp.where(inside, (1 - p.gamma * dt / 2) / damp, 0.0))
            betas.append(w * ((p.omega_p**2 * dt / 2) / damp))
        else:
            damp = 1 + p.gamma * dt / 2
            c1 = (2 - (p.omega_0 * dt) ** 2) / damp
            c2 = -(1 - p.gamma * dt / 2) / damp
            c3 = w * (p.delta_eps * (p.omega_0 * dt) ** 2 / damp)
            lorentz.append((jnp.asarray(c1, dtype), jnp.asarray(c2, dtype), jnp.asarray(c3, dtype)))
    arrays = {
        "pole_k": tuple(jnp.asarray(k, dtype) for k in ks),
        "pole_beta": tuple(jnp.asarray(b, dtype) for b in betas),
        "lorentz": tuple(lorentz),
    }
    return eps, (sum(betas) if betas else 0.0), arrays


def zeros(n_drude: int, n_lorentz: int, shape, dtype, xp=jnp) -> tuple:
    """State: J per Drude pole, (P^n, P^(n-1)) per Lorentz pole, each per component
    (``xp=np``: host zeros)."""
    J = tuple(tuple(xp.zeros(shape, dtype) for _ in range(3)) for _ in range(n_drude))
    P = tuple(
        tuple((xp.zeros(shape, dtype), xp.zeros(shape, dtype)) for _ in range(3)) for _ in range(n_lorentz)
    )
    return J + P


def before_e_update(n_drude: int, n_lorentz: int, arrays, state, E, curl_h, dt):
    """Ampere's law source terms; returns (curl H with them, the Lorentz state at n + 1)."""
    J, lorentz = state[:n_drude], state[n_drude:]
    if n_drude:
        curl_h = tuple(
            c - 0.5 * sum((1 + component(arrays["pole_k"][p], i)) * J[p][i] for p in range(n_drude))
            for i, c in enumerate(curl_h)
        )
    new_lorentz = ()
    if n_lorentz:
        new_lorentz = tuple(
            tuple(
                (component(c1, i) * P[i][0] + c2 * P[i][1] + component(c3, i) * E[i], P[i][0])
                for i in range(3)
            )
            for (c1, c2, c3), P in zip(arrays["lorentz"], lorentz)
        )
        curl_h = tuple(
            c - sum(Pn[i][0] - Po[i][0] for Pn, Po in zip(new_lorentz, lorentz)) / dt
            for i, c in enumerate(curl_h)
        )
    return curl_h, new_lorentz


def after_e_update(n_drude: int, arrays, state, E, E_old) -> tuple:
    """Drude currents at n + 1 from E^(n+1) and E^n."""
    return tuple(
        tuple(
            component(arrays["pole_k"][p], i) * state[p][i]
            + component(arrays["pole_beta"][p], i) * (E[i] + E_old[i])
            for i in range(3)
        )
        for p in range(n_drude)
    )
