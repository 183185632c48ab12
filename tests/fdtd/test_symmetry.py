"""Mirror symmetry planes in the physical-unit FDTD: the half-domain run against the full
domain, and the refusals.

The half run reproduces the full run's discrete fields (the Yee grid is symmetric about
its E planes and its H planes: an odd plane is an exact PEC wall on an E plane, an even one
an exact PMC wall on an H plane), so probes, fluxes and cross sections agree to rounding:
1e-9 relative in double precision (measured 1e-12 and below). The full runs are set up
symmetric on the grid: sources split over the nodes either side of a plane, and monitors
spanning an odd number of cells along an even axis (whose plane lies between nodes).
"""

import numpy as np
import pytest

from emjax import ConfigError, fdtd, geometry, scene

WF = fdtd.GaussianPulse(1.0, 0.5)
RES = 12
DX = 1 / RES
PROBES = [
    ((0.1, 0.15, 0.2), "z"),
    ((-0.1, -0.15, -0.2), "z"),  # in the removed half: its mirror node, times the parity
    ((-0.05, 0.1, -0.25), "x"),
    ((0.05, -0.1, 0.25), "y", "H"),
    ((-0.2, 0.0, -0.1), "x", "H"),
    ((0.0, 0.0, 0.2), "z"),
]
ODD = 7 / 12  # 7 cells: symmetric about a plane between nodes


def _dipole_sim(symmetry, sources):
    monitors = [
        fdtd.FluxBox((0, 0, 0), (ODD, ODD, 0.5), [0.8, 1.0], name="box"),
        fdtd.FluxPlane((0, 0, -0.25), (ODD, ODD, 0), [1.0], name="down"),
        fdtd.FluxPlane((-0.25, 0, 0), (0, ODD, 0.5), [1.0], name="left"),
    ]
    return fdtd.Simulation(
        size=(13 / 12, 13 / 12, 1),
        resolution=RES,
        sources=sources,
        monitors=monitors,
        probes=PROBES,
        symmetry=symmetry,
        boundary=fdtd.CPML(5),
        precision="double",
    )


def _close(a, b):
    a, b = np.asarray(a), np.asarray(b)
    np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9 * np.abs(b).max())


def test_dipole_on_three_planes_matches_full_domain():
    """A z dipole at the centre is even under the x and y mirrors (PMC planes) and odd under
    the z mirror (a PEC plane): the run on an eighth of the domain (its current split over
    the nearest Ez nodes, half a cell off each plane) equals the full run with the eight
    split dipoles; the cells per symmetric axis halve (plus the cell behind a PMC plane)."""
    split = [(sx * DX / 2, sy * DX / 2, sz * DX / 2) for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]
    full = _dipole_sim((0, 0, 0), [fdtd.Dipole(p, "z", WF, 1 / 8) for p in split])
    half = _dipole_sim((1, 1, -1), [fdtd.Dipole((0, 0, 0), "z", WF)])
    assert full.grid.shape == (23, 23, 22) and half.to_grid()[0].grid.shape == (12, 12, 11)
    rf, rh = fdtd.run(full, steps=80), fdtd.run(half, steps=80)
    _close(rh.raw.probes, rf.raw.probes)
    assert np.abs(rf.raw.probes[:, 1]).max() > 0.1 * np.abs(rf.raw.probes).max()
    for name in ("box", "down", "left"):
        _close(rh.flux(name), rf.flux(name))
    assert np.all(rf.flux("box") > 0) and np.all(rf.flux("down") < 0)


@pytest.mark.slow
def test_mirror_pair_of_dipoles_off_the_plane():
    """Two x dipoles at z = +-0.2 with opposite signs are odd under the z mirror: the
    half run keeps the upper one."""
    pair = [fdtd.Dipole((0, 0, 0.2), "x", WF), fdtd.Dipole((0, 0, -0.2), "x", WF, -1.0)]
    rf = fdtd.run(_dipole_sim((0, 0, 0), pair), steps=60)
    rh = fdtd.run(_dipole_sim((0, 0, -1), pair), steps=60)
    _close(rh.raw.probes, rf.raw.probes)
    _close(rh.flux("box"), rf.flux("box"))


