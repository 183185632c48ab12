"""Bad ``emjax layered`` TOML configs: each refused while parsing (no integral is computed)
with a one-line ConfigError naming the field and what is allowed."""

import copy

import pytest
from config_edit import edited

from emjax import ConfigError
from emjax.layered.config import build_layered

BASE = {
    "wavelength": 600.0,
    "part": "scattered",
    "rtol": 1e-8,
    "precision": "double",
    "stack": {"n": [1.5, 1.0], "thickness": [], "z_top": 0.0},
    "dipole": {"position": [0.0, 0.0, 10.0], "moment": [0.0, 0.0, 1.0]},
    "map": {"plane": "xz", "center": [0.0, 0.0, 0.0], "size": [100.0, 100.0], "points": [4, 4]},
}


def _with(path, value):
    return edited(BASE, path, value)


CASES = [
    (("wavelength",), 0.0, r"^wavelength must be > 0, got 0.0$"),
    (("wavelength",), -600.0, r"^wavelength must be > 0"),
    (("wavelength",), "600", r"^wavelength must be a number > 0"),
    (("wavelength",), KeyError, r"^wavelength is required"),
    (("part",), "reflected", r"^part must be one of total, scattered"),
    (("rtol",), 2.0, r"^rtol must be a number in \[1e-13, 0.1\]"),
    (("rtol",), 0.0, r"^rtol must be a number in \[1e-13, 0.1\]"),
    (("rtol",), "tight", r"^rtol must be a finite number in \[1e-13, 0.1\]"),
    (("precision",), "half", r"^precision must be one of double, single"),
    (("colour",), 1, r"^config: unknown key\(s\) \['colour'\]; allowed: \['dipole'"),
    (("stack",), KeyError, r"^\[stack\] is required"),
    (("stack",), 3, r"^\[stack\] must be a table"),
    (("stack", "eps"), [2.25, 1.0], r"^\[stack\]: give exactly one of eps or n"),
    (("stack", "n"), KeyError, r"^\[stack\]: give exactly one of eps or n"),
    (("stack", "n"), [1.5], r"^\[stack\]\.n must be a list of >= 2 numbers"),
    (("stack", "n"), [1.5, "glass"], r"^\[stack\]\.n\[1\] must be a number"),
    (("stack", "n"), [[1.5, -0.1], 1.0], r"^\[stack\]\.n\[0\]: Im must be >= 0"),
    (("stack", "n"), [-1.5, 1.0], r"^\[stack\]\.n\[0\] must have Re n > 0"),
    (("stack", "thickness"), [10.0], r"^\[stack\]\.thickness needs one value per finite layer: 0"),
    (("stack", "z_top"), "0", r"^\[stack\]\.z_top must be a finite number"),
    (("stack", "depth"), 1.0, r"^\[stack\]: unknown key\(s\) \['depth'\]; allowed"),
    (("dipole", "position"), KeyError, r"^\[dipole\]\.position is required"),
    (("dipole", "position"), [0.0, 10.0], r"^\[dipole\]\.position must be a list of 3 numbers"),
    (("dipole", "moment"), [0, 0, 0], r"^\[dipole\]\.moment must not be zero"),
    (("dipole", "moment"), [0, 0, "up"], r"^\[dipole\]\.moment\[2\] must be a number"),
    (("dipole", "momentum"), [0, 0, 1], r"^\[dipole\]: unknown key\(s\) \['momentum'\]"),
    (("map", "plane"), "xq", r"^\[map\]\.plane must be one of xy, xz, yz"),
    (("map", "size"), KeyError, r"^\[map\]\.size is required"),
    (("map", "size"), [100.0, 0.0], r"^\[map\]\.size\[1\] must be > 0"),
    (("map", "points"), [4, 0], r"^\[map\]\.points\[1\] must be an integer in \[1, 4096\]"),
    (("map", "points"), [5000, 4], r"^\[map\]\.points\[0\] must be an integer in \[1, 4096\]"),
    (("map", "points"), [4.5, 4], r"^\[map\]\.points must be a list of 2 integers"),
    (("map", "center"), [0.0, 0.0], r"^\[map\]\.center must be a list of 3 numbers"),
]


@pytest.mark.parametrize(
    "path,value,message", CASES, ids=[f"{'.'.join(map(str, c[0]))}={c[1]!r}" for c in CASES]
)
def test_bad_value_is_refused_naming_the_field(path, value, message):
    with pytest.raises(ConfigError, match=message) as e:
        build_layered(_with(path, value))
    assert "\n" not in str(e.value)


def test_a_finite_layer_needs_its_thickness():
    cfg = _with(("stack", "n"), [1.5, 2.0, 1.0])
    with pytest.raises(ConfigError, match=r"\[stack\]\.thickness needs one value per finite layer: 1"):
        build_layered(cfg)
    cfg["stack"]["thickness"] = [-5.0]
    with pytest.raises(ConfigError, match=r"\[stack\]\.thickness\[0\] must be a number in \(0, inf\]"):
        build_layered(cfg)
    cfg["stack"]["thickness"] = [5.0]
    kwargs, shape, axes = build_layered(cfg)
    assert kwargs["stack"].thickness == (5.0,) and shape == (4, 4) and axes == ("x", "z")


def test_total_field_at_the_source_and_single_precision_rtol():
    cfg = _with(("part",), "total")
    cfg["map"].update(points=[3, 3], center=[0.0, 0.0, 10.0])  # the middle point is the source
    with pytest.raises(ConfigError, match=r"\[map\]: point 4 coincides with \[dipole\]\.position"):
        build_layered(cfg)
    cfg = _with(("precision",), "single")
    with pytest.raises(ConfigError, match=r"rtol = 1e-08 is below what single precision can reach"):
        build_layered(cfg)


def test_the_base_config_maps_onto_the_api():
    kwargs, shape, axes = build_layered(copy.deepcopy(BASE))
    assert (
        kwargs["wavelength"] == 600.0 and kwargs["part"] == "scattered" and kwargs["points"].shape == (16, 3)
    )
    assert kwargs["p"] == [0, 0, 1] and kwargs["stack"].eps[0] == pytest.approx(2.25)


def test_cli_exit_code_and_one_line(tmp_path, capsys):
    from emjax.cli import main

    p = tmp_path / "bad.toml"
    p.write_text(
        "wavelength = 600.0\n[stack]\nn = [1.5, 1.0]\n[dipole]\nposition = [0, 0, 10]\n"
        "[map]\nsize = [100.0, -1.0]\n"
    )
    assert main(["layered", str(p)]) == 1
    out = capsys.readouterr()
    assert out.out == "" and "Traceback" not in out.err
    assert out.err == "emjax: error: [map].size[1] must be > 0, got -1.0\n"
