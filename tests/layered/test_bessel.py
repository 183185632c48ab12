"""J0, J1, J2 of real and complex argument (emjax.layered.bessel) against scipy.special.jv.

Error measure (the same in every test): ``|J - J_ref| / |J_ref|`` for ``|z| < 2`` (no zeros
there but ``z = 0`` of J1, J2, where the series keeps the relative error small), and
``|J - J_ref| / max(|J_ref|, sqrt(2/(pi|z|)) cosh(Im z))`` for ``|z| >= 2``: relative to
the envelope of J, so that points at or near zeros of J are measured, not excluded.

Domain: what the Sommerfeld paths need, ``|Re z| <= 2e4``, ``|Im z| <= 30``. scipy's ``jv``
(AMOS) is itself accurate to ~5e-15 there (checked against mpmath at 40 digits on the worst
points of such sets: emjax's own error there is <= 2.5e-15), so the double tolerance 1e-14 is
mostly scipy's error; it still fails for a Miller recurrence started 4 indices too low
(2.6e-14) or a Hankel expansion 6 coefficients shorter (1.9e-14).
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.special as sp

from emjax.backend import precision_scope
from emjax.layered.bessel import _DOUBLE, _SINGLE, j0, j1, jn012

LENGTH = 1 << 16  # every evaluation is padded to this length, so each dtype compiles once


@pytest.fixture(autouse=True)
def _x64():
    with precision_scope():
        yield


def scaled_error(J, ref, z, switch=2.0):
    """The error measure of the module docstring (relative below ``|z| = switch``)."""
    z = np.asarray(z, np.complex128)
    env = np.sqrt(2 / (np.pi * np.maximum(np.abs(z), 1e-300))) * np.cosh(z.imag)
    den = np.where(np.abs(z) < switch, np.abs(ref), np.maximum(np.abs(ref), env))
    num = np.abs(np.asarray(J, np.complex128) - ref)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(num == 0, 0.0, num / den)  # exact zeros (J1(0)) count as 0; NaN stays


def _boundaries(radii, rng, n=400):
    """Points just inside, on and outside the circles |z| = r where the method switches."""
    th = rng.uniform(-np.pi, np.pi, n)
    rel = np.array([-1e-3, -1e-7, -1e-12, 0.0, 1e-12, 1e-7, 1e-3])
    return np.concatenate([r * (1 + rel[:, None]) * np.exp(1j * th[None, :]) for r in radii]).ravel()


def _near_zeros():
    """Zeros of J0, J1, J2 (small ones from scipy, ones near 2e4 from McMahon's expansion,
    close enough to a zero for the test) with Im z in {0, 1e-3, 0.1, +-1}, both signs of Re z."""
    small = np.concatenate([sp.jn_zeros(n, 40) for n in range(3)])
    big = []
    for n in range(3):
        b = (np.arange(6300, 6366) + n / 2 - 0.25) * np.pi
        big.append(b - (4 * n * n - 1) / (8 * b))
    x = np.concatenate([small, *big])
    x = np.concatenate([x, x * (1 + 1e-9), -x])
    return np.concatenate([x + 1j * y for y in (0.0, 1e-3, 0.1, 1.0, -1.0)])


def complex_points(seed=0, n=40000):
    """Random points over the domain plus structured ones (tested in every precision)."""
    rng = np.random.default_rng(seed)
    x = np.exp(rng.uniform(np.log(1e-6), np.log(2e4), n)) * rng.choice([-1, 1], n)
    x[: n // 3] = rng.uniform(-40, 40, n // 3)  # where the branches meet
    y = np.exp(rng.uniform(np.log(1e-4), np.log(30), n)) * rng.choice([-1, 1], n)
    y[: n // 8] = rng.uniform(-30, 30, n // 8)  # large imaginary parts at small Re z
    y[n // 8 : n // 4] = 0.0  # the real axis as complex input
    radii = (_DOUBLE.tiny, _DOUBLE.asym, _SINGLE.tiny, _SINGLE.asym, 2.0)
    return np.concatenate([x + 1j * y, _boundaries(radii, rng), _near_zeros(), [0, 1e-15, 1e-15j]])


def real_points(seed=1, n=40000):
    rng = np.random.default_rng(seed)
    x = np.exp(rng.uniform(np.log(1e-8), np.log(2e4), n)) * rng.choice([-1, 1], n)
    x[: n // 3] = rng.uniform(-40, 40, n // 3)
    radii = np.array([_DOUBLE.tiny, _DOUBLE.asym, _SINGLE.tiny, _SINGLE.asym])
    edges = radii[:, None] * (1 + np.array([-1e-7, -1e-12, 0.0, 1e-12, 1e-7]))[None, :]
    zeros = _near_zeros()
    zeros = zeros[zeros.imag == 0].real
    return np.concatenate([x, edges.ravel(), -edges.ravel(), zeros, [0.0, -0.0, 1e-15, 2e4]])


def evaluate(z, dtype, fn=jn012):
    """``fn`` at ``z`` cast to ``dtype``; padded to one length so each dtype compiles once."""
    z = np.asarray(z).astype(dtype)
    assert z.size <= LENGTH
    padded = np.zeros(LENGTH, dtype)
    padded[: z.size] = z
    out = fn(jnp.asarray(padded))
    assert all(o.dtype == dtype and o.shape == (LENGTH,) for o in out)
    return z, [np.asarray(o)[: z.size] for o in out]


def _max_errors(z, dtype):
    z, J = evaluate(z, dtype)
    z64 = z.astype(np.complex128 if np.iscomplexobj(z) else np.float64)
    for n in range(3):
        assert np.isfinite(J[n]).all()
    return np.array([scaled_error(J[n], sp.jv(n, z64), z64).max() for n in range(3)])


def test_complex128_matches_scipy():
    """complex128 over the domain (random, real axis, Im z from 1e-4 to 30, zeros of J0/J1/J2
    with Im z = 0, 1e-3, 0.1, 1, both sides of every branch switch; 58773 points): measured
    max error 3.2e-15 (J0), 3.4e-15 (J1), 4.0e-15 (J2), mostly scipy's own; tolerance 1e-14."""
    errors = _max_errors(complex_points(), np.complex128)
    assert errors.max() < 1e-14, errors


