"""GDSII layouts as shapes: a ring (a keyhole polygon: its hole kept) and a straight
waveguide written with gdstk and read back with ``geometry.from_gds`` rasterize exactly as
the same polygons built in Python, in 3-D (extruded) and on a 2-D grid (z-invariant)."""

from __future__ import annotations

import numpy as np
import pytest

from emjax import geometry, scene
from emjax.errors import ConfigError

gdstk = pytest.importorskip("gdstk")

Z = (-0.11, 0.11)


@pytest.fixture(scope="module")
def layout(tmp_path_factory):
    """chip.gds (unit 1 um, 1 nm database grid): on layer 1 a ring (outer radius 0.8,
    inner 0.55) and a waveguide 0.3238 wide below it; decoys on layer 2 and on layer 1,
    datatype 3. Returns the path and the two outlines on the database grid (nm-rounded)."""
    lib = gdstk.Library()
    cell = lib.new_cell("TOP")
    ring = gdstk.ellipse((0.1234, 0.0517), 0.8, inner_radius=0.55, tolerance=1e-2, layer=1)
    wg = gdstk.rectangle((-1.3, -1.2371), (1.3, -0.9133), layer=1)
    cell.add(ring, wg, gdstk.rectangle((-1, 1), (1, 1.2), layer=2))
    cell.add(gdstk.rectangle((-1, -1), (1, 1), layer=1, datatype=3))
    path = tmp_path_factory.mktemp("gds") / "chip.gds"
    lib.write_gds(path)
    return path, [np.round(p.points * 1000) / 1000 for p in (ring, wg)]


def _by_hand(v, z=None):
    """The outline ``v`` as the documented placement says: the bounding box's centre and its
    extent along x."""
    lo, hi = v.min(0), v.max(0)
    size = hi[0] - lo[0]
    if z is None:
        return geometry.Polygon(v), ((lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2, 0.0), size
    shape = geometry.PolygonPrism(v, aspect=(z[1] - z[0]) / size)
    return shape, ((lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2, (z[0] + z[1]) / 2), size


def _assert_same(ra, rb, components):
    for c in components:
        np.testing.assert_array_equal(ra.label[c], rb.label[c])
        for key in ra.interface[c]:
            np.testing.assert_array_equal(ra.interface[c][key], rb.interface[c][key])


def test_extruded_layer_rasterizes_as_the_python_polygons(layout):
    path, outlines = layout
    shapes = geometry.from_gds(path, layer=1, z=Z)
    assert [type(s) for s in shapes] == [geometry.PolygonPrism] * 2
    gds = scene.Scene([scene.Object(s, 12.1) for s in shapes], background=2.1)
    py = scene.Scene(
        [scene.Object(s, 12.1, center=c, size=w) for s, c, w in (_by_hand(v, Z) for v in outlines)],
        background=2.1,
    )
    args = ((36, 36, 8), 0.08, (-1.44, -1.44, -0.32))
    ra, rb = scene.rasterize(py, *args, samples=4), scene.rasterize(gds, *args, samples=4)
    _assert_same(ra, rb, (0, 1, 2))
    # the hole is kept: the ring's centre is background, its annulus silicon, and above the
    # extrusion nothing is
    label = rb.label[2]
    i, j = int((0.1234 + 1.44) / 0.08), int((0.0517 + 1.44) / 0.08)
    assert label[i, j, 4] == 0 and label[i + 8, j, 4] == 1 and label[i + 8, j, 7] == 0
    assert label[18, int((-1.075 + 1.44) / 0.08), 4] == 1  # the waveguide


def test_two_dimensional_layer_gives_the_same_permittivity(layout):
    """z = None: z-invariant Polygons (exact cell areas where an outline is simple); the
    2-D FDFD's permittivity array of the layout equals that of the polygons built in
    Python, entry for entry."""
    from emjax.fdfd.permittivity2d import node_permittivity

    path, outlines = layout
    shapes = geometry.from_gds(path, layer=1, z=None)
    assert [type(s) for s in shapes] == [geometry.Polygon] * 2
    gds = scene.Scene([scene.Object(s, 12.1) for s in shapes], background=2.1)
    py = scene.Scene(
        [scene.Object(s, 12.1, center=c, size=w) for s, c, w in (_by_hand(v) for v in outlines)],
        background=2.1,
    )
    args = ((60, 60), 0.05, (-1.5, -1.5), 2 * np.pi)
    a, b = node_permittivity(py, *args), node_permittivity(gds, *args)
    np.testing.assert_array_equal(a, b)
    assert np.count_nonzero((a > 2.1) & (a < 12.1)) > 50  # interfaces averaged


def test_bad_requests_are_refused_in_one_line(layout, tmp_path):
    path, _ = layout
    with pytest.raises(ConfigError, match="only vertical sidewalls"):
        geometry.from_gds(path, 1, z=Z, sidewall_angle=5)
    with pytest.raises(ConfigError, match=r"no polygons on layer 7, datatype 0.*\(1, 0\)"):
        geometry.from_gds(path, 7, z=Z)
    with pytest.raises(ConfigError, match="z_min < z_max"):
        geometry.from_gds(path, 1, z=(0.2, 0.1))
    with pytest.raises(ConfigError, match="does not exist"):
        geometry.from_gds(tmp_path / "none.gds", 1, z=Z)
    with pytest.raises(ConfigError, match="no cell named 'X'"):
        geometry.from_gds(path, 1, z=Z, cell="X")
