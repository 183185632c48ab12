"""MkDocs hook: serve files that live outside docs/ without copying them into it.

The example figures stay in examples/figures/ (where the examples write them and the README
shows them) and appear in the site under figures/; BENCHMARKS.md stays at the top of the
repository and appears as a page. The pages link them as ``../examples/figures/NAME.png``
and ``../BENCHMARKS.md``, which work when the Markdown is read in the repository; the links
are pointed at the site's copies before MkDocs checks them."""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]


def on_files(files, config):
    extra = [(f"figures/{p.name}", p) for p in sorted((ROOT / "examples" / "figures").glob("*.png"))]
    extra.append(("BENCHMARKS.md", ROOT / "BENCHMARKS.md"))
    for uri, path in extra:
        files.append(File.generated(config, uri, abs_src_path=str(path)))
    return files


def on_page_markdown(markdown, page, config, files):
    return markdown.replace("](../examples/figures/", "](figures/").replace(
        "](../BENCHMARKS.md", "](BENCHMARKS.md"
    )
