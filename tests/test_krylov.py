"""Krylov solvers against numpy.linalg.solve on complex-symmetric systems."""

import jax
import numpy as np
import pytest

from emjax import ConfigError, krylov
from emjax.backend import precision_scope


def _system(n=120, seed=0):
    rng = np.random.default_rng(seed)
    B = rng.normal(size=(n, n)) + 1j * rng.normal(size=(n, n))
    A = np.diag(5 + 2j + rng.random(n)) + 0.4 * (B + B.T) / np.sqrt(n)
    b = rng.normal(size=n) + 1j * rng.normal(size=n)
    return A, b


@pytest.mark.parametrize("solver", [krylov.QMR, krylov.BiCG, krylov.BiCGStab])
@pytest.mark.parametrize("jacobi", [False, True])
def test_solution_matches_direct_solve(solver, jacobi):
    A, b = _system()
    with precision_scope():
        op = jax.tree_util.Partial(lambda M, x: M @ x, jax.numpy.asarray(A))
        M = krylov.jacobi(np.diag(A)) if jacobi else None
        r = krylov.solve(op, b, solver(rtol=1e-10), M=M)
    x = np.linalg.solve(A, b)
    assert r.converged and r.residual <= 1e-10
    assert np.linalg.norm(np.asarray(r.x) - x) / np.linalg.norm(x) < 1e-8
    assert r.residual_history[0] == pytest.approx(1.0)
    assert len(r.residual_history) == r.iterations + 1
    if solver is krylov.QMR:  # QMR's recursively updated residual tracks the true one
        true = np.linalg.norm(b - A @ np.asarray(r.x)) / np.linalg.norm(b)
        if not jacobi:
            assert true == pytest.approx(r.residual, rel=1e-3, abs=1e-13)


def test_plain_function_operator_and_progress():
    A, b = _system(40)
    calls = []
    with precision_scope():
        r = krylov.solve(
            lambda x: jax.numpy.asarray(A) @ x,
            b,
            krylov.QMR(rtol=1e-9, chunk=3),
            progress=lambda it, res: calls.append((it, res)),
        )
    assert r.converged and calls and calls[-1][0] == r.iterations
    assert all(a[0] < b[0] for a, b in zip(calls, calls[1:]))


def test_maxiter_reports_non_convergence():
    A, b = _system()
    with precision_scope():
        r = krylov.solve(lambda x: jax.numpy.asarray(A) @ x, b, krylov.BiCG(rtol=1e-12, maxiter=3))
    assert not r.converged and r.iterations == 3 and "did not converge" in r.message


def test_bad_arguments():
    with pytest.raises(ConfigError, match="rtol"):
        krylov.QMR(rtol=float("nan"))
    with pytest.raises(ConfigError, match="maxiter"):
        krylov.QMR(maxiter=0)


@pytest.mark.parametrize(
    "solver", [krylov.QMR(rtol=1e-10), krylov.BiCG(rtol=1e-10), krylov.BiCGStab(rtol=1e-10)]
)
def test_batched_solve_equals_separate_solves(solver):
    """solve_batched with a shared matrix and per-system diagonal scalings (the DDA's case:
    one interaction tensor, one sqrt(alpha) per orientation) gives each system the iterates,
    iteration count and solution of its own solve (to rounding), even when the systems stop
    at different iterations (one right-hand side is 1000x smaller, one is zero)."""
    import jax

    class Op:
        def __init__(self, M, s):
            self.M, self.s = M, s

        def __call__(self, x):
            return x - self.s * (self.M @ (self.s * x))

    jax.tree_util.register_pytree_node(Op, lambda o: ((o.M, o.s), None), lambda _, c: Op(*c))
    rng = np.random.default_rng(0)
    n = 40
    M = rng.normal(size=(n, n)) + 1j * rng.normal(size=(n, n))
    M = 0.02 * (M + M.T)
    S = rng.normal(size=(5, n)) * 0.5 + 1 + 0.1j
    B = rng.normal(size=(5, n)) + 1j * rng.normal(size=(5, n))
    B[2] *= 1e-3
    B[4] = 0
    batched = krylov.solve_batched(Op(M, S), B, solver, in_axes=Op(None, 0))
    for i, r in enumerate(batched):
        one = krylov.solve(Op(M, S[i]), B[i], solver)
        assert r.converged and one.converged
        assert r.iterations == one.iterations
        np.testing.assert_allclose(
            np.asarray(r.x), np.asarray(one.x), atol=1e-12 * max(1.0, np.abs(one.x).max())
        )
        np.testing.assert_allclose(r.residual_history, one.residual_history, rtol=1e-6, atol=1e-9)


def test_batched_solve_bad_axes():
    with pytest.raises(ConfigError, match="b must have a leading batch axis"):
        krylov.solve_batched(lambda x: x, np.ones(3, complex))


def test_qmr_lean_matches_qmr():
    """QMRLean (no residual recurrences, the true residual every LEAN_CHECK iterations):
    the same iterates as QMR, so the same solution (measured 1.3e-11 apart on this
    complex-symmetric system at rtol 1e-10), stopping at the first check past QMR's count
    (43 -> 64), one right side and a batch."""
    import jax.numpy as jnp

    from emjax.backend import precision_scope
    from emjax.krylov import QMR, QMRLean, solve, solve_batched
    from emjax.krylov.core import LEAN_CHECK

    rng = np.random.default_rng(0)
    n = 300
    with precision_scope():
        M = rng.normal(size=(n, n)) + 1j * rng.normal(size=(n, n))
        A = jnp.asarray((M + M.T) / 2 + 30 * np.eye(n))
        b = jnp.asarray(rng.normal(size=n) + 0j)
        r1 = solve(lambda x: A @ x, b, QMR(rtol=1e-10, maxiter=2000))
        r2 = solve(lambda x: A @ x, b, QMRLean(rtol=1e-10, maxiter=2000))
        assert r1.converged and r2.converged and r2.iterations % LEAN_CHECK == 0
        assert r1.iterations <= r2.iterations < r1.iterations + LEAN_CHECK
        assert float(jnp.max(jnp.abs(r1.x - r2.x))) < 1e-9 * float(jnp.max(jnp.abs(r1.x)))
        assert float(jnp.linalg.norm(A @ r2.x - b) / jnp.linalg.norm(b)) <= 1e-10
        rb = solve_batched(lambda x: A @ x, jnp.stack([b, 2 * b + 1j]), QMRLean(rtol=1e-10, maxiter=2000))
        assert all(r.converged and r.residual <= 1e-10 for r in rb)


@pytest.mark.parametrize("rtol", [1.0, 2.0, -1e-5, float("nan"), "1e-5", True])
def test_rtol_outside_0_1_is_refused(rtol):
    """rtol >= 1 is met by the zero initial guess ("converged" with nothing solved): refused,
    as are negative, NaN and non-numeric values, naming the field and the range."""
    from emjax.krylov import QMR

    with pytest.raises(ConfigError, match=r"rtol must be (in \[0, 1\)|a number in \[0, 1\))"):
        QMR(rtol=rtol)
