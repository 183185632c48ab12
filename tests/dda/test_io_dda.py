"""DDA results as xarray datasets, NetCDF/HDF5 files, ADDA-like text files and figures.

One small solve (a sphere on an 8^3 lattice, two scattering planes) feeds every test; the
checks are that what is written and read back equals the result's own arrays exactly
(float64 round trips through HDF5 are lossless) and that text files carry the values to
their stated 10 significant digits.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import numpy as np
import pytest

from emjax import dda, geometry
from emjax.dda.adda_files import mueller_plane_index, write_adda_outputs
from emjax.dda.datasets import dda_to_xarray
from emjax.errors import ConfigError
from emjax.io import save_dataset

xr = pytest.importorskip("xarray")


@pytest.fixture(scope="module")
def result():
    problem = dda.DDAProblem(
        geometry.Sphere(),
        m=(1.5 + 0.01j,),
        size_x=2.0,
        grid=8,
        theta=tuple(np.linspace(0, 180, 19)),
        phi=(0.0, 90.0),
    )
    return dda.solve(problem)


def test_dataset_layout(result):
    ds = dda_to_xarray(result)
    assert ds["Cext"].dims == ("polarization",)
    assert list(ds.polarization.values) == ["X", "Y"]
    assert ds["S_real"].dims == ("phi", "theta", "element")
    assert list(ds.element.values) == ["S1", "S2", "S3", "S4"]
    assert ds["mueller"].dims == ("phi", "theta", "row", "col")
    assert list(ds.row.values) == [1, 2, 3, 4]
    assert ds["degree_of_polarization"].dims == ("phi", "theta")
    assert ds.theta.attrs["units"] == "deg" and ds.phi.attrs["units"] == "deg"
    for name, var in ds.data_vars.items():
        assert "units" in var.attrs, name
    np.testing.assert_array_equal(ds["S_real"] + 1j * ds["S_imag"], result.S)
    np.testing.assert_array_equal(ds["mueller"], result.mueller)
    np.testing.assert_array_equal(ds["Cext"], result.Cext_xy)
    a = ds.attrs
    assert a["Qext"] == result.Qext and a["Qsca"] == result.Qsca and a["a_eq"] == result.a_eq
    assert a["n_dipoles"] == result.lattice.n_dipoles and list(a["grid"]) == [8, 8, 8]
    assert a["refractive_index"] == "1.5+0.01j"
    np.testing.assert_array_equal(ds["refractive_index_imag"], [0.01])
    assert a["shape"] == "sphere" and a["precision"] == "double"
    assert a["polarizability"].startswith("LDR") and len(a["solver_messages"]) == 2


def test_residual_histories_are_nan_padded(result):
    h = result.residual_history[0]
    short = dataclasses.replace(result, residual_history=(h, h[:3]))
    rh = dda_to_xarray(short)["residual_history"].values
    assert rh.shape == (2, len(h))
    np.testing.assert_array_equal(rh[0], h)
    np.testing.assert_array_equal(rh[1, :3], h[:3])
    assert np.all(np.isnan(rh[1, 3:]))


@pytest.mark.parametrize("suffix", [".nc", ".h5"])
def test_round_trip(result, tmp_path, suffix):
    path = result.save(tmp_path / f"result{suffix}")
    assert path.exists()
    ds = result.to_xarray()
    with xr.open_dataset(path, engine="h5netcdf") as back:
        back = back.load()
    assert set(back.data_vars) == set(ds.data_vars)
    for name in ds.variables:
        np.testing.assert_array_equal(back[name].values, ds[name].values, err_msg=name)
        assert back[name].attrs == ds[name].attrs, name
    for key in ("Qext", "Qabs", "Qsca", "a_eq", "wavelength", "dipole_size", "shape"):
        assert back.attrs[key] == ds.attrs[key], key
    assert back.attrs["refractive_index"] == "1.5+0.01j"
    np.testing.assert_array_equal(back.attrs["iterations"], result.iterations)
    assert back.attrs["all_converged"] == 1


def test_save_splits_complex_and_checks_suffix(tmp_path):
    ds = xr.Dataset(
        {"E": ("x", np.array([1 + 2j, 3 - 4j]), {"units": "V/m"})},
        attrs={"ok": True, "missing": None},
    )
    path = save_dataset(ds, tmp_path / "field.nc")
    with xr.open_dataset(path, engine="h5netcdf") as back:
        np.testing.assert_array_equal(back["E_real"], [1, 3])
        np.testing.assert_array_equal(back["E_imag"], [2, -4])
        assert back["E_imag"].attrs["units"] == "V/m"
        assert back.attrs["ok"] == 1 and "missing" not in back.attrs
    with pytest.raises(ConfigError, match="path must end in"):
        save_dataset(ds, tmp_path / "field.csv")


def test_adda_text_outputs(result, tmp_path):
    write_adda_outputs(result, tmp_path, command="emjax dda --grid 8")
    for i, pol in enumerate(("X", "Y")):
        lines = (tmp_path / f"CrossSec-{pol}").read_text().splitlines()
        values = dict(line.split("\t= ") for line in lines)
        assert list(values) == ["Cext", "Qext", "Cabs", "Qabs", "Csca", "Qsca", "g"]
        assert float(values["Cext"]) == pytest.approx(result.Cext_xy[i], rel=1e-9)
        assert float(values["Qabs"]) == pytest.approx(
            result.Cabs_xy[i] / result.geometric_cross_section, rel=1e-9
        )
        assert float(values["g"]) == pytest.approx(result.g_xy[i], rel=1e-9)
    assert mueller_plane_index(result.phi) == 1  # the yz plane, phi = 90
    m = np.loadtxt(tmp_path / "mueller", skiprows=1)
    assert m.shape == (19, 17)
    np.testing.assert_allclose(
        m[:, 1:],
        result.mueller[1].reshape(19, 16),
        rtol=1e-9,
        atol=1e-9 * result.mueller[1, :, 0, 0].max(),
    )
    log = (tmp_path / "log").read_text()
    for text in (
        "emjax dda --grid 8",
        "lattice: 8x8x8",
        "Dipoles/lambda",
        "alpha X",
        "iterations",
        "Timing",
    ):
        assert text in log, text


def test_outputs_without_integration(result, tmp_path):
    bare = dataclasses.replace(result, Csca_int_xy=None, g_xy=None)
    ds = bare.to_xarray()
    assert "Csca_integrated" not in ds and "g" not in ds
    write_adda_outputs(bare, tmp_path)
    names = [line.split("\t")[0] for line in (tmp_path / "CrossSec-X").read_text().splitlines()]
    assert names == ["Cext", "Qext", "Cabs", "Qabs"]
    bare.save(tmp_path / "bare.nc")


def test_mueller_plot(result, tmp_path):
    pytest.importorskip("matplotlib")
    from emjax.dda.plot import plot_mueller

    path = plot_mueller(result, tmp_path / "m.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_modules_import_without_xarray_or_matplotlib():
    code = (
        "import sys; sys.modules['xarray'] = None; sys.modules['matplotlib'] = None; "
        "import emjax.io, emjax.plot, emjax.cli, emjax.dda.plot, emjax.dda.datasets; print('ok')"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
