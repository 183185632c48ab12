"""Bad physical-unit FDTD TOML configs ([simulation] form): each refused while parsing (no
grid is built, nothing rasterized) with a one-line ConfigError naming the field by its table
path and what is allowed."""

import copy
import warnings

import pytest
from config_edit import edited

from emjax import ConfigError
from emjax.fdtd.scene_config import build_physical

BASE = {
    "simulation": {"size": [1.0, 1.0, 1.0], "resolution": 20, "pml_thickness": 8},
    "objects": [{"shape": "sphere", "size": 0.4, "eps": 4.0}],
    "sources": [
        {"type": "plane_wave", "center": [0, 0, 0], "size": [0.7, 0.7, 0.7], "frequency": 1.0},
        {"type": "dipole", "position": [0.3, 0.3, 0.3], "component": "x", "frequency": 1.0},
    ],
    "monitors": [
        {"type": "cross_sections", "frequencies": [0.9, 1.0]},
        {
            "type": "flux_plane",
            "name": "p",
            "center": [0, 0, 0.45],
            "size": [1.0, 1.0, 0],
            "frequencies": [1.0],
        },
    ],
    "probes": [{"position": [0, 0, 0.4], "component": "x"}],
    "run": {"until": 10.0},
}


def _with(path, value):
    return edited(BASE, path, value)


S, O, SRC, M = "simulation", "objects", "sources", "monitors"
CASES = [
    ((S,), KeyError, r"^\[simulation\] (or \[grid\] )?is required"),
    ((S, "size"), [1.0, 1.0], r"^\[simulation\]\.size must be a list of 3 numbers"),
    ((S, "size"), [1.0, 0.0, 1.0], r"^\[simulation\]\.size\[1\] must be > 0"),
    ((S, "size"), KeyError, r"^\[simulation\]\.size is required"),
    ((S, "resolution"), 0, r"^\[simulation\]\.resolution must be > 0"),
    ((S, "resolution"), "20", r"^\[simulation\]\.resolution must be a number > 0"),
    ((S, "resolution"), 1.5, r"^sources\[0\]: frequency 1.5 gives 0.5 cells per wavelength"),
    ((S, "boundary"), "open", r"^\[simulation\]\.boundary must be one of cpml, pec, periodic, bloch"),
    ((S, "boundary"), ["cpml", "pec"], r"^\[simulation\]\.boundary must be one name or three"),
    ((S, "pml_thickness"), 0, r"^\[simulation\]\.pml_thickness must be an integer in \[1, inf\]"),
    ((S, "averaging"), "smooth", r"^\[simulation\]\.averaging must be one of subpixel, diagonal, staircase"),
    ((S, "precision"), "half", r"^\[simulation\]\.precision must be one of single, double"),
    ((S, "courant"), 2.0, r"^\[simulation\]\.courant must be a number in \(0, 1.0\]"),
    ((S, "background"), 0.5, r"^\[simulation\]\.background must be a number in \[1.0, inf\]"),
    ((S, "bloch_k"), [1, 0, 0], r'^\[simulation\]\.bloch_k needs boundary = "bloch"'),
    ((S, "colour"), 1, r"^\[simulation\]: unknown key\(s\) \['colour'\]; allowed: \['averaging'"),
    (("colour",), 1, r"^config: unknown key\(s\) \['colour'\]"),
    ((O, 0, "shape"), "blob", r"^objects\[0\]\.shape must be one of box, coated, cylinder"),
    ((O, 0, "size"), KeyError, r"^objects\[0\]\.size is required"),
    ((O, 0, "size"), -0.4, r"^objects\[0\]\.size must be > 0"),
    ((O, 0, "eps"), "glass", r"^objects\[0\]\.eps must be a finite number in \[1.0, inf\]"),
    ((O, 0, "eps"), 0.5, r"^objects\[0\]\.eps must be a number in \[1.0, inf\]"),
    ((O, 0, "eps"), KeyError, r"^objects\[0\]: give exactly one of eps, pec, drude, lorentz"),
    ((O, 0, "pec"), True, r"^objects\[0\]: give exactly one of eps, pec, drude, lorentz"),
    (
        (O, 0, "center"),
        [5.0, 0.0, 0.0],
        r"^objects\[0\] spans x = 4.8 .. 5.2, outside the region -0.5 .. 0.5",
    ),
    ((O, 0, "center"), [0.0, 0.0], r"^objects\[0\]\.center must be a list of 3 numbers"),
    ((O, 0, "rotation"), [0, 90], r"^objects\[0\]\.rotation must be a list of 3 numbers"),
    ((O, 0, "radius"), 0.2, r"^objects\[0\]: unknown key\(s\) \['radius'\]; allowed: \['aspect'"),
    ((O, 0, "aspect"), 2.0, r"^objects\[0\]: \['aspect'\] do not apply to shape 'sphere'"),
    ((O, 0, "drude"), {"omega_p": 5.0}, r"^objects\[0\]: give exactly one of"),
    ((SRC, 0, "size"), [1.4, 0.7, 0.7], r"^sources\[0\]\.size: x = -0.7 .. 0.7 lies outside the region"),
    ((SRC, 0, "size"), [0.7, 0.0, 0.7], r"^sources\[0\]\.size must be > 0 along every axis"),
    ((SRC, 0, "frequency"), 0.0, r"^sources\[0\]\.frequency must be a number in \(0, inf\]"),
    ((SRC, 0, "frequency"), KeyError, r"^sources\[0\]\.frequency is required"),
    ((SRC, 0, "direction"), [0, 0, 0], r"^sources\[0\]\.direction must be a non-zero vector"),
    ((SRC, 0, "type"), "laser", r"^sources\[0\]\.type must be one of plane_wave, dipole, plane_current"),
    (
        (SRC, 0, "position"),
        [0, 0, 0],
        r"^sources\[0\]: unknown key\(s\) \['position'\]; allowed: \['bandwidth'",
    ),
    ((SRC, 1, "position"), [0.0, 0.0, 0.9], r"^sources\[1\]\.position: z = 0.9 lies outside the region"),
    ((SRC, 1, "component"), "w", r"^sources\[1\]\.component must be one of x, y, z"),
    ((SRC, 1, "amplitude"), 0.0, r"^sources\[1\]\.amplitude must not be 0"),
    ((SRC, 1, "waveform"), "sine", r"^sources\[1\]\.waveform must be one of gaussian, ricker, cw"),
    ((SRC, 1, "compnent"), "x", r"^sources\[1\]: unknown key\(s\) \['compnent'\]"),
    ((M, 0, "frequencies"), [], r"^monitors\[0\]\.frequencies must be a non-empty list"),
    ((M, 0, "frequencies"), [1.0, -1.0], r"^monitors\[0\]\.frequencies\[1\] must be a number in \(0, inf\]"),
    ((M, 0, "gap_out"), 0, r"^monitors\[0\]\.gap_out must be an integer in \[1, inf\]"),
    ((M, 0, "type"), "flux", r"^monitors\[0\]\.type must be one of cross_sections, flux_box"),
    ((M, 1, "size"), [1.0, 1.0, 1.0], r"^monitors\[1\]\.size must be 0 along exactly one axis"),
    ((M, 1, "center"), [0.0, 0.0, 0.7], r"^monitors\[1\]\.size: z = 0.7 lies outside the region"),
    ((M, 1, "name"), 3, r"^monitors\[1\]\.name must be a name"),
    (
        (SRC, 1),
        {"type": "plane_wave", "size": [0.5, 0.5, 0.5], "frequency": 1.0},
        r"^sources\[1\]\.type: at most one plane_wave source per simulation \(sources\[0\] is one\)",
    ),
    (
        (SRC, 0),
        {"type": "dipole", "position": [0, 0, 0], "frequency": 1.0},
        r"^monitors\[0\]\.type = 'cross_sections' needs a plane_wave source",
    ),
    (
        (M, 0),
        {"type": "flux_plane", "name": "p", "center": [0, 0, -0.45], "size": [1, 1, 0], "frequencies": [1.0]},
        r"^monitors\[1\]\.name = 'p' is taken by monitors\[0\]; names must differ",
    ),
    (("probes", 0, "field"), "B", r"^probes\[0\]\.field must be one of E, H"),
    (("probes", 0, "position"), "origin", r"^probes\[0\]\.position must be a list of 3 numbers"),
    (("run",), {}, r"^\[run\] needs steps or until"),
    (("run", "steps"), 0, r"^\[run\] needs steps or until"),
    (("run", "until"), -1.0, r"^\[run\]\.until must be a number in \(0, inf\]"),
    (("run", "chunk"), 0, r"^\[run\]\.chunk must be an integer in \[1, inf\]"),
    (("run", "checkpoint"), 5, r"^\[run\]\.checkpoint must be a file path"),
]


