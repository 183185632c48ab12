"""Results say what they are: the physical-unit FDTD result holds the cross sections and each
monitor under the name the config gave it, and the steps run; no all-NaN field stands in for
one that was not computed; perfect conductors are described where they show; FDTD figures
have no empty panel and lengths on their axes.

Units: every variable and coordinate of every NetCDF file each command writes has a ``units``
attribute (``"1"`` for dimensionless ones), checked by ``tests.netcdf_units.assert_units`` on
the folders of the command tests that write them (each on a small config, no run twice):
``emjax dda`` (tests/dda/test_cli_dda.py: test_out_netcdf, and --orient avg in
test_orient_avg_json_and_adda_files), ``emjax fdtd`` on cell indices
(tests/fdtd/test_cli_fdtd.py::test_fdtd_example_runs_and_writes) and in physical units with
a field plane (here), ``emjax fdfd`` 2-D TE (tests/fdfd/test_cli.py::test_out_files_and_monostatic_te),
2-D TM with a conductor (here) and 3-D (tests/fdfd/test_cli.py::test_not_converged_exit_2),
``emjax layered`` (tests/layered/test_cli_layered.py::test_layered_config_runs_and_writes)."""

import json
from pathlib import Path

import numpy as np
import pytest

from emjax.cli import main
from tests.netcdf_units import assert_units

xr = pytest.importorskip("xarray")
pytest.importorskip("h5netcdf")

FDTD_SCENE = """\
[simulation]
size = [1.6, 1.6, 1.6]
resolution = 10
pml_thickness = 4
[[objects]]
shape = "sphere"
size = 0.3
center = [0, 0, 0]
eps = 4.0
[[sources]]
type = "plane_wave"
center = [0, 0, 0]
size = [0.8, 0.8, 0.8]
direction = [0, 0, 1]
polarization = [1, 0, 0]
frequency = 1.0
bandwidth = 0.5
[[monitors]]
type = "cross_sections"
frequencies = [0.9, 1.0]
[[monitors]]
type = "field_plane"
name = "xz cut"
center = [0, 0, 0]
size = [1.0, 0, 1.0]
frequencies = [1.0]
[[monitors]]
type = "flux_plane"
name = "behind"
center = [0, 0, 0.55]
size = [1.0, 1.0, 0]
frequencies = [1.0, 1.1]
[[monitors]]
type = "flux_box"
name = "around"
center = [0, 0, 0]
size = [1.1, 1.1, 1.1]
frequencies = [1.0]
[[probes]]
position = [0.2, 0, 0.5]
component = "x"
[run]
until = 100
chunk = 5
"""

FDFD_2D_PEC = """\
dims = 2
wavelength = 1.0
resolution = 10
polarization = "TM"
direction = [1.0, 0.0]
size = [1.6, 1.6]
pml_cells = 8
[[objects]]
shape = "cylinder"
center = [0.0, 0.0]
radius = 0.3
material = "pec"
[rcs]
angles = 5
[monostatic]
angles = 2
"""


