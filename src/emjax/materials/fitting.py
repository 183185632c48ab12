"""Fit a passive, causal Drude-Lorentz model to measured ``n, k``.

The model is :class:`emjax.materials.Dispersive`::

    eps(omega) = eps_inf - omega_p**2 / (omega**2 + i gamma_D omega)
                 + sum_j delta_eps_j omega_j**2 / (omega_j**2 - omega**2 - i gamma_j omega)

with every parameter bounded to the physical side (``eps_inf >= 1``, ``delta_eps_j >= 0``,
``omega_j > 0``, ``gamma >= 0``, ``omega_p >= 0``). Such a sum has ``Im eps >= 0`` at every
positive frequency (passive), its poles lie in the lower half plane (causal, with
``exp(-i omega t)``), and the FDTD's auxiliary-equation update of it is stable where
``omega_j dt < 2`` and the Courant number is below the one its poles allow (the FDTD checks
both and lowers its default Courant number to fit).

Least squares on the permittivity relative to ``|eps|`` (so a metal's large infrared
``|eps|`` does not drown the visible), from several starts: Lorentz resonances spread over
the band (and just beyond it), a few damping ratios, the amplitudes of each start solved
exactly by non-negative linear least squares, and the fit with one pole fewer plus a weak
new pole; the best starts are then refined with ``scipy.optimize.least_squares`` within the
bounds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError, require_floats, require_int
from . import Dispersive, DrudePole, LorentzPole


@dataclass(frozen=True, eq=False)
class DispersionFit:
    """The result of :func:`fit`.

    ``model``: the fitted :class:`Dispersive` (frequencies in rad per unit time of the
    wavelengths' length unit ``unit``: ``omega = 2 pi / wavelength``); ``rms_error`` and
    ``max_error``: of the complex index ``n + i k`` over the samples (absolute);
    ``wavelength, n, k``: the samples fitted (sorted by wavelength)."""

    model: Dispersive
    rms_error: float
    max_error: float
    wavelength: np.ndarray
    n: np.ndarray
    k: np.ndarray
    unit: str = "um"


#: how many of the best linear starts are refined by nonlinear least squares
REFINED_STARTS = 6


def _columns(x, w0, g, gd):
    """The model's basis at normalized frequencies ``x``: a constant, one Lorentz shape per
    ``(w0, g)``, and (``gd`` not None) the Drude shape."""
    cols = [np.ones_like(x, dtype=complex)]
    cols += [w**2 / (w**2 - x**2 - 1j * gg * x) for w, gg in zip(w0, g)]
    if gd is not None:
        cols.append(-1.0 / (x**2 + 1j * gd * x))
    return np.stack(cols, axis=1)


def _unpack(p, poles: int, drude: bool):
    eps_inf = p[0]
    lor = p[1 : 1 + 3 * poles].reshape(poles, 3)  # (delta_eps, w0, gamma)
    dru = p[1 + 3 * poles :] if drude else None  # (omega_p**2, gamma)
    return eps_inf, lor, dru


def _model(p, x, poles: int, drude: bool):
    """The model's permittivity and its Jacobian (columns: the parameters) at ``x``."""
    eps_inf, lor, dru = _unpack(p, poles, drude)
    eps = np.full(x.shape, eps_inf, dtype=complex)
    jac = [np.ones_like(eps)]
    for de, w, g in lor:
        d = w**2 - x**2 - 1j * g * x
        eps += de * w**2 / d
        jac += [w**2 / d, de * 2 * w * (d - w**2) / d**2, de * w**2 * 1j * x / d**2]
    if dru is not None:
        e = x**2 + 1j * dru[1] * x
        eps -= dru[0] / e
        jac += [-1.0 / e, dru[0] * 1j * x / e**2]
    return eps, np.stack(jac, axis=1)


def _starts(x, poles: int, drude: bool):
    """Initial ``(w0, gamma, gamma_D)`` sets: resonances log-spread over the band, over the
    band and beyond its top (a dielectric's normal dispersion comes from above), and from
    below it; damping a few fractions of the resonance."""
    lo, hi = float(x.min()), float(x.max())
    spreads = [(lo, hi), (lo, 3 * hi), (lo / 3, hi)]
    for a, b in spreads:
        w0 = np.geomspace(a, b, poles + 2)[1:-1] if poles else np.zeros(0)
        for ratio in (0.05, 0.3, 1.0):
            for gd in (0.1 * lo, lo) if drude else (None,):
                yield w0, ratio * w0, gd


def _linear_amplitudes(x, target, weight, w0, g, gd):
    """Non-negative amplitudes (``eps_inf - 1``, ``delta_eps_j``, ``omega_p**2``) for fixed
    resonances: the weighted least-squares problem is linear in them."""
    from scipy.optimize import nnls

    a = _columns(x, w0, g, gd) * weight[:, None]
    b = target * weight
    amps, rnorm = nnls(np.vstack([a.real, a.imag]), np.concatenate([b.real, b.imag]))
    return amps, rnorm


def _bounds(x, poles: int, drude: bool):
    """eps_inf >= 1, amplitudes >= 0; resonances and dampings within a decade of the band (the
    FDTD needs omega_0 dt < 2; a damping far above the band only trades off against the
    strength)."""
    n_params = 1 + 3 * poles + (2 if drude else 0)
    lo, hi = np.zeros(n_params), np.full(n_params, np.inf)
    lo[0] = 1.0
    for j in range(poles):
        lo[2 + 3 * j], hi[2 + 3 * j] = 0.1 * x.min(), 10 * x.max()
        hi[3 + 3 * j] = 10 * x.max()
    if drude:
        hi[-1] = 10 * x.max()
    return lo, hi


def _solve(x, eps, weight, poles: int, drude: bool, refined: int = REFINED_STARTS):
    """The best parameters (normalized frequencies) from the linear starts and, for two
    poles or more, from the best fit with one pole fewer plus a weak new pole (so adding a
    pole never fits worse than the fit it extends)."""
    from scipy.optimize import least_squares

    starts = []
    for w0, g, gd in _starts(x, poles, drude):
        amps, rnorm = _linear_amplitudes(x, eps - 1.0, weight, w0, g, gd)
        p = [1.0 + amps[0]]
        for j in range(poles):
            p += [amps[1 + j], w0[j], g[j]]
        if drude:
            p += [amps[-1], gd]
        starts.append((rnorm, np.array(p)))
    starts.sort(key=lambda s: s[0])
    starts = [p for _, p in starts[:refined]]
    if poles >= 2:
        prev = _solve(x, eps, weight, poles - 1, drude, refined)
        split = 1 + 3 * (poles - 1)
        for w0 in np.geomspace(x.min(), x.max(), 3):
            starts.append(np.concatenate([prev[:split], [0.0, w0, 0.3 * w0], prev[split:]]))
    lo, hi = _bounds(x, poles, drude)

    def residual(p):
        r = (_model(p, x, poles, drude)[0] - eps) * weight
        return np.concatenate([r.real, r.imag])

    def jacobian(p):
        j = _model(p, x, poles, drude)[1] * weight[:, None]
        return np.vstack([j.real, j.imag])

    best = None
    for p0 in starts:
        res = least_squares(
            residual,
            np.clip(p0, lo, hi),
            jac=jacobian,
            bounds=(lo, hi),
            x_scale="jac",
            ftol=1e-14,
            xtol=1e-14,
            gtol=1e-14,
            max_nfev=40 * len(lo),
        )
        if best is None or res.cost < best.cost:
            best = res
    return best.x


def fit(wavelength, n, k, poles: int = 3, *, drude: bool | None = None, unit: str = "um") -> DispersionFit:
    """Fit a passive, causal Drude-Lorentz model to ``n + i k`` sampled at ``wavelength``.

    Parameters
    ----------
    wavelength : vacuum wavelengths (1-D, > 0, at least 3), in the length unit ``unit``;
        the model's frequencies come out in rad per unit time of that unit (emjax's
        ``omega = 2 pi / wavelength``), as :func:`emjax.materials.library` gives them.
    n, k : the refractive index and extinction coefficient there (``k >= 0`` absorbs).
    poles : the number of Lorentz oscillators (0 to 8).
    drude : add a Drude term; None (default): add it when the data have ``Re eps < 0``
        somewhere (a metal).
    unit : the length unit's name, recorded with the result.

    Returns
    -------
    DispersionFit with the model and its RMS error in ``n + i k``.
    """
    wl = require_floats("fit.wavelength", wavelength, "a list of wavelengths (> 0)")
    n = require_floats("fit.n", n, "a list of refractive indices")
    k = require_floats("fit.k", k, "a list of extinction coefficients (>= 0)")
    if wl.ndim != 1 or n.shape != wl.shape or k.shape != wl.shape:
        raise ConfigError(
            f"fit: wavelength, n, k must be 1-D of equal length, got {wl.shape}, {n.shape}, {k.shape}"
        )
    if not (np.all(np.isfinite(wl)) and np.all(wl > 0)):
        raise ConfigError("fit.wavelength must be finite and > 0")
    if not (np.all(np.isfinite(n)) and np.all(np.isfinite(k))):
        raise ConfigError("fit: n and k must be finite")
    if np.any(k < 0):
        raise ConfigError("fit.k must be >= 0 (exp(-i omega t): k >= 0 absorbs)")
    poles = require_int("fit.poles", poles, 0, 8)
    order = np.argsort(wl)
    wl, n, k = wl[order], n[order], k[order]
    m = n + 1j * k
    eps = m**2
    if np.any(np.abs(eps) == 0):
        raise ConfigError("fit: n + i k = 0 is not a refractive index")
    if drude is None:
        drude = bool(np.any(eps.real < 0))
    n_params = 1 + 3 * poles + (2 if drude else 0)
    if len(np.unique(wl)) < 3 or 2 * len(np.unique(wl)) < n_params:
        raise ConfigError(
            f"fit: {len(np.unique(wl))} distinct wavelengths cannot determine {n_params} parameters "
            f"({poles} Lorentz poles{' and a Drude term' if drude else ''}); give more samples"
        )

    omega = 2 * np.pi / wl
    scale = float(np.sqrt(omega.min() * omega.max()))  # the fit runs in omega / scale
    x = omega / scale
    params = _solve(x, eps, 1.0 / np.abs(eps), poles, drude)
    eps_inf, lor, dru = _unpack(params, poles, drude)
    pole_objs = []
    if dru is not None and dru[0] > 0:
        pole_objs.append(DrudePole(float(np.sqrt(dru[0]) * scale), float(dru[1] * scale)))
    for de, w, g in lor:
        if de > 0:
            pole_objs.append(LorentzPole(float(de), float(w * scale), float(g * scale)))
    model = Dispersive(float(eps_inf), tuple(pole_objs))
    m_fit = model.refractive_index(wl)
    err = np.abs(m_fit - m)
    return DispersionFit(model, float(np.sqrt(np.mean(err**2))), float(err.max()), wl, n, k, unit)
