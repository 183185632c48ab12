"""Bad ``emjax dda --config`` TOML files (top level): each refused while the file is read,
before anything is built or allocated, with a one-line ConfigError naming the key and what
is allowed. The registries' names and the forms shared with the command line
(``m``, ``orient``) are checked where the config is mapped onto the API (``build_dda``).
tests/test_bad_input_cli.py runs the same cases through ``emjax dda --config``."""

import copy

import pytest

from emjax import ConfigError
from emjax.dda.cli import build_average, build_dda
from emjax.dda.options import DDA_DEFAULTS, check_dda_toml

BASE = {"shape": "sphere", "size": 1.0, "m": "1.5+0.01j", "grid": 8, "rtol": 1e-4, "ntheta": 19}
AVG = {"orient": "avg", "avg_eps": 1e-2}


def _with(path, value, base=BASE):
    cfg = copy.deepcopy(base)
    (key,) = path
    if value is KeyError:
        del cfg[key]
    else:
        cfg[key] = value
    return cfg


def _avg(path, value):
    return _with(path, value, {**BASE, **AVG})


def build(cfg: dict):
    """What ``emjax dda --config`` does with the file's content before solving."""
    full = dict(DDA_DEFAULTS)
    full.update(check_dda_toml(cfg))
    return build_dda(full), build_average(full)


CASES = [
    (("rtol",), 1.0, r"^rtol must be a number in \(0, 1\), got 1.0"),
    (("rtol",), 0.9999, None),  # accepted by the schema; see test_rtol_near_one_is_kept
    (("rtol",), 0.0, r"^rtol must be a number in \(0, 1\)"),
    (("rtol",), -1e-5, r"^rtol must be a number in \(0, 1\)"),
    (("rtol",), "1e-5", r"^rtol must be a finite number in \(0, 1\)"),
    (("size",), 0.0, r"^size must be > 0, got 0.0"),
    (("size",), "big", r"^size must be a number > 0"),
    (("eq_rad",), -1.0, r"^eq_rad must be > 0"),
    (("wavelength",), -1.0, r"^wavelength must be > 0"),
    (("dpl",), 0, r"^dpl must be > 0"),
    (("aspect",), 0.0, r"^aspect must be > 0"),
    (("grid",), 0, r"^grid must be an integer in \[1, 100000\]"),
    (("grid",), 8.5, r"^grid must be an integer"),
    (("maxiter",), 0, r"^maxiter must be an integer in \[1, inf\]"),
    (("ntheta",), 1, r"^ntheta must be an integer in \[2, 100000\]"),
    (("precision",), "half", r"^precision must be one of double, single"),
    (("no_integrate",), "yes", r"^no_integrate must be true or false"),
    (("core_ratio",), 0.0, r"^core_ratio must be a number in \(0, 1\)"),
    (("core_ratio",), 1.0, r"^core_ratio must be a number in \(0, 1\)"),
    (("semi_axes",), [1.0], r"^semi_axes must be a list of 2 numbers"),
    (("semi_axes",), [1.0, -2.0], r"^semi_axes\[1\] must be a number in \(0, inf\]"),
    (("box_ratios",), "1,2", r"^box_ratios must be a list of 2 numbers"),
    (("out",), 3, r"^out must be a path"),
    (("checkpoint",), ["a"], r"^checkpoint must be a path"),
    (("shape",), 3, r"^shape must be a name"),
    (("shape",), "blob", r"^shape must be one of .*sphere"),
    (("solver",), "gmres", r"^solver must be one of .*qmr"),
    (("polarizability",), "xyz", r"^polarizability must be one of .*ldr"),
    (("m",), True, r"^m must be a refractive index"),
    (("m",), "1.5+x", r"^m\[0\]: cannot read '1.5\+x' as a refractive index"),
    (("orient",), True, r"^orient must be a string or a list of numbers"),
    (("orient",), [0, 30], r"^orient: expected three angles"),
    (("surf",), [0.5], r"^surf must be \[H, M\]"),
    (("substrate",), 3, r"^substrate must be a \[substrate\] table"),
    (("radius",), 1.0, r"^config: unknown key\(s\) \['radius'\]; allowed: \[.*'aspect'.*'wavelength'\]"),
    (("avg_eps",), 0.5, r"^avg_eps applies to orient = avg only"),
]
CASES = [c for c in CASES if c[2] is not None]
CASES_AVG = [
    (("avg_eps",), 1.0, r"^avg_eps must be a number in \[0, 1\), got 1.0"),
    (("avg_eps",), -0.1, r"^avg_eps must be a number in \[0, 1\)"),
    (("avg_beta_levels",), [5, 2], r"^avg_beta_levels must be \[MIN, MAX\] with MIN <= MAX"),
    (("avg_beta_levels",), [0, 2], r"^avg_beta_levels\[0\] must be an integer in \[1, 10\]"),
    (("avg_gamma_levels",), [3, 11], r"^avg_gamma_levels\[1\] must be an integer in \[1, 10\]"),
    (("avg_gamma_levels",), 3, r"^avg_gamma_levels must be a list of 2 integers"),
    (("avg_alpha",), 0, r"^avg_alpha must be an integer in \[1, 100000\]"),
    (("sym_n_fold",), -1, r"^sym_n_fold must be an integer in \[0, 360\]"),
    (("sym_c2x",), 1, r"^sym_c2x must be true or false"),
    (("batch",), 0, r"^batch must be an integer in \[1, inf\]"),
]


@pytest.mark.parametrize("path,value,message", CASES, ids=[f"{c[0][0]}={c[1]!r}" for c in CASES])
def test_bad_value_is_refused_naming_the_key(path, value, message):
    with pytest.raises(ConfigError, match=message) as e:
        build(_with(path, value))
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("path,value,message", CASES_AVG, ids=[f"{c[0][0]}={c[1]!r}" for c in CASES_AVG])
def test_bad_averaging_value_is_refused_naming_the_key(path, value, message):
    with pytest.raises(ConfigError, match=message):
        build(_avg(path, value))


def test_the_base_configs_are_good():
    (problem, solver), average = build(copy.deepcopy(BASE))
    assert solver.rtol == 1e-4 and average is None and problem.grid == 8
    (_, _), average = build({**BASE, **AVG, "avg_beta_levels": [2, 3], "sym_c2x": True, "out": "x"})
    assert average.eps == 1e-2 and average.beta_levels == (2, 3) and average.c2_x is True


def test_rtol_near_one_is_kept():
    """The schema's range is open at 1 (a relative residual of 1 is met by the zero guess)."""
    (_, solver), _ = build(_with(("rtol",), 0.9999))
    assert solver.rtol == 0.9999


def test_paths_become_paths():
    from pathlib import Path

    cfg = check_dda_toml({"out": "results", "checkpoint": "avg.npz"})
    assert cfg["out"] == Path("results") and cfg["checkpoint"] == Path("avg.npz")


def test_a_particle_without_size_names_the_options():
    """No size, eq_rad nor grid: the line names the flags a user types (--size, --eq-rad,
    --grid) and the config keys, never the API's size_x."""
    cfg = {k: v for k, v in BASE.items() if k not in ("size", "grid")}
    with pytest.raises(ConfigError, match=r"^give the particle's size: --size .* --eq-rad, .* --grid") as e:
        build(cfg)
    assert "size_x" not in str(e.value) and "eq_rad or grid" in str(e.value)
