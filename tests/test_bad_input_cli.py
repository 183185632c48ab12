"""Every bad-input case of the TOML suites, through the command line as a user meets it:
``emjax fdtd|fdfd|layered FILE.toml`` and ``emjax dda --config FILE.toml`` exit
with status 1, print nothing on stdout and one line ``emjax: error: ...`` on stderr naming
the field, and no traceback. Nothing is computed: each case is refused while the file is
read."""

import json
import re

import pytest

from emjax.cli import main
from tests.dda import test_dda_bad_config as dda
from tests.fdfd import test_fdfd_bad_config as fdfd
from tests.fdtd import test_fdtd_bad_config as cells
from tests.fdtd import test_scene_bad_config as scene
from tests.layered import test_layered_bad_config as layered


def _value(v) -> str:
    """A TOML inline value (tables inline, arrays of tables as arrays of inline tables)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k} = {_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(v)


def toml(cfg: dict) -> str:
    return "".join(f"{k} = {_value(v)}\n" for k, v in cfg.items())


CASES = (
    [("fdtd", cells._with, p, v, m) for p, v, m in cells.CASES]
    + [("fdtd", scene._with, p, v, m) for p, v, m in scene.CASES]
    + [("fdfd", fdfd._with, p, v, m) for p, v, m in fdfd.CASES]
    + [("fdfd", lambda p, v: fdfd._with(p, v, fdfd.BASE_3D), p, v, m) for p, v, m in fdfd.CASES_3D]
    + [("layered", layered._with, p, v, m) for p, v, m in layered.CASES]
)


@pytest.mark.parametrize(
    "command,make,path,value,message",
    CASES,
    ids=[f"{c[0]}:{'.'.join(map(str, c[2]))}={c[3]!r}"[:80] for c in CASES],
)
def test_bad_input_exits_1_with_one_line_naming_the_field(
    tmp_path, capsys, command, make, path, value, message
):
    cfg = tmp_path / "bad.toml"
    cfg.write_text(toml(make(path, value)))
    rc = main([command, str(cfg)])
    out = capsys.readouterr()
    assert rc == 1 and out.out == "", out
    errors = [line for line in out.err.splitlines() if not line.startswith("emjax: warning: ")]
    assert len(errors) == 1 and errors[0].startswith("emjax: error: "), out.err
    assert "Traceback" not in out.err
    text = errors[0][len("emjax: error: ") :]
    assert re.search(message, text), (message, text)


DDA_CASES = [(dda._with, p, v, m) for p, v, m in dda.CASES] + [
    (dda._avg, p, v, m) for p, v, m in dda.CASES_AVG
]


@pytest.mark.parametrize(
    "make,path,value,message", DDA_CASES, ids=[f"dda:{c[1][0]}={c[2]!r}"[:80] for c in DDA_CASES]
)
def test_bad_dda_config_exits_1_with_one_line_naming_the_key(tmp_path, capsys, make, path, value, message):
    """``emjax dda --config FILE.toml``: refused while the file is read (nothing solved)."""
    cfg = tmp_path / "bad.toml"
    cfg.write_text(toml(make(path, value)))
    rc = main(["dda", "--config", str(cfg), "--out", str(tmp_path / "out")])
    out = capsys.readouterr()
    assert rc == 1 and out.out == "", out
    errors = [line for line in out.err.splitlines() if not line.startswith("emjax: warning: ")]
    assert len(errors) == 1 and errors[0].startswith("emjax: error: "), out.err
    assert "Traceback" not in out.err
    assert re.search(message, errors[0][len("emjax: error: ") :]), (message, errors[0])
    assert not (tmp_path / "out" / "result.nc").exists()


def test_the_suites_cover_many_cases():
    """At least 100 bad-input cases over the commands (with the DDA's in tests/dda), so a
    case dropped by accident shows."""
    assert len(CASES) >= 100 and len(DDA_CASES) >= 40
