"""The layout of DESIGN.md section 3, enforced: a shared base that names no method, one
vertical slice per method, and no import cycles.

Every import is walked, the lazy ones inside functions and under ``TYPE_CHECKING`` too:

* the base (every top-level module and package that is not a slice) imports no slice;
* a slice imports the base and itself, never another slice, except for the grants in
  :data:`GRANTS` (one line each, through the granted slice's public face only);
* nothing imports ``emjax.cli`` (the command line assembles the slices, not the reverse);
* no import cycle among the modules (module-level imports; a lazy import inside a function
  does not run at import time and may close a loop on purpose);
* the base's source names no method (no "dda", "fdtd", ... in identifiers or imports);
* importing a solver does not pull in xarray, matplotlib or tqdm.
"""

import ast
import re
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).parents[1] / "src" / "emjax"
#: the method slices: one folder each under src/emjax
SLICES = {"dda", "fdtd", "layered", "fdfd"}
#: (importer, imported) slice pairs allowed, through the imported slice's public face only
#: (its package __init__): e.g. ("dda", "layered") for the DDA on a substrate
GRANTS: set[tuple[str, str]] = {("dda", "layered")}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(["emjax", *parts])


def _imports(path: Path, lazy: bool = True):
    """(imported module, line) for each import of ``path``, absolute names; ``lazy=False``:
    only the imports that run when the module is imported (not inside functions)."""
    tree = ast.parse(path.read_text())
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    nodes = ast.walk(tree) if lazy else _eager_nodes(tree)
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            yield mod, node.lineno
            for alias in node.names:  # `from . import interaction` imports a submodule
                yield f"{mod}.{alias.name}", node.lineno
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module":
            if node.args and isinstance(node.args[0], ast.JoinedStr):
                yield "emjax.<dynamic>", node.lineno
        elif isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "_EXPORTS" for t in node.targets):
            for v in getattr(node.value, "values", []):  # the lazy exports' module table
                if isinstance(v, ast.Constant):
                    dots = len(v.value) - len(v.value.lstrip("."))
                    base = package.split(".")[: len(package.split(".")) - dots + 1]
                    yield ".".join(base + [v.value.lstrip(".")]), node.lineno


def _eager_nodes(tree):
    """Nodes executed at import: module body, recursively into if/try/with, not functions,
    and not ``if TYPE_CHECKING:`` blocks."""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.ClassDef):
            continue
        stack.extend(ast.iter_child_nodes(node))


def _owner(module: str):
    """The slice a module belongs to, "cli" for emjax.cli, else None (the base)."""
    parts = module.split(".")
    if parts[0] != "emjax" or len(parts) < 2:
        return "external"
    if parts[1] in SLICES:
        return parts[1]
    if parts[1] == "cli":
        return "cli"
    return None


def _public_face(module: str, slice_name: str) -> bool:
    """``emjax.<slice>`` or a name imported from it (``from emjax.layered import Stack``),
    not one of its submodules."""
    pkg = f"emjax.{slice_name}"
    if module == pkg:
        return True
    rest = module[len(pkg) + 1 :] if module.startswith(pkg + ".") else None
    return rest is not None and "." not in rest and not (SRC / slice_name / f"{rest}.py").exists()


def _sources():
    return sorted(SRC.rglob("*.py"))


def test_base_imports_no_slice():
    bad = []
    for path in _sources():
        me = _module_name(path)
        if _owner(me) is not None:
            continue
        for mod, line in _imports(path):
            if _owner(mod) in SLICES:
                bad.append(f"{path.relative_to(SRC)}:{line} imports {mod}")
    assert not bad, "the shared base imports a method slice:\n" + "\n".join(bad)


def test_slices_import_no_other_slice():
    bad = []
    for path in _sources():
        me = _owner(_module_name(path))
        if me not in SLICES:
            continue
        for mod, line in _imports(path):
            other = _owner(mod)
            if other in SLICES and other != me:
                public_face = _public_face(mod, other)
                if (me, other) in GRANTS and public_face:
                    continue
                bad.append(f"{path.relative_to(SRC)}:{line} imports {mod}")
    assert not bad, "a slice imports another slice:\n" + "\n".join(bad)


