"""Differentiable orientation average: ``jax.grad`` through
:func:`emjax.dda.efficiencies_averaged` against central finite differences of the same
function, and its values against :func:`emjax.dda.average` at the same fixed rule.

Objectives: the averaged Qext and Qsca (= Qext - Qabs) and the phase-function loss
``L = sum_theta log <S11>(theta)`` (its gradient is ``sum (d<S11>/dp) / <S11>``, so every
angle of the averaged S11 enters with weight one). Parameters ``p = (Re m, Im m, eq_rad)``.

The fast case: a 4 x 3 x 2 box (CM), two explicit orientations (beta, gamma) = (30, 20),
(110, 200) with weights 0.4, 0.6, three planes in alpha, S11 at 20, 90, 160 deg;
gradients w.r.t. (Re m, Im m) at m = 1.5 + 0.1i, QMR rtol 1e-10, h = 1e-5. One compiled
function gives the values and the Jacobian; the differences use its values (one compile).
Measured relative errors (17 s of CPU time for the process on the 2-core box, compile
included; 75 s of wall time there under a load of ~10 from other jobs):

=====================  ==========  ==========
case (fast, double)    d / d Re m  d / d Im m
=====================  ==========  ==========
<Qext>                 4.9e-11     8.8e-11
<Qsca>                 1.2e-10     7.5e-10
L (log <S11>)          2.0e-10     4.0e-10
=====================  ==========  ==========

The slow cases: a 6 x 4 x 3 box (LDR), the OrientationAverage rule at beta level 2 and
gamma level 1 (8 orientations: beta = 0 and 180 need one gamma each), 4 alpha planes, 7 angles 0..180 deg,
``p0 = (1.5, 0.1, 0.5)``. Measured relative errors vs FD (double h = 1e-5; single h = 1e-3,
where forward values carry ~1e-7 relative rounding, so FD is good to ~1e-4):

==============  =========  =========  =========  =========  =========  =========
case            dbl Re m   dbl Im m   dbl a_eq   sgl Re m   sgl Im m   sgl a_eq
==============  =========  =========  =========  =========  =========  =========
<Qext>          2.0e-8     1.2e-7     9.5e-9     7.1e-6     7.1e-6     9.3e-5
<Qsca>          1.9e-8     4.4e-8     2.8e-9     8.5e-6     1.5e-5     1.2e-4
L (log <S11>)   1.9e-7     4.1e-8     4.3e-8     2.3e-5     3.1e-6     4.6e-4
==============  =========  =========  =========  =========  =========  =========

Bounds: 1e-6 (double), 3e-3 (single). Wall times on the loaded box: 4 min (double) and
2.5 min (single) for the Jacobian with its differences, 1.5 min for the comparison with
``dda.average``.

Values against ``dda.average`` (same rule, same rtol): Qext 3.5e-13, Qabs 2.2e-13, the
Mueller matrix 2.4e-12 of its largest entry.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from emjax import dda, geometry, krylov
from emjax.backend import precision_scope
from emjax.errors import ConfigError


def _solver(precision):
    return krylov.QMR(rtol=1e-10 if precision == "double" else 1e-7)


def _jacobian_and_fd(f, p0, h):
    """(values, Jacobian, central differences) with one compile: value and jacrev together."""
    both = jax.jit(lambda p: (f(p), jax.jacrev(f)(p)))
    with precision_scope():
        v, J = both(jnp.asarray(p0))
        fd = np.empty(np.shape(J))
        for i in range(len(p0)):
            e = np.zeros(len(p0))
            e[i] = h
            fd[:, i] = (
                np.asarray(both(jnp.asarray(p0 + e))[0]) - np.asarray(both(jnp.asarray(p0 - e))[0])
            ) / (2 * h)
    return np.asarray(v), np.asarray(J), fd


def _objectives(r):
    return jnp.stack([r.Qext, r.Qsca, jnp.sum(jnp.log(r.mueller[:, 0, 0]))])


# -- fast ----------------------------------------------------------------------------------
_FAST = {  # (output, parameter) -> bound on |grad - FD| / |FD| (double)
    ("Qext", "Re m"): 1e-8,
    ("Qext", "Im m"): 1e-8,
    ("Qsca", "Re m"): 1e-8,
    ("Qsca", "Im m"): 1e-8,
    ("L", "Re m"): 1e-8,
    ("L", "Im m"): 1e-8,
}


def test_averaged_gradient_explicit_orientations():
    """Two explicit orientations, (Re m, Im m): every entry of the 3 x 2 Jacobian within the
    bound of ``_FAST`` of its central difference (measured: see the module doc)."""
    shape = geometry.Box(y_over_x=0.75, z_over_x=0.5)
    nodes, w = [(30.0, 20.0), (110.0, 200.0)], [0.4, 0.6]

    def f(p):
        prob = dda.DDAProblem(
            shape,
            m=p[0] + 1j * p[1],
            eq_rad=0.4,
            grid=4,
            wavelength=1.0,
            theta=(20.0, 90.0, 160.0),
            polarizability=dda.CM(),
            integrate=False,
        )
        return _objectives(dda.efficiencies_averaged(prob, nodes, _solver("double"), weights=w, n_alpha=3))

    _, J, fd = _jacobian_and_fd(f, np.array([1.5, 0.1]), 1e-5)
    print(np.array2string(np.abs(J - fd) / np.abs(fd), precision=2))
    for i, out in enumerate(("Qext", "Qsca", "L")):
        for j, par in enumerate(("Re m", "Im m")):
            err = abs(J[i, j] - fd[i, j]) / abs(fd[i, j])
            assert err < _FAST[out, par], (
                f"d {out} / d {par}: grad {J[i, j]:.10g} FD {fd[i, j]:.10g} err {err:.2e}"
            )


def test_averaged_input_rules():
    """Bad orientation sets and problems are refused with the field named (no solve runs)."""
    prob = dda.DDAProblem(geometry.Sphere(), m=1.5, eq_rad=0.5, grid=4, wavelength=1.0)
    with pytest.raises(ConfigError, match="fixed rule"):
        dda.efficiencies_averaged(prob, dda.OrientationAverage())  # adaptive levels
    with pytest.raises(ConfigError, match="weights"):
        dda.efficiencies_averaged(prob, [(0.0, 0.0)])
    with pytest.raises(ConfigError, match="weights"):
        dda.efficiencies_averaged(prob, [(0.0, 0.0), (90.0, 0.0)], weights=[1.0, -0.5])
    with pytest.raises(ConfigError, match="orientations"):
        dda.efficiencies_averaged(prob, [(0.0, 0.0, 0.0)], weights=[1.0])
    with pytest.raises(ConfigError, match="substrate"):
        sub = dda.DDAProblem(
            geometry.Sphere(), m=1.5, eq_rad=0.5, grid=4, wavelength=1.0, substrate=1.5, height=1.0
        )
        dda.efficiencies_averaged(sub, [(0.0, 0.0)], weights=[1.0])
    q = dda.OrientationAverage(eps=0, beta_levels=(2, 2), gamma_levels=(1, 1), n_alpha=4)
    beta, gamma, w = dda.orientation_nodes(q)
    assert len(beta) == len(gamma) == len(w) and abs(w.sum() - 1) < 1e-14
    assert set(np.round(beta, 9)) == {0.0, 45.0, 90.0, 135.0, 180.0}


# -- slow: the OrientationAverage rule, all three parameters, both precisions ----------------
P0 = np.array([1.5, 0.1, 0.5])
PARAMS = ("Re m", "Im m", "eq_rad")
OUTS = ("Qext", "Qsca", "L")
THETA = (0.0, 30.0, 60.0, 90.0, 120.0, 150.0, 180.0)
RULE = dda.OrientationAverage(eps=0, beta_levels=(2, 2), gamma_levels=(1, 1), n_alpha=4)
SHAPE = geometry.Box(y_over_x=2 / 3, z_over_x=0.5)


def _problem(p, precision="double"):
    return dda.DDAProblem(
        SHAPE,
        m=p[0] + 1j * p[1],
        eq_rad=p[2],
        grid=6,
        wavelength=1.0,
        theta=THETA,
        integrate=False,
        precision=precision,
    )


@pytest.fixture(scope="module", params=["double", "single"])
def rule_jacobian(request):
    prec = request.param

    def f(p):
        return _objectives(dda.efficiencies_averaged(_problem(p, prec), RULE, _solver(prec)))

    return prec, _jacobian_and_fd(f, P0, 1e-5 if prec == "double" else 1e-3)


SLOW_BOUNDS = {"double": 1e-6, "single": 3e-3}


@pytest.mark.slow  # 2.5-4 min per precision on the loaded 2-core box
def test_averaged_gradient_rule(rule_jacobian):
    prec, (_, J, fd) = rule_jacobian
    err = np.abs(J - fd) / np.abs(fd)
    print(prec, np.array2string(err, precision=2))
    assert err.max() < SLOW_BOUNDS[prec], (prec, err)


@pytest.mark.slow  # ~1.5 min
def test_averaged_values_equal_average():
    """The concrete values are ``dda.average``'s at the same fixed rule (measured 3.5e-13 on
    Qext, 2.2e-13 on Qabs, 2.4e-12 on the Mueller matrix)."""
    prob = _problem(P0)
    ref = dda.average(prob, RULE, _solver("double"))
    with precision_scope():
        tr = dda.efficiencies_averaged(prob, RULE, _solver("double"))
    assert abs(float(tr.Qext) - ref.Qext) < 1e-10 * ref.Qext
    assert abs(float(tr.Qabs) - ref.Qabs) < 1e-10 * ref.Qabs
    np.testing.assert_allclose(np.asarray(tr.weights), ref.weights[ref.weights > 0], rtol=1e-14)
    err = np.abs(np.asarray(tr.mueller) - ref.mueller).max() / np.abs(ref.mueller).max()
    assert err < 1e-10, err
    assert bool(np.all(np.asarray(tr.converged)))


@pytest.mark.slow  # two compiles of the forward
def test_batched_map_equals_sequential():
    """``batch=2`` (orientations vmapped inside the lax.map, the tail padded) gives the
    sequential values to rounding: three orientations, so one batch is incomplete."""
    prob = dda.DDAProblem(
        geometry.Box(y_over_x=0.75, z_over_x=0.5),
        m=1.5 + 0.1j,
        eq_rad=0.4,
        grid=4,
        wavelength=1.0,
        theta=(20.0, 90.0, 160.0),
        integrate=False,
    )
    nodes, w = [(30.0, 20.0), (110.0, 200.0), (150.0, 40.0)], [0.3, 0.3, 0.4]
    with precision_scope():
        one = dda.efficiencies_averaged(prob, nodes, _solver("double"), weights=w, n_alpha=3)
        two = dda.efficiencies_averaged(prob, nodes, _solver("double"), weights=w, n_alpha=3, batch=2)
    assert abs(float(one.Qext) - float(two.Qext)) < 1e-12 * float(one.Qext)
    m1 = np.asarray(one.mueller)
    np.testing.assert_allclose(np.asarray(two.mueller), m1, rtol=0, atol=1e-11 * np.abs(m1).max())
