"""The ``emjax`` command's own description of itself: ``--version``, a help string on every
option of every command, and help texts that agree with docs/toml.md (DDA shapes and grid
range, FDFD solver names, the files each command writes)."""

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest

import emjax
from emjax.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "toml.md").read_text()


def _subparsers(parser):
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def _parser(*path):
    p = build_parser()
    for name in path:
        p = _subparsers(p).choices[name]
    return p


def _action(parser, flag):
    return next(a for a in parser._actions if flag in a.option_strings)


def _section(title: str) -> str:
    """The text of docs/toml.md's ``## title`` section."""
    start = DOC.index(f"\n## {title}\n")
    end = DOC.find("\n## ", start + 1)
    return DOC[start : end if end > 0 else None]


def _row(section: str, key: str) -> list[str]:
    line = next(x for x in section.splitlines() if x.startswith(f"| `{key}` |"))
    return [c.strip() for c in line.strip("|").split("|")]


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"emjax {emjax.__version__}"


def test_version_from_the_command_line():
    p = subprocess.run(
        [sys.executable, "-m", "emjax.cli", "--version"],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": ""},
        timeout=120,
    )
    assert p.returncode == 0 and p.stdout.strip() == f"emjax {emjax.__version__}", p


def _walk(parser, path):
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            helps = {c.dest: c.help for c in a._choices_actions}
            for name, sub in a.choices.items():
                yield [*path, name], None, helps.get(name)
                yield from _walk(sub, [*path, name])
        elif not isinstance(a, (argparse._HelpAction, argparse._VersionAction)):
            yield path, a.option_strings or [a.dest], a.help


def test_every_option_has_help():
    """Every subcommand and every option of every command (bench included) says what it is."""
    missing = [
        " ".join(path) + (f" {flags}" if flags else "")
        for path, flags, text in _walk(build_parser(), ["emjax"])
        if not text or text == argparse.SUPPRESS
    ]
    assert not missing, missing


def test_dda_shapes_and_grid_range_agree_with_the_reference():
    top = _section("emjax dda")
    shapes = re.findall(r"`(\w+)`", _row(top, "shape")[2])
    help_text = _action(_parser("dda"), "--shape").help
    listed = {w.strip() for w in re.sub(r"\([^)]*\)", "", help_text).split(",")}
    assert listed == set(shapes), (listed, shapes)
    lo, hi = re.fullmatch(r"\[(\d+), (\d+)\]", _row(top, "grid")[2]).groups()
    assert f"{lo} to {hi}" in _action(_parser("dda"), "--grid").help


def test_fdfd_solver_names_agree_with_the_reference():
    """``emjax bench fdfd --solver`` offers every ``[solver] type`` of the reference (and
    ``auto``, the bench's default)."""
    types = set(re.findall(r"`(\w+)`", _row(_section("emjax fdfd"), "type")[2].split("(")[0]))
    assert types == {"direct", "qmr", "bicgstab", "multigrid"}, types
    choices = set(_action(_parser("bench", "fdfd"), "--solver").choices)
    assert choices == types | {"auto"}


FILE = r"[\w-]+\.(?:nc|png|json)|CrossSec(?:-[XY])?|mueller|log(?:_orient_avg)?"


@pytest.mark.parametrize(
    "command, sections",
    [
        ("dda", ["emjax dda"]),
        ("fdtd", ["emjax fdtd (physical units)", "emjax fdtd (cell indices)"]),
        ("fdfd", ["emjax fdfd"]),
        ("layered", ["emjax layered"]),
    ],
)
def test_outputs_agree_with_the_reference(command, sections):
    """The files ``--out`` writes, as its help names them and as docs/toml.md's "Output" lines
    name them, are the same set."""
    documented = set()
    for title in sections:
        line = next(x for x in _section(title).split("\n\n") if x.startswith("Output:"))
        documented |= {t for t in re.findall(r"`([^`]+)`", line) if re.fullmatch(FILE, t)}
    said = set(re.findall(rf"\b(?:{FILE})(?![\w.])", _action(_parser(command), "--out").help))
    assert documented and said == documented, (said, documented)