def test_nothing_imports_cli():
    bad = []
    for path in _sources():
        if _module_name(path) == "emjax.cli":
            continue
        for mod, line in _imports(path):
            if mod == "emjax.cli" or mod.startswith("emjax.cli."):
                bad.append(f"{path.relative_to(SRC)}:{line} imports {mod}")
    assert not bad, "\n".join(bad)


def test_no_import_cycles():
    modules = {_module_name(p): p for p in _sources()}
    graph = {}
    for name, path in modules.items():
        deps = set()
        for mod, _ in _imports(path, lazy=False):
            while mod and mod not in modules:  # `from pkg import name` -> pkg
                mod = mod.rsplit(".", 1)[0] if "." in mod else ""
            if mod and mod != name:
                deps.add(mod)
        graph[name] = deps
    # a package importing its own submodules and a submodule importing its package's
    # siblings is the normal shape; cycles are searched among the non-package modules
    for name in graph:
        if modules[name].name == "__init__.py":
            continue
        graph[name] = {d for d in graph[name] if modules[d].name != "__init__.py"}
    state, cycles = {}, []

    def visit(node, trail):
        state[node] = "open"
        for dep in sorted(graph.get(node, ())):
            if modules[dep].name == "__init__.py" and modules[node].name != "__init__.py":
                continue
            if state.get(dep) == "open":
                cycles.append(" -> ".join(trail[trail.index(dep) :] + [dep]))
            elif dep not in state:
                visit(dep, trail + [dep])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state and modules[node].name != "__init__.py":
            visit(node, [node])
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_base_names_no_method():
    words = re.compile(r"\b(" + "|".join(sorted(SLICES)) + r")\b")
    bad = []
    for path in _sources():
        if _owner(_module_name(path)) is not None:
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            text = None
            if isinstance(node, ast.Name):
                text = node.id
            elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                text = node.name
            elif isinstance(node, ast.Attribute):
                text = node.attr
            if text and words.search(text.replace("_", " ")):
                bad.append(f"{path.relative_to(SRC)}:{node.lineno} {text}")
    assert not bad, "the shared base names a method:\n" + "\n".join(bad)


def test_cli_registers_every_slice():
    """Adding a method = one folder + one entry in emjax.cli.SLICES: every slice folder
    with a cli module is registered, and each cli module has the four entry points."""
    from emjax import cli

    folders = {p.parent.name for p in SRC.glob("*/cli.py")}
    assert folders == set(cli.SLICES)
    assert set(cli.SLICES) <= SLICES
    for name in cli.SLICES:
        text = (SRC / name / "cli.py").read_text()
        for fn in ("add_command", "add_bench", "run", "run_bench"):
            assert f"def {fn}(" in text, f"{name}/cli.py lacks {fn}"


def test_checker_catches_violations(tmp_path, monkeypatch):
    """The rules can fail: a base module importing a slice lazily, a slice importing
    another slice's internals, and two base modules importing each other are reported."""
    pkg = tmp_path / "emjax"
    (pkg / "dda").mkdir(parents=True)
    (pkg / "layered").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "dda" / "__init__.py").write_text("")
    (pkg / "layered" / "__init__.py").write_text("")
    (pkg / "layered" / "green.py").write_text("")
    (pkg / "base.py").write_text("def f():\n    from .dda import solve\n")
    (pkg / "dda" / "sub.py").write_text("from ..layered.green import g\n")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("from .a import x\n")
    monkeypatch.setattr(sys.modules[__name__], "SRC", pkg)
    for check in (test_base_imports_no_slice, test_slices_import_no_other_slice, test_no_import_cycles):
        try:
            check()
        except AssertionError:
            continue
        raise AssertionError(f"{check.__name__} missed a violation")


def test_solver_import_is_light():
    code = (
        "import sys, emjax.dda, emjax.fdtd, emjax.layered; bad = [m for m in "
        "('xarray', 'matplotlib', 'tqdm', 'h5netcdf') if m in sys.modules]; print(bad); "
        "sys.exit(1 if bad else 0)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_solvers_import_light_after_use():
    """Using a solver's public names (not only importing the package) stays light too."""
    code = (
        "import sys; from emjax import dda, fdtd, layered; dda.solve; fdtd.run; layered.fields; "
        "bad = [m for m in ('xarray', 'matplotlib', 'tqdm', 'h5netcdf') if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
