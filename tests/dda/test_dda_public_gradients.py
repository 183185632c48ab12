"""``jax.grad`` through the calls a user runs, ``dda.solve`` and ``dda.average``, against
central differences of the same calls with concrete inputs (their ordinary host path).

The particle: a 6^3-dipole sphere (LDR), wavelength 1, eq_rad 0.5, m = 1.5 + 0.1i, three
scattering angles in two planes; parameters ``p = (Re m, Im m, eq_rad)`` (the size at the
fixed lattice: the dipole spacing scales with it); objectives Qext and log S11 = log
M[0, 0] at 60 deg in the yz plane (the average: a 6-cell ellipsoid 1 : 0.8 : 0.6, log <S11>
at 60 deg, 3 x 2 orientations). Solves at rtol
1e-10 (the adjoint too); fourth-order central differences with step 1e-4 (truncation
~h^4, rounding ~1e-10 / h). Relative errors ``|grad - FD| / |FD|`` measured on the shared
2-core box: solve (Qext + log S11) 1.8e-9 .. 1.1e-8, average 5e-10 .. 5.9e-8; bound 1e-6 (a wrong sign or a
missing term is O(1)).

The fast set: the gradient through ``dda.solve`` and the refusals; the average, vmap, the
lattice chosen from the concrete size and the substrate height (a Sommerfeld table traced
through emjax.layered, ~2 min of compile here) are slow-marked.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from emjax import dda, geometry, krylov
from emjax.backend import precision_scope
from emjax.errors import ConfigError

SOLVER = krylov.QMR(rtol=1e-10)
P0 = np.array([1.5, 0.1, 0.5])
NAMES = ("Re m", "Im m", "eq_rad")
H = 1e-4
BOUND = 1e-6


def _problem(n, k, r=0.5, **kw):
    kw = {"grid": 6, "wavelength": 1.0, **kw}
    return dda.DDAProblem(
        geometry.Sphere(),
        m=n + 1j * k,
        eq_rad=r,
        theta=(0.0, 60.0, 120.0),
        phi=(0.0, 90.0),
        integrate=False,
        **kw,
    )


def _solve_objectives(p):
    r = dda.solve(_problem(p[0], p[1], p[2]), SOLVER, progress=False)
    return jnp.stack([jnp.asarray(r.Qext), jnp.log(jnp.asarray(r.mueller)[1, 1, 0, 0])])


RULE = dda.OrientationAverage(eps=0, beta_levels=(1, 1), gamma_levels=(1, 1), n_alpha=4)


def _average_objectives(p):
    prob = dda.DDAProblem(
        geometry.Ellipsoid(y_over_x=0.8, z_over_x=0.6),
        m=p[0] + 1j * p[1],
        eq_rad=p[2],
        grid=6,
        wavelength=1.0,
        theta=(0.0, 60.0, 120.0),
        integrate=False,
    )
    r = dda.average(prob, RULE, SOLVER, progress=False)
    return jnp.stack([jnp.asarray(r.Qext), jnp.log(jnp.asarray(r.mueller)[1, 0, 0])])


def _central(f, p0):
    with precision_scope():  # float64 values
        return _central64(f, p0)


def _central64(f, p0):
    """Fourth-order central differences ``(-f(+2h) + 8 f(+h) - 8 f(-h) + f(-2h)) / 12h``."""
    cols = []
    for i in range(len(p0)):
        e = np.zeros(len(p0))
        e[i] = H
        fs = [np.asarray(f(p0 + j * e)) for j in (2, 1, -1, -2)]
        cols.append((-fs[0] + 8 * fs[1] - 8 * fs[2] + fs[3]) / (12 * H))
    return np.stack(cols, axis=-1)


def _check(J, fd):
    err = np.abs(J - fd) / np.abs(fd)
    assert np.all(err < BOUND), (err, J, fd)


def test_solve_gradient_matches_central_differences():
    """d (Qext + log S11(60 deg)) through ``dda.solve`` (jitted reverse mode) w.r.t. Re m,
    Im m and eq_rad equals central differences of ``dda.solve`` on concrete values (its
    host path). ~25 s on the loaded 2-core box, nearly all compile."""

    def loss(p):
        return jnp.sum(_solve_objectives(p))

    with precision_scope():
        g = np.asarray(jax.jit(jax.grad(loss))(jnp.asarray(P0)))
    _check(g, _central(loss, P0))


@pytest.mark.slow  # ~35 s on the loaded 2-core box (an un-jitted gradient: op-by-op dispatch)
def test_traced_solve_value_equals_concrete_solve_and_lattice_from_the_concrete_size():
    """Without ``grid`` the lattice comes from the concrete size (5 dipoles per wavelength
    here: 5 cells along x) and is held fixed: the traced value is the concrete
    ``dda.solve``'s, and the gradient is that of the problem with that grid (the size scales
    the spacing)."""

    def qext(r, **kw):
        return dda.solve(_problem(1.5, 0.1, r, **kw), SOLVER, progress=False).Qext

    concrete = dda.solve(_problem(1.5, 0.1, 0.5, grid=None, dipoles_per_wavelength=5), SOLVER, progress=False)
    nx = concrete.lattice.shape[0]
    assert nx == 5
    with precision_scope():
        v, g = jax.value_and_grad(lambda r: qext(r, grid=None, dipoles_per_wavelength=5))(0.5)
        g_fixed = jax.jit(jax.grad(lambda r: qext(r, grid=nx)))(0.5)
    # equal to the solver's rtol (the two loops stop at slightly different residuals:
    # measured 1.2e-12 relative)
    assert abs(float(v) - concrete.Qext) < 1e-10 * concrete.Qext
    assert abs(float(g) - float(g_fixed)) < 1e-10 * abs(float(g_fixed))


@pytest.mark.slow  # ~20 s: its own compile
def test_vmap_over_a_batch_of_indices():
    """``jax.vmap`` over m through ``dda.solve`` equals the concrete solves one by one."""
    with precision_scope():
        ns = jnp.array([1.3, 1.5])
        q = jax.vmap(lambda n: dda.solve(_problem(n, 0.1), SOLVER, progress=False).Qext)(ns)
    ref = [dda.solve(_problem(float(n), 0.1), SOLVER, progress=False).Qext for n in ns]
    np.testing.assert_allclose(np.asarray(q), ref, rtol=1e-9)


@pytest.mark.slow  # its own compiles
def test_average_gradient_matches_central_differences():
    """d Qext and d log <S11>(60 deg) through ``dda.average`` on a fixed rule (3 x 2
    orientations) w.r.t. Re m, Im m and eq_rad equal central differences of ``dda.average``
    on concrete values (its host path at the same levels)."""
    with precision_scope():
        J = np.asarray(jax.jit(jax.jacrev(_average_objectives))(jnp.asarray(P0)))
    _check(J, _central(_average_objectives, P0))


def test_public_calls_refuse_what_they_cannot_trace():
    """One line naming the parameter and what to give instead."""
    prob = lambda n: _problem(n, 0.1, grid=4)  # noqa: E731
    with precision_scope():
        with pytest.raises(ConfigError, match=r"quadrature: .*beta_levels=\(j, j\)"):
            jax.grad(lambda n: dda.average(prob(n), progress=False).Qext)(1.5)
        with pytest.raises(ConfigError, match="keep_polarization"):
            jax.grad(lambda n: dda.solve(prob(n), keep_polarization=True, progress=False).Qext)(1.5)
        with pytest.raises(ConfigError, match=r"wavelength: .*differentiate the size"):
            jax.grad(lambda wl: dda.solve(_problem(1.5, 0.1, wavelength=wl), progress=False).Qext)(1.0)
        with pytest.raises(ConfigError, match="layout"):
            jax.grad(lambda n: dda.solve(prob(n), layout=1, progress=False).Qext)(1.5)


@pytest.mark.slow  # the traced reflected-interaction table: ~2 min of compile on the loaded 2-core box
def test_substrate_height_gradient():
    """d Qext and d log S11(40 deg) through ``dda.solve`` of a 2^3 cube on a glass
    half-space (light from above) w.r.t. the height, Re m and Im m, against central
    differences of concrete solves (their tables re-integrated to rtol 1e-8). Measured
    2e-13 .. 1.4e-11 (9 table points: the quadrature is far below its rtol); bound 1e-7."""

    def f(p):
        prob = dda.DDAProblem(
            geometry.Box(),
            m=p[1] + 1j * p[2],
            size_x=0.3,
            grid=2,
            wavelength=1.0,
            theta=(0.0, 40.0, 80.0),
            substrate=1.5 + 0.02j,
            height=p[0],
            prop=(0.0, 0.0, -1.0),
            integrate=False,
        )
        r = dda.solve(prob, SOLVER, progress=False)
        return jnp.stack([jnp.asarray(r.Qext), jnp.log(jnp.asarray(r.mueller)[0, 1, 0, 0])])

    p0 = np.array([0.4, 1.5, 0.1])
    with precision_scope():
        J = np.asarray(jax.jacrev(f)(jnp.asarray(p0)))
    fd = _central(f, p0)
    err = np.abs(J - fd) / np.abs(fd)
    print("height, Re m, Im m", err)
    assert np.all(err < 1e-7), (err, J, fd)
