"""docs/toml.md against the parsers: every key a command's TOML parser accepts has
a row in its table on the page, and every row names a key the parser accepts. The parsers
are run on configs that reach every table and every variant (source types, monitor types,
shapes, materials) with ``emjax.config.check_keys`` watched: what it is asked to allow is
what the parser accepts."""

import copy
import re
import warnings
from collections import defaultdict
from pathlib import Path

import pytest

import emjax.config
import emjax.errors
from emjax.config import load_toml

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "toml.md"
EXAMPLES = ROOT / "examples"


def _documented() -> dict:
    """{(command, table): {keys}} from the page's sections and table rows."""
    out = defaultdict(set)
    command = table = None
    for line in DOC.read_text().splitlines():
        if line.startswith("## "):
            m = re.match(r"## emjax (\w+)(?: \((.+)\))?", line)
            command = (m.group(1) + ("-cells" if m.group(2) == "cell indices" else "")) if m else "material"
            table = None
        elif line.startswith("### "):
            table = line[4:].strip().strip("`")
            out[(command, table)]  # a section, even without rows
        elif line.startswith("| `") and table is not None:
            out[(command, table)].add(line.split("`")[1])
    return out


def _table_name(where: str) -> str:
    """check_keys' ``where`` -> the page's section title."""
    if where == "config":
        return "top level"
    if where.startswith("["):
        return where
    if re.search(r"\]\.(drude|lorentz)$", where):
        return where.rsplit(".", 1)[1]
    base = re.sub(r"\[\d+\]$", "", where)
    return f"[[{base}]]"


def _accepted(monkeypatch, builds) -> dict:
    seen = defaultdict(set)
    real = emjax.config.check_keys
    command = [None]

    def spy(table, allowed, where):
        name = _table_name(where)
        key = ("material" if name in ("drude", "lorentz") else command[0], name)
        seen[key] |= set(allowed)
        return real(table, allowed, where)

    monkeypatch.setattr(emjax.config, "check_keys", spy)
    for cmd, build, cfg in builds:
        command[0] = cmd
        build(copy.deepcopy(cfg))
    return seen


def _scene_configs():
    from tests.fdtd.test_scene_bad_config import BASE

    cfg = copy.deepcopy(BASE)
    cfg["objects"] += [
        {"shape": "box", "size": 0.2, "drude": {"omega_p": 5.0, "gamma": 0.1, "eps_inf": 2.0}},
        {
            "shape": "cylinder",
            "size": 0.2,
            "aspect": 2.0,
            "lorentz": {"delta_eps": 1, "omega_0": 5, "gamma": 0},
        },
    ]
    cfg["monitors"] += [
        {"type": "flux_box", "name": "b", "center": [0, 0, 0], "size": [0.5, 0.5, 0.5], "frequencies": [1.0]},
        {"type": "field_plane", "name": "f", "center": [0, 0, 0], "size": [1, 0, 1], "frequencies": [1.0]},
    ]
    return [cfg, load_toml(EXAMPLES / "fdtd_unit_cell.toml")]


def _cell_configs():
    from tests.fdtd.test_fdtd_bad_config import BASE

    cfg = copy.deepcopy(BASE)
    cfg["sources"].append({"type": "tfsf", "lo": [8, 8, 8], "hi": [22, 22, 22], "frequency": 1.0})
    cfg["flux_boxes"] = [{"lo": [7, 7, 7], "hi": [23, 23, 23], "frequencies": [1.0]}]
    return [cfg]


