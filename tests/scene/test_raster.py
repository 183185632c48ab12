"""emjax.scene: objects in physical units and their Yee-grid raster (fill fractions, normals,
Farjadpour-Kottke tensors)."""

import numpy as np
import pytest

from emjax import ConfigError, geometry, materials, scene


def test_cube_plane_fill_vs_monte_carlo():
    """The closed-form volume of a unit cube cut by a plane equals a 2e5-point Monte Carlo
    estimate of the same volume within 4 standard errors (~4e-3), for random oblique planes
    and for planes parallel to a face (the limit the formula approaches by a 1e-4 tilt)."""
    rng = np.random.default_rng(0)
    pts = rng.random((200_000, 3)) - 0.5
    normals = rng.normal(size=(8, 3))
    normals = np.vstack([normals, [[0, 0, 1.0], [1.0, 1.0, 0]]])
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    dist = rng.uniform(-0.8, 0.8, size=len(normals))
    got = scene.cube_plane_fill(normals, dist)
    for n, d, g in zip(normals, dist, got):
        mc = np.mean(pts @ n <= -d)
        assert abs(g - mc) < 4 * np.sqrt(max(mc * (1 - mc), 1e-4) / len(pts)) + 2e-4, (n, d, g, mc)


def _volume(r, c, index):
    lab, it = r.label[c], r.interface[c]
    corr = np.where(it["own"] == index, it["fill"] - 1, np.where(it["other"] == index, 1 - it["fill"], 0))
    return ((lab == index).sum() + corr.sum()) * r.dx**3


@pytest.mark.parametrize("shape", [geometry.Sphere(), geometry.Voxels(np.ones((1, 1, 1), bool))])
def test_volume_converges_at_second_order(shape):
    """Summing the fill fractions over the nodes gives the object's volume with an error that
    falls as (dx / size)^2: the sphere through its signed distance (tangent-plane cuts), a
    cube (Voxels of one voxel) through sampled dual cells, turned by 30/40/50 degrees so no
    face is aligned with the grid. Error ratio over a doubling of the resolution >= 3
    (second order gives 4; sampling at 8^3 per cell limits the cube's)."""
    errs = []
    rot = (30.0, 40.0, 50.0) if isinstance(shape, geometry.Voxels) else None
    exact = np.pi / 6 if isinstance(shape, geometry.Sphere) else 1.0
    for n in (16, 32):
        sc = scene.Scene([scene.Object(shape, 4.0, size=1.0, rotation=rot)])
        r = scene.rasterize(sc, (n, n, n), 2.0 / n, origin=(-1, -1, -1))
        errs.append(abs(_volume(r, 0, 1) / exact - 1))
    assert errs[0] < 0.03
    assert errs[0] / errs[1] >= 3, errs


def test_sphere_normals_are_radial():
    """At every interface node of a sphere the normal is the radial direction (|cos| > 0.999)
    and points out of the node's own material."""
    sc = scene.Scene([scene.Object(geometry.Sphere(), 4.0, size=1.0, center=(0.1, 0, 0))])
    r = scene.rasterize(sc, (24, 24, 24), 1.6 / 24, origin=(-0.8, -0.8, -0.8))
    for c in range(3):
        it = r.interface[c]
        pos = np.stack([-0.8 + (it["index"][:, a] + (0.5 if a == c else 0)) * r.dx for a in range(3)], -1)
        rad = pos - np.array([0.1, 0, 0])
        rad /= np.linalg.norm(rad, axis=1, keepdims=True)
        cos = np.sum(rad * it["normal"], axis=1)
        sign = np.where(it["own"] == 1, 1.0, -1.0)
        assert len(cos) > 100 and np.all(cos * sign > 0.999)


def test_flat_interface_kottke_tensor():
    """A slab face normal to z halfway between E_x nodes (fill 0.3 of eps 4, 0.7 of eps 1):
    E_x (tangential) sees <eps>^-1 = 1 / (0.3 * 4 + 0.7), E_z... normal components see <1/eps>;
    the tensor is diagonal there; for a face normal to (1, 1, 0) the tensor is symmetric with
    eigenvalues <1/eps> (along the normal) and <eps>^-1 (twice)."""
    dx = 0.1
    box = scene.Object(geometry.Box(), 4.0, size=10.0, center=(0, 0, -5 + 0.02))  # top face z = 0.02
    r = scene.rasterize(scene.Scene([box]), (4, 4, 8), dx, origin=(-0.2, -0.2, -0.4))
    kt = r.kottke(0, lambda m: (1.0, 4.0)[m])
    f = 0.5 + 0.02 / dx  # E_x nodes at z = 0: the dual cell [-0.05, 0.05] holds 0.7 of eps 4
    rows = kt["eps_inv"]
    assert len(rows)
    np.testing.assert_allclose(rows[:, 0, 0], 1 / (f * 4 + (1 - f)), rtol=1e-3)
    np.testing.assert_allclose(rows[:, 2, 2], f / 4 + (1 - f), rtol=1e-3)
    np.testing.assert_allclose(rows[:, 0, 2], 0, atol=1e-3)
    turned = scene.Object(geometry.Box(), 4.0, size=4.0, center=(1.4, 1.4, 0), rotation=(45, 0, 0))
    r = scene.rasterize(scene.Scene([turned]), (12, 12, 4), dx, origin=(-0.6, -0.6, -0.2))
    eps = (1.0, 4.0)
    kt = r.kottke(2, lambda m: eps[m])
    it = r.interface[2]
    assert len(it["fill"]) > 10
    for T, f, own, other in zip(kt["eps_inv"], it["fill"], it["own"], it["other"]):
        a = f / eps[own] + (1 - f) / eps[other]  # <1/eps>, along the normal
        b = 1 / (f * eps[own] + (1 - f) * eps[other])  # <eps>^-1, twice, along the face
        np.testing.assert_allclose(T, T.T, atol=1e-12)
        np.testing.assert_allclose(np.sort(np.linalg.eigvalsh(T)), np.sort([a, b, b]), rtol=1e-9)


