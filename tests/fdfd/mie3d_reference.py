"""Mie series for a sphere (dielectric or perfectly conducting) in vacuum: the amplitude
functions S1, S2 and the bistatic radar cross sections in the E- and H-planes (Bohren &
Huffman, "Absorption and Scattering of Light by Small Particles", ch. 4; fields ~ exp(-i
omega t)). Written from the textbook formulas with scipy.special, independent of emjax.

E_s,par = exp(ikr) / (-ikr) S2 E_i,par and E_s,perp = exp(ikr) / (-ikr) S1 E_i,perp, so in the
E-plane (incident E in the scattering plane) sigma = 4 pi |S2|^2 / k^2 and in the H-plane
sigma = 4 pi |S1|^2 / k^2, theta measured from the forward direction.
"""

import numpy as np
from scipy.special import spherical_jn, spherical_yn


def _psi(n, z, derivative=False):
    if derivative:
        return spherical_jn(n, z) + z * spherical_jn(n, z, derivative=True)
    return z * spherical_jn(n, z)


def _xi(n, x, derivative=False):
    h = spherical_jn(n, x) + 1j * spherical_yn(n, x)
    if derivative:
        dh = spherical_jn(n, x, derivative=True) + 1j * spherical_yn(n, x, derivative=True)
        return h + x * dh
    return x * h


def coefficients(x, m=None, nmax=None):
    """a_n, b_n (n = 1..nmax) for size parameter x; ``m`` None: perfect conductor."""
    nmax = nmax or int(x + 4 * x ** (1 / 3) + 8)
    n = np.arange(1, nmax + 1)
    if m is None:
        a = _psi(n, x, True) / _xi(n, x, True)
        b = _psi(n, x) / _xi(n, x)
        return a, b
    mx = m * x
    a = (m * _psi(n, mx) * _psi(n, x, True) - _psi(n, x) * _psi(n, mx, True)) / (
        m * _psi(n, mx) * _xi(n, x, True) - _xi(n, x) * _psi(n, mx, True)
    )
    b = (_psi(n, mx) * _psi(n, x, True) - m * _psi(n, x) * _psi(n, mx, True)) / (
        _psi(n, mx) * _xi(n, x, True) - m * _xi(n, x) * _psi(n, mx, True)
    )
    return a, b


def amplitudes(x, theta_deg, m=None):
    """S1, S2 at the scattering angles ``theta_deg``."""
    a, b = coefficients(x, m)
    mu = np.cos(np.deg2rad(np.asarray(theta_deg, float)))
    S1 = np.zeros(mu.shape, complex)
    S2 = np.zeros(mu.shape, complex)
    pi_prev, pi_n = np.zeros_like(mu), np.ones_like(mu)
    for n in range(1, len(a) + 1):
        tau = n * mu * pi_n - (n + 1) * pi_prev
        f = (2 * n + 1) / (n * (n + 1))
        S1 += f * (a[n - 1] * pi_n + b[n - 1] * tau)
        S2 += f * (a[n - 1] * tau + b[n - 1] * pi_n)
        pi_prev, pi_n = pi_n, ((2 * n + 1) * mu * pi_n - (n + 1) * pi_prev) / n
    return S1, S2


def rcs(radius, wavelength, theta_deg, m=None):
    """(sigma_E, sigma_H): bistatic RCS (area) in the E- and H-planes."""
    k = 2 * np.pi / wavelength
    S1, S2 = amplitudes(k * radius, theta_deg, m)
    return 4 * np.pi * np.abs(S2) ** 2 / k**2, 4 * np.pi * np.abs(S1) ** 2 / k**2


def qext(x, m=None):
    a, b = coefficients(x, m)
    n = np.arange(1, len(a) + 1)
    return 2 / x**2 * np.sum((2 * n + 1) * np.real(a + b))
