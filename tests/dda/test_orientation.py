"""Orientation averaging: quadrature, batched solves, symmetry, sphere invariance."""

import math

import numpy as np
import pytest
from scipy import integrate

from emjax import dda, geometry
from emjax.dda import OrientationAverage, average
from emjax.errors import ConfigError
from emjax.scattering import clenshaw_curtis, euler_angles, euler_matrix, romberg_cos_beta

TIGHT = dda.QMR(rtol=1e-9)


def test_clenshaw_curtis_beats_adda_romberg_at_equal_cost():
    """ADDA integrates over beta by Romberg on 2^J + 1 points uniform in cos(beta); emjax uses
    Clenshaw-Curtis on as many points (uniform in beta). For smooth f(cos beta) - an entire
    one, exp(2 mu) + T3(mu)^2, and one with a pole near the interval, exp(2 mu) + 1/(1.5 - mu)
    (reference: 200-point Gauss-Legendre, checked against scipy.quad) - CC must be >= 50x
    more accurate at 9 and at 17 points (measured: 1300x and 1.7e6x; 75x and 5e4x)."""
    x, w = np.polynomial.legendre.leggauss(200)
    for f in (
        lambda mu: np.exp(2 * mu) + np.cos(3 * np.arccos(mu)) ** 2,
        lambda mu: np.exp(2 * mu) + 1 / (1.5 - mu),
    ):
        ref = 0.5 * np.sum(w * f(x))
        assert ref == pytest.approx(0.5 * integrate.quad(f, -1, 1)[0], rel=1e-12)
        for level in (3, 4):
            mu, wc = clenshaw_curtis(level)
            err_cc = abs(0.5 * wc @ f(mu) - ref)
            err_romberg = abs(romberg_cos_beta(f(np.linspace(-1, 1, 2**level + 1))) - ref)
            assert err_cc < err_romberg / 50, (level, err_cc, err_romberg)
    # nodes uniform in beta; exact for polynomials in cos(beta) of degree <= 2^level
    mu, w = clenshaw_curtis(3)
    np.testing.assert_allclose(mu, np.cos(np.linspace(0, np.pi, 9)), atol=1e-15)
    for p in range(9):
        assert 0.5 * w @ mu**p == pytest.approx((1 + (-1) ** p) / (2 * (p + 1)), abs=1e-14)


def test_euler_angles_invert_euler_matrix():
    rng = np.random.default_rng(3)
    for a, b, g in rng.uniform([0, 0, 0], [360, 180, 360], (20, 3)):
        R = euler_matrix(a, b, g)
        np.testing.assert_allclose(euler_matrix(*euler_angles(R)), R, atol=1e-14)


def test_single_dipole_average_equals_single_orientation():
    """One dipole with the isotropic CM polarizability scatters the same in every orientation,
    so the averaged cross sections and Mueller matrix must equal the fixed-orientation ones to
    rounding: this checks the weights, the alpha rotation of the scattering plane and the
    per-orientation frames exactly (any frame or weight error shows up at O(1))."""
    prob = dda.DDAProblem(geometry.Sphere(), m=(1.5 + 0.1j,), eq_rad=0.3, grid=1, polarizability=dda.CM())
    single = dda.solve(prob, TIGHT)
    avg = average(prob, OrientationAverage(beta_levels=(2, 3), gamma_levels=(2, 2), n_alpha=8), TIGHT)
    assert avg.Cext == pytest.approx(single.Cext, rel=1e-12)
    assert avg.Cabs == pytest.approx(single.Cabs, rel=1e-12)
    np.testing.assert_allclose(avg.mueller, single.mueller[0], atol=1e-12 * single.mueller[0, 0, 0, 0])
    assert avg.Csca_integrated == pytest.approx(single.Csca_integrated, rel=1e-10)
    assert avg.weights.sum() == pytest.approx(1.0, abs=1e-14)


@pytest.fixture(scope="module")
def sphere_avg():
    prob = dda.DDAProblem(geometry.Sphere(), m=(1.5 + 0.01j,), eq_rad=1.0, grid=10)
    q = OrientationAverage(beta_levels=(2, 2), gamma_levels=(2, 2), eps=0, n_alpha=8)
    return prob, average(prob, q, TIGHT, batch=64)  # all 14 orientations in one batch


