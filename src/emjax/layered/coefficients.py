"""Spectral amplitudes of a dipole's field in a planar stack (per in-plane wavenumber).

For each in-plane wavenumber ``k_rho`` the field splits into TE waves (E along
``s = z x k_rho_hat``) and TM waves (H along ``s``). In medium ``j`` a scalar amplitude
``u`` (E_s for TE, H_s for TM) reads ``u = A_up exp(i kz_j (z - z_bot)) + A_dn exp(-i kz_j
(z - z_top))`` with ``z_bot``/``z_top`` the layer's own interfaces, so both exponentials are
bounded by 1 (``Im kz >= 0``). The local Fresnel coefficients of a wave in ``i`` hitting
``j`` are ``r = (kz_i - kz_j) / (kz_i + kz_j)`` (TE) and ``(eps_j kz_i - eps_i kz_j) /
(eps_j kz_i + eps_i kz_j)`` (TM), ``t = 1 + r``; the generalized reflection coefficients
follow Chew's stable recursion ``R = (r + R' P^2) / (1 + r R' P^2)`` with ``P = exp(i kz d)``
(never a growing exponential). A TM wave's E amplitude along ``p = (+-kz rho_hat - k_rho
z_hat) / k`` is proportional to H_s with a factor ``1 / n`` of the medium, hence the
``n_s / n_m`` between source and observation media.

The azimuthal integrals give the Green tensor from nine Sommerfeld integrals
``I_j = int dk_rho (k_rho / kz_s) [c_up E_up(z) + c_dn E_dn(z)] J_{n_j}(k_rho rho)`` whose
coefficients ``c`` this module computes (green.py assembles the tensors):
E: ``J0 (TE + TM_rr)``, ``J2 (TE - TM_rr)``, ``J1 TM_rz``, ``J1 TM_zr``, ``J0 TM_zz``;
H: ``J2 (U + V)``, ``J0 (U - V)``, ``J1 U_z``, ``J1 V_z``.

These are per-node tables (a few thousand nodes), computed once on the host with NumPy in
complex128; the per-point work (exponentials, Bessel functions, sums) runs in JAX.
The same functions run on ``jax.numpy`` (``xp=jnp``) when the stack's permittivities or
thicknesses or the source height are traced (gradients, see ``traced.py``).
"""

from __future__ import annotations

import numpy as np

BESSEL_ORDER = (0, 2, 1, 1, 0, 2, 0, 1, 1)  # order of J in each of the nine integrals


def kz(kr, k2, xp=np):
    """``sqrt(k^2 - k_rho^2)`` with ``Im >= 0``; kr (B,), k2 (n,) -> (B, n)."""
    w = xp.sqrt(k2[None, :] - kr[:, None] ** 2)
    return xp.where(xp.imag(w) < 0, -w, w)


def _fresnel(kzs, eps, i, j, tm: bool):
    """Reflection of a wave in medium i hitting medium j (amplitude E_s for TE, H_s for TM)."""
    a, b = kzs[:, i], kzs[:, j]
    if tm:
        a, b = eps[j] * a, eps[i] * b
    return (a - b) / (a + b)