def test_order_background_and_errors():
    """Later objects override earlier ones; the background fills the rest; bad input names
    the field."""
    a = scene.Object(geometry.Sphere(), 2.0, size=1.0)
    b = scene.Object(geometry.Sphere(), materials.Drude(1.0, omega_p=10.0, gamma=1.0), size=0.5)
    sc = scene.Scene([a, b], background=1.5)
    lab = sc.label(np.array([0.0, 0.4, 0.9]), np.zeros(3), np.zeros(3))
    assert [sc.materials[i] for i in lab[:2]] == [sc.materials[2], 2.0] and sc.materials[lab[2]] == 1.5
    with pytest.raises(ConfigError, match="Object.size"):
        scene.Object(geometry.Sphere(), 2.0, size=-1)
    with pytest.raises(ConfigError, match="domain"):
        scene.Object(geometry.CoatedSphere(0.5), 2.0)
    with pytest.raises(ConfigError, match="Object.material"):
        scene.Object(geometry.Sphere(), "glass")
    with pytest.raises(ConfigError, match="Object.center"):
        scene.Object(geometry.Sphere(), 2.0, center=(0, np.nan, 0))
    with pytest.raises(ConfigError, match="beyond"):
        sc.check_inside((-0.4, -1, -1), (1, 1, 1))


def test_disk_on_a_2d_grid():
    """A disk on a 2-D grid (one periodic cell along z): the fill fractions sum to the disk's
    area with an error falling at second order (analytic tangent-line cuts; measured ratio
    ~4 per doubling), and the normals are radial in the plane."""
    errs = []
    for n in (24, 48):
        dx = 2.0 / n
        sc = scene.Scene([scene.Object(geometry.Disk(), 4.0, size=1.0)])
        r = scene.rasterize(sc, (n, n, 1), dx, origin=(-1, -1, -dx / 2))
        lab, it = r.label[2], r.interface[2]  # E_z: the TM field of a 2-D grid
        corr = np.where(it["own"] == 1, it["fill"] - 1, np.where(it["other"] == 1, 1 - it["fill"], 0))
        area = ((lab == 1).sum() + corr.sum()) * dx**2
        errs.append(abs(area / (np.pi / 4) - 1))
        assert np.all(np.abs(it["normal"][:, 2]) < 1e-9)
    assert errs[0] < 0.02 and errs[0] / errs[1] >= 3, errs


def test_polygon_on_a_2d_grid():
    """A 2-D triangle (vertices (0,0), (1,0), (0,0.8) before scaling) on a 2-D grid: the
    sampled fill fractions sum to its area (0.4 x size^2) within 1% at 48 cells, the normals
    lie in the plane, and a square polygon rasterizes exactly as the Rectangle."""
    n = 48
    dx = 2.0 / n
    tri = geometry.Polygon(vertices=[[0, 0], [1, 0], [0, 0.8]])
    r = scene.rasterize(
        scene.Scene([scene.Object(tri, 4.0, size=1.2)]), (n, n, 1), dx, origin=(-1, -1, -dx / 2)
    )
    lab, it = r.label[2], r.interface[2]
    corr = np.where(it["own"] == 1, it["fill"] - 1, np.where(it["other"] == 1, 1 - it["fill"], 0))
    area = ((lab == 1).sum() + corr.sum()) * dx**2
    assert abs(area / (0.4 * 1.2**2) - 1) < 0.01, area
    assert np.all(np.abs(it["normal"][:, 2]) < 1e-9)
    square = geometry.Polygon(vertices=[[0, 0], [1, 0], [1, 1], [0, 1]])

    def labels(shape):
        sc = scene.Scene([scene.Object(shape, 2.0, size=0.77)])
        return scene.rasterize(sc, (n, n, 1), dx, origin=(-1, -1, -dx / 2), averaging="staircase").label

    for a, b in zip(labels(square), labels(geometry.Rectangle())):
        np.testing.assert_array_equal(a, b)
