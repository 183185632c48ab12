"""Differentiable DDA on a substrate: :func:`emjax.dda.efficiencies` with
``substrate=`` against central finite differences of the same function, its values
against :func:`emjax.dda.solve`, and the reciprocity the adjoint relies on.

The adjoint of the surface system is the same QMR solve only if ``I - s (G + G_R) s`` is
complex symmetric. Checked twice, independently of the storage that assumes it: (1) on
layered's reflected tensor itself, source and observer swapped, ``G_R(r_i; r_j) =
G_R(r_j; r_i)^T``; (2) on the assembled FFT operator (its dense matrix on a small lattice is
symmetric, not Hermitian).

Particle: a 6^3-dipole sphere (LDR), eq_rad 0.5, wavelength 1, m = 1.5 + 0.1i, the lattice
centre 0.6 above the surface; objectives Qext, Qabs and ``L = sum log S11`` at theta 0, 40,
80 deg (above the surface: an absorbing substrate has no far field below). Cases: from
above (prop -z) onto absorbing glass 1.5 + 0.02i; from below (prop (0.5, 0, 0.866))
through a film (eps 1.7, 0.15 thick) on glass 2.25 (lossless: the transmitted wave needs
it). Relative errors ``|grad - FD| / |FD|`` measured on the (heavily loaded) 2-core box.
With ``m`` traced (jitted) the reference is the fourth-order central difference (double
h = 1e-3, single h = 1e-2): the second-order one at h = 1e-5 was limited by the forward
values' rounding (L = sum log S11 = 0.09 is a near cancellation; 1.2e-6 on d L / d Re m,
while h = 1e-3 fourth order gives 6e-10). The traced-table cases (size, substrate index) use
the second-order difference (each evaluation recomputes the table): h = 1e-5 for the size,
h = 1e-4 for the substrate index (at h = 1e-5 its errors were 2e-6 to 5e-6, and stayed so
with the table at rtol 1e-11 instead of 1e-8, while h = 1e-4 brought them to the values
below: the difference's rounding, not the table's accuracy, limited it).

========================  ============  ============  ============
case                      Qext          Qabs          L
========================  ============  ============  ============
above, d/d Re m           4.7e-10       1.2e-8        6.2e-10
above, d/d Im m           1.6e-10       7.3e-10       6.2e-11
above single, d/d Re m    4.7e-6        8.6e-5        7.9e-5
above single, d/d Im m    1.1e-7        1.0e-5        2.9e-6
below, d/d Re m           2.2e-10       2.3e-10       6.4e-10
below, d/d Im m           2.3e-9        1.2e-9        8.5e-11
below single, d/d Re m    2.5e-6        2.4e-5        4.9e-6
below single, d/d Im m    2.5e-5        1.2e-5        7.7e-6
above, d/d eq_rad         1.9e-7        3.7e-8        2.8e-7
below, d/d eq_rad         3.3e-8        1.9e-8        3.2e-8
above, d/d Re n_sub       1.6e-7        9.3e-8        2.2e-7
above, d/d Im n_sub       9.7e-7        8.1e-8        4.4e-7
========================  ============  ============  ============

The substrate-index gradient is that of the Sommerfeld quadrature rule at fixed nodes
(layered's traced path), the difference that of the adaptive integral (table rtol 1e-8);
bound there 1e-5 (d Qext / d Im n_sub is 8x smaller than d / d Re n_sub, so the same
absolute error is a larger relative one).

All the surface cases are slow: the reflected-interaction table is a Sommerfeld
integration in :mod:`emjax.layered` (its first call compiles for 10-40 s here), and with a
traced size or substrate index it runs outside ``jit`` through layered's traced path.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from emjax import dda, geometry, krylov, layered
from emjax.backend import precision_scope
from emjax.dda import differentiable_surface as ds
from emjax.dda import substrate as sub
from emjax.errors import ConfigError

THETA = (0.0, 40.0, 80.0)
P0 = np.array([1.5, 0.1, 0.5])
FILM = dict(eps=[1.0, 1.7, 2.25], thickness=[0.15])


def _solver(precision):
    return krylov.QMR(rtol=1e-10 if precision == "double" else 1e-7)


def _problem(p, case, precision="double", substrate=None):
    if case == "above":
        prop, s = (0.0, 0.0, -1.0), 1.5 + 0.02j
    else:
        prop, s = (0.5, 0.0, 0.8660254037844386), layered.Stack(**FILM)
    return dda.DDAProblem(
        geometry.Sphere(),
        m=p[0] + 1j * p[1],
        eq_rad=p[2],
        grid=6,
        wavelength=1.0,
        substrate=s if substrate is None else substrate,
        height=0.6,
        prop=prop,
        theta=THETA,
        integrate=False,
        precision=precision,
    )


def _objectives(r):
    return jnp.stack([r.Qext, r.Qabs, jnp.sum(jnp.log(r.mueller[0, :, 0, 0]))])


def _fd(f, p0, h, order=2):
    """Central differences: second order (2 evaluations per parameter) or fourth order
    ``(-f(+2h) + 8 f(+h) - 8 f(-h) + f(-2h)) / 12h``, which allows the larger step that
    keeps the forward values' rounding (~rtol) out of the difference."""
    stencil = {2: ((1, 0.5), (-1, -0.5)), 4: ((2, -1 / 12), (1, 8 / 12), (-1, -8 / 12), (-2, 1 / 12))}[order]
    out = []
    for i in range(len(p0)):
        e = np.zeros(len(p0))
        e[i] = h
        out.append(sum(c * np.asarray(f(jnp.asarray(p0 + j * e))) for j, c in stencil) / h)
    return np.stack(out, axis=1)


