"""Bad ``emjax fdfd`` TOML configs: each refused while parsing (nothing is rasterized or
solved) with a one-line ConfigError naming the field by its table path and what is allowed.
tests/fdfd/test_cli.py holds the command-line cases."""

import copy

import pytest
from config_edit import edited

from emjax import ConfigError
from emjax.fdfd.config import build_fdfd, resolution_warnings

BASE = {
    "dims": 2,
    "wavelength": 1.0,
    "resolution": 20,
    "polarization": "TM",
    "direction": [1.0, 0.0],
    "size": [2.0, 2.0],
    "pml_cells": 8,
    "objects": [
        {"shape": "cylinder", "center": [0.0, 0.0], "radius": 0.3, "eps": 4.0},
        {"shape": "box", "center": [0.5, 0.5], "size": [0.2, 0.3], "n": 1.5},
    ],
    "rcs": {"angles": 9},
    "solver": {"type": "direct"},
}
BASE_3D = {
    "dims": 3,
    "wavelength": 1.0,
    "resolution": 10,
    "polarization": [0, 0, 1],
    "size": [2.0, 2.0, 2.0],
    "objects": [{"shape": "sphere", "radius": 0.3, "drude": {"omega_p": 10.0, "gamma": 0.1}}],
    "solver": {"type": "qmr", "rtol": 1e-5},
}


def _with(path, value, base=BASE):
    return edited(base, path, value)


