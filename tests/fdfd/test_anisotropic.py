"""Diagonal-anisotropic media (emjax.materials.DiagonalAnisotropic) in the FDFD.

No closed-form series exists for an anisotropic cylinder or sphere, so the checks are (a)
each field component sees its own entry (2-D TM sees eps_zz only, TE eps_xx / eps_yy only:
against the isotropic series), (b) exact symmetries that only hold when every component
is routed to its own entry (a 90-degree turn in 2-D TE, the cyclic permutation of the axes
in 3-D: the turned problem's field equals the turned field to the solver's precision), and
(c) (e, e, e) equals the isotropic e."""

import numpy as np
import pytest
from test_pec2d import PHI, sigma_series  # tests/fdfd on sys.path (rootdir-relative imports)

from emjax import ConfigError, fdfd, geometry, materials, scene
from emjax.krylov import QMR


def _db(r, eps, a, te):
    s, ref = fdfd.scattering_width(r, PHI), sigma_series(eps, a, PHI, te)
    seen = ref >= 0.01 * ref.max()
    return np.abs(10 * np.log10(s[seen] / ref[seen])).max()


def test_components_are_routed_2d():
    """A cylinder (a = 0.5) of diag(9, 9, 4) under TM, and of diag(4, 4, 9) under TE, scatters
    as the isotropic eps = 4 cylinder: measured 0.232 / 0.169 dB from the series at 40 cells
    per wavelength (the isotropic numbers of test_pec2d to the digit); swapped (TM seeing
    9) it is far off. Bounds 1.3 times."""
    disk = geometry.Disk()
    for te, mat, wrong in ((False, (9, 9, 4), (4, 4, 9)), (True, (4, 4, 9), (9, 9, 4))):
        solve = fdfd.solve_te if te else fdfd.solve_tm
        sc = scene.Scene([scene.Object(disk, materials.DiagonalAnisotropic(*mat), size=1.0)])
        r = solve((1.6, 1.6), 40, 1.0, fdfd.PlaneWave2D(0.0), scene=sc)
        assert _db(r, 4.0, 0.5, te) < 1.3 * (0.169 if te else 0.232)
        sc = scene.Scene([scene.Object(disk, materials.DiagonalAnisotropic(*wrong), size=1.0)])
        assert _db(solve((1.6, 1.6), 40, 1.0, fdfd.PlaneWave2D(0.0), scene=sc), 4.0, 0.5, te) > 3.0


def test_te_quarter_turn():
    """TE, a cylinder of diag(2, 5, 1) lit along +x vs diag(5, 2, 1) lit along +y: outside
    the PML the second field is the first turned by 90 degrees about the cylinder's axis,
    put on an H_z node (the subpixel tensors, Kottke's off-diagonal terms included, turn
    with it). Measured 5.5e-7 of the peak (the isotropic eps = 2 cylinder: 1.6e-6; the
    grid's two ends close differently behind the PML, E = 0 past the last cell, H = 0 before
    the first, and that leaks through the PML's 1e-8 reflection); bound 1e-5. Turned
    against the isotropic eps = 2 cylinder it differs by 1.5 of the peak."""
    disk = geometry.Disk()

    def run(mat, angle):
        at = (0.025, 0.025, 0.0)  # the H_z node at the middle of the grid (dx = 0.05)
        sc = scene.Scene([scene.Object(disk, mat, size=1.0, center=at)])
        r = fdfd.solve_te((1.6, 1.6), 20, 1.0, fdfd.PlaneWave2D(angle), scene=sc)
        return r.Ez[12:-12, 12:-12]  # outside the 12-cell PML

    h1 = run(materials.DiagonalAnisotropic(2, 5, 1), 0.0)
    h2 = run(materials.DiagonalAnisotropic(5, 2, 1), 90.0)
    assert h1.shape[0] == h1.shape[1]
    peak = np.abs(h1).max()
    assert np.abs(np.rot90(h1) - h2).max() < 1e-5 * peak
    assert np.abs(np.rot90(h1) - run(2.0, 90.0)).max() > 0.5 * peak


@pytest.mark.slow  # four 3-D QMR solves: ~20 s on 2 cores
def test_cyclic_permutation_3d():
    """3-D, a sphere of diag(2, 3, 4) lit along +z with E along x, vs diag(4, 2, 3) lit along
    +x with E along y (the axes turned x -> y -> z -> x): E'_y(R r) = E_x(r) and so on.
    QMR to 1e-10 (792 iterations, 23^3 nodes): measured difference 6.3e-10 of the peak;
    bound 1e-7. (e, e, e) equals the isotropic e (measured: exactly), and the scattered
    field of diag(2, 3, 4) differs from isotropic 3's by 0.81 of its peak (bound 0.05)."""
    sph = geometry.Sphere()
    solver = fdfd.Iterative(QMR(rtol=1e-10, maxiter=5000))

    def run(mat, direction, pol):
        sc = scene.Scene([scene.Object(sph, mat, size=0.6)])
        return fdfd.solve_3d(
            (0.8,) * 3, 12, 1.0, fdfd.PlaneWave3D(direction, pol), sc, pml=fdfd.SCPML(6), solver=solver
        )

    r1 = run(materials.DiagonalAnisotropic(2, 3, 4), (0, 0, 1), (1, 0, 0))
    r2 = run(materials.DiagonalAnisotropic(4, 2, 3), (1, 0, 0), (0, 1, 0))
    assert r1.stats["converged"] and r2.stats["converged"]
    E1, E2 = np.asarray(r1.E), np.asarray(r2.E)
    peak = np.abs(E1).max()
    for c in range(3):  # E'[(c + 1) % 3][a, b, c'] = E[c][b, c', a]
        np.testing.assert_allclose(E2[(c + 1) % 3], np.transpose(E1[c], (2, 0, 1)), rtol=0, atol=1e-7 * peak)
    iso = run(3.0, (0, 0, 1), (1, 0, 0))
    same = run(materials.DiagonalAnisotropic(3, 3, 3), (0, 0, 1), (1, 0, 0))
    np.testing.assert_allclose(np.asarray(same.E), np.asarray(iso.E), rtol=0, atol=1e-7 * peak)
    assert np.abs(np.asarray(iso.Es) - np.asarray(r1.Es)).max() > 0.05 * np.abs(np.asarray(r1.Es)).max()


def test_checks():
    with pytest.raises(ConfigError, match="DiagonalAnisotropic.yy"):
        materials.DiagonalAnisotropic(2, "glass", 3)
    with pytest.raises(ConfigError, match="Im eps must be >= 0"):
        materials.DiagonalAnisotropic(2, 3 - 1j, 3)
    m = materials.DiagonalAnisotropic(2, materials.Drude(1.0, omega_p=5.0, gamma=0.1), 3)
    assert m.components(2.0)[1] == pytest.approx(1 - 25 / (4 + 0.2j))
    with pytest.raises(ConfigError, match="supported by emjax.fdfd only"):
        m.permittivity(1.0)
