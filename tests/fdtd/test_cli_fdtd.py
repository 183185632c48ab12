"""`emjax fdtd CONFIG.toml` and `emjax bench fdtd` in-process."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from emjax.cli import main
from tests.netcdf_units import assert_units

EXAMPLE = Path(__file__).parents[2] / "examples" / "fdtd_dipole_cells.toml"


def test_fdtd_example_runs_and_writes(tmp_path, capsys):
    pytest.importorskip("h5netcdf")  # a dependency of emjax, absent on the bare GPU machine
    out = tmp_path / "run"
    assert main(["fdtd", str(EXAMPLE), "--steps", "120", "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out.strip())
    assert summary["steps"] == 120 and summary["cells_per_s"] > 0
    ds = xr.open_dataset(out / "result.nc")
    assert ds["probes"].shape == (120, 2) and ds["flux0"].shape == (5,)
    assert ds.attrs["steps"] == 120 and ds["x"].attrs["units"] == "length"
    assert (out / "fdtd.png").stat().st_size > 10_000
    assert assert_units(out) == ["result.nc"]


def test_fdtd_bad_config(tmp_path, capsys):
    cfg = tmp_path / "bad.toml"
    cfg.write_text("[grid]\nshape = [30, 30, 30]\ndx = 0.1\ncourant = 2.0\n[run]\nsteps = 10\n")
    assert main(["fdtd", str(cfg)]) == 1
    assert "courant" in capsys.readouterr().err
    cfg.write_text(
        '[grid]\nshape = [20, 20, 20]\ndx = 0.1\nboundary = "cpml"\npml_thickness = 12\n[run]\nsteps = 10\n'
    )
    assert main(["fdtd", str(cfg)]) == 1
    assert "CPML" in capsys.readouterr().err


@pytest.mark.slow
def test_bench_fdtd_json(capsys):
    assert main(["bench", "fdtd", "--size", "24", "--steps", "8", "--json"]) == 0
    r = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert {"cells_per_s", "bytes_per_cell", "seconds", "device"} <= set(r)


@pytest.mark.slow
def test_fdtd_tfsf_flux_box_config(tmp_path, capsys):
    """A TF/SF source and a flux box from TOML; with no scatterer the box sees no flux (the
    TF/SF box does not leak) for forward and backward incidence, and a bad direction is
    refused with the field named."""
    cfg = tmp_path / "t.toml"
    base = (
        "[grid]\nshape = [36, 36, 36]\ndx = 0.05\npml_thickness = 6\n[run]\nsteps = 150\n"
        '[[sources]]\ntype = "tfsf"\nlo = [12, 12, 12]\nhi = [24, 24, 24]\ndirection = "{d}"\n'
        "polarization = [0.0, 1.0, 0.0]\nfrequency = 1.0\n"
        "[[flux_boxes]]\nlo = [9, 9, 9]\nhi = [27, 27, 27]\nfrequencies = [1.0]\n"
    )
    cfg.write_text(base.replace("{d}", "+x").replace("[0.0, 1.0, 0.0]", "[0.0, 0.0, 1.0]"))
    out = tmp_path / "run"
    netcdf = importlib.util.find_spec("h5netcdf") is not None  # absent on the GPU machine
    assert main(["fdtd", str(cfg), "--json"] + (["--out", str(out)] if netcdf else [])) == 0
    box = json.loads(capsys.readouterr().out.strip())["flux_boxes"][0]
    assert abs(box["flux_over_incident_intensity"][0]) < 1e-6
    cfg.write_text(base.replace("{d}", "-y").replace("[0.0, 1.0, 0.0]", "[1.0, 0.0, 0.0]"))
    assert main(["fdtd", str(cfg), "--json"]) == 0
    assert (
        abs(json.loads(capsys.readouterr().out.strip())["flux_boxes"][0]["flux_over_incident_intensity"][0])
        < 1e-6
    )
    if netcdf:  # the box's spectra are in the NetCDF file too
        ds = xr.open_dataset(out / "result.nc")
        np.testing.assert_allclose(ds["box0_cross_section"].values, box["flux_over_incident_intensity"])
        np.testing.assert_allclose(ds["box_frequency0"].values, [1.0])
    cfg.write_text(base.replace('"{d}"', "[0.3, 0.2, 1.0]").replace("polarization = [0.0, 1.0, 0.0]\n", ""))
    assert main(["fdtd", str(cfg), "--json"]) == 0  # oblique, default polarization projected
    box = json.loads(capsys.readouterr().out.strip())["flux_boxes"][0]
    assert abs(box["flux_over_incident_intensity"][0]) < 1e-4  # leak only (5e-7), no scatterer
    cfg.write_text(base.replace("{d}", "+w"))
    assert main(["fdtd", str(cfg)]) == 1
    assert "direction" in capsys.readouterr().err


def test_fdtd_out_of_core_from_toml(tmp_path, capsys):
    """``[run] out_of_core = true, th = 3`` runs the calculation window from the command
    line: the same probes and flux as the in-memory run of the same file (bit for bit on the
    CPU); the window keys are refused with out_of_core = false, and a bad value names the
    field and what is allowed."""
    from emjax.errors import ConfigError
    from emjax.fdtd.config import out_of_core_option

    base = (
        "[grid]\nshape = [21, 14, 14]\ndx = 0.05\npml_thickness = 4\n[run]\nsteps = 9\n{run}"
        '[[sources]]\ntype = "dipole"\nindex = [10, 7, 7]\ncomponent = "z"\nfrequency = 1.0\n'
        '[[probes]]\nindex = [15, 7, 7]\ncomponent = "z"\n'
    )
    cfg = tmp_path / "w.toml"
    results = []
    for run in ("", "out_of_core = true\nth = 3\n"):
        cfg.write_text(base.format(run=run))
        assert main(["fdtd", str(cfg), "--json"]) == 0
        results.append(json.loads(capsys.readouterr().out.strip()))
    assert results[0]["probes_max_abs"] == results[1]["probes_max_abs"] > 0
    assert out_of_core_option({"run": {"th": 4}}) == {"th": 4}
    assert out_of_core_option({"run": {"device_gb": 2}}) == {"device_bytes": 2_000_000_000}
    assert out_of_core_option({"run": {}}) is None and out_of_core_option({}) is None
    assert out_of_core_option({"run": {"out_of_core": True}}) is True
    assert out_of_core_option({"run": {"out_of_core": False}}) is False
    for bad, field in (
        ({"out_of_core": "yes"}, r"\[run\].out_of_core must be"),
        ({"out_of_core": 0}, r"\[run\].out_of_core must be"),
        ({"out_of_core": False, "th": 3}, r"\[run\].th and \[run\].device_gb"),
        ({"th": 0}, r"\[run\].th must be an integer in \[1"),
        ({"device_gb": -1}, r"\[run\].device_gb must be > 0"),
    ):
        with pytest.raises(ConfigError, match=field):
            out_of_core_option({"run": bad})
        cfg.write_text(base.format(run="".join(f"{k} = {json.dumps(v)}\n" for k, v in bad.items())))
        assert main(["fdtd", str(cfg)]) == 1
        err = capsys.readouterr().err
        assert "[run]." in err and "Traceback" not in err
