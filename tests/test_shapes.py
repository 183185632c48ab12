"""Shapes: ADDA's regular prisms, polygon prisms, the bullet rosette, ADDA geometry files."""

import math
from pathlib import Path

import numpy as np
import pytest

from emjax.errors import ConfigError
from emjax.geometry import (
    BulletRosette,
    CoatedSphere,
    PolygonPrism,
    Prism,
    read_adda_geometry,
    voxelize,
    write_adda_geometry,
)

DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize(
    "sides,aspect,grid,box,count",
    [(6, 1.5, 24, (24, 28, 36), 18000), (5, 1.0, 20, (20, 21, 20), 5760),
     (3, 0.7, 21, (21, 24, 15), 3810), (8, 0.4, 30, (30, 30, 12), 9072)],
)  # fmt: skip
def test_prism_matches_adda(sides, aspect, grid, box, count):
    """Box and occupied-dipole count of `adda -shape prism <sides> <aspect> -grid <grid>
    -prognosis` (ADDA 1.5.0-alpha3, run by hand on 2026-11-22): exact agreement, so the
    orientation (a face normal along +x), the x-shift of odd polygons and the extents match."""
    v = voxelize(Prism(sides, aspect), grid)
    assert v.shape == box and int((v >= 0).sum()) == count
    # analytic volume: the lattice count converges to it
    assert abs(Prism(sides, aspect).volume_ratio * grid**3 / count - 1) < 0.03


def test_polygon_prism_equals_regular_prism():
    """A hexagon given by its vertices (flats normal to x) voxelizes like Prism(6, ...), and
    its volume_ratio is the shoelace area times the aspect."""
    ang = np.pi / 6 + np.arange(6) * np.pi / 3
    hexagon = np.stack([np.cos(ang), np.sin(ang)], 1)
    pp, pr = PolygonPrism(hexagon, 0.8), Prism(6, 0.8)
    assert np.array_equal(voxelize(pp, 30), voxelize(pr, 30))
    assert math.isclose(pp.volume_ratio, pr.volume_ratio, rel_tol=1e-12)


def test_polygon_prism_nonconvex_and_errors():
    L = np.array([[0, 0], [2, 0], [2, 1], [1, 1], [1, 2], [0, 2]])  # an L-shaped section
    v = voxelize(PolygonPrism(L, 0.5), 20)
    assert v.shape == (20, 20, 10)
    assert (v[15:, 15:] < 0).all() and (v[:8, :8] >= 0).all()  # the notch is empty
    assert abs((v >= 0).sum() / (PolygonPrism(L, 0.5).volume_ratio * 20**3) - 1) < 0.02
    with pytest.raises(ConfigError, match="vertices"):
        PolygonPrism(np.zeros((2, 2)))


def test_rosette_symmetry_and_size():
    """The rosette is invariant under its symmetry operations - the 3-fold rotation about
    (1, 1, 1) (cyclic permutation of the axes) and the mirror planes x, y, z = 0 - and has ~1%
    fill at 76^3, as the paper's (4746 dipoles). A swap of two axes (a 90 degree rotation) is
    not a symmetry: it turns the hexagonal arms by 90 degrees, which is not a multiple of 60."""
    v = voxelize(BulletRosette(), 76)
    assert v.shape == (76, 76, 76)
    assert abs(int((v >= 0).sum()) - 4746) < 100
    for t in ((1, 2, 0), (2, 0, 1)):
        assert np.array_equal(v, v.transpose(t))
    assert not np.array_equal(v, v.transpose(1, 0, 2))
    for ax in range(3):
        assert np.array_equal(v, np.flip(v, ax))


def test_adda_geometry_file_roundtrip_and_adda_output(tmp_path):
    """`adda -shape coated 0.5 -grid 6 -save_geom` (tests/data/adda_coated_g6.geom, two
    domains) reads back as emjax's own voxelization of the same coated sphere; writing and
    reading again is the identity."""
    v = read_adda_geometry(DATA / "adda_coated_g6.geom")
    ours = voxelize(CoatedSphere(0.5), 6)
    assert v.n_domains == 2 and np.array_equal(v.array, ours)
    write_adda_geometry(ours, tmp_path / "c.geom", "coated")
    assert np.array_equal(read_adda_geometry(tmp_path / "c.geom").array, ours)
    bad = tmp_path / "bad.geom"
    bad.write_text("0 0 x\n")
    with pytest.raises(ConfigError, match="non-integer"):
        read_adda_geometry(bad)


def test_hexagonal_prism_cross_sections_match_adda():
    """`adda -shape prism 6 2 -grid 8` (ADDA 1.5.0-alpha3, defaults: lambda = 2 pi, m = 1.5,
    LDR, QMR 1e-5; run by hand 2026-11-22): Cext = 71.02947522 (X), 71.94857686 (Y). emjax
    through the CLI's shape registry, same settings: agreement to the solver tolerance."""
    from emjax import dda
    from emjax.dda.cli import build_dda
    from emjax.dda.options import DDA_DEFAULTS

    problem, solver = build_dda({**DDA_DEFAULTS, "shape": "prism", "aspect": 2.0, "grid": 8})
    r = dda.solve(problem, solver=solver)
    assert np.allclose(r.Cext_xy, [71.02947522, 71.94857686], rtol=2e-5)