def amplitudes(kr, k0, eps, interfaces, z_src, s: int, m: int, tm: bool, xp=np):
    """Amplitudes ``A[o][i]`` (o: up/dn wave at the observation medium ``m``, i: unit
    emission up/down at the source ``z_src`` in medium ``s``), each shape (B,), for the
    scattered/transmitted field (the direct wave of the source medium is not included).
    ``interfaces``: host floats from top to bottom; eps: (n,) complex array."""
    n = eps.shape[0]
    kzs = kz(kr, (k0**2) * eps, xp)
    d = [None] + [interfaces[j - 1] - interfaces[j] for j in range(1, n - 1)] + [None]
    P = [xp.zeros_like(kr) if d[j] is None else xp.exp(1j * kzs[:, j] * d[j]) for j in range(n)]
    Rup = [xp.zeros_like(kr)]
    for j in range(1, n):
        r = _fresnel(kzs, eps, j, j - 1, tm)
        q = Rup[j - 1] * P[j - 1] ** 2
        Rup.append((r + q) / (1 + r * q))
    Rdn = [xp.zeros_like(kr)] * n
    for j in range(n - 2, -1, -1):
        r = _fresnel(kzs, eps, j, j + 1, tm)
        q = Rdn[j + 1] * P[j + 1] ** 2
        Rdn[j] = (r + q) / (1 + r * q)

    k = kzs[:, s]
    e1 = xp.exp(1j * k * (interfaces[s - 1] - z_src)) if s > 0 else xp.zeros_like(kr)
    e2 = xp.exp(1j * k * (z_src - interfaces[s])) if s < n - 1 else xp.zeros_like(kr)
    den = 1 - Rup[s] * Rdn[s] * P[s] ** 2
    out = {}
    for emit, (sp, sm) in (("up", (1.0, 0.0)), ("dn", (0.0, 1.0))):
        a_d = Rup[s] * (sp * e1 + Rdn[s] * P[s] * sm * e2) / den  # down wave, at the top interface
        a_u = Rdn[s] * (sm * e2 + Rup[s] * P[s] * sp * e1) / den  # up wave, at the bottom interface
        if m == s:
            out[emit] = (a_u, a_d)
        elif m < s:
            amp = sp * e1 + a_u * P[s]  # up wave arriving at the top interface of s
            for j in range(s - 1, m - 1, -1):
                r = _fresnel(kzs, eps, j + 1, j, tm)
                A = (1 + r) * amp / (1 + r * Rup[j] * P[j] ** 2)  # up wave at the bottom of j
                amp = A * P[j]
            out[emit] = (A, A * Rup[j] * P[j])
        else:
            amp = sm * e2 + a_d * P[s]  # down wave arriving at the bottom interface of s
            for j in range(s + 1, m + 1):
                r = _fresnel(kzs, eps, j - 1, j, tm)
                B = (1 + r) * amp / (1 + r * Rdn[j] * P[j] ** 2)  # down wave at the top of j
                amp = B * P[j]
            out[emit] = (B * Rdn[j] * P[j], B)
    return out, kzs


def integrand_coefficients(kr, k0, eps, interfaces, z_src, s: int, m: int, xp=np):
    """Coefficients of the nine Sommerfeld integrals, shape (B, 9, 2) (last axis: E_up,
    E_dn), including the factor ``k_rho / kz_s``; and ``kz_m`` (B,)."""
    te, kzs = amplitudes(kr, k0, eps, interfaces, z_src, s, m, tm=False, xp=xp)
    tm, _ = amplitudes(kr, k0, eps, interfaces, z_src, s, m, tm=True, xp=xp)
    ks = k0 * xp.sqrt(eps[s])
    km = k0 * xp.sqrt(eps[m])
    ks = xp.where(xp.imag(ks) < 0, -ks, ks)
    km = xp.where(xp.imag(km) < 0, -km, km)
    kz_s, kz_m = kzs[:, s], kzs[:, m]
    ratio = ks / km  # TM: E amplitude along p scales as 1/n
    rows = []
    for o, so in ((0, 1.0), (1, -1.0)):  # observation wave up (+) / down (-)
        F = te["up"][o] + te["dn"][o]
        Cp, Cm = ratio * tm["up"][o], ratio * tm["dn"][o]  # source emission up (+) / down (-)
        rr = so * (Cp - Cm) * kz_m * kz_s / (km * ks)
        U_rs = -so * F * kz_m / km
        V_sr = (Cp - Cm) * kz_s / ks
        h = km / k0
        rows.append(
            [
                F + rr,
                F - rr,
                -so * (Cp + Cm) * kz_m * kr / (km * ks),
                -(Cp - Cm) * kz_s * kr / (km * ks),
                (Cp + Cm) * kr**2 / (km * ks),
                h * (U_rs + V_sr),
                h * (U_rs - V_sr),
                h * F * kr / km,
                -h * (Cp + Cm) * kr / ks,
            ]
        )
    coef = xp.stack([xp.stack(r, axis=-1) for r in rows], axis=-1)  # (B, 9, 2)
    return coef * (kr / kz_s)[:, None, None], kz_m