O = "objects"
CASES = [
    (("wavelength",), KeyError, r"^wavelength is required"),
    (("wavelength",), -1.0, r"^wavelength must be > 0"),
    (("resolution",), "20", r"^resolution must be a number > 0"),
    (("resolution",), 4, r"^resolution must be >= 5 cells per wavelength"),
    (("size",), [2.0, -2.0], r"^size\[1\] must be a number in \(0, inf\]"),
    (("size",), KeyError, r"^size is required"),
    (("center",), [0.0], r"^center must be a list of 2 numbers"),
    (("pml_cells",), 500, r"^pml_cells must be an integer in \[1, 200\]"),
    (("pml_cells",), 8.5, r"^pml_cells must be an integer in \[1, 200\]"),
    (("averaging",), "smooth", r"^averaging must be one of subpixel, staircase"),
    (("precision",), "half", r"^precision must be one of single, double"),
    (("precision",), "single", r'^precision = "single" applies to 3-D iterative solves only'),
    (("stencil",), "nine", r'^stencil must be "compact" or "yee"'),
    (("dims",), True, r"^dims must be 2 or 3"),
    (("polarization",), "circular", r'^polarization must be "TM" \(E_z\) or "TE" \(H_z\) in 2-D'),
    (("direction",), "x", r"^direction must be a list of 2 or 3 numbers"),
    (("objects",), {"shape": "cylinder"}, r"^objects must be an array of tables"),
    ((O, 0, "shape"), "sphere", r"^objects\[0\]\.shape must be one of cylinder, box, ellipse, polygon"),
    ((O, 0, "radius"), KeyError, r"^objects\[0\]\.radius is required for shape 'cylinder'"),
    ((O, 0, "radius"), "big", r"^objects\[0\]\.radius must be a number > 0"),
    ((O, 0, "radius"), 0.9, r"^objects\[0\] \(disk\) spans x = -0.9 .. 0.9; objects must lie inside"),
    ((O, 0, "center"), [0.0, 0.0, 0.0], r"^objects\[0\]\.center must be a list of 2 numbers"),
    ((O, 0, "semi_axes"), [0.1, 0.2], r"^objects\[0\]: unknown key\(s\) \['semi_axes'\]; allowed: \["),
    ((O, 0, "eps"), "4+x", r"^objects\[0\]\.eps must be a number, a string like"),
    ((O, 0, "eps"), [4.0, -0.5], r"^objects\[0\]\.eps: Im eps must be >= 0"),
    ((O, 1, "n"), "glass", r"^objects\[1\]\.n: cannot read 'glass' as a refractive index"),
    ((O, 1, "size"), [0.2], r"^objects\[1\]\.size must be a list of 2 numbers"),
    ((O, 1, "size"), [0.2, 0.0], r"^objects\[1\]\.size\[1\] must be > 0"),
    ((O, 1, "rotation"), [10, 20], r"^objects\[1\]\.rotation must be one angle \(degrees\) in 2-D"),
    ((O, 1, "drude"), {"omega_p": 1.0, "gamma": 0.1}, r"^objects\[1\]: give exactly one of"),
    (("rcs", "angles"), 0, r"^\[rcs\]\.angles must be an integer in \[1, 100000\]"),
    (("rcs", "angles"), [], r"^\[rcs\]\.angles must not be empty"),
    (("rcs", "phi"), 3, r"^\[rcs\]: unknown key\(s\) \['phi'\]; allowed: \['angles'\]"),
    (("monostatic",), {}, r"^\[monostatic\]\.angles is required"),
    (("solver", "type"), "gmres", r"^\[solver\]\.type must be one of direct, qmr, bicgstab"),
    (("solver", "type"), "bicgstab", r"^\[solver\]\.type = 'bicgstab': the 2-D solvers are direct only"),
    (("solver", "rtol"), 1e-3, r"^\[solver\]: rtol and maxiter apply to qmr, bicgstab and multigrid"),
]
CASES_3D = [
    (("solver", "rtol"), 1.0, r"^\[solver\]\.rtol must be a number in \(0, 1\)"),
    (("solver", "rtol"), 0.0, r"^\[solver\]\.rtol must be a number in \(0, 1\)"),
    (("solver", "maxiter"), 0, r"^\[solver\]\.maxiter must be an integer in \[1, 10000000\]"),
    (
        ("solver", "tol"),
        1e-3,
        r"^\[solver\]: unknown key\(s\) \['tol'\]; allowed: \['maxiter', 'rtol', 'type'\]",
    ),
    (("polarization",), [1, 0, 0], r"^polarization \[1, 0, 0\] must be orthogonal to direction"),
    (("polarization",), "TM", r"^polarization must be the incident E vector \[ex, ey, ez\] in 3-D"),
    (("stencil",), "compact", r'^stencil = "compact" is 2-D only'),
    (
        (O, 0, "drude"),
        {"omega_p": -1.0, "gamma": 0.1},
        r"^objects\[0\]\.drude\.omega_p must be a number in \(0, inf\]",
    ),
    ((O, 0, "drude"), {"omega_p": 1.0}, r"^objects\[0\]\.drude\.gamma is required"),
    (
        (O, 0, "drude"),
        {"omega_p": 1.0, "gamma": 0.1, "tau": 1},
        r"^objects\[0\]\.drude: unknown key\(s\) \['tau'\]",
    ),
    ((O, 0, "shape"), "cylinder", r"^objects\[0\]\.height is required for shape 'cylinder'"),
    (("direction",), [0, 1], r"^direction must be a list of 3 numbers"),
]


def _ids(cases):
    return [f"{'.'.join(map(str, c[0]))}={c[1]!r}" for c in cases]


@pytest.mark.parametrize("path,value,message", CASES, ids=_ids(CASES))
def test_bad_value_is_refused_naming_the_field(path, value, message):
    with pytest.raises(ConfigError, match=message) as e:
        build_fdfd(_with(path, value))
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("path,value,message", CASES_3D, ids=_ids(CASES_3D))
def test_bad_3d_value_is_refused_naming_the_field(path, value, message):
    with pytest.raises(ConfigError, match=message) as e:
        build_fdfd(_with(path, value, BASE_3D))
    assert "\n" not in str(e.value)


def test_the_base_configs_are_good_and_coarse_grids_warn():
    p = build_fdfd(copy.deepcopy(BASE))
    assert p.dims == 2 and len(p.scene.objects) == 2 and resolution_warnings(p) == []
    p = build_fdfd(copy.deepcopy(BASE_3D))
    assert p.dims == 3 and p.solver_type == "qmr"
    thin = _with((O, 1, "size"), [0.1, 0.3])  # 2 cells at 20 per wavelength
    assert any("objects[1]: its smallest feature" in w for w in resolution_warnings(build_fdfd(thin)))
