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

from ..errors import ConfigError, require_int
from .scene_traced import scene_mask, xp_of


def scattering_width(result, phi_deg, margin: int | None = None, pml: int | None = None) -> np.ndarray:
    """sigma(phi) (length) of a plane-wave result of :func:`solve_tm` / :func:`solve_te` at
    the angles ``phi_deg`` (degrees from +x), from the scattered field on the rectangle
    ``margin`` samples (default 3) inside the PML. The PML's thickness is the result's own
    (``result.pml_cells``); ``pml`` is accepted only when it agrees with it."""
    if not hasattr(result, "Ez"):
        raise ConfigError(
            f"scattering_width needs a 2-D result of solve_tm / solve_te, got {type(result).__name__} "
            "(a 3-D result: use rcs_3d or cross_sections_3d)"
        )
    if result.Es is None:
        raise ConfigError("scattering_width needs a plane-wave result (its scattered field)")
    L = getattr(result, "pml_cells", None)
    if pml is not None:
        p = require_int("scattering_width: pml", pml, 0)
        if L is not None and p != L:
            raise ConfigError(
                f"scattering_width: pml={p} disagrees with the result's PML of {L} cells; leave pml out "
                "(the result's own is used)"
            )
        L = p
    if L is None:
        raise ConfigError("scattering_width: the result does not record its PML; give pml= (cells)")
    xp = xp_of(result.Es)  # a traced result (jax.grad over the scene): the same sums in JAX
    u = xp.asarray(result.Es)
    x, y = np.asarray(result.x), np.asarray(result.y)
    m = 3 if margin is None else require_int("scattering_width: margin", margin, 1)
    phi = _angles("scattering_width: phi_deg", phi_deg)
    i0, i1 = L + m, len(x) - 1 - L - m
    j0, j1 = L + m, len(y) - 1 - L - m
    if i1 - i0 < 4 or j1 - j0 < 4:
        raise ConfigError(
            f"scattering_width: margin {m} leaves no room for the contour inside the PML ({L} cells); "
            "give a smaller margin or enlarge the region"
        )
    on = scene_mask(result)[i0 : i1 + 1, j0 : j1 + 1]
    if np.any(on[[0, -1]]) or np.any(on[:, [0, -1]]):
        raise ConfigError(
            f"scattering_width: margin {m}: the contour crosses the scene; give a smaller margin or enlarge "
            "the region"
        )
    dx = x[1] - x[0]
    k = 2 * math.pi * result.frequency
    phi = np.deg2rad(phi)
    c, s = np.cos(phi), np.sin(phi)
    w = np.full(i1 - i0 + 1, dx)
    w[0] = w[-1] = dx / 2
    v = np.full(j1 - j0 + 1, dx)
    v[0] = v[-1] = dx / 2
    xs, ys = slice(i0, i1 + 1), slice(j0, j1 + 1)
    # the sides along x (y fixed: bottom j0, outward normal -y; top j1, +y) and along y (x
    # fixed: left i0, -x; right i1, +x): u and du/dn (centred) times the trapezoid weights
    along_x = [
        -(u[xs, j0 + 1] - u[xs, j0 - 1]) / (2 * dx) * w,
        u[xs, j0] * w,
        (u[xs, j1 + 1] - u[xs, j1 - 1]) / (2 * dx) * w,
        u[xs, j1] * w,
    ]
    along_y = [
        -(u[i0 + 1, ys] - u[i0 - 1, ys]) / (2 * dx) * v,
        u[i0, ys] * v,
        (u[i1 + 1, ys] - u[i1 - 1, ys]) / (2 * dx) * v,
        u[i1, ys] * v,
    ]
    # exp(-i k rhat.r') factors into the phase of the side's first sample and powers of the
    # phase step z = exp(-i k dx rhat_c) along it: the sums are polynomials in z (Horner)
    Sx = _polynomial(xp.stack(along_x, 1), np.exp(-1j * k * dx * c)) * np.exp(-1j * k * x[i0] * c)
    Sy = _polynomial(xp.stack(along_y, 1), np.exp(-1j * k * dx * s)) * np.exp(-1j * k * y[j0] * s)
    total = (Sx[0] - 1j * k * s * Sx[1]) * np.exp(-1j * k * y[j0] * s)
    total += (Sx[2] + 1j * k * s * Sx[3]) * np.exp(-1j * k * y[j1] * s)
    total += (Sy[0] - 1j * k * c * Sy[1]) * np.exp(-1j * k * x[i0] * c)
    total += (Sy[2] + 1j * k * c * Sy[3]) * np.exp(-1j * k * x[i1] * c)
    return xp.abs(total) ** 2 / (4 * k)


def _polynomial(F: np.ndarray, z: np.ndarray) -> np.ndarray:
    """``sum_n F[n, m] z^n`` (M, P) for the columns of ``F`` (N, M) and ``z`` (P,), by Horner's
    rule (|z| = 1 here: rounding grows like N eps, no exponentials of N x P arrays)."""
    if not isinstance(F, np.ndarray):  # JAX (a traced result): the same recursion as a scan
        import jax

        zj = jax.numpy.asarray(z, F.dtype)
        acc0 = jax.numpy.zeros((F.shape[1], len(z)), F.dtype)
        return jax.lax.scan(lambda acc, f: (acc * zj + f[:, None], None), acc0, F[::-1])[0]
    acc = np.zeros((F.shape[1], len(z)), complex)
    for f in F[::-1]:
        acc *= z
        acc += f[:, None]
    return acc


def _angles(name: str, values) -> np.ndarray:
    """Finite angles in degrees as a 1-D float array, else one ConfigError line."""
    try:
        a = np.atleast_1d(np.asarray(values, float))
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be numbers (degrees), got {values!r}") from None
    if a.ndim != 1 or not a.size or not np.all(np.isfinite(a)):
        raise ConfigError(f"{name} must be a non-empty list of finite angles (degrees), got {values!r}")
    return a
