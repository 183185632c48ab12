"""Bad inputs to the Python APIs (the validation layer the CLI and the Python API share):
each raises a one-line ConfigError naming the argument (and, for ranges,
what is allowed) before anything grid-sized is allocated or compiled. Parse-level and fast:
nothing here solves, steps or compiles a kernel (fdtd.run cases are refused before the
first step)."""

import numpy as np
import pytest

from emjax import ConfigError, dda, fdfd, fdtd, layered
from emjax.geometry import Sphere


def _dda(**kw):
    return dda.DDAProblem(**{"shape": Sphere(), "m": 1.5, "size_x": 1.0, "grid": 8, **kw})


def _grid(**kw):
    return fdtd.Grid(**{"shape": (12, 12, 12), "dx": 0.1, "boundary": fdtd.PEC(), **kw})


def _gsim(**kw):
    return fdtd.GridSimulation(_grid(), **kw)


def _dipole(index=(6, 6, 6), component=2):
    return fdtd.PointDipole(index, component, fdtd.Ricker(frequency=0.8))


def _stack(**kw):
    return layered.Stack(**{"eps": [1.0, 2.25], **kw})


def _green(**kw):
    args = {"stack": _stack(), "wavelength": 1.0, "source": (0, 0, 1), "points": [[0, 0, 2]], **kw}
    return layered.green_tensor(**args)


def _tm(**kw):
    args = {"size": (1.0, 1.0), "resolution": 20, "frequency": 1.0, "source": fdfd.LineSource((0.0, 0.0))}
    return fdfd.solve_tm(**{**args, **kw})


def _3d(**kw):
    args = {"size": (1.0, 1.0, 1.0), "resolution": 10, "frequency": 1.0, "source": fdfd.PlaneWave3D()}
    return fdfd.solve_3d(**{**args, **kw})