def _vjp_rows(f, p0):
    """The Jacobian row by row from one ``jax.vjp`` (outside jit: the traced table), each
    row its own pull-back (no vmap over the cotangents)."""
    v, pull = jax.vjp(f, jnp.asarray(p0))
    return np.stack([np.asarray(pull(jnp.zeros_like(v).at[i].set(1.0))[0]) for i in range(v.shape[0])])


def _report(name, J, fd, bound):
    err = np.abs(J - fd) / np.abs(fd)
    print(name, np.array2string(err, precision=2))
    assert err.max() < bound, (name, err, J, fd)


# -- reciprocity (what the adjoint relies on) ------------------------------------------------
STACKS = {
    "glass": dict(eps=[1.0, 2.25]),
    "metal": dict(eps=[1.0, (0.2 + 3j) ** 2]),
    "film_on_metal": dict(eps=[1.0, 1.7 + 0.1j, (0.2 + 3j) ** 2], thickness=[0.15]),
}


@pytest.mark.slow  # one layered call per stack and direction (~10-30 s of compile here)
@pytest.mark.parametrize("name", sorted(STACKS))
def test_reflected_tensor_is_reciprocal(name):
    """``G_R(r_a; r_b) = G_R(r_b; r_a)^T`` for five pairs of points at different heights and
    lateral offsets above the stack (source and observer swapped in separate layered
    calls): the reflected interaction is reciprocal, so the DDA matrix with it stays complex
    symmetric. Bound 1e-9 of max |G_R| (the Sommerfeld integrals at rtol 1e-10)."""
    stack = layered.Stack(**STACKS[name])
    rng = np.random.default_rng(5)
    a = np.column_stack([rng.uniform(-0.4, 0.4, (5, 2)), rng.uniform(0.1, 0.8, 5)])
    b = np.column_stack([rng.uniform(-0.4, 0.4, (5, 2)), rng.uniform(0.1, 0.8, 5)])
    ab = np.stack(
        [
            layered.green_tensor(stack, 1.0, b[i], a[i : i + 1], part="scattered", rtol=1e-10)[0]
            for i in range(5)
        ]
    )
    ba = np.stack(
        [
            layered.green_tensor(stack, 1.0, a[i], b[i : i + 1], part="scattered", rtol=1e-10)[0]
            for i in range(5)
        ]
    )
    err = np.abs(ab - np.swapaxes(ba, 1, 2)).max() / np.abs(ab).max()
    assert err < 1e-9, err