def _config(tmp_path, name, text) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_fdtd_scene_result_names_and_steps(tmp_path, capsys, monkeypatch):
    """The physical-unit result.nc: Csca, Cabs, Cext (length^2) equal to the JSON's; each
    flux monitor under its config name with its spectrum; the field plane in its own file;
    ``steps`` the steps run (not only the timed ones); the figure has no empty panel and
    |E| over x and y in length."""
    import emjax.fdtd.plot as plot

    figures, real = [], plot.save_figure

    def keep(fig, path, **kw):
        figures.append(fig)
        return real(fig, path, **kw)

    monkeypatch.setattr(plot, "save_figure", keep)
    cfg = _config(tmp_path, "scene.toml", FDTD_SCENE)
    out = tmp_path / "out"
    assert main(["fdtd", str(cfg), "--steps", "12", "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    with xr.open_dataset(out / "result.nc") as ds:
        for key in ("Csca", "Cabs", "Cext"):
            assert ds[key].attrs["units"] == "length^2"
            assert np.allclose(ds[key].values, summary["cross_sections"][key], rtol=1e-12)
        assert np.allclose(ds["frequency"].values, [0.9, 1.0])
        assert np.allclose(ds["behind"].values, summary["behind"]["flux"], rtol=1e-12)
        assert np.allclose(ds["behind_frequency"].values, [1.0, 1.1])
        assert np.allclose(ds["around"].values, summary["around"]["flux"], rtol=1e-12)
        assert "towards +z" in ds["behind"].attrs["long_name"]
        assert not [v for v in ds.data_vars if v.startswith("flux")]
        assert ds.attrs["steps"] == 12 and ds.attrs["timed_steps"] < 12
        assert ds["probes"].shape == (12, 1) and list(ds["probe_field"].values) == ["Ex"]
        assert abs(float(ds["probe_x"][0]) - 0.2) <= 0.05 and abs(float(ds["probe_z"][0]) - 0.5) <= 0.05
        assert ds["x"].values[0] == pytest.approx(-0.8 - 4 * 0.1)  # the CPML's outer corner
    assert (out / "xz cut.nc").is_file() and (out / "xz cut.png").is_file()
    assert assert_units(out) == ["result.nc", "xz cut.nc"]
    with xr.open_dataset(out / "xz cut.nc") as fields:
        assert "perfect conductor (PEC)" in fields["Ex_real"].attrs["long_name"]
        assert fields["x"].attrs["units"] == "length" and fields["frequency"].attrs["units"] == "1 / length"
    (fig,) = [f for f in figures if any(ax.get_title() == "cross sections" for ax in f.axes)]
    panels = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert len(panels) == 5  # probe, probe spectrum, cross sections, flux monitors, |E|
    for ax in panels:
        assert ax.lines or ax.images, ax.get_title()
    labels = {line.get_label() for ax in panels for line in ax.lines}
    assert {"Csca", "Cabs", "Cext", "behind", "around"} <= labels
    assert panels[-1].get_xlabel() == "x (length)" and panels[-1].get_ylabel() == "y (length)"
    assert panels[-1].images[0].get_extent()[0] == pytest.approx(-1.25)


def test_fdfd_pec_nodes_are_described(tmp_path, capsys):
    """2-D TM around a perfect conductor: eps is inf at the nodes inside, and says so; E_z
    is 0 there."""
    out = tmp_path / "out"
    assert main(["fdfd", str(_config(tmp_path, "pec.toml", FDFD_2D_PEC)), "--out", str(out)]) == 0
    capsys.readouterr()
    assert assert_units(out) == ["fields.nc", "rcs.nc"]
    with xr.open_dataset(out / "fields.nc") as ds:
        inside = np.isinf(ds["eps_real"].values)
        assert inside.any()
        assert "perfect conductor (PEC)" in ds["eps_real"].attrs["long_name"]
        assert "inf" in ds["eps_real"].attrs["long_name"]
        assert np.all(ds["Ez_real"].values[inside] == 0) and np.all(ds["Ez_imag"].values[inside] == 0)


def test_layered_field_not_computed_is_left_out():
    """dipole_fields(fields="E") leaves H as NaN: the dataset has no H (nor an all-NaN
    one) and says which fields it holds."""
    from emjax.layered import Stack
    from emjax.layered.results import DipoleFields, layered_to_xarray

    n = 6
    E = np.arange(3 * n).reshape(n, 3) + 1j
    res = DipoleFields(
        Stack(eps=[2.25, 1.0]),
        600.0,
        np.zeros(3),
        np.array([0, 0, 1.0]),
        np.column_stack([np.arange(n), np.zeros(n), np.ones(n)]).astype(float),
        E,
        np.full((n, 3), np.nan + 0j),
        np.zeros(n),
        "scattered",
    )
    ds = layered_to_xarray(res)
    assert "H" not in ds and np.array_equal(ds["E"].values, E) and ds.attrs["fields"] == "E"
    grid = layered_to_xarray(res, (3, 2), ("x", "z"))
    assert "H" not in grid and grid["E"].shape == (3, 2, 3)
    assert grid["x"].attrs["units"] == "length" and grid["component"].attrs["units"] == "1"
