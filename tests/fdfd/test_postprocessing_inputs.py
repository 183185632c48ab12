"""The FDFD post-processing reads the grid facts (PML, dimensions) from the result it is
given, and bad inputs to it and to the source specs get one ConfigError line naming the
argument and what is allowed (no tracebacks, no all-NaN fields)."""

import numpy as np
import pytest

from emjax import ConfigError, fdfd, geometry, scene

PHI = np.linspace(0.0, 180.0, 7)


def _cylinder_2d(pml):
    sc = scene.Scene([scene.Object(geometry.Disk(), 4.0, size=0.5)])
    return fdfd.solve_tm((1.4, 1.4), 20, 1.0, fdfd.PlaneWave2D(0.0), scene=sc, pml=fdfd.SCPML(pml))


def _result_3d(n=12, pml=2):
    """A Result3D with a made-up field (no solve): enough for the argument checks."""
    ax = (np.arange(n) - (n - 1) / 2) * 0.1
    E = np.ones((3, n, n, n), complex)
    return fdfd.Result3D(ax, ax, ax, 1.0, fdfd.PlaneWave3D(), E, 0 * E, np.ones((3, n, n, n)), pml)


def test_scattering_width_takes_the_pml_from_the_result():
    """A solve with SCPML(20) read without naming the PML gives the width of the same
    problem solved with the default SCPML(12) (to 1e-3 of the peak: the PMLs' own
    reflections; measured 2e-5); read as if its PML were 12 cells, the contour lay 8 cells
    inside the PML, 1.6 dB off here. A pml= that disagrees with the result is refused; one
    that agrees is accepted."""
    r20, r12 = _cylinder_2d(20), _cylinder_2d(12)
    assert r20.pml_cells == 20 and r12.pml_cells == 12
    s20, s12 = fdfd.scattering_width(r20, PHI), fdfd.scattering_width(r12, PHI)
    assert np.abs(s20 - s12).max() < 1e-3 * s12.max(), (s20, s12)
    np.testing.assert_array_equal(fdfd.scattering_width(r20, PHI, pml=20), s20)
    with pytest.raises(ConfigError, match=r"^scattering_width: pml=12 disagrees with the result's PML of 20"):
        fdfd.scattering_width(r20, PHI, pml=12)
    assert r20.interior() == r20.interior(20)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda r: fdfd.scattering_width(r, [np.nan]), r"^scattering_width: phi_deg must be .*finite angles"),
        (lambda r: fdfd.scattering_width(r, [np.inf, 0.0]), r"^scattering_width: phi_deg must be"),
        (lambda r: fdfd.scattering_width(r, PHI, margin=0), r"^scattering_width: margin must be an integer"),
        (lambda r: fdfd.scattering_width(r, PHI, margin=40), r"^scattering_width: margin 40 leaves no room"),
        (lambda r: fdfd.scattering_width(r, PHI, pml=-1), r"^scattering_width: pml must be an integer >= 0"),
        (lambda r: fdfd.rcs_3d(r, PHI), r"^rcs_3d needs a 3-D result of solve_3d, got TMResult"),
        (lambda r: fdfd.cross_sections_3d(r), r"^cross_sections_3d needs a 3-D result of solve_3d"),
        (lambda r: fdfd.far_field_3d(r, [[0, 0, 1]]), r"^far_field_3d needs a 3-D result of solve_3d"),
        (lambda r: fdfd.field_at(r, [[0.0, 0.0]]), r"^field_at needs a 3-D result of solve_3d, got TMResult"),
    ],
)
def test_2d_result_misuse(call, match):
    with pytest.raises(ConfigError, match=match):
        call(_cylinder_2d(6))


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda r: fdfd.scattering_width(r, PHI), r"^scattering_width needs a 2-D result .*use rcs_3d"),
        (lambda r: fdfd.field_at(r, [[0.0, 0.0]]), r"^field_at: points must be \(x, y, z\) triples"),
        (lambda r: fdfd.field_at(r, [0.0, np.nan, 0.0]), r"^field_at: points must be finite"),
        (lambda r: fdfd.field_at(r, "origin"), r"^field_at: points must be \(x, y, z\) triples"),
        (lambda r: fdfd.field_at(r, [[5.0, 0.0, 0.0]]), r"^field_at: point \[5.0, 0.0, 0.0\] lies outside"),
        (lambda r: fdfd.rcs_3d(r, [np.nan]), r"^theta_deg must be a non-empty list of finite angles"),
        (lambda r: fdfd.rcs_3d(r, [0.0], plane=3), r"^plane must be 'E' or 'H'"),
        (lambda r: fdfd.rcs_3d(r, [0.0], margin=-2), r"^margin must be an integer >= 1"),
        (lambda r: fdfd.far_field_3d(r, [[0.0, 0.0, 0.0]]), r"^rhat must be non-zero"),
        (lambda r: fdfd.far_field_3d(r, [[np.inf, 0.0, 1.0]]), r"^rhat must be finite"),
        (lambda r: fdfd.far_field_3d(r, [[1.0, 0.0]]), r"^rhat must be finite non-zero 3-vectors \(P, 3\)"),
        (lambda r: fdfd.cross_sections_3d(r, margin=7), r"^margin 7: the integration box leaves no room"),
    ],
)
def test_3d_result_misuse(call, match):
    with pytest.raises(ConfigError, match=match):
        call(_result_3d())


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: fdfd.PlaneWave2D(angle=np.nan), r"^PlaneWave2D.angle must be a finite angle in degrees"),
        (lambda: fdfd.PlaneWave2D(angle=np.inf), r"^PlaneWave2D.angle must be a finite angle"),
        (lambda: fdfd.PlaneWave2D(angle="x"), r"^PlaneWave2D.angle must be a finite angle"),
        (lambda: fdfd.LineSource((np.nan, 0.0)), r"^LineSource.position must be two finite numbers"),
        (lambda: fdfd.LineSource((0.0, 0.0, 0.0)), r"^LineSource.position must be two finite numbers"),
        (lambda: fdfd.LineSource((0.0, 0.0), np.inf), r"^LineSource.current must be a finite"),
        (lambda: fdfd.LineSource((0.0, 0.0), complex(0, np.nan)), r"^LineSource.current must be a finite"),
        (lambda: fdfd.PlaneWave3D((0, 0, np.nan)), r"^PlaneWave3D.direction must be a non-zero finite"),
        (lambda: fdfd.PlaneWave3D((0, 0, 1), (np.inf, 0, 0)), r"^PlaneWave3D.polarization must be"),
        (lambda: fdfd.PointDipole3D((0, np.nan, 0)), r"^PointDipole3D: position and moment must be finite"),
        (lambda: fdfd.PointDipole3D((0, 0, 0), (0, 0, np.inf)), r"^PointDipole3D: position and moment"),
        (
            lambda: fdfd.solve_tm((1.0, 1.0), 10, 1.0, fdfd.PlaneWave2D(), center=(np.nan, 0.0)),
            r"^center\[0\] must be finite",
        ),
        (
            lambda: fdfd.solve_3d((1.0,) * 3, 10, 1.0, fdfd.PlaneWave3D(), center=(0.0, np.inf, 0.0)),
            r"^center\[1\] must be finite",
        ),
    ],
)
def test_nonfinite_specs_are_refused(make, match):
    with pytest.raises(ConfigError, match=match):
        make()


def test_good_specs_are_kept():
    assert fdfd.PlaneWave2D(30).angle == 30.0
    src = fdfd.LineSource([0.1, -0.2], 2j)
    assert src.position == (0.1, -0.2) and src.current == 2j


def test_a_2d_grid_too_big_for_the_host_is_refused_before_assembly():
    """solve_tm / solve_te on a grid whose direct solve cannot fit the host's memory: one
    ResourceError line with the estimate, before the permittivity or the matrix exists."""
    import tracemalloc

    from emjax import ResourceError

    for solve in (fdfd.solve_tm, fdfd.solve_te):
        tracemalloc.start()
        with pytest.raises(ResourceError, match=r"FDFD 2-D grid \d+x\d+ .* GiB of host memory") as e:
            solve((120.0, 120.0), 40, 1.0, fdfd.PlaneWave2D(0.0), solver="superlu")
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert "\n" not in str(e.value) and peak < 50e6, peak
