"""Bessel functions ``J0``, ``J1``, ``J2`` of real or complex argument, in JAX.

The Sommerfeld integrals evaluate ``J_n(k_rho rho)`` at every quadrature node for every
observation point (1e9-1e10 values per field map), on the real axis and on a path that
leaves it by ``|Im z| <~ 1``. These functions are elementwise over any shape, jit-able, run
in the dtype of their argument (float32/complex64 or float64/complex128) and fuse into one
kernel: every region's formula is evaluated on a clamped argument and the answer picked with
``jnp.where`` (no NaN/Inf in the discarded branches, so gradients stay finite).

Method, for ``r = |z|`` (the argument is first folded into ``Re z >= 0, Im z >= 0`` with
``J_n(-z) = (-1)^n J_n(z)``, ``J_n(conj z) = conj J_n(z)``):

* ``r < tiny``: two terms of the power series (``J0 = 1 - z^2/4``, ...), exact to rounding.
* ``tiny <= r < asym``: Miller's backward recurrence ``p_{n-1} = (2n/z) p_n - p_{n+1}``
  started at ``N(r) = ceil(base + r + slope sqrt(r))`` (per element, so nothing overflows),
  normalised with ``exp(-iz) = J0 + 2 sum_n (-i)^n J_n`` (complex; ``|exp(-iz)| = e^{Im z}``
  matches the size of the terms, so no cancellation for large ``Im z``, unlike
  ``1 = J0 + 2 sum J_2k``) or with ``1 = J0 + 2 sum J_2k`` (real). It yields ``J2`` directly,
  accurate at small ``z`` where ``2 J1 / z - J0`` cancels.
* ``r >= asym``: Hankel's expansion (DLMF 10.17.3) ``J_nu = sqrt(2/(pi z)) (P cos w -
  Q sin w)``, ``w = z - nu pi/2 - pi/4``, written with ``cos z``, ``sin z`` of the exact
  argument (no rounding of ``z - pi/4`` for large ``z``); ``J2 = 2 J1 / z - J0``.

Term counts (``jnp.where`` evaluates every branch for every element, so the cost is their
sum; loops are unrolled at trace time so XLA fuses everything into one kernel):

* double (float64/complex128): ``tiny = 1e-4``, ``asym = 20``, Miller 51 steps (``N(r) =
  ceil(13 + r + 4 sqrt r)``), Hankel a_0..a_21 (11 terms in P, 11 in Q per order; the first
  omitted term is < 1e-16 at ``|z| = 20``);
* single (float32/complex64): ``tiny = 1e-2``, ``asym = 9``, Miller 22 steps (``ceil(7 + r +
  2 sqrt r)``), Hankel a_0..a_11 (6 + 6; first omitted term ~1e-8 at ``|z| = 9``).

Per element that is about 350 flops on the real path (Miller ~5 per step, Hankel 2 per
coefficient and order) and 1100 on the complex one (~14 per Miller step on real/imaginary
parts, ~8 per complex Horner step), plus cos, sin, exp and one division or square root.

Accuracy (tests/layered/test_bessel.py states the measure and the points): error divided by
``|J|`` for ``|z| < 2`` and by ``max(|J|, sqrt(2/(pi|z|)) cosh(Im z))`` for ``|z| >= 2``
(the envelope: finite at zeros of J). Over ``|Re z| <= 2e4, |Im z| <= 30`` it is <= 5e-15
against scipy's ``jv`` (mostly scipy's own error; <= 2.5e-15 against 40-digit mpmath) in
complex128/float64 and <= 1e-6 in complex64/float32, the same on CPU and on an H100.
Values overflow (inf/nan) for ``|Im z|`` beyond ~700 (double) or ~88 (single), like J itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import jax
import jax.numpy as jnp
from jax import lax


@dataclass(frozen=True)
class _Scheme:
    """Region boundaries and term counts for one precision."""

    tiny: float  # |z| below: two-term power series
    asym: float  # |z| at and above: Hankel expansion
    hankel_terms: int  # coefficients a_0 .. a_{hankel_terms-1} of P and Q together
    miller_base: float  # Miller start N(r) = ceil(base + r + slope * sqrt(r))
    miller_slope: float

    @property
    def miller_steps(self) -> int:
        return math.ceil(self.miller_base + self.asym + self.miller_slope * math.sqrt(self.asym))


_DOUBLE = _Scheme(tiny=1e-4, asym=20.0, hankel_terms=22, miller_base=13.0, miller_slope=4.0)
_SINGLE = _Scheme(tiny=1e-2, asym=9.0, hankel_terms=12, miller_base=7.0, miller_slope=2.0)


def _scheme(dtype) -> _Scheme:
    return _DOUBLE if jnp.finfo(dtype).bits == 64 else _SINGLE


def _hankel_coefficients(nu: int, terms: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Coefficients of ``P = sum_m c_m t^m`` and ``Q = (1/z) sum_m d_m t^m``, ``t = 1/z^2``:
    ``c_m = (-1)^m a_2m(nu)``, ``d_m = (-1)^m a_{2m+1}(nu)``, with ``a_k(nu) = prod_{j<=k}
    (4 nu^2 - (2j - 1)^2) / (k! 8^k)`` (exact rationals, rounded once)."""
    a = [Fraction(1)]
    for k in range(1, terms):
        a.append(a[-1] * (4 * nu * nu - (2 * k - 1) ** 2) / (8 * k))
    p = tuple(float((-1) ** (k // 2) * a[k]) for k in range(0, terms, 2))
    q = tuple(float((-1) ** (k // 2) * a[k]) for k in range(1, terms, 2))
    return p, q


_HANKEL = {
    s: (_hankel_coefficients(0, s.hankel_terms), _hankel_coefficients(1, s.hankel_terms))
    for s in (_DOUBLE, _SINGLE)
}


def _horner(coefficients: tuple[float, ...], t):
    acc = coefficients[-1] * t + coefficients[-2]
    for c in reversed(coefficients[:-2]):
        acc = acc * t + c
    return acc


def _horner_complex(coefficients: tuple[float, ...], t):
    # on real and imaginary parts: XLA's complex multiply is ~3x slower on CPU and its
    # graph compiles slower; the rounding is that of the textbook product
    tr, ti = jnp.real(t), jnp.imag(t)
    ar, ai = coefficients[-1] * tr + coefficients[-2], coefficients[-1] * ti
    for c in reversed(coefficients[:-2]):
        ar, ai = ar * tr - ai * ti + c, ar * ti + ai * tr
    return lax.complex(ar, ai)


def _series_tiny(z):
    """J0, J1, J2 for ``|z| < tiny``: the first two terms of each power series."""
    t = z * z
    return 1 - 0.25 * t, 0.5 * z * (1 - 0.125 * t), 0.125 * t * (1 - t / 12)


def _reciprocal_parts(w, scale: float):
    """Real and imaginary parts of ``scale / w`` for ``asym <= |w| <= ~1e150``, cheaper on a
    GPU than XLA's overflow-guarded complex division (a few ulp, harmless in the expansion)."""
    x, y = jnp.real(w), jnp.imag(w)
    d = scale / (x * x + y * y)
    return x * d, -y * d


def _miller_start(r, scheme: _Scheme):
    return lax.stop_gradient(jnp.ceil(scheme.miller_base + r + scheme.miller_slope * jnp.sqrt(r)))


def _miller_real(x, scheme: _Scheme):
    """J0, J1, J2 by backward recurrence normalised with ``1 = J0 + 2 sum_k J_2k``;
    ``tiny <= x < asym`` (clamped by the caller)."""
    start = _miller_start(x, scheme)
    two_over_x = 2 / x
    p_next = p = even = p1 = p2 = jnp.zeros_like(x)
    for n in range(scheme.miller_steps, 0, -1):
        if n >= scheme.miller_base:  # start >= base: below it every element has started
            p = jnp.where(start == n, 1, p)  # zero until the element's own start index
        if n == 2:
            p2 = p
        if n == 1:
            p1 = p
        if n % 2 == 0:
            even = even + p
        p_next, p = p, n * two_over_x * p - p_next
    norm = 1 / (p + 2 * even)
    return p * norm, p1 * norm, p2 * norm


def _miller_complex(w, r, e_minus, scheme: _Scheme):
    """J0, J1, J2 by backward recurrence normalised with ``exp(-iw) = J0 + 2 sum_n (-i)^n
    J_n`` (``e_minus``); ``tiny <= |w| = r < asym``, ``Im w >= 0`` (clamped by the caller).
    Runs on real and imaginary parts (see :func:`_horner_complex`)."""
    start = _miller_start(r, scheme)
    inv = 2 / w  # XLA's division: its rounding (not the formula below's) keeps |z| eps here
    a, b = jnp.real(inv), jnp.imag(inv)
    zero = jnp.zeros_like(a)
    next_re = next_im = re = im = zero
    # sums over n = 2m >= 2 of (-1)^m p_n and over n = 2m + 1 of (-1)^m p_n
    even_re = even_im = odd_re = odd_im = zero
    p1 = p2 = (zero, zero)
    for n in range(scheme.miller_steps, 0, -1):
        if n >= scheme.miller_base:
            re = jnp.where(start == n, 1, re)  # p (and so im) is zero until the start index
        if n == 2:
            p2 = (re, im)
        if n == 1:
            p1 = (re, im)
        sign = -1 if (n // 2) % 2 else 1
        if n % 2 == 0:
            even_re, even_im = even_re + sign * re, even_im + sign * im
        else:
            odd_re, odd_im = odd_re + sign * re, odd_im + sign * im
        new_re = n * (a * re - b * im) - next_re
        new_im = n * (a * im + b * re) - next_im
        next_re, next_im, re, im = re, im, new_re, new_im
    total = lax.complex(re + 2 * even_re + 2 * odd_im, im + 2 * even_im - 2 * odd_re)
    norm = e_minus / total
    return lax.complex(re, im) * norm, lax.complex(*p1) * norm, lax.complex(*p2) * norm


def _hankel_pq(w, scheme: _Scheme):
    """``P0, Q0, P1, Q1`` of the Hankel expansion at ``w`` (``|w| >= asym``) and ``1/w``."""
    inv = lax.complex(*_reciprocal_parts(w, 1.0)) if jnp.iscomplexobj(w) else 1 / w
    t = inv * inv
    (c0, d0), (c1, d1) = _HANKEL[scheme]
    horner = _horner_complex if jnp.iscomplexobj(w) else _horner
    return horner(c0, t), inv * horner(d0, t), horner(c1, t), inv * horner(d1, t), inv


def _jn012_real(x):
    scheme = _scheme(x.dtype)
    ax = jnp.abs(x)
    tiny = ax < scheme.tiny
    asym = ax >= scheme.asym
    mid = ~tiny & ~asym

    m0, m1, m2 = _miller_real(jnp.where(mid, ax, 0.5 * scheme.asym), scheme)

    xh = jnp.where(asym, ax, scheme.asym)
    P0, Q0, P1, Q1, inv = _hankel_pq(xh, scheme)
    c, s = jnp.cos(xh), jnp.sin(xh)
    cos_x, sin_x = c + s, s - c  # sqrt(2) cos and sin of x - pi/4, exact x
    amp = lax.rsqrt(math.pi * xh)
    h0 = amp * (P0 * cos_x - Q0 * sin_x)
    h1 = amp * (P1 * sin_x + Q1 * cos_x)
    h2 = 2 * h1 * inv - h0

    f0 = jnp.where(asym, h0, m0)
    f1 = jnp.where(asym, h1, m1)
    f2 = jnp.where(asym, h2, m2)
    f1 = jnp.where(x < 0, -f1, f1)
    s0, s1, s2 = _series_tiny(x)
    return jnp.where(tiny, s0, f0), jnp.where(tiny, s1, f1), jnp.where(tiny, s2, f2)


def _jn012_complex(z):
    scheme = _scheme(z.dtype)
    x, y = jnp.real(z), jnp.imag(z)
    neg = x < 0
    conj = neg != (y < 0)
    ax, ay = jnp.abs(x), jnp.abs(y)
    w = lax.complex(ax, ay)
    r = jnp.abs(w)
    tiny = r < scheme.tiny
    asym = r >= scheme.asym
    mid = ~tiny & ~asym

    # exp(-iw) (size e^{Im w}) for the recurrence's normalisation, cos and sin of w - pi/4
    # for the expansion, from cos, sin of the exact Re w (never rounding Re w - pi/4)
    c, s = jnp.cos(ax), jnp.sin(ax)
    grow, decay = jnp.exp(ay), jnp.exp(-ay)

    half = 0.5 * scheme.asym
    e_minus = jnp.where(mid, lax.complex(grow * c, -grow * s), 1)
    m0, m1, m2 = _miller_complex(jnp.where(mid, w, half), jnp.where(mid, r, half), e_minus, scheme)

    wh = jnp.where(asym, w, scheme.asym)
    P0, Q0, P1, Q1, inv = _hankel_pq(wh, scheme)
    cos_x, sin_x = (c + s) * math.sqrt(0.5), (s - c) * math.sqrt(0.5)  # of x - pi/4
    cosh_y, sinh_y = 0.5 * (grow + decay), 0.5 * (grow - decay)
    cos_w = lax.complex(cos_x * cosh_y, -sin_x * sinh_y)
    sin_w = lax.complex(sin_x * cosh_y, cos_x * sinh_y)
    amp = jnp.sqrt(inv) * math.sqrt(2 / math.pi)
    h0 = amp * (P0 * cos_w - Q0 * sin_w)
    h1 = amp * (P1 * sin_w + Q1 * cos_w)  # cos(w - 3pi/4) = sin(w - pi/4), sin(...) = -cos(...)
    h2 = 2 * h1 * inv - h0

    f0 = jnp.where(asym, h0, m0)
    f1 = jnp.where(asym, h1, m1)
    f2 = jnp.where(asym, h2, m2)
    f0, f1, f2 = (jnp.where(conj, jnp.conj(f), f) for f in (f0, f1, f2))
    f1 = jnp.where(neg, -f1, f1)
    s0, s1, s2 = _series_tiny(z)
    return jnp.where(tiny, s0, f0), jnp.where(tiny, s1, f1), jnp.where(tiny, s2, f2)


def _as_inexact(z) -> jax.Array:
    z = jnp.asarray(z)
    if not jnp.issubdtype(z.dtype, jnp.inexact):
        z = z.astype(jnp.result_type(float))
    return z


@jax.custom_jvp
def _jn012(z):
    if jnp.issubdtype(z.dtype, jnp.complexfloating):
        return _jn012_complex(z)
    return _jn012_real(z)


@_jn012.defjvp
def _jn012_jvp(primals, tangents):
    # J0' = -J1, J1' = (J0 - J2)/2, J2' = J1 - 2 J2/z: exact to the accuracy of the values
    # (differentiating the recurrence itself would lose digits at small z)
    (z,), (dz,) = primals, tangents
    J0, J1, J2 = _jn012(z)
    small = jnp.abs(z) < _scheme(z.dtype).tiny
    d2 = jnp.where(small, 0.25 * z * (1 - z * z / 6), J1 - 2 * J2 / jnp.where(small, 1, z))
    return (J0, J1, J2), (-J1 * dz, 0.5 * (J0 - J2) * dz, d2 * dz)


_jn012_jit = jax.jit(_jn012)


def jn012(z) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Bessel functions of the first kind of orders 0, 1, 2.

    Parameters
    ----------
    z : array_like, any shape, dimensionless (e.g. ``k_rho * rho``); float32/float64 for the
        real-axis path (real results), complex64/complex128 for complex arguments. Integers
        are taken as the default float type.

    Returns
    -------
    (J0, J1, J2), each with the shape and dtype of ``z``. ``J2`` comes from the recurrence
    or the series where ``2 J1 / z - J0`` would cancel, so it is accurate down to ``z = 0``.
    Differentiable (``jax.grad``, ``jax.jvp``; complex with ``holomorphic=True``).
    """
    return _jn012_jit(_as_inexact(z))


def j0(z) -> jax.Array:
    """``J0(z)``, elementwise; shape and dtype (real or complex) of ``z``. See :func:`jn012`
    (inside a jitted caller XLA drops the unused orders)."""
    return jn012(z)[0]


def j1(z) -> jax.Array:
    """``J1(z)``, elementwise; shape and dtype (real or complex) of ``z``. See :func:`jn012`."""
    return jn012(z)[1]
