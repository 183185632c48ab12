"""The public constructors of each slice given NaN, inf, a negative or zero, the wrong type
or the wrong shape where their checks used to raise a TypeError/ValueError from deep inside
(``object of type 'float' has no len()``, ``The truth value of an array ... is
ambiguous``, ``unhashable type``): one line, a ConfigError naming the argument."""

import numpy as np
import pytest

from emjax import ConfigError, dda, fdtd, layered, materials, scene
from emjax.geometry import Sphere
from emjax.scattering import PlaneWave

WF = fdtd.GaussianPulse(1.0, 0.5)
NAN = float("nan")


def _sim(**kw):
    return fdtd.Simulation(**{"size": (1, 1, 1), "resolution": 10, **kw})


def _gsim(**kw):
    return fdtd.GridSimulation(fdtd.Grid((12, 12, 12), 0.1, boundary=fdtd.PEC()), **kw)


def _green(**kw):
    args = {
        "stack": layered.Stack(eps=[1.0, 2.25]),
        "wavelength": 1.0,
        "source": (0, 0, 1),
        "points": [[0, 0, 2]],
    }
    return layered.green_tensor(**{**args, **kw})


def _dipole(**kw):
    args = {
        "stack": layered.Stack(eps=[1.0, 2.25]),
        "wavelength": 1.0,
        "source": (0, 0, 1),
        "points": [[0, 0, 2]],
    }
    return layered.dipole_fields(**{**args, "p": (0, 0, 1), **kw})


