"""The ``emjax`` command, run in-process on small problems (a sphere on an 8^3 lattice).

These tests check the command layer: option parsing, TOML configs, registries, exit
statuses, output files and messages. The physics of the numbers is tested in tests/dda
against Mie theory; here the numbers only have to be finite, consistent with each other
(Cext > Cabs > 0, Csca = Cext - Cabs, Q = C / (pi a_eq^2)) and with the files written.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from emjax.cli import build_parser, main
from emjax.config import parse_refractive_index
from emjax.dda.cli import JSON_KEYS, build_dda
from emjax.dda.options import dda_config
from emjax.errors import ConfigError
from tests.netcdf_units import assert_units

BASE = ["dda", "--shape", "sphere", "--size", "2", "--grid", "8", "--ntheta", "19"]
SMALL = [*BASE, "--m", "1.5+0.01j"]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run(capsys, args):
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


def one_json_line(out: str) -> dict:
    lines = out.splitlines()
    assert len(lines) == 1, f"--json must print exactly one line on stdout, got {out!r}"
    return json.loads(lines[0])


@pytest.fixture(scope="module")
def out_run(tmp_path_factory):
    """One run with --json and --out; returns (status, summary, output folder, stderr)."""
    folder = tmp_path_factory.mktemp("dda") / "run"
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([*SMALL, "--json", "--out", str(folder)])
    return rc, one_json_line(out.getvalue()), folder, err.getvalue()


def test_help_imports_no_heavy_modules():
    code = (
        "import sys, emjax.cli; emjax.cli.build_parser().format_help(); "
        "print(sorted(m for m in ('jax', 'xarray', 'matplotlib', 'tqdm') if m in sys.modules))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "[]"


def test_help_exits_zero(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["dda", "--help"])
    assert exc.value.code == 0
    assert "--polarizability" in capsys.readouterr().out


def test_info(capsys):
    rc, out, _ = run(capsys, ["info", "--json"])
    assert rc == 0
    info = json.loads(out)
    assert {"emjax", "jax", "devices", "default_backend"} <= set(info)
    rc, out, _ = run(capsys, ["info"])
    assert rc == 0 and "devices:" in out and "jax" in out


def test_dda_json(out_run):
    rc, s, _, err = out_run
    assert rc == 0
    assert list(s) == list(JSON_KEYS)
    for key in ("Cext", "Cabs", "Csca", "Qext", "Qabs", "Qsca", "g", "seconds"):
        assert isinstance(s[key], float) and math.isfinite(s[key]), key
    assert s["Cext"] > s["Cabs"] > 0
    assert s["Csca"] == pytest.approx(s["Cext"] - s["Cabs"], rel=1e-12)
    # volume correction makes a_eq exactly size/2 = 1
    assert s["Qext"] == pytest.approx(s["Cext"] / math.pi, rel=1e-9)
    assert s["grid"] == [8, 8, 8] and s["n_dipoles"] > 0
    assert s["converged"] is True and len(s["iterations"]) == 2
    assert "polarization X" in err  # progress goes to stderr


def test_dda_text_summary(capsys):
    rc, out, err = run(capsys, SMALL)
    assert rc == 0
    assert "Qext" in out and "8x8x8" in out and "converged" in out
    assert "NOT CONVERGED" not in err


def test_out_netcdf(out_run):
    xr = pytest.importorskip("xarray")
    _, s, folder, _ = out_run
    assert assert_units(folder) == ["result.nc"]
    with xr.open_dataset(folder / "result.nc", engine="h5netcdf") as ds:
        for name in (
            "Cext",
            "Cabs",
            "Csca_integrated",
            "g",
            "S_real",
            "S_imag",
            "mueller",
            "degree_of_polarization",
            "residual_history",
        ):
            assert name in ds, name
        assert ds["mueller"].dims == ("phi", "theta", "row", "col")
        assert ds.theta.size == 19 and ds.theta.attrs["units"] == "deg"
        assert list(ds.polarization.values) == ["X", "Y"]
        assert float(ds["Cext"].mean()) == pytest.approx(s["Cext"], rel=1e-12)
        assert ds.attrs["Qext"] == pytest.approx(s["Qext"], rel=1e-12)
        assert ds.attrs["shape"] == "sphere" and "QMR" in ds.attrs["solver"]
        assert ds.attrs["command"].startswith("emjax dda")


def _crosssec(path: Path) -> dict:
    values = {}
    for line in path.read_text().splitlines():
        name, value = line.split("\t= ")
        values[name] = float(value)
    return values


def test_out_adda_files(out_run):
    _, s, folder, _ = out_run
    for pol in ("X", "Y"):
        c = _crosssec(folder / f"CrossSec-{pol}")
        assert list(c) == ["Cext", "Qext", "Cabs", "Qabs", "Csca", "Qsca", "g"]
        # a sphere: both polarizations equal the unpolarized values (10 significant digits)
        assert c["Cext"] == pytest.approx(s["Cext"], rel=1e-9)
        assert c["Qabs"] == pytest.approx(s["Qabs"], rel=1e-9)
    m = np.loadtxt(folder / "mueller", skiprows=1)
    assert m.shape == (19, 17)
    np.testing.assert_allclose(m[:, 0], np.linspace(0, 180, 19))
    assert np.all(m[:, 1] > 0)  # S11
    header = (folder / "mueller").read_text().splitlines()[0].split()
    assert header[:3] == ["theta", "s11", "s12"] and header[-1] == "s44"
    log = (folder / "log").read_text()
    assert "lattice: 8x8x8" in log and "emjax" in log and "--grid 8" in log
    assert (folder / "mueller.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    "args, field",
    [
        (["--m", "1.5-0.1j"], "m[0]"),
        (["--m", "1.5+xj"], "m[0]"),
        (["--size", "-1"], "size"),
        (["--size", "nan"], "size"),
        (["--size", "abc"], "--size"),
        (["--shape", "banana"], "shape"),
        (["--aspect", "2"], "aspect"),
        (["--orient", "1,2"], "orient"),
        (["--solver", "gmres"], "solver"),
        (["--polarizability", "foo"], "polarizability"),
        (["--precision", "half"], "precision"),
        (["--ntheta", "1"], "ntheta"),
        (["--rtol", "nan"], "rtol"),
        (["--grid", "0"], "grid"),
        (["--shape", "coated"], "m"),
        (["--m", "1.5", "--m", "1.2"], "m"),
    ],
)
def test_bad_input_exits_1(capsys, args, field):
    base = BASE if "--m" in args else SMALL  # --m is repeatable: one per domain
    rc, out, err = run(capsys, [*base, *args, "--json"])
    assert rc == 1
    assert out == ""
    last = err.strip().splitlines()[-1]
    assert last.startswith("emjax: error:") and field in last, err
    assert "Traceback" not in err


def test_not_converged_exits_2(capsys):
    rc, out, err = run(capsys, [*SMALL, "--maxiter", "1", "--json"])
    assert rc == 2
    assert one_json_line(out)["converged"] is False
    assert "NOT CONVERGED" in err


def test_toml_config(tmp_path, capsys, out_run):
    cfg = tmp_path / "sphere.toml"
    cfg.write_text(
        'shape = "sphere"\nsize = 2.0\ngrid = 8\nm = "1.5+0.01j"\nntheta = 19\n'
        'orient = [0, 0, 0]\nsolver = "qmr"\nrtol = 1e-5\n'
    )
    rc, out, _ = run(capsys, ["dda", "--config", cfg, "--json"])
    assert rc == 0
    s = one_json_line(out)
    assert s["Cext"] == pytest.approx(out_run[1]["Cext"], rel=1e-10)
    # flags override the file
    rc, out, _ = run(capsys, ["dda", "--config", cfg, "--m", "1.5,0.05", "--json"])
    assert rc == 0
    assert one_json_line(out)["Cabs"] > 2 * s["Cabs"]


def test_toml_errors(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('shape = "sphere"\nradius = 1.0\n')
    rc, _, err = run(capsys, ["dda", "--config", bad])
    assert rc == 1 and "unknown key" in err and "radius" in err
    broken = tmp_path / "broken.toml"
    broken.write_text("shape = \n")
    rc, _, err = run(capsys, ["dda", "--config", broken])
    assert rc == 1 and "not valid TOML" in err


def _config(*args):
    return dda_config(build_parser().parse_args(["dda", *map(str, args)]))


def test_config_maps_to_api_objects(tmp_path):
    from emjax.dda import FCD
    from emjax.geometry import CoatedSphere, Cylinder, Ellipsoid
    from emjax.krylov import BiCGStab

    problem, solver = build_dda(
        _config(
            "--shape",
            "cylinder",
            "--aspect",
            2,
            "--size",
            1,
            "--grid",
            6,
            "--solver",
            "bicgstab",
            "--rtol",
            1e-4,
            "--maxiter",
            50,
            "--polarizability",
            "fcd",
            "--orient",
            "10,20,30",
            "--no-integrate",
        )
    )
    assert problem.shape == Cylinder(aspect=2.0)
    assert solver == BiCGStab(rtol=1e-4, maxiter=50)
    assert isinstance(problem.polarizability, FCD)
    assert problem.orientation == (10.0, 20.0, 30.0) and problem.integrate is False
    problem, _ = build_dda(_config("--shape", "ellipsoid", "--semi-axes", 0.5, 2, "--eq-rad", 1, "--grid", 6))
    assert problem.shape == Ellipsoid(0.5, 2.0)
    cfg = tmp_path / "coated.toml"
    cfg.write_text(
        'shape = "coated"\ncore_ratio = 0.5\nsize = 1.0\ngrid = 6\nm = ["1.5+0.01j", [1.2, 0.001]]\n'
    )
    problem, _ = build_dda(_config("--config", cfg))
    assert problem.shape == CoatedSphere(0.5)
    assert problem.m == (1.5 + 0.01j, 1.2 + 0.001j)


def test_example_config_is_valid():
    problem, solver = build_dda(_config("--config", EXAMPLES / "sphere.toml"))
    assert problem.shape.name == "sphere"
    assert problem.plan().nx >= 16


@pytest.mark.parametrize(
    "text, m",
    [
        ("1.5+0.01j", 1.5 + 0.01j),
        ("1.5,0.01", 1.5 + 0.01j),
        ("1.33", 1.33),
        (" 1.5 + 0.01i ", 1.5 + 0.01j),
        (1.33, 1.33),
        ([1.5, 0.01], 1.5 + 0.01j),
    ],
)
def test_parse_refractive_index(text, m):
    assert parse_refractive_index(text) == m


@pytest.mark.parametrize("bad", ["", "1.5,0.01,3", "abc", True, [1.5], {"n": 1.5}])
def test_parse_refractive_index_rejects(bad):
    with pytest.raises(ConfigError, match="refractive index"):
        parse_refractive_index(bad)


@pytest.fixture
def fake_bench(monkeypatch):
    calls = []

    def dda_benchmark(grid, precision="double", repeats=10, solve=True, variant=None):
        calls.append((grid, precision, repeats, solve, variant))
        return {
            "grid": grid,
            "precision": precision,
            "matvec_s": 1e-3,
            "iteration_s": 2e-3,
            "solve_s": 0.5 if solve else None,
            "device": "fake",
        }

    module = types.ModuleType("emjax.dda.bench")
    module.dda_benchmark = dda_benchmark
    monkeypatch.setitem(sys.modules, "emjax.dda.bench", module)
    return calls


def test_bench(fake_bench, capsys, tmp_path):
    results = tmp_path / "bench.json"
    args = [
        "bench",
        "dda",
        "--grid",
        8,
        "--grid",
        16,
        "--precision",
        "single",
        "--precision",
        "double",
        "--repeats",
        3,
        "--no-solve",
        "--json",
        "--out",
        results,
    ]
    rc, out, _ = run(capsys, args)
    assert rc == 0
    lines = [json.loads(line) for line in out.splitlines()]
    assert [(r["grid"], r["precision"]) for r in lines] == [
        (8, "single"),
        (8, "double"),
        (16, "single"),
        (16, "double"),
    ]
    assert fake_bench[0] == (8, "single", 3, False, None)
    rc, out, _ = run(capsys, ["bench", "dda", "--grid", 4, "--out", results])
    assert rc == 0 and "matvec 1.000 ms" in out
    assert len(json.loads(results.read_text())) == 5


def test_bench_bad_input(fake_bench, capsys):
    rc, _, err = run(capsys, ["bench", "dda", "--grid", 8, "--precision", "half"])
    assert rc == 1 and "precision" in err and not fake_bench
    rc, _, err = run(capsys, ["bench"])
    assert rc == 1 and "emjax: error" in err


AVG = [*BASE, "--grid", "6", "--m", "1.5+0.01j", "--orient", "avg", "--avg-beta-levels", "2", "2"]
AVG += ["--avg-gamma-levels", "2", "2", "--avg-alpha", "4", "--avg-eps", "0"]  # a fixed rule


def test_orient_avg_json_and_adda_files(capsys, tmp_path):
    """``--orient avg`` (ADDA's -orient avg): one JSON line with the averaged Cext, Cabs, Q's
    and the number of orientations; the run folder holds ADDA's averaged files (CrossSec with
    ``name\\t= value`` lines, mueller with ADDA's columns, log, log_orient_avg) and result.nc,
    all agreeing with the JSON."""
    import xarray as xr

    rc, out, _ = run(capsys, [*AVG, "--json", "--out", tmp_path])
    assert rc == 0
    s = one_json_line(out)
    assert s["orient"] == "avg" and s["n_orientations"] == 14 and s["n_alpha"] == 4
    assert s["Cext"] > s["Cabs"] > 0
    assert s["Qext"] / s["Cext"] == pytest.approx(s["Qabs"] / s["Cabs"])
    cs = dict(line.split("\t= ") for line in (tmp_path / "CrossSec").read_text().splitlines())
    assert float(cs["Cext"]) == pytest.approx(s["Cext"], rel=1e-9)
    assert float(cs["Qabs"]) == pytest.approx(s["Qabs"], rel=1e-9)
    rows = (tmp_path / "mueller").read_text().splitlines()
    assert rows[0].split() == ["theta"] + [f"s{r}{c}" for r in range(1, 5) for c in range(1, 5)]
    assert len(rows) == 1 + 19
    table = [r for r in (tmp_path / "log_orient_avg").read_text().splitlines() if not r.startswith("#")]
    assert len(table) == 1 + 14
    with xr.open_dataset(tmp_path / "result.nc", engine="h5netcdf") as ds:
        assert ds.attrs["Cext"] == pytest.approx(s["Cext"], rel=1e-12)
        assert ds["mueller"].shape == (19, 4, 4)
        assert float(ds["weight"].sum()) == pytest.approx(1.0)
    assert (tmp_path / "mueller.png").stat().st_size > 0
    assert assert_units(tmp_path) == ["result.nc"]


def test_orient_avg_missing_its_accuracy_is_not_converged(capsys):
    """A requested --avg-eps that the maximum levels cannot reach: the results are written
    but the run is not "converged" (exit 2, the estimate and the goal named)."""
    argv = AVG[: AVG.index("--avg-eps")] + ["--avg-eps", "1e-9", "--json"]
    rc, out, err = run(capsys, argv)
    assert rc == 2
    s = one_json_line(out)
    assert s["converged"] is False and s["Cext"] > 0
    assert "orientation average (error estimate" in err and "> --avg-eps 1e-09" in err


@pytest.mark.parametrize(
    "extra, field",
    [
        (["--avg-eps", "0.1"], "--avg-eps"),  # without --orient avg: named as typed
        (["--sym-n-fold", "4"], "--sym-n-fold"),
    ],
)
def test_average_options_need_orient_avg(capsys, extra, field):
    rc, _, err = run(capsys, [*SMALL, *extra])
    assert rc == 1 and field in err


def test_orient_avg_bad_quadrature(capsys):
    rc, _, err = run(capsys, [*AVG, "--avg-alpha", "0"])
    assert rc == 1 and "n_alpha" in err


def test_phi_grid_writes_mueller_scatgrid(capsys, tmp_path):
    """``--phi 0,45,90``: the Mueller matrix on a (theta, phi) grid, in result.nc and in ADDA's
    mueller_scatgrid (theta phi s11..s44, theta outer); the phi = 90 rows equal ``mueller``."""
    rc, _, _ = run(capsys, [*SMALL, "--phi", "0,45,90", "--out", tmp_path])
    assert rc == 0
    rows = (tmp_path / "mueller_scatgrid").read_text().splitlines()
    assert rows[0].split()[:3] == ["theta", "phi", "s11"]
    grid = np.array([r.split() for r in rows[1:]], float)
    assert grid.shape == (19 * 3, 18)
    yz = np.array([r.split() for r in (tmp_path / "mueller").read_text().splitlines()[1:]], float)
    np.testing.assert_allclose(grid[grid[:, 1] == 90][:, 2:], yz[:, 1:], rtol=1e-8)
    assert sorted(set(grid[:, 1])) == [0.0, 45.0, 90.0]
