"""Mode sources, mode monitors and S-parameters of the physical-unit FDTD (2-D strip guide)."""

import json
from pathlib import Path

import numpy as np
import pytest
import tomllib

from emjax import fdtd, geometry, scene
from emjax.errors import ConfigError
from emjax.fdtd.mode_monitor import ModeMonitor
from emjax.fdtd.mode_source import ModeSource, source_spectrum

RES = 16
DX = 1 / RES
F0 = 1 / 1.55
FREQS = tuple(F0 * np.array([0.9, 1.0, 1.1]))


def _sim(**kw):
    # a 0.52 um Si strip in SiO2 along x, its edges between the nodes (staircase raster)
    v = [[-10, -0.26], [10, -0.26], [10, 0.26], [-10, 0.26]]
    core = scene.Object(geometry.Polygon(vertices=v), 3.476**2, size=20.0)
    sc = scene.Scene([core], background=1.444**2)
    base = dict(
        size=(2.4, 2.0, DX),
        resolution=RES,
        scene=sc,
        boundary=(fdtd.CPML(10), fdtd.CPML(10), fdtd.Periodic()),
        averaging="staircase",
    )
    return fdtd.Simulation(**{**base, **kw})


@pytest.mark.slow
def test_mode_source_launches_one_way_with_its_normalization():
    wf = fdtd.GaussianPulse(F0, 0.1 * F0)
    plane = (0, 1.6, DX)
    src = ModeSource((-0.6, 0, 0), plane, "+", 0, wf)
    mons = [
        ModeMonitor((-0.9, 0, 0), plane, FREQS, name="behind"),
        ModeMonitor((-0.3, 0, 0), plane, FREQS, name="near"),
        ModeMonitor((0.9, 0, 0), plane, FREQS, name="far"),
    ]
    sim = _sim(sources=[src], monitors=mons)
    until = 45.0
    r = fdtd.run(sim, until=until, progress=False)
    W2 = np.abs(source_spectrum(wf, sim.grid.dt, int(np.ceil(until / sim.grid.dt)), FREQS)) ** 2
    near, far, behind = (r.mode_amplitudes(n)[:, 0] for n in ("near", "far", "behind"))
    assert near.shape == (3, 2)
    # the launched mode carries |W(f)|^2 at the centre frequency (measured 7e-7); at +-10%
    # the centre's profile and J/M balance launch +1.8% / -2.1% (measured): the S-matrix
    # divides by the measured incident amplitude, not by |W|
    assert abs(abs(near[1, 0]) ** 2 / W2[1] - 1) < 1e-5
    assert np.all(abs(np.abs(near[:, 0]) ** 2 / W2 - 1) < 0.025)
    # one way: behind the source and backward at the monitors, < 1e-2 of the forward power
    assert np.all(np.abs(behind) ** 2 / W2[:, None] < 1e-2)
    assert np.all(np.abs(near[:, 1]) ** 2 / W2 < 1e-4)
    # the straight guide carries it on: |S21|^2 >= 0.98 with a phase of beta * 1.2 um
    t = np.abs(far[:, 0] / near[:, 0]) ** 2
    assert np.all(t >= 0.98) and np.all(t <= 1.01)


PORTS = [
    fdtd.Port("in", (-0.8, 0, 0), (0, 1.6, DX), "+"),
    fdtd.Port("out", (0.8, 0, 0), (0, 1.6, DX), "-"),
]


def test_s_matrix_column_of_a_straight_guide():
    S = fdtd.s_matrix(_sim(), PORTS, FREQS, until=45.0, excite=["in"])
    assert S.labels == ("in", "out") and S.s.shape == (3, 2, 2)
    assert np.all(np.abs(S["out", "in"]) >= 0.99)
    assert np.all(np.abs(S["in", "in"]) <= 1e-2)
    power = np.sum(np.abs(S.s[:, :, 0]) ** 2, axis=1)
    np.testing.assert_allclose(power, 1.0, atol=0.01)  # lossless
    assert np.all(np.isnan(S.s[:, :, 1]))  # the column not excited
    assert S.residual[0] < 1e-3 and np.isnan(S.residual[1])  # the fields had decayed
    ds = S.to_xarray()
    assert ds["s_real"].dims == ("frequency", "out_port", "in_port")