def test_float64_real_axis_matches_scipy():
    """Real-argument path in float64 (|x| from 1e-8 to 2e4, zeros of J0/J1/J2, branch
    switches, x = +-0): measured max error 2.3e-15 (J0), 2.1e-15 (J1), 5.6e-15 (J2, at
    |x| < 1e-6 where scipy's J2 is off by that much and ours by <= 1 ulp: see the series
    test); tolerance 1e-14. Results are real float64."""
    errors = _max_errors(real_points(), np.float64)
    assert errors.max() < 1e-14, errors


def test_complex64_matches_scipy():
    """complex64 on the same points (rounded to complex64; the reference is taken at the
    rounded point): measured max error 7.6e-7 (J0), 8.3e-7 (J1), 7.4e-7 (J2), at
    2 < |z| < 9 where the recurrence's rounding (~|z| eps) peaks; up to 1.0e-6 on denser
    sets; tolerance 2e-6."""
    errors = _max_errors(complex_points(), np.complex64)
    assert errors.max() < 2e-6, errors


def test_float32_real_axis_matches_scipy():
    """float32 real path: measured max error 5.0e-7 (J0), 4.7e-7 (J1), 6.1e-7 (J2); up to
    7.6e-7 on denser sets; tolerance 1.5e-6."""
    errors = _max_errors(real_points(), np.float32)
    assert errors.max() < 1.5e-6, errors


def series(n, z, terms=8):
    """Power series ``J_n = sum_k (-z^2/4)^k (z/2)^n / (k! (n+k)!)``, accurate to rounding for
    ``|z| < 0.1`` (no cancellation); scipy loses up to ~15 eps for small ``z``."""
    z = np.asarray(z)
    return sum(
        (-z * z / 4) ** k * (z / 2) ** n / (math.factorial(k) * math.factorial(n + k)) for k in range(terms)
    )