def test_sphere_average_equals_single_orientation_within_lattice_anisotropy(sphere_avg):
    """A sphere's averaged results equal its fixed-orientation results up to the orientation
    dependence the cubic lattice and LDR's direction-dependent polarizability give it: the
    average must lie within the spread of the per-orientation values, and the spread itself is
    small at 10 dipoles across (< 2%: a measured property of the discretisation)."""
    prob, avg = sphere_avg
    single = dda.solve(prob, TIGHT)
    per = avg.Cext_xy.mean(axis=1)
    spread = (per.max() - per.min()) / per.mean()
    assert spread < 0.02
    assert per.min() <= avg.Cext <= per.max()
    assert abs(avg.Cext - single.Cext) <= per.max() - per.min()
    assert abs(avg.Cabs - single.Cabs) <= np.ptp(avg.Cabs_xy.mean(axis=1))
    # S11 of the average vs the single orientation (yz plane), as large as the spread
    rel = np.abs(avg.mueller[:, 0, 0] - single.mueller[0, :, 0, 0]) / single.mueller[0, :, 0, 0]
    assert np.max(rel[:120]) < 2 * spread
    # random orientation: the averaged Mueller matrix has the block form (M13 = M14 = 0 ...)
    for i, j in ((0, 2), (0, 3), (1, 2), (1, 3), (2, 0), (3, 0), (2, 1), (3, 1)):
        assert np.max(np.abs(avg.mueller[:, i, j])) < 5e-3 * avg.mueller[0, 0, 0]


def test_batched_equals_one_by_one(sphere_avg):
    """Each orientation of the batched average equals dda.solve at (0, beta, gamma) to solver
    tolerance (1e-9): the batched right-hand sides, per-system LDR polarizabilities and
    particle-frame directions are the same system as the serial solve. Also batch=1 vs all."""
    prob, avg = sphere_avg
    for i in (1, 6, 9):
        ref = dda.solve(
            dda.DDAProblem(
                geometry.Sphere(),
                m=(1.5 + 0.01j,),
                eq_rad=1.0,
                grid=10,
                orientation=(0, avg.beta[i], avg.gamma[i]),
            ),
            TIGHT,
        )
        np.testing.assert_allclose(avg.Cext_xy[i], ref.Cext_xy, rtol=1e-8)
        np.testing.assert_allclose(avg.Cabs_xy[i], ref.Cabs_xy, rtol=1e-8)
        scale = ref.mueller[0, :, 0, 0].max()
        np.testing.assert_allclose(avg.mueller_orientations[i], ref.mueller[0], atol=1e-8 * scale)
    q = OrientationAverage(beta_levels=(2, 2), gamma_levels=(2, 2), eps=0, n_alpha=8)
    serial = average(prob, q, TIGHT, batch=1)
    np.testing.assert_allclose(serial.Cext_xy, avg.Cext_xy, rtol=1e-9)
    np.testing.assert_allclose(serial.mueller, avg.mueller, atol=1e-9 * avg.mueller[0, 0, 0])


def test_averaged_csca_integral_equals_cext_minus_cabs(sphere_avg):
    """Energy balance: Csca by integrating |F|^2 over the sphere (Gauss-Legendre x uniform phi)
    equals Cext - Cabs (both from the dipole sums) to the solver tolerance."""
    _, avg = sphere_avg
    assert avg.Csca_integrated == pytest.approx(avg.Csca, rel=1e-7)
    assert 0 < avg.g < 1


@pytest.mark.slow
def test_symmetry_reduction_is_exact():
    """A cylinder on the cubic lattice is unchanged by 90-degree rotations about z and by a
    180-degree rotation about x. Averaging with n_fold=4, c2_x=True (gamma over [0, 90), beta
    over [0, 90]) must equal the unreduced rule with the same node spacing to solver tolerance,
    with fewer solves."""
    prob = dda.DDAProblem(geometry.Cylinder(aspect=1.5), m=(1.33 + 0.05j,), eq_rad=1.0, grid=6)
    full = average(prob, OrientationAverage(beta_levels=(2, 2), gamma_levels=(3, 3), eps=0, n_alpha=4), TIGHT)
    sym = average(
        prob,
        OrientationAverage(beta_levels=(2, 2), gamma_levels=(1, 1), eps=0, n_alpha=4, n_fold=4, c2_x=True),
        TIGHT,
    )
    assert sym.n_orientations < full.n_orientations / 4
    assert sym.Cext == pytest.approx(full.Cext, rel=1e-8)
    assert sym.Cabs == pytest.approx(full.Cabs, rel=1e-8)
    np.testing.assert_allclose(sym.mueller, full.mueller, atol=1e-8 * full.mueller[0, 0, 0])


def test_rosette_results_invariant_under_its_rotations():
    """The rosette lattice maps onto itself under the 3-fold rotation about (1,1,1) and the
    2-fold rotations about the axes; turning the particle by such a rotation Q must leave the
    cross sections and the Mueller matrix unchanged (orientation R vs R Q, to solver
    tolerance). A rotation that is not a symmetry (30 deg about z) must change them."""
    shape = geometry.BulletRosette(width=0.2, tip=0.3)
    base = dict(shape=shape, m=(1.778 + 0.002j,), size_x=3.0, grid=16, theta=tuple(range(0, 181, 10)))
    R = euler_matrix(10, 50, 30)
    ref = dda.solve(dda.DDAProblem(**base, orientation=euler_angles(R)), TIGHT)
    cyclic = np.array([[0, 0, 1], [1, 0, 0], [0, 1, 0.0]])
    c2z = np.diag([-1.0, -1.0, 1.0])
    for Q in (cyclic, c2z):
        res = dda.solve(dda.DDAProblem(**base, orientation=euler_angles(R @ Q)), TIGHT)
        np.testing.assert_allclose(res.Cext_xy, ref.Cext_xy, rtol=1e-7)
        np.testing.assert_allclose(res.Cabs_xy, ref.Cabs_xy, rtol=1e-7)
        np.testing.assert_allclose(res.mueller, ref.mueller, atol=1e-7 * ref.mueller[..., 0, 0].max())
    other = dda.solve(dda.DDAProblem(**base, orientation=euler_angles(R @ euler_matrix(30, 0, 0))), TIGHT)
    assert np.max(np.abs(other.mueller - ref.mueller)) > 1e-3 * ref.mueller[..., 0, 0].max()