CASES = [
    ("Grid order array", lambda: fdtd.Grid((12,) * 3, 0.1, order=np.zeros((2, 2))), r"^order must be 2 or 4"),
    (
        "Grid precision array",
        lambda: fdtd.Grid((12,) * 3, 0.1, precision=np.zeros(2)),
        r"^precision must be one of",
    ),
    (
        "CPML sides list",
        lambda: fdtd.CPML(4, sides=np.zeros((2, 2))),
        r"^CPML.sides must be 'both', 'low' or 'high'",
    ),
    (
        "PointDipole index float",
        lambda: fdtd.PointDipole(NAN, 2, WF),
        r"^PointDipole.index must be \(i, j, k\)",
    ),
    (
        "PointDipole index None",
        lambda: fdtd.PointDipole(None, 2, WF),
        r"^PointDipole.index must be \(i, j, k\)",
    ),
    ("Probe index int", lambda: fdtd.Probe(3, 2), r"^Probe.index must be \(i, j, k\)"),
    (
        "Probe field array",
        lambda: fdtd.Probe((1, 1, 1), 2, field=np.zeros(2)),
        r"^Probe.field must be 'E' or 'H'",
    ),
    (
        "PlaneSource k scalar",
        lambda: fdtd.PlaneSource(2, 4, 0, WF, k=1.0),
        r"^PlaneSource.k must be three finite",
    ),
    (
        "PlaneSource k str entry",
        lambda: fdtd.PlaneSource(2, 4, 0, WF, k=[1.0, "a", 0]),
        r"^PlaneSource.k must be three finite",
    ),
    (
        "DFTPlane frequencies str",
        lambda: fdtd.DFTPlane(2, 4, "x"),
        r"^DFTPlane.frequencies must be a list of finite",
    ),
    ("DFTPlane frequencies None", lambda: fdtd.DFTPlane(2, 4, None), r"^DFTPlane.frequencies must be"),
    (
        "DFTPlane frequencies 2-D",
        lambda: fdtd.DFTPlane(2, 4, np.ones((2, 2))),
        r"^DFTPlane.frequencies must be",
    ),
    ("DFTField frequencies obj", lambda: fdtd.DFTField(2, 4, object()), r"^DFTPlane.frequencies must be"),
    (
        "FluxBox frequencies str",
        lambda: fdtd.FluxBox((0, 0, 0), (0.5,) * 3, "1.0"),
        r"^FluxBox.frequencies must be finite frequencies > 0",
    ),
    (
        "CrossSections frequencies None",
        lambda: fdtd.CrossSections(None),
        r"^CrossSections.frequencies must be",
    ),
    (
        "Dipole component list",
        lambda: fdtd.Dipole((0, 0, 0), ["z"], WF),
        r"^Dipole.component must be x, y or z",
    ),
    (
        "PlaneCurrent axis array",
        lambda: fdtd.PlaneCurrent(0.0, np.array(["z"]), (1, 0, 0), WF),
        r"^PlaneCurrent.axis must be x, y or z",
    ),
    (
        "PlaneWaveSource direction obj",
        lambda: fdtd.PlaneWaveSource((0, 0, 0), (0.5,) * 3, direction=object(), waveform=WF),
        r"direction",
    ),
    (
        "PlaneWave direction str",
        lambda: PlaneWave(direction="z"),
        r"^direction must be a finite real 3-vector",
    ),
    (
        "PlaneWave polarization nan",
        lambda: PlaneWave(polarization=(NAN, 0, 0)),
        r"^direction and polarization must",
    ),
    (
        "PlaneWave polarization 0",
        lambda: PlaneWave(polarization=(0, 0, 0)),
        r"^direction and polarization must be non-zero",
    ),
    (
        "PlaneWave direction 0",
        lambda: PlaneWave(direction=(0, 0, 0)),
        r"^direction and polarization must be non-zero",
    ),
    (
        "Simulation sources float",
        lambda: _sim(sources=1.0),
        r"^sources must be PlaneWaveSource, PlaneCurrent or Dipole objects in a list \(or tuple\)",
    ),
    (
        "Simulation monitors None",
        lambda: _sim(monitors=None),
        r"^monitors must be FluxBox, FluxPlane or CrossSections objects in a list",
    ),
    (
        "Simulation averaging array",
        lambda: _sim(averaging=np.zeros(2)),
        r"^averaging must be 'subpixel', 'diagonal' or 'staircase'",
    ),
    ("QMR atol str", lambda: dda.QMR(atol="0"), r"^atol must be finite and >= 0"),
    ("QMR atol list", lambda: dda.QMR(atol=[0.0, 1.0]), r"^atol must be finite and >= 0"),
    ("BiCGStab atol complex", lambda: dda.BiCGStab(atol=1j), r"^atol must be finite and >= 0"),
    ("OrientationAverage eps str", lambda: dda.OrientationAverage(eps="0.1"), r"^eps must be in \[0, 1\)"),
    (
        "OrientationAverage eps array",
        lambda: dda.OrientationAverage(eps=np.zeros(2)),
        r"^eps must be in \[0, 1\)",
    ),
    (
        "OrientationAverage levels int",
        lambda: dda.OrientationAverage(beta_levels=3),
        r"^beta_levels must be \(min, max\)",
    ),
    (
        "OrientationAverage levels None",
        lambda: dda.OrientationAverage(gamma_levels=None),
        r"^gamma_levels must be \(min, max\)",
    ),
    (
        "DDAProblem orientation float",
        lambda: dda.DDAProblem(Sphere(), m=1.5, size_x=1.0, grid=8, orientation=NAN),
        r"^orientation must be three Euler angles",
    ),
    (
        "DDAProblem precision array",
        lambda: dda.DDAProblem(Sphere(), m=1.5, size_x=1.0, grid=8, precision=np.zeros(2)),
        r"^precision must be one of",
    ),
    (
        "Object rotation str",
        lambda: scene.Object(Sphere(), 2.0, size=0.5, rotation="x"),
        r"^Object.rotation must be",
    ),
    (
        "Object rotation complex",
        lambda: scene.Object(Sphere(), 2.0, size=0.5, rotation=1j),
        r"^Object.rotation must",
    ),
    (
        "Tabulated n str",
        lambda: materials.Tabulated((0.4, 0.8), "x", (0.0, 0.0)),
        r"^Tabulated.n must be a list of real numbers",
    ),
    (
        "Tabulated wavelength obj",
        lambda: materials.Tabulated(object(), (1.5, 1.4), (0.0, 0.0)),
        r"^Tabulated.wavelength must be a list of real numbers",
    ),
    (
        "GridSimulation sources float",
        lambda: _gsim(sources=1.0),
        r"^sources must be PointDipole, PlaneSource or TFSF objects in a list \(or tuple\)",
    ),
    (
        "GridSimulation probes None",
        lambda: _gsim(probes=None),
        r"^probes must be Probe objects in a list",
    ),
    (
        "GridSimulation monitors int",
        lambda: _gsim(monitors=0),
        r"^monitors must be DFTPlane objects in a list",
    ),
    (
        "GridSimulation dispersive float",
        lambda: _gsim(dispersive=NAN),
        r"^dispersive must be \(materials.Dispersive",
    ),
    (
        "GridSimulation dispersive str",
        lambda: _gsim(dispersive="x"),
        r"^dispersive must be \(materials.Dispersive",
    ),
    ("green_tensor source str", lambda: _green(source="x"), r"^source must be 3 finite coordinates"),
    ("green_tensor points obj", lambda: _green(points=object()), r"^points must be an \(N, 3\) array"),
    (
        "green_tensor points complex",
        lambda: _green(points=[[0, 0, 2j]]),
        r"^points must be an \(N, 3\) array",
    ),
    ("green_tensor part array", lambda: _green(part=np.zeros((2, 2))), r"^part must be one of"),
    ("dipole_fields p str", lambda: _dipole(p="x"), r"^p must be 3 finite \(complex\) components"),
    ("dipole_fields fields array", lambda: _dipole(fields=np.zeros(2)), r"^fields must be 'E', 'H' or 'EH'"),
    (
        "Tabulated n nan",
        lambda: materials.Tabulated((0.4, 0.8), (NAN, 1.4), (0.0, 0.0)),
        r"^Tabulated.n and .* finite",
    ),
]


