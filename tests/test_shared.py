"""Shared modules: geometry, materials, scattering conventions, krylov precision."""

import math

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emjax import dda, geometry, krylov, materials
from emjax.scattering import euler_matrix, mueller_from_amplitude


def test_euler_matrix_matches_adda_log():
    """ADDA's log for -orient 30 40 50 prints the incident direction and polarizations in
    the particle frame; emjax maps lab vectors with R^T, R = Rz(a) Ry(b) Rz(g)."""
    Rt = euler_matrix(30, 40, 50).T
    np.testing.assert_allclose(Rt @ [0, 0, 1], [-0.413176, 0.492404, 0.766044], atol=1e-6)
    np.testing.assert_allclose(Rt @ [0, 1, 0], [0.909616, 0.263258, 0.321394], atol=1e-6)
    np.testing.assert_allclose(Rt @ [1, 0, 0], [0.043412, -0.829598, 0.55667], atol=1e-6)


cplx = st.complex_numbers(max_magnitude=10, allow_nan=False, allow_infinity=False)


@settings(max_examples=50, deadline=None)
@given(cplx, cplx, cplx, cplx)
def test_mueller_of_a_jones_matrix_keeps_full_polarization(S1, S2, S3, S4):
    """Any amplitude matrix maps a fully polarized Stokes vector to a fully polarized one:
    I^2 = Q^2 + U^2 + V^2 after the Mueller matrix, for linear, diagonal and circular input."""
    M = mueller_from_amplitude(S1, S2, S3, S4)
    for s_in in ([1, 1, 0, 0], [1, 0, 1, 0], [1, 0, 0, 1]):
        s = M @ np.array(s_in, float)
        assert s[0] ** 2 == pytest.approx(s[1] ** 2 + s[2] ** 2 + s[3] ** 2, rel=1e-9, abs=1e-9)


def test_voxels_shape_and_eq_rad():
    """A voxel array with eq_rad: d is set so that N d^3 = 4/3 pi a^3 (ADDA's -shape read
    -eq_rad); its cross sections equal the same lattice built from Sphere()."""
    sphere = geometry.voxelize(geometry.Sphere(), 10)
    a = dda.solve(
        dda.DDAProblem(geometry.Voxels(sphere), (1.5 + 0.01j,), eq_rad=1.0, theta=(0.0,), integrate=False)
    )
    b = dda.solve(
        dda.DDAProblem(geometry.Sphere(), (1.5 + 0.01j,), eq_rad=1.0, grid=10, theta=(0.0,), integrate=False)
    )
    assert a.a_eq == pytest.approx(1.0) and a.lattice.n_dipoles == b.lattice.n_dipoles
    np.testing.assert_allclose(a.Cext_xy, b.Cext_xy, rtol=1e-10)


def test_voxelize_symmetry_and_volume():
    """A sphere on an even grid is mirror-symmetric; its dipoles' volume approaches pi/6."""
    v = geometry.voxelize(geometry.Sphere(), 40) >= 0
    assert np.array_equal(v, v[::-1]) and np.array_equal(v, v.transpose(1, 0, 2))
    assert v.sum() / 40**3 == pytest.approx(math.pi / 6, rel=0.01)
    c = geometry.voxelize(geometry.CoatedSphere(0.5), 20)
    assert set(np.unique(c)) == {-1, 0, 1}


def test_materials():
    """Drude eps(omega) against its formula; tabulated n,k interpolation and range check."""
    drude = materials.Drude(1.0, omega_p=10.0, gamma=0.5)
    w = np.array([1.0, 5.0, 20.0])
    np.testing.assert_allclose(drude.permittivity(w), 1 - 100 / (w**2 + 0.5j * w))
    assert np.all(drude.refractive_index(2 * np.pi / w).imag >= 0)
    tab = materials.Tabulated((0.4, 0.6), (1.5, 1.7), (0.0, 0.2))
    assert tab.refractive_index(0.5) == pytest.approx(1.6 + 0.1j)
    with pytest.raises(Exception, match="outside"):
        tab.refractive_index(0.8)


def test_krylov_keeps_double_outside_precision_scope():
    """krylov.solve enables 64-bit types itself: complex128 in, complex128 out, converging."""
    rng = np.random.default_rng(0)
    A = np.eye(30) * (4 + 1j) + 0.2 * rng.normal(size=(30, 30))
    A = A + A.T
    b = rng.normal(size=30) + 0j
    r = krylov.solve(lambda x: jax.numpy.asarray(A) @ x, b, krylov.QMR(rtol=1e-12))
    assert r.converged and r.x.dtype == np.complex128