@pytest.mark.slow
def test_refinement_stops_at_eps_and_reports_it():
    """(30 s on 2 cores, hence slow.) With eps the refinement raises the levels until
    halving changes Cext, Cabs by < eps, and the result is then within eps of a converged
    fine rule (33 x 32 nodes; its own levels agree to 1e-10). Gamma starts at 8 nodes: with
    4 nodes the lattice's near 4-fold symmetry hides the gamma dependence from the nested
    estimate (see OrientationAverage)."""
    prob = dda.DDAProblem(geometry.Ellipsoid(1.0, 1.5), m=(1.5 + 0.01j,), eq_rad=1.0, grid=6)
    res = average(
        prob, OrientationAverage(eps=1e-3, beta_levels=(2, 6), gamma_levels=(3, 6), n_alpha=4), TIGHT
    )
    assert res.error["beta"] < 1e-3 and res.error["gamma"] < 1e-3
    assert len(res.history) >= 1 and res.history[-1]["levels"] == res.levels
    fine = average(
        prob, OrientationAverage(eps=0, beta_levels=(5, 5), gamma_levels=(5, 5), n_alpha=4, n_fold=2), TIGHT
    )
    # the estimate (change from the coarser rule) bounds the error of the finer rule
    assert abs(res.Cext - fine.Cext) / fine.Cext < 1e-3
    assert math.isclose(res.weights.sum(), 1.0, rel_tol=1e-13)


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(eps=-1), "eps"),
        (dict(beta_levels=(3, 2)), "beta_levels"),
        (dict(gamma_levels=(0, 2)), "gamma_levels"),
        (dict(n_alpha=0), "n_alpha"),
        (dict(n_fold=-1), "n_fold"),
    ],
)
def test_bad_quadrature_is_a_config_error(kwargs, field):
    with pytest.raises(ConfigError, match=field):
        OrientationAverage(**kwargs)


def test_fixed_orientation_is_refused_for_averaging():
    prob = dda.DDAProblem(geometry.Sphere(), m=(1.5,), eq_rad=1.0, grid=4, orientation=(0, 30, 0))
    with pytest.raises(ConfigError, match="orientation"):
        average(prob)


def test_batch_too_large_for_memory_is_a_resource_error():
    """An explicit batch that cannot fit is refused before anything big is allocated."""
    from emjax.errors import ResourceError

    prob = dda.DDAProblem(geometry.Sphere(), m=(1.5,), eq_rad=1.0, grid=64)
    with pytest.raises(ResourceError, match="orientation batch"):
        average(prob, OrientationAverage(beta_levels=(2, 2), gamma_levels=(2, 2), eps=0), batch=100_000)


def test_checkpoint_resume_equals_uninterrupted_run(tmp_path):
    """An average saved to a checkpoint and resumed with a finer rule solves only the new
    orientations and gives the uninterrupted finer run's results (to rounding); a checkpoint
    of another problem is refused."""
    prob = dda.DDAProblem(
        geometry.Cylinder(aspect=1.5), m=(1.33 + 0.05j,), eq_rad=1.0, grid=6, theta=(0.0, 90.0)
    )
    coarse = OrientationAverage(beta_levels=(2, 2), gamma_levels=(3, 3), eps=0, n_alpha=4)
    fine = OrientationAverage(beta_levels=(3, 3), gamma_levels=(3, 3), eps=0, n_alpha=4)
    path = tmp_path / "avg.npz"
    first = average(prob, coarse, TIGHT, checkpoint=path)
    assert path.exists() and not (tmp_path / "avg.npz.tmp").exists()
    resumed = average(prob, fine, TIGHT, checkpoint=path)
    assert resumed.timings["resumed_orientations"] == first.n_orientations
    straight = average(prob, fine, TIGHT)
    assert resumed.n_orientations == straight.n_orientations
    assert resumed.Cext == pytest.approx(straight.Cext, rel=1e-12)
    np.testing.assert_allclose(resumed.mueller, straight.mueller, rtol=1e-10)
    other = dda.DDAProblem(geometry.Cylinder(aspect=1.5), m=(1.5,), eq_rad=1.0, grid=6, theta=(0.0, 90.0))
    with pytest.raises(ConfigError, match="checkpoint"):
        average(other, fine, TIGHT, checkpoint=path)
