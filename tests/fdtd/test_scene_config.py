"""``emjax fdtd`` with a physical-unit TOML config ([simulation], [[objects]], ...)."""

import json
from pathlib import Path

import pytest

from emjax import ConfigError
from emjax.cli import main
from emjax.config import load_toml
from emjax.fdtd.scene_config import build_physical

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fdtd_sphere.toml"


def _small(tmp_path, **changes):
    text = (
        EXAMPLE.read_text()
        .replace("resolution = 41.9", "resolution = 21")
        .replace("until = 120", "until = 25")
        .replace("size = [0.96, 0.96, 0.96]", "size = [1.2, 1.2, 1.2]")
    )
    for old, new in changes.items():
        text = text.replace(old, new)
    path = tmp_path / "c.toml"
    path.write_text(text)
    return path


def test_example_config_maps_onto_the_api():
    """The example: a 0.96-wide region at 41.9 cells per unit (40 cells + 2 x 10 CPML), one
    sphere of eps 6, a TF/SF plane wave along +z polarized along x, cross sections."""
    sim, steps, until, _, _ = build_physical(load_toml(EXAMPLE))
    assert sim.grid.shape == (60, 60, 60) and steps is None and until == 120
    (obj,) = sim.scene.objects
    assert obj.shape.name == "sphere" and obj.material == (6.0,) and obj.size == pytest.approx(0.4775)
    assert sim.sources[0].direction == (0.0, 0.0, 1.0) and sim.averaging == "subpixel"


@pytest.mark.slow
def test_cli_runs_a_scene(tmp_path, capsys):
    """A short, coarse run through the command line: JSON with the cross-section spectra,
    result.nc, fdtd.png, spectra.json and the field plane's fields.nc and fields.png written."""
    pytest.importorskip("h5netcdf")  # a dependency of emjax, absent on the bare GPU machine
    out = tmp_path / "out"
    rc = main(["fdtd", str(_small(tmp_path)), "--json", "--out", str(out)])
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    cs = summary["cross_sections"]
    assert cs["frequency"] == [0.9, 1.0, 1.1] and all(c > 0 for c in cs["Csca"])
    names = {p.name for p in out.iterdir()}
    assert {"fdtd.png", "spectra.json", "fields.nc", "fields.png"} <= names
    assert "result.nc" in names and summary["field_planes"] == [str(out / "fields.nc")]


@pytest.mark.parametrize(
    "old, new, match",
    [
        ("eps = 6.0", "eps = 6.0\ncolour = 1", "objects\\[0\\].*unknown"),
        ('shape = "sphere"', 'shape = "blob"', "objects\\[0\\].shape"),
        ("eps = 6.0", "pec = true\neps = 6.0", "exactly one of"),
        ("until = 25", "", "steps or until"),
        ('type = "cross_sections"', 'type = "flux"', "monitors\\[0\\].type"),
        ("center = [0, 0, 0]\neps", "center = [0.25, 0, 0]\neps", "beyond the PlaneWaveSource box"),
    ],
)
def test_config_errors(tmp_path, old, new, match):
    """Typos and impossible set-ups: one ConfigError naming the key, before stepping."""
    path = _small(tmp_path, **{old: new})
    sim_or_error = None
    with pytest.raises(ConfigError, match=match):
        sim_or_error = build_physical(load_toml(path))
        sim_or_error[0].to_grid()


PHYSICAL_EXAMPLES = sorted(p for p in EXAMPLE.parent.glob("fdtd_*.toml") if "[simulation]" in p.read_text())


@pytest.mark.parametrize("path", PHYSICAL_EXAMPLES, ids=lambda p: p.name)
def test_physical_examples_build(path):
    """Every physical-unit FDTD example parses and compiles to the cell-index spec (a typo'd
    key, a source in the CPML or an object outside the region would fail here)."""
    sim, _, _, _, _ = build_physical(load_toml(path))
    grid_sim, names = sim.to_grid()
    assert grid_sim.grid.n_cells > 0 and (names or grid_sim.probes)


def test_unit_cell_example_maps_onto_the_api():
    """The unit-cell example: Bloch x (k from bloch_k), periodic y, CPML z; a plane_current
    sheet; a Drude film as a subpixel box spanning the one-cell axes with two-pole nodes; the
    probe's x, y wrap into the one-cell axes."""
    from emjax import fdtd

    sim, steps, _, _, _ = build_physical(load_toml(EXAMPLE.parent / "fdtd_unit_cell.toml"))
    b = sim.grid.boundary
    assert isinstance(b[0], fdtd.Bloch) and b[0].k == pytest.approx(2.618) and isinstance(b[1], fdtd.Periodic)
    assert isinstance(sim.sources[0], fdtd.PlaneCurrent) and steps == 14000
    g, names = sim.to_grid()
    assert g.subpixel is not None and g.subpixel.poles is not None and g.subpixel.shape[:2] == (1, 1)
    assert g.probes[0].index[:2] == (0, 0) and set(names) == {"R", "T"}


@pytest.mark.parametrize(
    "text, match",
    [
        ('boundary = ["bloch", "periodic"]', "one name or three"),
        ("bloch_k = [1, 0]", "bloch_k must be three numbers"),
        ("bloch_k = [1, 0, 0]", 'needs boundary = "bloch"'),
    ],
)
def test_bloch_config_errors(tmp_path, text, match):
    cfg = tmp_path / "c.toml"
    cfg.write_text(f"[simulation]\nsize = [1, 1, 1]\nresolution = 10\n{text}\n[run]\nsteps = 1\n")
    with pytest.raises(ConfigError, match=match):
        build_physical(load_toml(cfg))


def test_probe_outside_the_region(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text(
        "[simulation]\nsize = [1, 1, 1]\nresolution = 10\n"
        '[[probes]]\nposition = [0, 0, 0.8]\ncomponent = "x"\n[run]\nsteps = 1\n'
    )
    sim, *_ = build_physical(load_toml(cfg))
    with pytest.raises(ConfigError, match="probes\\[0\\].*outside the region along z"):
        sim.to_grid()


def test_polygon_shapes_from_toml(tmp_path):
    """``vertices`` reaches polygon (2-D) and polygon_prism objects."""
    cfg = tmp_path / "c.toml"
    for shape in ("polygon", "polygon_prism"):
        cfg.write_text(
            "[simulation]\nsize = [1, 1, 1]\nresolution = 10\n"
            f'[[objects]]\nshape = "{shape}"\nsize = 0.5\neps = 2.0\nvertices = [[0, 0], [1, 0], [0, 1]]\n'
            "[run]\nsteps = 1\n"
        )
        sim, *_ = build_physical(load_toml(cfg))
        assert sim.scene.objects[0].shape.name == shape
        assert sim.scene.objects[0].shape.vertices.shape == (3, 2)