def _sphere_sim(symmetry):
    sc = scene.Scene([scene.Object(geometry.Sphere(), 4.0, size=0.4)])
    y = 1 / 15  # one more cell along y: an odd count for the even plane
    return fdtd.Simulation(
        size=(1.2, 1.2 + y, 1.2),
        resolution=15,
        scene=sc,
        sources=[fdtd.PlaneWaveSource((0, 0, 0), (0.8, 0.8 + y, 0.8), waveform=WF)],
        monitors=[
            fdtd.CrossSections([0.8, 1.0, 1.2], gap_out=2, gap_in=2),
            fdtd.FluxPlane((0, 0, 0.3), (0.4, 0.4 + y, 0), [1.0], name="T"),
        ],
        probes=[
            ((0.2, 0.1, 0.3), "x"),
            ((-0.2, 0.1, 0.3), "x"),
            ((-0.25, -0.1, 0.3), "z"),
            ((-0.2, -0.1, 0.3), "y", "H"),
        ],
        symmetry=symmetry,
        boundary=fdtd.CPML(5),
        precision="double",
    )


def test_plane_wave_sphere_matches_full_domain():
    """An x-polarized plane wave along z on a centred dielectric sphere (subpixel
    averaging across the mirror planes) is odd under the x mirror and even under the y
    mirror: on a quarter of the domain, cross sections, transmission and probes equal the
    full run's to rounding."""
    full, half = _sphere_sim((0, 0, 0)), _sphere_sim((-1, 1, 0))
    assert full.grid.shape == (28, 29, 28) and half.to_grid()[0].grid.shape == (14, 15, 28)
    rf, rh = fdtd.run(full, steps=100), fdtd.run(half, steps=100)
    _close(rh.raw.probes, rf.raw.probes)
    cf, ch = rf.cross_sections(), rh.cross_sections()
    for key in ("Csca", "Cabs", "Cext"):
        _close(ch[key], cf[key])
    assert np.all(cf["Csca"] > 0)
    _close(rh.transmission("T"), rf.transmission("T"))
    ds = rh.to_xarray()
    assert list(ds.attrs["symmetry"]) == [-1, 1, 0]


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(symmetry=(0, 0, 2)), r"symmetry must be three values, each 0 \(none\), -1 .* or \+1"),
        (dict(symmetry=(-1, 0, 0)), r"symmetry\[0\] must be \+1 or 0"),
        (dict(size=(1, 1, 1.1), symmetry=(0, 0, 1)), r"symmetry\[2\] must be -1 or 0"),
        (dict(sources=[fdtd.Dipole((0.2, 0, 0), "x", WF)], symmetry=(-1, 0, 0)), "no mirror image"),
        (
            dict(
                sources=[
                    fdtd.PlaneWaveSource((0, 0, 0), (0.6, 0.6, 0.6), polarization=(0, 1, 0), waveform=WF)
                ],
                symmetry=(-1, 0, 0),
            ),
            "polarized along x",
        ),
        (dict(size=(1, 1, 1.1), symmetry=(0, 0, -1)), "even number of cells"),
        (dict(symmetry=(1, 0, 0)), "odd number of cells"),
        (
            dict(
                size=(1.1, 1, 1),
                sources=[
                    fdtd.PlaneWaveSource((0, 0, 0), (0.5, 0.6, 0.6), polarization=(1, 0, 0), waveform=WF)
                ],
                symmetry=(1, 0, 0),
            ),
            "polarized normal to x",
        ),
        (dict(boundary=fdtd.PEC(), symmetry=(0, 0, -1)), "CPML on both faces"),
        (
            dict(monitors=[fdtd.FluxPlane((0, 0, 0), (0.5, 0.5, 0), [1.0])], symmetry=(0, 0, -1)),
            "mirror plane",
        ),
        (
            dict(
                scene=scene.Scene([scene.Object(geometry.Sphere(), 4.0, center=(0, 0, 0.05), size=0.3)]),
                symmetry=(0, 0, -1),
            ),
            "scene is not symmetric under the z mirror",
        ),
    ],
)
def test_refused(kw, match):
    base = dict(
        size=(1, 1, 1), resolution=10, sources=[fdtd.Dipole((0, 0, 0), "z", WF)], boundary=fdtd.CPML(4)
    )
    base.update(kw)
    with pytest.raises(ConfigError, match=match):
        sim = fdtd.Simulation(**base)
        sim.to_grid()