CASES = [
    # emjax.dda
    ("dda.m=0", lambda: _dda(m=0), r"^m\[0\] = 0 is not a refractive index"),
    ("dda.m lossy sign", lambda: _dda(m=1.5 - 0.1j), r"^m\[0\] = .* negative imaginary part"),
    ("dda.m=nan", lambda: _dda(m=float("nan")), r"^m\[0\] must be finite"),
    ("dda.m=str", lambda: _dda(m="glass"), r"^m\[0\] must be a complex number"),
    ("dda.wavelength=0", lambda: _dda(wavelength=0), r"^wavelength must be > 0"),
    ("dda.size_x<0", lambda: _dda(size_x=-1), r"^size_x must be > 0"),
    ("dda.size_x=inf", lambda: _dda(size_x=float("inf")), r"^size_x must be finite"),
    ("dda.size and eq_rad", lambda: _dda(eq_rad=1.0), r"give either size_x .* or eq_rad, not both"),
    ("dda.grid=0", lambda: _dda(grid=0), r"^grid must be an integer in \[1, 65535\]"),
    ("dda.grid=2.5", lambda: _dda(grid=2.5), r"^grid must be an integer"),
    ("dda.grid huge", lambda: _dda(grid=100_000), r"^grid must be an integer in \[1, 65535\]"),
    (
        "dda.dpl<0",
        lambda: dda.DDAProblem(Sphere(), m=1.5, size_x=1, dipoles_per_wavelength=-3),
        r"^dipoles_per_wavelength must be > 0",
    ),
    ("dda.orientation 2", lambda: _dda(orientation=(0, 0)), r"^orientation must be three Euler angles"),
    ("dda.precision", lambda: _dda(precision="half"), r"^precision must be one of .*single.*double"),
    ("dda.phi=nan", lambda: _dda(phi=(float("nan"),)), r"^phi must be a non-empty list of finite angles"),
    ("dda.prop=0", lambda: _dda(prop=(0, 0, 0)), r"^prop must be three finite numbers, not all zero"),
    ("dda.polarizability str", lambda: _dda(polarizability="ldr"), r"^polarizability must be one of"),
    (
        "dda.shape str",
        lambda: dda.DDAProblem("sphere", m=1.5, size_x=1.0, grid=8),
        r"^shape must be an emjax.geometry shape",
    ),
    ("dda.substrate=0", lambda: _dda(substrate=0, height=1.0), r"^substrate = 0j: a refractive index"),
    ("dda.substrate no height", lambda: _dda(substrate=1.5), r"^height: a substrate needs the height"),
    (
        "dda.solve solver str",
        lambda: dda.solve(_dda(), "qmr"),
        r"^solver must be QMR\(\), BiCG\(\) or BiCGStab\(\)",
    ),
    ("dda.solve variant", lambda: dda.solve(_dda(), variant="x"), r"^variant must be one of"),
    ("dda.QMR rtol=2", lambda: dda.QMR(rtol=2), r"^rtol must be in \[0, 1\)"),
    ("dda.QMR rtol=1", lambda: dda.QMR(rtol=1.0), r"^rtol must be in \[0, 1\)"),
    ("dda.QMR maxiter=0", lambda: dda.QMR(maxiter=0), r"^maxiter must be an integer in \[1, "),
    ("dda.average eps<0", lambda: dda.OrientationAverage(eps=-1), r"^eps must be in \[0, 1\)"),
    # emjax.fdtd
    ("fdtd.Grid shape 2", lambda: fdtd.Grid((10, 10), 0.1), r"^shape must be \(nx, ny, nz\)"),
    ("fdtd.Grid shape int", lambda: fdtd.Grid(10, 0.1), r"^shape must be \(nx, ny, nz\)"),
    ("fdtd.Grid shape 0", lambda: fdtd.Grid((10, 0, 10), 0.1), r"^shape\[1\] must be an integer in \[1, "),
    ("fdtd.Grid dx=0", lambda: fdtd.Grid((10,) * 3, 0), r"^dx must be > 0"),
    ("fdtd.Grid dx str", lambda: fdtd.Grid((10,) * 3, "0.1"), r"^dx must be a number > 0"),
    (
        "fdtd.Grid courant>limit",
        lambda: _grid(courant=0.6),
        r"^courant must be in \(0, 0.57735\] \(the stability limit 1/sqrt\(3\)",
    ),
    (
        "fdtd.Grid courant order 4",
        lambda: _grid(courant=0.5, order=4),
        r"^courant must be in \(0, 0.494872\] \(the stability limit \(6/7\)/sqrt\(3\)",
    ),
    ("fdtd.Grid courant str", lambda: _grid(courant="0.5"), r"^courant must be a number in \(0, 0.57735\]"),
    ("fdtd.Grid order", lambda: _grid(order=3), r"^order must be 2 or 4"),
    (
        "fdtd.Grid boundary str",
        lambda: _grid(boundary="pml"),
        r"^boundary must be Periodic\(\), Bloch\(k\), PEC\(\), CPML\(\)",
    ),
    ("fdtd.Grid precision", lambda: _grid(precision="half"), r"^precision must be one of"),
    (
        "fdtd.Grid CPML too thick",
        lambda: _grid(boundary=fdtd.CPML(8)),
        r"^axis x: 12 cells cannot hold a 8-cell CPML",
    ),
    ("fdtd.CPML thickness=0", lambda: fdtd.CPML(0), r"^CPML.thickness must be an integer in \[1, 10000\]"),
    ("fdtd.GridSimulation eps=nan", lambda: _gsim(eps=float("nan")), r"^eps must be finite"),
    ("fdtd.GridSimulation eps<1", lambda: _gsim(eps=0.5), r"^eps must be >= 1"),
    (
        "fdtd.GridSimulation eps shape",
        lambda: _gsim(eps=np.ones((3, 3, 3))),
        r"^eps must be a scalar or of shape \(12, 12, 12\)",
    ),
    (
        "fdtd.GridSimulation eps complex",
        lambda: _gsim(eps=2.25 + 0.1j),
        r"^eps must be real, got a complex value: a lossy medium takes sigma",
    ),
    (
        "fdtd.GridSimulation eps str",
        lambda: _gsim(eps="glass"),
        r"^eps must be a number or an array of numbers",
    ),
    (
        "fdtd.GridSimulation sigma complex",
        lambda: _gsim(sigma=np.full((12, 12, 12), 1j)),
        r"^sigma must be real",
    ),
    ("fdtd.GridSimulation sigma<0", lambda: _gsim(sigma=-1.0), r"^sigma must be >= 0"),
    (
        "fdtd.GridSimulation sources str",
        lambda: _gsim(sources="x"),
        r"^sources must be PointDipole, PlaneSource or TFSF",
    ),
    (
        "fdtd.PointDipole outside",
        lambda: _gsim(sources=(_dipole((20, 6, 6)),)),
        r"^PointDipole.index\[0\] must be an integer in \[0, 11\]",
    ),
    (
        "fdtd.PointDipole component",
        lambda: _gsim(sources=(_dipole(component=3),)),
        r"^PointDipole.component must be an integer in \[0, 2\]",
    ),
    (
        "fdtd.Probe outside",
        lambda: _gsim(probes=(fdtd.Probe((20, 1, 1), 2),)),
        r"^Probe.index\[0\] must be an integer in \[0, 11\]",
    ),
    (
        "fdtd.DFTPlane outside",
        lambda: _gsim(monitors=(fdtd.DFTPlane(2, 40, (1.0,)),)),
        r"^DFTPlane.index must be an integer in \[1, 11\]",
    ),
    (
        "fdtd.DFTPlane f<0",
        lambda: _gsim(monitors=(fdtd.DFTPlane(2, 4, (-1.0,)),)),
        r"^DFTPlane.frequencies must be finite and >= 0",
    ),
    ("fdtd.Ricker f=0", lambda: fdtd.Ricker(frequency=0), r"^Ricker.frequency must be > 0"),
    (
        "fdtd.GaussianPulse bw<0",
        lambda: fdtd.GaussianPulse(1.0, -1.0),
        r"^GaussianPulse.bandwidth must be > 0",
    ),
    ("fdtd.run steps=0", lambda: fdtd.run(_gsim(), 0), r"^steps must be an integer >= 1"),
    ("fdtd.run steps=2.5", lambda: fdtd.run(_gsim(), 2.5), r"^steps must be an integer"),
    ("fdtd.run no steps", lambda: fdtd.run(_gsim()), r"^steps must be an integer"),
    ("fdtd.run until<0", lambda: fdtd.run(_gsim(), until=-1.0), r"^until must be > 0"),
    ("fdtd.run steps and until", lambda: fdtd.run(_gsim(), 10, until=1.0), r"give steps or until .*not both"),
    ("fdtd.run sim str", lambda: fdtd.run("x", 10), r"^run needs an emjax.fdtd.Simulation or GridSimulation"),
    # emjax.layered
    ("layered.Stack 1 medium", lambda: layered.Stack(eps=[1.0]), r"^Stack.eps must list at least two media"),
    ("layered.Stack eps=None", lambda: layered.Stack(eps=None), r"^Stack.eps must list at least two media"),
    ("layered.Stack eps=2.25", lambda: layered.Stack(eps=2.25), r"^Stack.eps must list at least two media"),
    ("layered.Stack Im eps<0", lambda: _stack(eps=[1.0, 2.25 - 1j]), r"^Stack.eps\[1\] = .* has Im < 0"),
    ("layered.Stack eps=0", lambda: _stack(eps=[1.0, 0]), r"^Stack.eps\[1\] must not be 0"),
    (
        "layered.Stack eps str",
        lambda: _stack(eps=[1.0, "glass"]),
        r"^Stack.eps\[1\] must be a complex number",
    ),
    (
        "layered.Stack thickness count",
        lambda: _stack(eps=[1, 2, 3]),
        r"^Stack.thickness needs one value per finite layer: 1 for 3",
    ),
    (
        "layered.Stack thickness<0",
        lambda: _stack(eps=[1, 2, 3], thickness=[-1]),
        r"^Stack.thickness\[0\] must be > 0",
    ),
    (
        "layered.Stack thickness str",
        lambda: _stack(eps=[1, 2, 3], thickness="a"),
        r"^Stack.thickness must be numbers",
    ),
    ("layered.Stack z_top nan", lambda: _stack(z_top=float("nan")), r"^Stack.z_top must be finite"),
    ("layered.green wavelength=0", lambda: _green(wavelength=0.0), r"^wavelength must be > 0"),
    ("layered.green source 2", lambda: _green(source=(0, 1)), r"^source must be 3 finite coordinates"),
    (
        "layered.green source nan",
        lambda: _green(source=(0, 0, float("nan"))),
        r"^source must be 3 finite coordinates",
    ),
    (
        "layered.green points (2,2)",
        lambda: _green(points=[[0, 0], [1, 1]]),
        r"^points must have shape \(N, 3\) with N >= 1",
    ),
    (
        "layered.green points empty",
        lambda: _green(points=np.zeros((0, 3))),
        r"^points must have shape \(N, 3\) with N >= 1",
    ),
    ("layered.green points nan", lambda: _green(points=[[0, 0, float("nan")]]), r"^points must be finite"),
    ("layered.green part", lambda: _green(part="x"), r"^part must be one of"),
    ("layered.green rtol=0", lambda: _green(rtol=0), r"^rtol must be in \[1e-13, 0.1\]"),
    ("layered.green rtol=2", lambda: _green(rtol=2), r"^rtol must be in \[1e-13, 0.1\]"),
    ("layered.green precision", lambda: _green(precision="x"), r"precision must be one of"),
    # emjax.fdfd
    ("fdfd.tm size<0", lambda: _tm(size=(-1.0, 1.0)), r"^size\[0\] must be > 0"),
    ("fdfd.tm resolution=0", lambda: _tm(resolution=0), r"^resolution must be > 0"),
    ("fdfd.tm frequency=0", lambda: _tm(frequency=0.0), r"^frequency must be > 0"),
    ("fdfd.tm source str", lambda: _tm(source="x"), r"^source must be LineSource or PlaneWave2D"),
    (
        "fdfd.tm source outside",
        lambda: _tm(source=fdfd.LineSource((5.0, 0.0))),
        r"^LineSource.position .* lies outside",
    ),
    ("fdfd.tm averaging", lambda: _tm(averaging="x"), r"^averaging must be subpixel or staircase"),
    ("fdfd.tm stencil", lambda: _tm(stencil="x"), r"^stencil must be one of compact, yee"),
    ("fdfd.tm solver", lambda: _tm(solver="x"), r"^solver must be one of auto, superlu"),
    (
        "fdfd.tm huge",
        lambda: _tm(size=(1000.0, 1000.0), resolution=100),
        r"FDFD grid 100025 x 100025 is too large",
    ),
    (
        "fdfd.te resolution<0",
        lambda: fdfd.solve_te((1.0, 1.0), -5, 1.0, fdfd.LineSource((0.0, 0.0))),
        r"^resolution must be > 0",
    ),
    ("fdfd.3d size 2", lambda: _3d(size=(1.0, 1.0)), r"^size and center must be three numbers each"),
    ("fdfd.3d resolution=0", lambda: _3d(resolution=0), r"^resolution must be > 0"),
    ("fdfd.3d frequency=0", lambda: _3d(frequency=0.0), r"^frequency must be > 0"),
    ("fdfd.3d precision", lambda: _3d(precision="x"), r"^precision must be one of"),
    ("fdfd.3d solver", lambda: _3d(solver="x"), r"^solver must be emjax.fdfd.Direct\(\) or Iterative"),
    ("fdfd.3d source str", lambda: _3d(source="x"), r"^source must be a PlaneWave3D or PointDipole3D"),
    (
        "fdfd.PlaneWave3D direction 0",
        lambda: fdfd.PlaneWave3D(direction=(0, 0, 0)),
        r"^PlaneWave3D.direction must be a non-zero",
    ),
    (
        "fdfd.tm size 1",
        lambda: _tm(size=(1.0,)),
        r"^size must be two",
    ),
    (
        "dda.orientation avg",
        lambda: _dda(orientation="avg"),
        r"orientation.*avg",
    ),
    (
        "fdtd.run chunk<0",
        lambda: fdtd.run(_gsim(), 10, chunk=-5),
        r"^chunk must be an integer",
    ),
    ("fdtd.GaussianPulse f=0", lambda: fdtd.GaussianPulse(0.0, 0.5), r"^GaussianPulse.frequency must be > 0"),
    (
        "fdtd.GaussianPulse f<0",
        lambda: fdtd.GaussianPulse(-1.0, 0.5),
        r"^GaussianPulse.frequency must be > 0",
    ),
    (
        "dda.theta str",
        lambda: _dda(theta="0:180"),
        r"^theta must be a non-empty list of finite angles in degrees \(a list or 1-D array, "
        r"e.g. numpy.arange\(0, 181\) .*got the string '0:180'",
    ),
    (
        "dda.theta 2-D",
        lambda: _dda(theta=np.zeros((2, 2))),
        r"^theta must be .*got an array of shape \(2, 2\)",
    ),
    ("dda.theta empty", lambda: _dda(theta=[]), r"^theta must be a non-empty list"),
    ("dda.theta nan", lambda: _dda(theta=[0.0, float("nan")]), r"^theta must be a non-empty list of finite"),
    ("dda.theta obj", lambda: _dda(theta=[object()]), r"^theta must be a non-empty list"),
    ("dda.phi str", lambda: _dda(phi="90"), r"^phi must be .*got the string '90'"),
    (
        "layered.green stack str",
        lambda: _green(stack="x"),
        r"^stack must be an emjax.layered.Stack",
    ),
]


@pytest.mark.parametrize("make,message", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_argument_is_refused_naming_it(make, message):
    with pytest.raises(ConfigError, match=message) as e:
        make()
    assert "\n" not in str(e.value)


def test_the_good_arguments_are_accepted():
    """The builders above with good values (so each case fails for its one bad value)."""
    assert _dda().grid == 8
    assert _gsim(sources=(_dipole(),)).grid.shape == (12, 12, 12)
    g = fdtd.Grid((10, 10, 10), np.float64(0.1), courant=0.5)
    assert g.dx == 0.1 and isinstance(g.dx, float) and g.courant == 0.5
    assert _stack(eps=[1, 2, 3], thickness=[0.5]).thickness == (0.5,)
    assert layered.Stack(eps=np.array([1.0, 2.25])).eps == (1.0, 2.25)


def test_the_suite_is_large():
    assert len(CASES) >= 70


def test_unwritable_checkpoint_is_refused_before_any_step(tmp_path):
    """fdtd.run checks the checkpoint path first (a file where its folder should be)."""
    (tmp_path / "f").write_text("x")
    with pytest.raises(ConfigError, match="checkpoint"):
        fdtd.run(_gsim(), 10, checkpoint=tmp_path / "f" / "ck.npz")