@pytest.mark.slow
def test_s_matrix_of_a_straight_guide_is_reciprocal():
    S = fdtd.s_matrix(_sim(), PORTS, FREQS, until=45.0)
    assert np.all(np.abs(S["out", "in"]) >= 0.99) and np.all(np.abs(S["in", "out"]) >= 0.99)
    assert np.all(np.abs(S["in", "in"]) <= 1e-2) and np.all(np.abs(S["out", "out"]) <= 1e-2)
    np.testing.assert_allclose(S["out", "in"], S["in", "out"], atol=1e-3)  # reciprocity
    np.testing.assert_allclose(np.sum(np.abs(S.s) ** 2, axis=1), 1.0, atol=0.01)


def test_ports_refuse_bad_input():
    with pytest.raises(ConfigError, match="direction"):
        fdtd.Port("a", (0, 0, 0), (0, 1, 1), "up")
    with pytest.raises(ConfigError, match="exactly one axis"):
        fdtd.Port("a", (0, 0, 0), (1, 1, 1))
    with pytest.raises(ConfigError, match="distinct"):
        fdtd.s_matrix(_sim(), [fdtd.Port("a", (0, 0, 0), (0, 1, DX))] * 2, FREQS)
    with pytest.raises(ConfigError, match="ModeSource.direction"):
        ModeSource((0, 0, 0), (0, 1, DX), "x", 0, fdtd.GaussianPulse(F0, 0.1))
    with pytest.raises(ConfigError, match="modes"):
        ModeMonitor((0, 0, 0), (0, 1, DX), FREQS, modes=(-1,))


EXAMPLE = Path(__file__).parents[2] / "examples" / "waveguide_straight.toml"


def _cfg(**change):
    cfg = tomllib.loads(EXAMPLE.read_text())
    cfg.update(change)
    return cfg


def test_port_config_is_checked():
    from emjax.fdtd.port_config import build_ports

    sim, ports, freqs, options, unit = build_ports(_cfg())
    assert [p.name for p in ports] == ["in", "out"] and unit == "um" and options["source_offset"] == 2
    with pytest.raises(ConfigError, match=r"\[run\] does not combine"):
        build_ports(_cfg(run={"until": 10}))
    with pytest.raises(ConfigError, match=r"\[s_parameters\]"):
        build_ports({k: v for k, v in _cfg().items() if k != "s_parameters"})
    bad = _cfg()
    bad["ports"][0]["direction"] = "up"
    with pytest.raises(ConfigError, match="direction"):
        build_ports(bad)
    bad = _cfg()
    bad["ports"][1]["bogus"] = 1
    with pytest.raises(ConfigError, match="bogus"):
        build_ports(bad)


