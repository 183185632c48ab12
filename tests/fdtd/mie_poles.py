"""Complex resonance frequencies (poles) of a dielectric cylinder and sphere in vacuum, from
the denominators of their Mie coefficients (SciPy's Bessel functions of complex argument
and a complex secant root finder): the independent reference of the FDTD ring-down tests.

Time dependence exp(-i omega t), c = 1, k = omega = 2 pi f: a resonance is a complex
``k = 2 pi (f - i gamma / (2 pi))`` with ``Im k < 0`` (the field decays as exp(-gamma t)),
and ``Q = Re k / (2 |Im k|) = pi f / gamma``.
"""

from __future__ import annotations

import numpy as np
from scipy import special
from scipy.optimize import newton


def cylinder_tm_denominator(m: int, n: float, radius: float):
    """The TM (E along the axis) denominator of the infinite cylinder's coefficient of order
    ``m`` (Bohren & Huffman 8.38, b_n): inside ``E_z = A J_m(n k r)``, outside
    ``B H_m^(1)(k r)``; E_z and H_phi (~ dE_z / dr) continuous at r = a give
    ``n J_m'(n k a) H_m(k a) - J_m(n k a) H_m'(k a) = 0``."""

    def den(k):
        x = k * radius
        return n * special.jvp(m, n * x) * special.hankel1(m, x) - special.jv(m, n * x) * special.h1vp(m, x)

    return den


def sphere_te_denominator(ell: int, n: float, radius: float, electric: bool = False):
    """The denominator of the sphere's magnetic (TE) coefficient b_l (Bohren & Huffman 4.53):
    ``psi_l(n x) xi_l'(x) - n xi_l(x) psi_l'(n x)`` with ``psi(r) = r j_l(r)``, ``xi(r) = r
    h_l^(1)(r)``, ``x = k a``; ``electric``: a_l's, ``n psi_l(n x) xi_l'(x) - xi_l(x)
    psi_l'(n x)``."""

    def psi(r, deriv=False):
        j = special.spherical_jn(ell, r)
        return j + r * special.spherical_jn(ell, r, derivative=True) if deriv else r * j

    def xi(r, deriv=False):
        h = special.spherical_jn(ell, r) + 1j * special.spherical_yn(ell, r)
        if not deriv:
            return r * h
        dh = special.spherical_jn(ell, r, True) + 1j * special.spherical_yn(ell, r, True)
        return h + r * dh

    def den(k):
        x = k * radius
        if electric:
            return n * psi(n * x) * xi(x, True) - xi(x) * psi(n * x, True)
        return psi(n * x) * xi(x, True) - n * xi(x) * psi(n * x, True)

    return den


def pole(den, k_guess: complex) -> tuple[float, float]:
    """The zero of ``den`` nearest ``k_guess`` (complex wavenumber), as (frequency f = Re k /
    2 pi, Q = Re k / (2 |Im k|)); checked to be a zero (|den| tiny against its scale)."""
    k = complex(newton(den, complex(k_guess), tol=1e-14, maxiter=200))
    scale = abs(den(k * 1.001)) + 1e-300
    assert abs(den(k)) < 1e-9 * scale, (k, abs(den(k)), scale)
    assert k.imag < 0, f"a pole must decay (Im k < 0), got {k}"
    return k.real / (2 * np.pi), k.real / (2 * abs(k.imag))
