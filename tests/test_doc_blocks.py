"""Every Python block of README.md and docs/**/*.md runs as written.

Each ```python block is run on its own (a fresh namespace, an empty temporary working
folder) in the test process, whose JAX is in its default 32-bit mode, as a new user's
is. A line ``<!-- doctest: slow -->`` right before a block moves it to the slow
suite (``pytest -m slow``: a large or long-compiling example); ``<!-- doctest: skip -->``
marks a fragment that is not run (use sparingly). The markers are HTML comments, invisible
where the Markdown is rendered. Also checked: every ``examples/...`` file the pages name
exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
MARKER = re.compile(r"<!--\s*doctest:\s*(\w+)\s*-->")
KINDS = ("slow", "skip")


def _blocks(path: Path):
    """``(line, kind, code)`` of each ```python block: kind "fast", "slow" or "skip"."""
    lines = path.read_text().splitlines()
    out, i, pending = [], 0, None
    while i < len(lines):
        line = lines[i].strip()
        m = MARKER.fullmatch(line)
        if m:
            assert m.group(1) in KINDS, f"{path.name}:{i + 1}: unknown marker {m.group(1)!r}"
            pending = (m.group(1), i + 1)
        elif line.startswith("```"):
            start, lang = i, line[3:].strip()
            i += 1
            while not lines[i].strip().startswith("```"):
                i += 1
            if lang == "python":
                out.append((start + 1, pending[0] if pending else "fast", "\n".join(lines[start + 1 : i])))
            else:
                assert pending is None, f"{path.name}:{pending[1]}: marker before a non-Python block"
            pending = None
        elif line:
            assert pending is None, f"{path.name}:{pending[1]}: the marker must stand right before a block"
        i += 1
    return out


def _cases(kind: str):
    return [
        pytest.param(code, id=f"{page.relative_to(ROOT)}:{line}")
        for page in PAGES
        for line, k, code in _blocks(page)
        if k == kind
    ]


def _run(code: str, tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "<doc block>", "exec"), {"__name__": "__doc_block__"})


@pytest.mark.parametrize("code", _cases("fast"))
def test_block(code, tmp_path, monkeypatch):
    _run(code, tmp_path, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("code", _cases("slow"))
def test_slow_block(code, tmp_path, monkeypatch):
    _run(code, tmp_path, monkeypatch)


def test_pages_have_blocks_and_few_skips():
    """The extraction finds the pages' blocks, and skipped fragments stay rare."""
    found = {page.name: _blocks(page) for page in PAGES}
    assert len(found["README.md"]) >= 4
    kinds = [k for blocks in found.values() for _, k, _ in blocks]
    assert kinds.count("skip") <= 2, kinds


def test_named_example_files_exist():
    """Every examples/... file (a config or a script) the README and the docs name exists."""
    missing = set()
    for page in PAGES:
        for name in re.findall(r"examples/[\w./-]+\.(?:toml|py|png)", page.read_text()):
            if not (ROOT / name).exists():
                missing.add(f"{page.name}: {name}")
    assert not missing, sorted(missing)


def test_particle_on_film_example_parses():
    """The substrate example the DDA tutorial runs builds a problem on a two-layer stack."""
    from emjax.cli import build_parser
    from emjax.dda.cli import build_dda
    from emjax.dda.options import dda_config

    args = build_parser().parse_args(["dda", "--config", str(ROOT / "examples" / "particle_on_film.toml")])
    problem, _ = build_dda(dda_config(args))
    assert problem.substrate is not None and problem.height == 0.6


def test_relative_links_resolve():
    """The relative links and images of the README and the docs point at files of the
    repository, so the pages read well where they are (the built site's links are checked
    by ``mkdocs build --strict``)."""
    missing, found = [], 0
    for page in PAGES:
        text = page.read_text()
        targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text) + re.findall(r'<img src="([^"]+)"', text)
        for t in targets:
            if "://" in t:
                continue
            found += 1
            if not (page.parent / t).exists():
                missing.append(f"{page.relative_to(ROOT)}: {t}")
    assert found > 20 and not missing, missing
