"""Mirror symmetry from the physical TOML config: ``[simulation].symmetry`` through the
command line gives the full-domain run's summary, and bad values get one line naming the
key."""

import json
from pathlib import Path

import pytest

from emjax import ConfigError
from emjax.cli import main
from emjax.config import load_toml
from emjax.fdtd.scene_config import build_physical

CONFIG = """
[simulation]
size = [1.4, 1.5, 1.4]        # 14, 15, 14 cells: even along x (odd plane), odd along y (even plane)
resolution = 10
pml_thickness = 5
precision = "double"
{symmetry}

[[objects]]
shape = "sphere"
size = 0.4
eps = 4.0

[[sources]]
type = "plane_wave"           # along z, polarized along x: odd under the x mirror, even under y
size = [0.8, 0.9, 0.8]
frequency = 1.0
bandwidth = 0.5

[[monitors]]
type = "cross_sections"
frequencies = [0.8, 1.0, 1.2]
gap_out = 2
gap_in = 2

[[monitors]]
type = "flux_plane"
name = "T"
center = [0, 0, 0.3]
size = [0.4, 0.5, 0]
frequencies = [1.0]

[run]
steps = 60
"""


def _config(tmp_path, symmetry: str) -> Path:
    path = tmp_path / f"c{abs(hash(symmetry))}.toml"
    path.write_text(CONFIG.format(symmetry=symmetry))
    return path


def _summary(tmp_path, capsys, symmetry: str) -> dict:
    path = _config(tmp_path, symmetry)
    out = tmp_path / f"out{abs(hash(symmetry))}"
    assert main(["fdtd", str(path), "--json", "--out", str(out)]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.slow
def test_cli_symmetry_matches_full_domain(tmp_path, capsys):
    """A dielectric sphere under a plane wave on a quarter of the domain (symmetry =
    [-1, 1, 0]): the cross sections, the flux plane's spectrum equal the
    full run's to rounding; the summary names the planes and the reduced grid that ran."""
    pytest.importorskip("h5netcdf")
    full = _summary(tmp_path, capsys, "")
    half = _summary(tmp_path, capsys, "symmetry = [-1, 1, 0]")
    assert "symmetry" not in full and half["symmetry"] == [-1, 1, 0]
    assert full["grid"] == half["grid"] == [24, 25, 24] and half["grid_run"] == [12, 13, 24]
    for key in ("Csca", "Cabs", "Cext"):
        f, h = full["cross_sections"][key], half["cross_sections"][key]
        assert max(abs(a - b) for a, b in zip(f, h)) <= 1e-9 * max(abs(a) for a in f)
    assert all(c > 0 for c in full["cross_sections"]["Csca"])
    assert half["T"]["flux"] == pytest.approx(full["T"]["flux"], rel=1e-9)


@pytest.mark.parametrize(
    "value, match",
    [
        ("[0, 2, 0]", r"^\[simulation\]\.symmetry must be three values, each 0 \(none\), -1 .* or \+1"),
        ("[0, 1]", r"^\[simulation\]\.symmetry must be three values"),
        ("[0, 0.5, 0]", r"^\[simulation\]\.symmetry must be three values"),
        ('"odd"', r"^\[simulation\]\.symmetry must be three values"),
        ("[true, 0, 0]", r"^\[simulation\]\.symmetry must be three values"),
        ("[1, 0, 0]", r"^\[simulation\]: symmetry \+1 along x: .* an odd number of cells"),
        ("[0, 0, -1]", r"^\[simulation\]: symmetry: a PlaneWaveSource .* travels parallel"),
    ],
)
def test_bad_symmetry_refused(tmp_path, value, match):
    with pytest.raises(ConfigError, match=match) as info:
        build_physical(load_toml(_config(tmp_path, f"symmetry = {value}")))
    assert "\n" not in str(info.value)


def test_symmetry_reaches_the_simulation(tmp_path):
    sim = build_physical(load_toml(_config(tmp_path, "symmetry = [-1, 1, 0]")))[0]
    assert sim.symmetry == (-1, 1, 0)


def test_gap_in_below_two_refused(tmp_path):
    """One cell inside the TF/SF surface the inner box reads fields the surface's correction
    acts on (an empty scene "absorbed" 20% of the incident power, and the mirror-symmetric
    run differed from the full one): gap_in >= 2, from Python and from TOML."""
    from emjax import fdtd

    with pytest.raises(ConfigError, match=r"CrossSections.gap_in must be an integer >= 2"):
        fdtd.CrossSections([1.0], gap_in=1)
    text = CONFIG.format(symmetry="").replace("gap_in = 2", "gap_in = 1")
    path = tmp_path / "g.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=r"^monitors\[0\]\.gap_in must be an integer in \[2, inf\], got 1$"):
        build_physical(load_toml(path))