@pytest.mark.slow
def test_cli_writes_netcdf_and_touchstone(tmp_path, capsys):
    pytest.importorskip("h5netcdf")
    import xarray as xr

    from emjax.cli import main
    from emjax.modes.smatrix import read_touchstone

    out = tmp_path / "run"
    assert main(["fdtd", str(EXAMPLE), "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert min(summary["abs_s_squared"]["S[out,in]"]) >= 0.99
    from tests.netcdf_units import assert_units

    assert assert_units(out) == ["s_parameters.nc"]
    ds = xr.open_dataset(out / "s_parameters.nc")
    s = ds["s_real"].values + 1j * ds["s_imag"].values
    f_hz, s_file = read_touchstone(out / "s_parameters.s2p")
    np.testing.assert_allclose(s_file, s.conj(), atol=1e-9)
    assert np.all(np.abs(s[:, 1, 0]) >= 0.99) and np.all(np.abs(s[:, 0, 0]) <= 1e-2)


@pytest.mark.slow
def test_s_matrix_of_a_silicon_wire_in_3d():
    # 0.52 x 0.22 um Si in SiO2 at 20 cells per um (staircase: the guide runs into the CPML)
    wire = scene.Object(geometry.Box(y_over_x=0.52 / 20, z_over_x=0.22 / 20), 3.476**2, size=20.0)
    sc = scene.Scene([wire], background=1.444**2)
    sim = fdtd.Simulation(
        size=(2.0, 1.6, 1.4), resolution=20, scene=sc, boundary=fdtd.CPML(10), averaging="staircase"
    )
    ports = [
        fdtd.Port("in", (-0.7, 0, 0), (0, 1.4, 1.2), "+"),
        fdtd.Port("out", (0.7, 0, 0), (0, 1.4, 1.2), "-"),
    ]
    S = fdtd.s_matrix(sim, ports, FREQS, until=50.0)
    assert np.all(np.abs(S["out", "in"]) >= 0.99) and np.all(np.abs(S["in", "in"]) <= 1e-2)
    np.testing.assert_allclose(S["out", "in"], S["in", "out"], atol=1e-3)
    np.testing.assert_allclose(np.sum(np.abs(S.s) ** 2, axis=1), 1.0, atol=0.01)


@pytest.mark.slow
def test_two_modes_per_port():
    # the strip's two best-guided modes (the two polarizations): each passes on in its own
    # mode, nothing converts
    ports = [
        fdtd.Port("in", (-0.8, 0, 0), (0, 1.6, DX), "+", modes=(0, 1)),
        fdtd.Port("out", (0.8, 0, 0), (0, 1.6, DX), "-", modes=(0, 1)),
    ]
    S = fdtd.s_matrix(_sim(), ports, FREQS, until=45.0, excite=["in"])
    assert S.labels == ("in:0", "in:1", "out:0", "out:1")
    p = np.abs(S.s[:, :, :2]) ** 2
    np.testing.assert_allclose(p[:, 2, 0], 1.0, atol=0.01)
    np.testing.assert_allclose(p[:, 3, 1], 1.0, atol=0.01)
    assert np.all(p[:, [0, 1, 3], 0] < 1e-4) and np.all(p[:, [0, 1, 2], 1] < 1e-4)


def test_residual_measures_what_is_left_at_the_end():
    from emjax.fdtd.ports import _residual

    t = np.arange(1000.0)
    decayed = np.exp(-(((t - 200) / 40) ** 2))[:, None] * np.ones((1, 2))
    assert _residual(decayed) < 1e-12
    ringing = decayed + 0.01 * np.sin(t)[:, None]
    assert 0.005 < _residual(ringing) < 0.02


@pytest.mark.slow
def test_a_run_too_short_is_warned_about():
    with pytest.warns(RuntimeWarning, match="had not decayed.*raise until"):
        S = fdtd.s_matrix(_sim(), PORTS, FREQS, until=12.0, excite=["in"])
    assert S.residual[0] > 1e-3


@pytest.mark.slow
def test_current_sheets_under_the_hand_written_adjoint():
    # electric and magnetic sheets in a run differentiated over eps: the hand-written
    # adjoint and JAX's reverse mode agree (the magnetic sheet's dt M holds no eps)
    import jax
    import jax.numpy as jnp

    from emjax.backend import precision_scope
    from emjax.fdtd import simulation as sim_mod

    shape = (12, 10, 10)
    wf = fdtd.Ricker(frequency=0.8)
    prof = np.random.default_rng(1).random((1, 4, 4))
    sheets = (
        fdtd.CurrentSheet(0, 4, 2, "E", (0, 3, 3), (0, 7, 7), wf, prof),
        fdtd.CurrentSheet(0, 3, 1, "H", (0, 3, 3), (0, 7, 7), wf, prof[:, ::-1]),
    )

    def objective(eps):
        g = fdtd.Grid(shape, dx=0.1, boundary=fdtd.CPML(3), precision="double")
        sim = fdtd.GridSimulation(g, eps=eps, sources=sheets, probes=(fdtd.Probe((8, 5, 5), 2),))
        r = fdtd.run(sim, 60)
        return jnp.sum(jnp.asarray(r.probes) ** 2) * 1e5 + jnp.sum(r.E**2) * 1e3

    eps = jnp.asarray(1.0 + 0.5 * np.random.default_rng(0).random(shape))
    out = {}
    for mode in ("autodiff", "custom"):
        old, sim_mod.ADJOINT = sim_mod.ADJOINT, mode
        try:
            with precision_scope():
                out[mode] = np.asarray(jax.grad(objective)(eps))
        finally:
            sim_mod.ADJOINT = old
    a, c = out["autodiff"], out["custom"]
    assert np.max(np.abs(a)) > 0
    assert np.max(np.abs(a - c)) / np.max(np.abs(a)) < 1e-12