def _run(sim="grid", **kw):
    grid = fdtd.GridSimulation(fdtd.Grid((8, 8, 8), 0.1, boundary=fdtd.PEC()))
    return fdtd.run(grid if sim == "grid" else _sim(boundary=fdtd.PEC()), **{"steps": 2, **kw})


CASES += [
    (
        "run progress str",
        lambda: _run(progress="bar"),
        r"^progress must be True \(a progress bar, the default\), False \(none\) or a callable",
    ),
    ("run progress int", lambda: _run("physical", progress=3), r"^progress must be True"),
    ("run initial float", lambda: _run(initial=0.0), r"^initial must be None or the pair \(E, H\)"),
    ("run checkpoint float", lambda: _run(checkpoint=1.5), r"^checkpoint must be None or a file path"),
    (
        "run checkpoint list",
        lambda: _run("physical", checkpoint=["a"]),
        r"^checkpoint must be None or a file path",
    ),
    (
        "run out_of_core array",
        lambda: _run(out_of_core=np.zeros(2)),
        r"^out_of_core must be None, True, False or a dict",
    ),
]


@pytest.mark.parametrize("make,message", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_constructor_argument_is_one_line_naming_it(make, message):
    with pytest.raises(ConfigError, match=message) as e:
        make()
    assert "\n" not in str(e.value)


def test_the_good_values_still_construct():
    assert fdtd.Probe((1, 1, 1), 2, field="H").field == "H"
    assert fdtd.PlaneSource(2, 4, 0, WF, k=np.array([0.5, 0, 0])).k == (0.5, 0.0, 0.0)
    assert fdtd.DFTPlane(2, 4, np.array([1.0, 2.0])).frequencies == (1.0, 2.0)
    assert fdtd.DFTPlane(2, 4, 1.0).frequencies == (1.0,)
    assert len(_sim(sources=[], monitors=[fdtd.CrossSections((1.0,))] * 0).sources) == 0
    assert dda.QMR(atol=np.float64(1e-30)).atol == 1e-30
    assert dda.OrientationAverage(beta_levels=np.array([2, 4])).beta_levels is not None
    assert scene.Object(Sphere(), 2.0, size=0.5, rotation=[0, 90, 0]) is not None
    assert PlaneWave((0, 0, 1), (1j, 0, 0)) is not None
