"""File shapes in configs: ``shape = "stl"`` and ``shape = "gds"`` objects in the FDTD's and
the FDFD's TOML (paths relative to the TOML file), ``emjax dda --shape stl --file``; bad
keys refused in one line naming them."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from emjax import geometry
from emjax.cli import main
from emjax.config import load_toml
from emjax.errors import ConfigError

trimesh = pytest.importorskip("trimesh")
gdstk = pytest.importorskip("gdstk")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fdtd_sphere.toml"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """parts/ball.stl (an icosphere of radius 0.2 at (0.05, 0, 0)) and parts/chip.gds
    (layer 1: two rectangles)."""
    d = tmp_path_factory.mktemp("cad")
    (d / "parts").mkdir()
    m = trimesh.creation.icosphere(subdivisions=3, radius=0.2)
    m.apply_translation((0.05, 0.0, 0.0))
    m.export(d / "parts" / "ball.stl")
    lib = gdstk.Library()
    cell = lib.new_cell("TOP")
    cell.add(gdstk.rectangle((-0.3, -0.2), (0.3, -0.1), layer=1))
    cell.add(gdstk.rectangle((-0.3, 0.1), (0.2, 0.25), layer=1))
    lib.write_gds(d / "parts" / "chip.gds")
    return d


def _fdtd_config(folder: Path, obj: str) -> Path:
    text = EXAMPLE.read_text()
    start = text.index("[[objects]]")
    end = text.index("[[sources]]")
    path = folder / "c.toml"
    path.write_text(text[:start] + obj + "\n" + text[end:])
    return path


def test_fdtd_stl_and_gds_objects(files):
    from emjax.fdtd.scene_config import build_physical

    path = _fdtd_config(files, '[[objects]]\nshape = "stl"\nfile = "parts/ball.stl"\neps = 4.0\n')
    sim = build_physical(load_toml(path), path.parent)[0]
    (obj,) = sim.scene.objects
    assert isinstance(obj.shape, geometry.Mesh) and obj.material == (4.0,)
    np.testing.assert_allclose(obj.center, (0.05, 0, 0), atol=1e-6)
    assert obj.size == pytest.approx(0.4, abs=1e-6)
    path = _fdtd_config(
        files,
        '[[objects]]\nshape = "stl"\nfile = "parts/ball.stl"\nscale = 0.5\ncenter = [0, 0.1, 0]\neps = 4.0\n'
        '[[objects]]\nshape = "gds"\nfile = "parts/chip.gds"\nlayer = 1\nz = [-0.1, 0.12]\nmaterial = "Si"\n',
    )
    text = path.read_text().replace("[simulation]", '[simulation]\nunit = "um"')
    path.write_text(text)
    sim = build_physical(load_toml(path), path.parent)[0]
    ball, *rects = sim.scene.objects
    assert ball.center == (0.0, 0.1, 0.0) and ball.size == pytest.approx(0.2, abs=1e-6)
    assert len(rects) == 2 and all(isinstance(o.shape, geometry.PolygonPrism) for o in rects)
    lo, hi = rects[1].bounds()
    np.testing.assert_allclose(np.concatenate([lo, hi]), [-0.3, 0.1, -0.1, 0.2, 0.25, 0.12], atol=1e-12)
    assert rects[0].material[0] is rects[1].material[0]  # one library material, shared


@pytest.mark.parametrize(
    "obj, message",
    [
        (
            'shape = "stl"\nfile = "parts/none.stl"\neps = 4.0',
            r"objects\[0\]\.file = 'parts/none.stl': no such",
        ),
        (
            'shape = "stl"\nfile = "parts/ball.stl"\nlayer = 1\neps = 4.0',
            r"layer do not apply to shape 'stl'",
        ),
        ('shape = "sphere"\nsize = 0.2\nfile = "parts/ball.stl"\neps = 4.0', r"\['file'\] apply to shapes"),
        ('shape = "gds"\nfile = "parts/chip.gds"\nlayer = 1\neps = 4.0', r"objects\[0\]\.z"),
        (
            'shape = "gds"\nfile = "parts/chip.gds"\nlayer = 1\nz = [0, 0.1]\nsidewall_angle = 3\neps = 4',
            "vertical",
        ),
        (
            'shape = "gds"\nfile = "parts/chip.gds"\nlayer = 1\nz = [0, 0.1]\nsize = 1\neps = 4',
            "leave out size",
        ),
    ],
)
def test_fdtd_bad_file_objects(files, obj, message):
    from emjax.fdtd.scene_config import build_physical

    path = _fdtd_config(files, "[[objects]]\n" + obj + "\n")
    with pytest.raises(ConfigError, match=message):
        build_physical(load_toml(path), path.parent)


FDFD_2D = {
    "dims": 2,
    "wavelength": 1.0,
    "resolution": 20,
    "size": [2.0, 2.0],
    "pml_cells": 8,
    "objects": [{"shape": "gds", "file": "parts/chip.gds", "layer": 1, "eps": 4.0}],
}


def test_fdfd_gds_in_2d_and_stl_in_3d(files):
    from emjax.fdfd.config import build_fdfd

    p = build_fdfd(copy.deepcopy(FDFD_2D), files)
    assert [type(o.shape) for o in p.scene.objects] == [geometry.Polygon] * 2
    assert p.features == pytest.approx((0.1, 0.15))
    bad = copy.deepcopy(FDFD_2D)
    bad["objects"][0]["z"] = [0, 1]
    with pytest.raises(ConfigError, match=r"unknown key\(s\) \[.z.\]"):
        build_fdfd(bad, files)
    cfg = {
        "dims": 3,
        "wavelength": 1.0,
        "resolution": 10,
        "polarization": [1, 0, 0],
        "direction": [0, 0, 1],
        "size": [2.0, 2.0, 2.0],
        "objects": [{"shape": "stl", "file": "parts/ball.stl", "size": 0.6, "eps": 2.0}],
        "solver": {"type": "qmr"},
    }
    (obj,) = build_fdfd(cfg, files).scene.objects
    assert isinstance(obj.shape, geometry.Mesh) and obj.size == 0.6


@pytest.mark.slow  # the DDA reading an STL is checked by tests/cad/test_mesh.py too
def test_dda_cli_reads_an_stl(files, capsys):
    """``emjax dda --shape stl --file``: the size is the file's (0.4) unless given; a config's
    ``file`` is relative to the config."""
    stl = files / "parts" / "ball.stl"
    args = ["dda", "--shape", "stl", "--file", str(stl), "--grid", "8", "--ntheta", "19", "--json"]
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["n_dipoles"] == 280 and summary["grid"] == [8, 8, 8]  # the 8^3 sphere's count
    (files / "d.toml").write_text('shape = "stl"\nfile = "parts/ball.stl"\ngrid = 8\nntheta = 19\n')
    assert main(["dda", str(files / "d.toml"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["Qext"] == pytest.approx(summary["Qext"], rel=1e-12)
    assert main(["dda", "--shape", "stl", "--grid", "8"]) == 1
    assert "--shape stl needs --file" in capsys.readouterr().err
    assert main(["dda", "--shape", "sphere", "--file", str(stl), "--grid", "8"]) == 1
    assert "file applies to shape(s) stl only" in capsys.readouterr().err
