"""Layering rules of DESIGN.md: solvers never import cli/io/plot or another solver's
internals, and importing a solver does not pull in xarray, matplotlib or tqdm."""

import ast
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).parents[1] / "src" / "emjax"
SOLVERS = {"dda", "fdtd", "layered", "fdfd"}
TOP = {"cli", "cli_args", "io", "plot", "bench"}


def _imports(path: Path):
    """Module-level imports only: results may import io lazily inside .save()/.to_xarray()."""
    tree = ast.parse(path.read_text())
    pkg = path.relative_to(SRC).parts
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level:
            base = list(pkg[:-1])[: len(pkg) - node.level]
            yield ".".join(base + ([node.module] if node.module else []))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("emjax"):
            yield node.module[len("emjax.") :]


def test_import_directions():
    for path in SRC.rglob("*.py"):
        parts = path.relative_to(SRC).parts
        owner = parts[0] if len(parts) > 1 else None
        for mod in _imports(path):
            first = mod.split(".")[0]
            assert first != "cli", f"{path} imports cli"
            if owner in SOLVERS:
                assert first not in TOP, f"{path} imports {mod}"
                assert first not in SOLVERS - {owner}, f"{path} imports another solver: {mod}"


def test_solver_import_is_light():
    code = (
        "import sys, emjax.dda; bad = [m for m in ('xarray', 'matplotlib', 'tqdm', 'h5netcdf') "
        "if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