@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.float32, np.complex64])
def test_small_argument_and_zero(dtype):
    """At z = 0: J0 = 1, J1 = J2 = 0 exactly; for 0 < |z| < 1e-2 J1 and J2 keep full relative
    accuracy (``2 J1 / z - J0`` would cancel to nothing there). Reference: the power series.
    Measured: <= 1.2 eps of the dtype (scipy itself is off by up to 15 eps here); tolerance
    4 eps."""
    z = np.array([0.0, -0.0, 1e-15, -3e-9, 1e-5, 1e-4, 2e-4, 7e-3, 0.05])
    if np.iscomplexobj(np.zeros(1, dtype)):
        z = z * np.exp(0.7j)
    z, J = evaluate(z, dtype)
    assert J[0][0] == 1 and J[1][0] == 0 and J[2][0] == 0
    z64 = z.astype(np.complex128 if np.iscomplexobj(z) else np.float64)
    for n in range(3):
        ref = series(n, z64[2:])
        assert (np.abs(J[n][2:] - ref) / np.abs(ref)).max() < 4 * np.finfo(dtype).eps


def test_j0_j1_and_types():
    """j0/j1 equal jn012's components; integers are taken as float64 (under x64); any shape
    works, real input gives real output of the same precision (shapes checked without
    compiling: ``jax.eval_shape``)."""
    z = complex_points()[:LENGTH]
    _, J = evaluate(z, np.complex128)
    _, (J0, J1) = evaluate(z, np.complex128, lambda a: (j0(a), j1(a)))
    assert np.array_equal(J0, J[0]) and np.array_equal(J1, J[1])
    k = np.arange(LENGTH) - LENGTH // 2
    Jk = j0(k)
    assert Jk.dtype == jnp.float64 and scaled_error(Jk, sp.jv(0, k.astype(float)), k).max() < 1e-14
    for shape, dtype in (((2, 3, 4), jnp.float32), ((), jnp.complex64), ((5, 0), jnp.float64)):
        out = jax.eval_shape(jn012, jax.ShapeDtypeStruct(shape, dtype))
        assert all(o.shape == shape and o.dtype == dtype for o in out)


_derivatives = jax.jit(lambda z: jax.jvp(jn012, (z,), (jnp.ones_like(z),))[1])


def test_derivatives():
    """Forward-mode derivatives (custom JVP: J0' = -J1, J1' = (J0 - J2)/2, J2' = J1 - 2 J2/z
    = (J1 - J3)/2) in complex128 on the value test's points, including z = 0 and every branch
    switch: measured max error 3.4e-15 against scipy's -J1, (J0 - J2)/2, (J1 - J3)/2;
    tolerance 1e-14. Reverse mode on the real float32 path (x = 0 included): finite,
    d J0/dx = -J1 (measured 4.7e-7, tolerance 2e-6)."""
    z = complex_points()
    z, D = evaluate(z, np.complex128, _derivatives)
    ref = [-sp.jv(1, z), 0.5 * (sp.jv(0, z) - sp.jv(2, z)), 0.5 * (sp.jv(1, z) - sp.jv(3, z))]
    # relative below |z| = 1.5 only: J1' = (J0 - J2)/2 vanishes at z = 1.84
    errors = np.array([scaled_error(D[n], ref[n], z, switch=1.5).max() for n in range(3)])
    assert errors.max() < 1e-14, errors

    x = np.float32(real_points()[:LENGTH])
    g = jax.grad(lambda a: jnp.sum(j0(a)))(jnp.asarray(np.resize(x, LENGTH)))
    g = np.asarray(g)[: x.size]
    assert np.isfinite(g).all() and g[x == 0].max() == 0
    assert scaled_error(g, -sp.jv(1, x.astype(np.float64)), x).max() < 2e-6
