"""`emjax layered CONFIG.toml` and `emjax bench layered` in-process."""

import json
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from emjax.cli import main
from tests.netcdf_units import assert_units

EXAMPLE = Path(__file__).parents[2] / "examples" / "layered_dipole.toml"


def _small_config(tmp_path, **overrides):
    text = EXAMPLE.read_text().replace("points = [128, 128]", "points = [12, 10]")
    for key, value in overrides.items():
        text = text.replace(key, value)
    cfg = tmp_path / "small.toml"
    cfg.write_text(text)
    return cfg


def test_layered_config_runs_and_writes(tmp_path, capsys):
    """The example config on a 12 x 10 map: NetCDF with E on the (x, z) grid, the PNG, and
    the JSON summary; the field equals the Python API's at the same points."""
    out = tmp_path / "run"
    assert main(["layered", str(_small_config(tmp_path)), "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out.strip())
    assert summary["points"] == 120 and summary["max_error_estimate"] < 1e-7
    ds = xr.open_dataset(out / "fields.nc")
    assert ds["E_real"].shape == (12, 10, 3)
    assert assert_units(out) == ["fields.nc"]
    assert np.allclose(ds["x"].values, np.linspace(-64, 63, 12))
    assert (out / "fields.png").stat().st_size > 10_000

    from emjax.layered import Stack, dipole_fields

    x, z = ds["x"].values[3], ds["z"].values[7]
    r = dipole_fields(Stack(eps=[2.25, 1.0]), 600.0, (0, 0, 10.0), [[x, 0.0, z]], part="scattered")
    E = ds["E_real"].values[3, 7] + 1j * ds["E_imag"].values[3, 7]
    assert np.allclose(E, r.E[0], rtol=1e-7, atol=1e-7 * np.abs(r.E).max())


def test_layered_bad_config(tmp_path, capsys):
    cfg = _small_config(tmp_path, **{'plane = "xz"': 'plane = "xq"'})
    assert main(["layered", str(cfg)]) == 1
    assert "plane" in capsys.readouterr().err
    cfg = _small_config(tmp_path, **{"n = [1.5, 1.0]": "n = [1.5, 1.0]\neps = [2.25, 1.0]"})
    assert main(["layered", str(cfg)]) == 1
    assert "exactly one of eps or n" in capsys.readouterr().err
    cfg = _small_config(tmp_path, **{"rtol = 1e-8": "rtol = 2.0"})
    assert main(["layered", str(cfg)]) == 1
    assert "rtol" in capsys.readouterr().err


@pytest.mark.slow
def test_bench_layered_json(capsys):
    assert main(["bench", "layered", "--size", "8", "--rtol", "1e-6", "--json"]) == 0
    r = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert {"seconds", "points_per_s", "max_error_normwise", "device"} <= set(r)
    assert r["points"] == 64 and r["max_error_normwise"] < 1e-6