@pytest.mark.slow
def test_surface_operator_is_complex_symmetric_and_table_is_substrates():
    """The dense matrix of ``I - s (G + G_R) s`` on a (3, 3, 2) box with random complex
    ``s`` (a metal film stack, the table of :func:`reflected_table_traced`) equals its
    transpose to 1e-13 of its largest entry and differs from its conjugate transpose by
    O(1) (complex symmetric, not Hermitian); the traced table at concrete values is
    ``substrate.reflected_table``'s to 1e-13."""
    stack = layered.Stack(**STACKS["film_on_metal"])
    grid, d, h = (3, 3, 2), 0.2, 0.45
    layers = np.arange(2)
    table = np.asarray(ds.reflected_table_traced(stack, 1.0, grid, d, h, layers))
    ref, _ = sub.reflected_table(stack, 1.0, grid, d, h, layers)
    assert table.dtype == np.complex128
    assert np.abs(table - ref).max() < 1e-13 * np.abs(ref).max()
    rng = np.random.default_rng(1)
    with precision_scope():
        from emjax.dda.interaction import interaction_fft

        k = 2 * math.pi
        s = jnp.asarray(rng.normal(size=grid) + 1j * rng.normal(size=grid))
        op = sub.SurfaceOperator(
            interaction_fft(grid, d, k, np.complex128), ds._reflected_fft(table, grid, np.complex128), s
        )
        n = 3 * math.prod(grid)
        A = np.asarray(
            jax.vmap(lambda v: op(v.reshape((3,) + grid)).ravel())(jnp.eye(n, dtype=np.complex128))
        ).T
    scale = np.abs(A).max()
    assert np.abs(A - A.T).max() < 1e-13 * scale
    assert np.abs(A - A.conj().T).max() > 1e-2 * scale


# -- values ----------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("case", ["above", "below"])
def test_concrete_values_equal_solve(case):
    """``efficiencies`` on a substrate is ``solve``'s computation (measured 2.7e-12 (above,
    glass) and 7.5e-13 (below, film) on Qext; 6e-12 and 1.7e-11 on S)."""
    prob = _problem(P0, case)
    res = dda.solve(prob, _solver("double"))
    tr = dda.efficiencies(prob, _solver("double"))
    assert abs(float(tr.Qext) - res.Qext) < 1e-10 * res.Qext
    assert abs(float(tr.Qabs) - res.Qabs) < 1e-10 * res.Qabs
    np.testing.assert_allclose(np.asarray(tr.S), res.S, rtol=0, atol=1e-10 * np.abs(res.S).max())
    np.testing.assert_allclose(
        np.asarray(tr.mueller), res.mueller, rtol=0, atol=1e-10 * np.abs(res.mueller).max()
    )


# -- gradients -------------------------------------------------------------------------------
BOUNDS = {"double": 1e-6, "single": 1e-3}


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["double", "single"])
@pytest.mark.parametrize("case", ["above", "below"])
def test_gradient_particle_index(case, precision):
    """d (Qext, Qabs, L) / d (Re m, Im m) under ``jax.jit`` (the table a constant)."""

    def f(q):
        return _objectives(
            dda.efficiencies(_problem((q[0], q[1], P0[2]), case, precision), _solver(precision))
        )

    with precision_scope():
        J = np.asarray(jax.jit(jax.jacrev(f))(jnp.asarray(P0[:2])))
        fd = _fd(jax.jit(f), P0[:2], 1e-3 if precision == "double" else 1e-2, order=4)
    _report(f"{case} {precision} d/dm", J, fd, BOUNDS[precision])


@pytest.mark.slow  # several minutes: the traced table (layered outside jit)
@pytest.mark.parametrize("case", ["above", "below"])
def test_gradient_size(case):
    """d (Qext, Qabs, L) / d eq_rad: the table points move with the dipole spacing."""

    def f(q):
        return _objectives(dda.efficiencies(_problem((P0[0], P0[1], q[0]), case), _solver("double")))

    with precision_scope():
        J = _vjp_rows(f, P0[2:])
        fd = _fd(f, P0[2:], 1e-5)
    _report(f"{case} d/d eq_rad", J, fd, 1e-6)


@pytest.mark.slow  # several minutes: the traced table (layered outside jit)
def test_gradient_substrate_index():
    """d (Qext, Qabs, L) / d (Re n_sub, Im n_sub) of an absorbing substrate, light from
    above: the table, the reflected incident wave and the far field's Fresnel factors."""

    def f(q):
        return _objectives(
            dda.efficiencies(_problem(P0, "above", substrate=q[0] + 1j * q[1]), _solver("double"))
        )

    q0 = np.array([1.5, 0.02])
    with precision_scope():
        J = _vjp_rows(f, q0)
        fd = _fd(f, q0, 1e-4)
    _report("d/d n_sub", J, fd, 1e-5)


def test_surface_traced_rules():
    """A traced substrate inside ``jax.jit`` is refused with the reason (the Sommerfeld nodes
    need concrete values), before any table is computed."""

    def qext(n_sub):
        return dda.efficiencies(_problem(P0, "above", substrate=n_sub + 0.02j), _solver("double")).Qext

    with pytest.raises(ConfigError, match="outside jax.jit"), precision_scope():
        jax.jit(qext)(1.5)
