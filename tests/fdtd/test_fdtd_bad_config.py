"""Bad FDTD TOML configs (cell-index form): each refused before anything grid-sized is
allocated, with a one-line ConfigError naming the field and what is allowed."""

import copy
import warnings

import pytest
from config_edit import edited

from emjax import ConfigError
from emjax.fdtd.config import build_fdtd

BASE = {
    "grid": {"shape": [30, 30, 30], "dx": 0.05, "pml_thickness": 6},
    "run": {"steps": 20},
    "sources": [{"type": "dipole", "index": [15, 15, 15], "component": "z", "frequency": 1.0}],
    "blocks": [{"lo": [10, 10, 10], "hi": [20, 20, 20], "eps": 2.0}],
    "probes": [{"index": [18, 15, 15], "component": "z"}],
    "monitors": [{"axis": "x", "index": 20, "frequencies": [0.8, 1.0]}],
}


def _with(path, value):
    return edited(BASE, path, value)


CASES = [
    (("grid", "shape"), [30, 30], r"\[grid\]\.shape must be a list of 3 integers"),
    (("grid", "shape"), [30, 30, 0], r"\[grid\]\.shape\[2\] must be an integer in \[1, inf\]"),
    (("grid", "shape"), [30, 30, 12], r"\[grid\]\.shape\[2\] = 12 leaves no interior"),
    (("grid", "dx"), "0.05", r"\[grid\]\.dx must be a finite number"),
    (("grid", "dx"), -1.0, r"\[grid\]\.dx must be a number in \(0, inf\]"),
    (("grid", "dx"), KeyError, r"\[grid\]\.dx is required"),
    (("grid", "order"), 3, r"\[grid\]\.order must be one of 2, 4"),
    (("grid", "precision"), "half", r"\[grid\]\.precision must be one of single, double"),
    (("grid", "courant"), 1.5, r"\[grid\]\.courant must be a number in \(0, 1.0\]"),
    (
        ("grid", "courant"),
        0.6,
        r"\[grid\]\.courant must be a number in \(0, 0.57735\] \(the stability limit 1/sqrt\(3\)",
    ),
    (("grid", "courant"), 0.0, r"\[grid\]\.courant must be a number in \(0, 1.0\]"),
    (("grid", "courant"), "0.5", r"\[grid\]\.courant must be a finite number"),
    (("grid", "boundary"), "open", r"\[grid\]\.boundary must be cpml, pec or periodic"),
    (("grid", "pml_thickness"), 0, r"\[grid\]\.pml_thickness must be an integer in \[1, inf\]"),
    (("grid", "pml_sides"), "left", r"\[grid\]\.pml_sides must be both, low or high"),
    (("grid", "colour"), 1, r"\[grid\]: unknown key\(s\) \['colour'\]"),
    (("run", "steps"), 0, r"\[run\]\.steps must be an integer in \[1, inf\]"),
    (("run", "steps"), KeyError, r"\[run\]\.steps is required"),
    (("run", "chunk"), -5, r"\[run\]\.chunk must be an integer in \[1, inf\]"),
    (("run", "checkpoint"), 3, r"\[run\]\.checkpoint must be a file path"),
    (("sources", 0, "index"), KeyError, r"sources\[0\]\.index is required"),
    (("sources", 0, "index"), [2, 15, 15], r"sources\[0\]\.index\[0\] = 2 lies in the CPML"),
    (("sources", 0, "index"), [15, 15, 40], r"sources\[0\]\.index\[2\] must be an integer in \[0, 29\]"),
    (("sources", 0, "frequency"), 0.0, r"sources\[0\]\.frequency must be a number in \(0, inf\]"),
    (("sources", 0, "frequency"), -1.0, r"sources\[0\]\.frequency must be a number in \(0, inf\]"),
    (("sources", 0, "frequency"), KeyError, r"sources\[0\]\.frequency is required"),
    (("sources", 0, "frequency"), 30.0, r"sources\[0\]: frequency 45 gives 0.31 cells per wavelength"),
    (("sources", 0, "bandwidth"), 0.0, r"sources\[0\]\.bandwidth must be a number in \(0, inf\]"),
    (("sources", 0, "waveform"), "sine", r"sources\[0\]\.waveform must be one of gaussian, ricker, cw"),
    (("sources", 0, "component"), "w", r"sources\[0\]\.component must be one of x, y, z"),
    (("sources", 0, "type"), "laser", r"sources\[0\]\.type must be one of dipole, plane, tfsf"),
    (("sources", 0, "amplitude"), "big", r"sources\[0\]\.amplitude must be a finite number"),
    (("sources", 0, "compnent"), "z", r"sources\[0\]: unknown key\(s\) \['compnent'\]"),
    (("blocks", 0, "lo"), KeyError, r"blocks\[0\]\.lo is required"),
    (("blocks", 0, "hi"), [40, 20, 20], r"blocks\[0\]\.hi\[0\] must be an integer in \[1, 30\]"),
    (("blocks", 0, "hi"), [5, 20, 20], r"blocks\[0\]: hi\[0\] = 5 must exceed lo\[0\] = 10"),
    (("blocks", 0, "eps"), "glass", r"blocks\[0\]\.eps must be a finite number"),
    (("blocks", 0, "eps"), 0.5, r"blocks\[0\]\.eps must be a number in \[1.0, inf\]"),
    (("blocks", 0, "sigma"), -1.0, r"blocks\[0\]\.sigma must be a number in \[0.0, inf\]"),
    (("probes", 0, "compnent"), "z", r"probes\[0\]: unknown key\(s\) \['compnent'\]"),
    (("probes", 0, "index"), [15, 15], r"probes\[0\]\.index must be a list of 3 integers"),
    (("probes", 0, "field"), "B", r"probes\[0\]\.field must be one of E, H"),
    (("monitors", 0, "index"), 2, r"monitors\[0\]\.index must be an integer in \[6, 23\]"),
    (("monitors", 0, "frequencies"), [], r"monitors\[0\]\.frequencies must be a non-empty list"),
    (("monitors", 0, "frequencies"), [1.0, -1.0], r"monitors\[0\]\.frequencies\[1\] must be a number in \(0"),
    (("monitors", 0, "axis"), "t", r"monitors\[0\]\.axis must be one of x, y, z"),
    (("blocks",), {"lo": [1, 1, 1]}, r"blocks must be an array of tables"),
]


