"""Differentiable DDA: ``jax.grad`` through :func:`emjax.dda.efficiencies` with
respect to Re m, Im m and the size, against central finite differences of the same
function, and the adjoint solve's memory (nothing per iteration is kept).

The particle: an 8^3-dipole sphere (LDR), eq_rad = 0.5, wavelength 1 (x = pi), m = 1.5 + 0.1i
(about 30 QMR iterations at rtol 1e-10). Parameters ``p = (Re m, Im m, eq_rad)``;
objectives: Qext, Qabs and a phase-function loss ``L = sum_theta (log S11 - log S11_target)^2``
(S11 averaged over the phi = 0 and 90 planes, six angles 10..160 deg; the target is the same
sphere at m = 1.45 + 0.05i). The size enters through the dipole spacing at a fixed grid.

Relative errors ``|grad - FD| / |FD|`` measured on the shared 2-core box (load ~8):

=========================  ============  ==============  =============
case                       double h=1e-5  single h=1e-3   single grad vs double grad
=========================  ============  ==============  =============
d Qext / d Re m            1.6e-9        1.6e-5          1.4e-7
d Qext / d Im m            2.1e-8        6.1e-5          9.7e-7
d Qabs / d Im m            5.0e-10       2.4e-5          1.7e-7
d L / d Re m               4.4e-8        1.5e-4          5.4e-6
d L / d Im m               2.3e-8        2.7e-4          3.4e-6
d Qext / d eq_rad          4.9e-8        5.0e-5          4.1e-7
d L / d eq_rad             2.4e-7        2.5e-3          4.1e-6
=========================  ============  ==============  =============

In single precision (complex64 interaction tensor and FFTs, as ``dda.solve``) the forward
values carry ~1e-7 relative noise, so the central difference needs a larger step (1e-3:
rounding ~1e-7 / 1e-3 = 1e-4, truncation ~h^2 f''' / 6, largest for the size-loss); the
gradient itself stays within ~1e-5 of the double one (last column). Tolerances keep a factor
~5-50 above the measurements; a wrong sign or a missing term is an O(1) error.

Compile times on the 2-core box (loaded): the forward ~5-7 s, the 3x3 Jacobian (``jacrev``)
~25 s, so the full Jacobian checks, the equality with ``dda.solve`` and the memory check
(two compiles) are slow; the fast set has ``jax.grad`` of Qext w.r.t. (Re m, Im m) through
the public call and the rules for traced inputs (the fast memory check of the adjoint solve
itself is in tests/test_krylov_adjoint.py).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from emjax import dda, geometry, krylov
from emjax.backend import precision_scope
from emjax.errors import ConfigError

THETA = (10.0, 40.0, 70.0, 100.0, 130.0, 160.0)
P0 = np.array([1.5, 0.1, 0.5])
NAMES = ("Re m", "Im m", "eq_rad")
OUTS = ("Qext", "Qabs", "L")


def _problem(n, k, r=0.5, precision="double", grid=8):
    return dda.DDAProblem(
        geometry.Sphere(),
        m=n + 1j * k,
        eq_rad=r,
        grid=grid,
        wavelength=1.0,
        theta=THETA,
        phi=(0.0, 90.0),
        precision=precision,
    )


def _solver(precision):
    return krylov.QMR(rtol=1e-10 if precision == "double" else 1e-7)


def _s11(res):
    return jnp.mean(res.mueller[:, :, 0, 0], axis=0)


def _objectives(p, target, precision):
    r = dda.efficiencies(_problem(p[0], p[1], p[2], precision), _solver(precision))
    loss = jnp.sum((jnp.log(_s11(r)) - jnp.log(target)) ** 2)
    return jnp.stack([r.Qext, r.Qabs, loss])


@pytest.fixture(scope="module")
def target():
    with precision_scope():
        return _s11(dda.efficiencies(_problem(1.45, 0.05), _solver("double")))


def _jacobian_and_fd(target, precision, h):
    with precision_scope():
        f = jax.jit(lambda p: _objectives(p, target, precision))
        J = np.asarray(jax.jit(jax.jacrev(lambda p: _objectives(p, target, precision)))(jnp.asarray(P0)))
        fd = np.empty((3, 3))
        for i in range(3):
            e = np.zeros(3)
            e[i] = h
            fd[:, i] = (np.asarray(f(jnp.asarray(P0 + e))) - np.asarray(f(jnp.asarray(P0 - e)))) / (2 * h)
    return J, fd


@pytest.fixture(scope="module")
def double(target):
    return _jacobian_and_fd(target, "double", 1e-5)


@pytest.fixture(scope="module")
def single(target):
    return _jacobian_and_fd(target, "single", 1e-3)


def _check(J, fd, out, param, tol):
    i, j = OUTS.index(out), NAMES.index(param)
    err = abs(J[i, j] - fd[i, j]) / abs(fd[i, j])
    assert err < tol, f"d {out} / d {param}: grad {J[i, j]:.10g}, FD {fd[i, j]:.10g}, rel err {err:.2e}"


CASES = [  # (output, parameter, double tol, single tol)
    ("Qext", "Re m", 1e-7, 3e-4),
    ("Qext", "Im m", 3e-7, 5e-4),
    ("Qabs", "Im m", 1e-7, 3e-4),
    ("L", "Re m", 1e-6, 2e-3),
    ("L", "Im m", 1e-6, 2e-3),
    ("Qext", "eq_rad", 1e-6, 5e-4),
    ("L", "eq_rad", 3e-6, 1e-2),
]


@pytest.mark.slow
@pytest.mark.parametrize("out,param,tol,_", CASES)
def test_gradient_double(double, out, param, tol, _):
    _check(*double, out, param, tol)


@pytest.mark.slow
@pytest.mark.parametrize("out,param,_,tol", CASES)
def test_gradient_single(single, out, param, _, tol):
    _check(*single, out, param, tol)


@pytest.mark.slow
def test_single_gradient_close_to_double(double, single):
    """The single-precision gradient itself (not its FD) is within 1e-5 of the double one
    (measured <= 5.4e-6, d L / d Re m)."""
    err = np.abs(single[0] - double[0]) / np.abs(double[0])
    assert err.max() < 3e-5, err


def test_grad_qext_wrt_n_and_k_public_call():
    """``jax.grad`` of the public call with respect to n and k of ``m = n + ik`` (jitted:
    un-jitted it works too but dispatches op by op, ~35 s here); errors as d Qext / d Re m
    and d Im m in the table (1.6e-9, 2.1e-8)."""

    def qext(n, k):
        return dda.efficiencies(_problem(n, k), _solver("double")).Qext

    with precision_scope():
        gn, gk = jax.jit(jax.grad(qext, argnums=(0, 1)))(jnp.float64(1.5), jnp.float64(0.1))
        f, h = jax.jit(qext), 1e-5
        fn = (f(1.5 + h, 0.1) - f(1.5 - h, 0.1)) / (2 * h)
        fk = (f(1.5, 0.1 + h) - f(1.5, 0.1 - h)) / (2 * h)
        gn, gk, fn, fk = (float(v) for v in (gn, gk, fn, fk))
    assert abs(gn - fn) / abs(fn) < 1e-7, (gn, fn)
    assert abs(gk - fk) / abs(fk) < 3e-7, (gk, fk)


@pytest.mark.slow
def test_concrete_values_equal_solve():
    """``efficiencies`` is ``solve``'s computation: Qext, Qabs, S and the Mueller matrix
    agree to rounding (measured 2e-14) at the same solver tolerance."""
    prob = _problem(1.5, 0.1)
    res = dda.solve(prob, _solver("double"))
    tr = dda.efficiencies(prob, _solver("double"))
    assert abs(float(tr.Qext) - res.Qext) < 1e-10 * res.Qext
    assert abs(float(tr.Qabs) - res.Qabs) < 1e-10 * res.Qabs
    np.testing.assert_allclose(np.asarray(tr.S), res.S, rtol=0, atol=1e-10 * np.abs(res.S).max())
    np.testing.assert_allclose(np.asarray(tr.mueller), res.mueller, rtol=0, atol=1e-10 * res.mueller.max())
    assert bool(np.all(tr.converged)) and tuple(np.asarray(tr.iterations)) == res.iterations


@pytest.mark.slow
def test_adjoint_memory_does_not_grow_with_iterations():
    """The reverse pass keeps no per-iteration residuals: the arrays saved by ``jax.vjp``
    (the VJP closure's leaves) have the same total size whether the solves take 12 or 30
    iterations (rtol 1e-3 vs 1e-10), and the largest is a lattice-sized array (a Krylov
    vector or the interaction tensor), not an iterations x vector stack. (Reverse mode
    through a ``lax.while_loop`` is not even possible in JAX: the gradient can only come
    from the adjoint solve.)"""

    def residuals(rtol):
        def qext(p):
            r = dda.efficiencies(_problem(p[0], p[1]), krylov.QMR(rtol=rtol))
            return r.Qext, r.iterations

        with precision_scope():
            _, vjp, its = jax.jit(lambda p: jax.vjp(qext, p, has_aux=True))(jnp.asarray(P0[:2]))
            leaves = jax.tree_util.tree_leaves(vjp)
        return sum(x.nbytes for x in leaves), max(x.size for x in leaves), int(np.max(its))

    loose, tight = residuals(1e-3), residuals(1e-10)
    assert tight[2] >= 2 * loose[2], (loose, tight)  # really more iterations
    assert loose[0] == tight[0], (loose, tight)
    dhat = 6 * 16**3  # the interaction tensor's entries on the 16^3 FFT grid
    assert tight[1] <= dhat, tight


def test_traced_problem_rules():
    """Inside jax.jit (abstract values) the lattice cannot come from the traced m or size:
    the default 10 |m| rule or a traced size without grid= are refused, naming what to give;
    traced inputs need 64-bit types where the transformation runs (a clear error, not the
    float32/float64 mix-up of JAX's transposes)."""

    with pytest.raises(ConfigError, match="dipoles_per_wavelength"), precision_scope():
        jax.jit(lambda n: dda.efficiencies(dda.DDAProblem(geometry.Sphere(), m=n, eq_rad=0.5)).Qext)(1.5)

    def traced_size_without_grid(r):
        return dda.solve(dda.DDAProblem(geometry.Sphere(), m=1.5, eq_rad=r, dipoles_per_wavelength=10)).Qext

    with pytest.raises(ConfigError, match="eq_rad.*grid="), precision_scope():
        jax.jit(traced_size_without_grid)(0.5)

    with pytest.raises(ConfigError, match="64-bit"):  # outside a 64-bit scope
        jax.grad(lambda n: dda.efficiencies(_problem(n, 0.1)).Qext)(1.5)

    with pytest.raises(ConfigError, match="JAX_ENABLE_X64"):  # the public call says the same
        jax.grad(lambda n: dda.solve(_problem(n, 0.1)).Qext)(1.5)


@pytest.mark.slow  # ~35 s of CPU on the 2-core box (compile included)
def test_fit_index_example():
    """examples/dda_fit_index.py, coarse (grid 8, 25 Adam steps): the loss falls by more
    than 20x and the fitted n lies within 0.1 of the true 1.5 (measured at grid 12, 50 steps:
    4.1 -> 2.2e-3, m = 1.538 + 0.055i; the bias is the coarse lattice's, see the example)."""
    import importlib.util
    from pathlib import Path

    pytest.importorskip("optax", reason="the example's optimizer (pip install 'emjax[examples]')")
    path = Path(__file__).resolve().parents[2] / "examples" / "dda_fit_index.py"
    spec = importlib.util.spec_from_file_location("dda_fit_index", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    r = mod.fit(steps=25, grid=8)
    h = np.asarray(r["loss"])
    assert np.all(np.isfinite(h)) and h[-1] < h[0] / 20, h
    assert abs(r["m_fit"].real - 1.5) < 0.1 and r["m_fit"].imag >= 0, r["m_fit"]
