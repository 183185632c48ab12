"""``emjax dda --surf H M`` / ``--prop X,Y,Z`` / a ``[substrate]`` table.

The command layer only: the flags reach DDAProblem as the Python API's arguments (the
numbers then equal ADDA's, see test_surface_parity.py), --json carries the per-polarization
cross sections, and bad input fails with exit status 1 and a message naming the field.
"""

from __future__ import annotations

import json

import pytest

from emjax.cli import main

CUBE = [
    "dda",
    "--shape",
    "box",
    "--size",
    "1",
    "--grid",
    "6",
    "--m",
    "2+1j",
    "--no-integrate",
    "--ntheta",
    "3",
]
PROP30 = "0.5,0,-0.8660254037844386"


def run(capsys, args):
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.slow
def test_surf_json_matches_adda_cube(capsys):
    """cube_metal_oblique30 of the ADDA data through the command line: Qext X/Y within 5e-5
    of ADDA (the API reaches 5.1e-6, test_surface_parity.py)."""
    from pathlib import Path

    ref = json.loads((Path(__file__).parent / "data/adda_surface/adda_surface.json").read_text())
    case = ref["cases"]["cube_metal_oblique30"]
    rc, out, _ = run(
        capsys, [*CUBE, "--surf", "0.55", "0.2+3j", "--prop", PROP30, "--rtol", "1e-10", "--json"]
    )
    assert rc == 0
    r = json.loads(out)
    G = r["Cext"] / r["Qext"]
    assert abs(r["Cext_x"] / G - case["X"]["Qext"]) < 5e-5
    assert abs(r["Cext_y"] / G - case["Y"]["Qext"]) < 5e-5
    assert abs(r["Cabs_x"] / G - case["X"]["Qabs"]) < 5e-5
    assert abs(r["Cabs_y"] / G - case["Y"]["Qabs"]) < 5e-5
    assert r["Cext"] == pytest.approx(0.5 * (r["Cext_x"] + r["Cext_y"]), rel=1e-12)


def test_substrate_table_in_toml(capsys, tmp_path):
    """A [substrate] table whose film has the substrate's index equals --surf (1e-7 of Q)."""
    cfg = tmp_path / "c.toml"
    cfg.write_text(
        'prop = [0, 0, -1]\n[substrate]\nheight = 0.55\nn = ["1", "1.5", "1.5"]\nthickness = [0.2]\n'
    )
    rc, out, _ = run(capsys, [*CUBE, "--config", cfg, "--rtol", "1e-10", "--json"])
    assert rc == 0
    a = json.loads(out)
    rc, out, _ = run(
        capsys, [*CUBE, "--surf", "0.55", "1.5", "--prop", "0,0,-1", "--rtol", "1e-10", "--json"]
    )
    b = json.loads(out)
    assert abs(a["Qext"] - b["Qext"]) < 1e-7 and abs(a["Qabs"] - b["Qabs"]) < 1e-7


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--surf", "0.3", "1.5", "--prop", "0,0,-1"], "height = 0.3.*allowed: height >= 0.5"),
        (["--surf", "0.6", "1.5", "--prop", "1,0,0"], "prop_z = 0"),
        (["--surf", "0.6", "abc"], "surf M"),
        (["--surf", "0.6", "1.5-0.1j", "--prop", "0,0,-1"], "substrate"),
        (["--surf", "0.6", "0.2+3j", "--prop", "0,0,1"], "lossless"),
        (["--prop", "1,0"], "prop: expected three numbers"),
        (["--prop", "0,0,0"], "prop"),
        (["--surf", "x", "1.5"], "surf: the height"),
    ],
)
def test_bad_surface_input_names_the_field(capsys, extra, message):
    import re

    rc, _, err = run(capsys, [*CUBE, *extra])
    assert rc == 1
    assert re.search(message, err), err


def test_orientation_average_refuses_a_substrate(capsys):
    rc, _, err = run(capsys, [*CUBE, "--surf", "0.6", "1.5", "--orient", "avg"])
    assert rc == 1 and "substrate" in err
    rc, _, err = run(capsys, [*CUBE, "--prop", "0,0,-1", "--orient", "avg"])
    assert rc == 1 and "prop" in err


def test_out_files_of_a_surface_run(capsys, tmp_path):
    """--out on a substrate: result.nc carries prop, substrate, height and Csca per
    hemisphere; ADDA's files and the figure are written."""
    import xarray as xr

    args = [a for a in CUBE if a != "--no-integrate"]
    rc, _, _ = run(capsys, [*args, "--surf", "0.55", "1.5", "--prop", PROP30, "--out", tmp_path])
    assert rc == 0
    for name in ("result.nc", "CrossSec-X", "CrossSec-Y", "mueller", "log", "mueller.png"):
        assert (tmp_path / name).exists(), name
    with xr.open_dataset(tmp_path / "result.nc") as ds:
        assert ds.attrs["height"] == 0.55 and "1.5" in ds.attrs["substrate"]
        assert ds["Csca_up"].shape == (2,) and ds["Csca_down"].shape == (2,)