@pytest.mark.parametrize(
    "path,value,message", CASES, ids=[f"{'.'.join(map(str, c[0]))}={c[1]!r}" for c in CASES]
)
def test_bad_value_is_refused_naming_the_field(path, value, message):
    with pytest.raises(ConfigError, match=message) as e:
        build_physical(_with(path, value))
    assert "\n" not in str(e.value)


def test_steps_out_of_range():
    cfg = _with(("run",), {"steps": 0})
    with pytest.raises(ConfigError, match=r"^\[run\]\.steps must be an integer in \[1, inf\]"):
        build_physical(cfg)


def test_the_base_config_is_good_and_coarse_grids_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sim, steps, until, chunk, ck = build_physical(copy.deepcopy(BASE))
    assert until == 10.0 and steps is None and sim.grid.shape == (36, 36, 36)
    with pytest.warns(UserWarning, match=r"sources\[0\]: only 2.9 cells per wavelength"):
        build_physical(_with((S, "resolution"), 8.8))  # 1.5 at the band top in eps 4: 2.9 cells
    with pytest.warns(UserWarning, match=r"objects\[0\]: its smallest extent \(0.04\) spans 0.8 cells"):
        build_physical(_with((O, 0, "size"), 0.04))


def test_cli_exit_code_and_one_line(tmp_path, capsys):
    from emjax.cli import main

    p = tmp_path / "bad.toml"
    p.write_text(
        "[simulation]\nsize = [1, 1, 1]\nresolution = 20\n[[objects]]\nshape = 'sphere'\n"
        "size = 0.4\neps = 'glass'\n[run]\nsteps = 5\n"
    )
    assert main(["fdtd", str(p)]) == 1
    out = capsys.readouterr()
    assert out.out == "" and "Traceback" not in out.err
    assert out.err == "emjax: error: objects[0].eps must be a finite number in [1.0, inf], got 'glass'\n"
