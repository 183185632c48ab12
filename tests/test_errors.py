"""Bad inputs give a clear error naming the field, before anything big is allocated."""

import math

import pytest

from emjax import ConfigError, ResourceError, dda, geometry


def _p(**kw):
    base = dict(shape=geometry.Sphere(), m=(1.5 + 0.01j,), eq_rad=1.0, grid=8)
    base.update(kw)
    return dda.DDAProblem(**base)


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(eq_rad=math.nan), "eq_rad"),
        (dict(eq_rad=-1.0), "eq_rad"),
        (dict(eq_rad=None, size_x=0.0), "size_x"),
        (dict(eq_rad=1.0, size_x=2.0), "either"),
        (dict(m=(1.5 - 0.01j,)), "negative imaginary"),
        (dict(m=(0.0,)), r"m\[0\] = 0 is not a refractive index|= 0 is not a refractive index"),
        (dict(m=(complex("nan"),)), "m"),
        (dict(m=(1.5, 1.3)), "domain"),
        (dict(wavelength=-1.0), "wavelength"),
        (dict(grid=0), "grid"),
        (dict(grid=2.5), "grid"),
        (dict(precision="quad"), "precision"),
        (dict(polarizability="ldr"), "polarizability"),
        (dict(orientation=(0, math.inf, 0)), "orientation"),
        (dict(dipoles_per_wavelength=-3.0, grid=None), "dipoles_per_wavelength"),
    ],
)
def test_config_errors(kw, match):
    with pytest.raises(ConfigError, match=match):
        _p(**kw)


def test_unknown_shape():
    with pytest.raises(ConfigError, match="shape"):
        _p(shape="banana")
    with pytest.raises(ConfigError, match="aspect"):
        geometry.Cylinder(aspect=-2)


def test_grid_beyond_memory_is_refused_before_allocation():
    """A 60000^3 lattice needs petabytes: ResourceError (needed vs available) is raised by
    the spec itself, so nothing of that size is ever allocated."""
    with pytest.raises(ResourceError, match="needs about"):
        _p(grid=60000)
    with pytest.raises(ConfigError, match="grid"):
        _p(grid=70000)


def test_more_config_errors():
    with pytest.raises(ConfigError, match="over-determine"):
        _p(eq_rad=1.0, grid=8, dipoles_per_wavelength=10)
    with pytest.raises(ConfigError, match="too thin"):
        dda.DDAProblem(geometry.Ellipsoid(0.01, 0.01), (1.5,), size_x=1.0, grid=4)
    with pytest.raises(ConfigError, match="FCD"):
        _p(eq_rad=1.0, grid=2, wavelength=1.0, polarizability=dda.FCD())
    with pytest.raises(ConfigError, match="variant"):
        dda.solve(_p(), variant="bogus")
    with pytest.raises(ConfigError, match="maxiter"):
        dda.QMR(maxiter=2.5)
    assert dda.QMR(maxiter=1e3).maxiter == 1000 and isinstance(dda.QMR(maxiter=1e3).maxiter, int)