def _fdfd_configs():
    from tests.fdfd.test_fdfd_bad_config import BASE, BASE_3D

    two = copy.deepcopy(BASE)
    two["objects"] += [
        {"shape": "ellipse", "semi_axes": [0.2, 0.1], "rotation": 30.0, "center": [-0.4, 0.4], "eps": 2},
        {"shape": "polygon", "vertices": [[-0.6, -0.6], [-0.3, -0.6], [-0.6, -0.3]], "material": "pec"},
    ]
    two["monostatic"] = {"angles": 4}
    three = copy.deepcopy(BASE_3D)
    three["objects"] += [
        {"shape": "box", "size": [0.2, 0.2, 0.2], "rotation": [0, 10, 0], "eps_diag": [2, 3, 4]},
        {
            "shape": "cylinder",
            "radius": 0.1,
            "height": 0.3,
            "lorentz": {"delta_eps": 1, "omega_0": 5, "gamma": 0},
        },
        {"shape": "ellipsoid", "semi_axes": [0.2, 0.1, 0.1], "n": 1.5},
    ]
    return [two, three]


def _file_shape_configs():
    """FDFD objects read from files: their keys are checked before the file is opened (the
    files here do not exist, so the build stops there, after the check)."""
    from tests.fdfd.test_fdfd_bad_config import BASE, BASE_3D

    out = []
    for base, obj in (
        (
            BASE,
            {"shape": "gds", "file": "x.gds", "layer": 1, "datatype": 0, "cell": "A", "sidewall_angle": 0},
        ),
        (BASE_3D, {"shape": "gds", "file": "x.gds", "layer": 1, "z": [0, 1]}),
        (BASE_3D, {"shape": "stl", "file": "x.stl", "scale": 1.0, "size": 1.0, "rotation": [0, 0, 0]}),
    ):
        cfg = copy.deepcopy(base)
        cfg["objects"] = [{**obj, "eps": 2}]
        out.append(cfg)
    return out


def _until_the_file(build):
    def run(cfg):
        with pytest.raises(emjax.errors.ConfigError, match="no such file"):
            build(cfg)

    return run


def _dda_configs():
    from tests.dda.test_dda_bad_config import BASE

    substrate = {"height": 0.6, "n": ["1", "1.5+0.1j", "1.2"], "thickness": [0.2]}
    return [{**BASE, "prop": [0, 0, -1], "substrate": substrate}, load_toml(EXAMPLES / "sphere.toml")]


def test_every_accepted_key_is_documented_and_every_documented_key_accepted(monkeypatch):
    from emjax.fdfd.config import build_fdfd
    from emjax.fdtd.config import build_fdtd
    from emjax.fdtd.port_config import build_ports
    from emjax.fdtd.scene_config import build_physical
    from emjax.layered.config import build_layered
    from tests.dda.test_dda_bad_config import build as dda_build
    from tests.layered.test_layered_bad_config import BASE as LAYERED

    builds = [("fdtd", build_physical, c) for c in _scene_configs()]
    builds += [("fdtd", build_ports, load_toml(EXAMPLES / "waveguide_straight.toml"))]
    builds += [("fdtd-cells", build_fdtd, c) for c in _cell_configs()]
    builds += [("fdfd", build_fdfd, c) for c in _fdfd_configs()]
    builds += [("fdfd", _until_the_file(build_fdfd), c) for c in _file_shape_configs()]
    builds += [("layered", build_layered, LAYERED)]
    builds += [("dda", dda_build, c) for c in _dda_configs()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # coarse test grids
        accepted = _accepted(monkeypatch, builds)
    documented = _documented()
    assert len(accepted) >= 25, sorted(accepted)
    for (cmd, table), keys in sorted(accepted.items()):
        doc = set(documented.get((cmd, table), set()))
        if table == "top level":  # a top-level key may be a table with its own section
            doc |= {t.strip("[]") for c, t in documented if c == cmd}
        assert keys - doc == set(), f"{cmd} {table}: accepted but not in docs/toml.md"
        if table != "top level" or (cmd, table) in documented:
            assert documented[(cmd, table)] - keys == set(), f"{cmd} {table}: documented, not accepted"


def test_dda_keys_are_documented():
    from emjax.dda.cli import _SUBSTRATE_KEYS
    from emjax.dda.options import DDA_DEFAULTS

    documented = _documented()
    assert documented[("dda", "top level")] == set(DDA_DEFAULTS) | {"substrate"}
    assert documented[("dda", "[substrate]")] == set(_SUBSTRATE_KEYS)