@pytest.mark.parametrize(
    "path,value,message", CASES, ids=[f"{'.'.join(map(str, c[0]))}={c[1]!r}" for c in CASES]
)
def test_bad_value_is_refused_naming_the_field(path, value, message):
    with pytest.raises(ConfigError, match=message):
        build_fdtd(_with(path, value))


def test_the_base_config_is_good_and_coarse_grids_warn():
    sim, steps, chunk, ck = build_fdtd(copy.deepcopy(BASE))
    assert steps == 20 and chunk is None and ck is None and sim.grid.shape == (30, 30, 30)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        build_fdtd(_with(("sources", 0, "frequency"), 3.0))  # 4.5 at the band top, index 1.41: 3.1 cells
    assert any("cells per wavelength" in str(x.message) for x in w)


def test_tfsf_box_in_the_pml_is_refused():
    cfg = _with(("sources", 0), {"type": "tfsf", "lo": [3, 8, 8], "hi": [20, 20, 20], "frequency": 1.0})
    with pytest.raises(ConfigError, match=r"sources\[0\]\.lo\[0\] = 3 lies in the CPML"):
        build_fdtd(cfg)


def test_huge_grid_is_refused_before_allocating():
    """800^3 with blocks would need 8 GB of host arrays: refused by the estimate (host or
    device) before NumPy allocates anything."""
    cfg = _with(("grid", "shape"), [5000, 5000, 5000])
    with pytest.raises(Exception, match="GB") as e:
        build_fdtd(cfg)
    assert type(e.value).__name__ in ("ResourceError", "ConfigError")


def test_cli_exit_code_and_one_line(tmp_path, capsys):
    from emjax.cli import main

    p = tmp_path / "bad.toml"
    p.write_text('[grid]\nshape = [30, 30, 30]\ndx = "0.05"\n[run]\nsteps = 5\n')
    assert main(["fdtd", str(p)]) == 1
    out = capsys.readouterr()
    assert "Traceback" not in out.err + out.out
    assert "[grid].dx must be a finite number" in out.err
    assert len(out.err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "shape,boundary,order,limit",
    [
        ([30, 30, 30], "cpml", 2, 1 / 3**0.5),
        ([30, 30, 30], "cpml", 4, (6 / 7) / 3**0.5),
        ([30, 30, 1], ["cpml", "cpml", "periodic"], 2, 1 / 2**0.5),
        ([30, 30, 1], ["cpml", "cpml", "periodic"], 4, (6 / 7) / 2**0.5),
    ],
)
def test_courant_limit_per_order_and_dimensions(shape, boundary, order, limit):
    """Just below the stability limit is accepted, just above refused naming [grid].courant
    and the limit; the same limit the Grid enforces (its 2-D form for a one-cell periodic z)."""
    from emjax import fdtd

    cfg = _with(("grid", "shape"), shape)
    cfg["grid"].update(boundary=boundary, order=order)
    cfg["sources"][0]["index"] = [15, 15, 0] if shape[2] == 1 else [15, 15, 15]
    cfg["probes"][0]["index"] = [18, 15, 0] if shape[2] == 1 else [18, 15, 15]
    cfg["blocks"][0]["lo"][2], cfg["blocks"][0]["hi"][2] = (0, 1) if shape[2] == 1 else (10, 20)
    cfg["grid"]["courant"] = 0.999 * limit
    sim, *_ = build_fdtd(cfg)
    assert sim.grid.courant == pytest.approx(0.999 * limit)
    cfg["grid"]["courant"] = 1.001 * limit
    with pytest.raises(ConfigError, match=rf"^\[grid\]\.courant must be a number in \(0, {limit:.6g}\]"):
        build_fdtd(cfg)
    with pytest.raises(ConfigError, match=rf"^courant must be in \(0, {limit:.6g}\] \(the stability limit"):
        fdtd.Grid(tuple(shape), 0.05, 1.001 * limit, order, sim.grid.boundary)
