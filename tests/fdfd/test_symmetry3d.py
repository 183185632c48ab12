"""Mirror symmetry planes in the 3-D FDFD (direct solver): the folded solve against the full
domain's, the cross sections from the returned whole-grid field, and the refusals. With a
PML that lets nothing back from its outer wall (R = 1e-20) the fields outside the PML agree
to 1e-10 relative; what differs is the PML's outer ends (see emjax.fdfd.symmetry)."""

import numpy as np
import pytest

from emjax import ConfigError, fdfd, geometry, scene

SPHERE = scene.Scene([scene.Object(geometry.Sphere(), 4.0, size=0.25)])
KW = dict(scene=SPHERE, pml=fdfd.SCPML(4, R=1e-20), solver=fdfd.Direct(), progress=False)
SIZE, RES = (0.75, 0.75, 0.75), 8  # 15^3 nodes with the PML: 10125 unknowns
WAVE = fdfd.PlaneWave3D((0, 0, 1), (1, 0, 0))  # odd under the x mirror, even under y
DIPOLE = fdfd.PointDipole3D((0, 0, 0), (0, 0, 1))  # even under x and y, odd under z


def _close(half, full, rtol=1e-10):
    L = full.pml_cells
    d = np.abs(half.E - full.E)[:, L:-L, L:-L, L:-L].max()
    assert d <= rtol * np.abs(full.E).max(), d / np.abs(full.E).max()


@pytest.mark.slow  # ~3 s alone (the operator's compilation), longer on a loaded machine
def test_dipole_on_three_planes():
    """A z dipole at the centre of a sphere on an eighth of the grid: x and y even (PMC
    planes), z odd (a PEC plane); the wrong parity on z is refused."""
    full = fdfd.solve_3d(SIZE, RES, 1.0, DIPOLE, **KW)
    half = fdfd.solve_3d(SIZE, RES, 1.0, DIPOLE, symmetry=(1, 1, -1), **KW)
    _close(half, full)
    assert half.stats["unknowns_solved"] < full.stats["unknowns"] / 6
    with pytest.raises(ConfigError, match=r"symmetry \[1, 1, 1\]: the source \(its right side\) is not symm"):
        fdfd.solve_3d(SIZE, RES, 1.0, DIPOLE, symmetry=(1, 1, 1), **KW)


@pytest.mark.slow
def test_plane_wave_cross_sections():
    """A plane wave along z polarized along x on a sphere, on a quarter of the grid
    (symmetry=(-1, 1, 0)): the field, the cross sections equal the full domain's."""
    kw = {
        **KW,
        "scene": scene.Scene([scene.Object(geometry.Sphere(), 4.0, size=0.15)]),
    }  # inside the flux box
    full = fdfd.solve_3d(SIZE, RES, 1.0, WAVE, **kw)
    half = fdfd.solve_3d(SIZE, RES, 1.0, WAVE, symmetry=(-1, 1, 0), **kw)
    _close(half, full)
    cf, ch = fdfd.cross_sections_3d(full, margin=1), fdfd.cross_sections_3d(half, margin=1)
    for key in ("Csca", "Cext"):
        np.testing.assert_allclose(ch[key], cf[key], rtol=1e-9)


@pytest.mark.parametrize(
    "source, kw, match",
    [
        (WAVE, dict(symmetry=(1, 0, 0)), "the incident plane wave is not symmetric"),
        (WAVE, dict(symmetry=(0, 0, -1)), "the incident plane wave is not symmetric"),
        (DIPOLE, dict(symmetry=(0, 0, 1)), "the source .* is not symmetric"),
        (fdfd.PointDipole3D((0.1, 0, 0), (0, 0, 1)), dict(symmetry=(1, 0, 0)), "the source .* is not symm"),
        (
            DIPOLE,
            dict(
                symmetry=(1, 0, 0),
                scene=scene.Scene([scene.Object(geometry.Sphere(), 4.0, size=0.2, center=(0.05, 0, 0))]),
            ),
            "scene is not symmetric under the x mirror",
        ),
        (DIPOLE, dict(symmetry=(1, 1, -1), solver=None), r"symmetry: .* use solver=Direct\(\)"),
        (DIPOLE, dict(symmetry=(1, 1)), r"symmetry must be three values \(x, y, z\)"),
    ],
)
def test_refused(source, kw, match):
    args = {**KW, **kw}
    with pytest.raises(ConfigError, match=match) as info:
        fdfd.solve_3d(SIZE, RES, 1.0, source, **args)
    assert "\n" not in str(info.value)
