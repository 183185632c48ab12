"""Write the API reference pages docs/api/*.md from the packages' public names.

Each method package lists its public names in ``_EXPORTS`` ({name: defining module}); each
page gets one mkdocstrings directive per name, pointing at the defining module (the package
loads its names lazily, which a static reader cannot follow). The shared modules are
documented whole. Run after adding or renaming a public name:

    python docs/gen_api.py
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "emjax"
OUT = ROOT / "docs" / "api"

METHODS = {
    "dda": "DDA: `emjax.dda`",
    "fdtd": "FDTD: `emjax.fdtd`",
    "fdfd": "FDFD: `emjax.fdfd`",
    "layered": "Layered media: `emjax.layered`",
}
SHARED = [
    "emjax.geometry",
    "emjax.geometry_mesh",
    "emjax.geometry_gds",
    "emjax.cad_config",
    "emjax.scene.objects",
    "emjax.scene.raster",
    "emjax.scene.traced",
    "emjax.materials",
    "emjax.materials.catalog",
    "emjax.materials.fitting",
    "emjax.scattering",
    "emjax.krylov",
    "emjax.backend",
    "emjax.layout",
    "emjax.io",
    "emjax.errors",
]


def exports(package: str) -> dict[str, str]:
    """The package's ``_EXPORTS`` table, read without importing it."""
    tree = ast.parse((SRC / package / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "_EXPORTS" for t in node.targets):
            return ast.literal_eval(node.value)
    raise SystemExit(f"emjax.{package} has no _EXPORTS table")


def absolute(package: str, module: str) -> str:
    level = len(module) - len(module.lstrip("."))
    base = ["emjax", package][: 2 - (level - 1)]
    rest = module.lstrip(".")
    return ".".join([*base, rest] if rest else base)


def method_page(package: str, title: str) -> str:
    lines = [
        f"# {title}",
        "",
        f"The public names of `emjax.{package}` (`from emjax import {package}`; "
        f"`{package}.NAME`). Names shared with other packages (solvers, plane waves, "
        "orientation rules) are documented where they are defined.",
        "",
    ]
    for name, module in sorted(exports(package).items(), key=lambda kv: kv[0].lower()):
        where = absolute(package, module)
        if not where.startswith(f"emjax.{package}"):
            lines += [f"## `{name}`", "", f"`emjax.{package}.{name}` is `{where}.{name}`.", ""]
            continue
        lines += [f"::: {where}.{name}", "    options:", "      heading_level: 2", ""]
    return "\n".join(lines)


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for package, title in METHODS.items():
        (OUT / f"{package}.md").write_text(method_page(package, title))
    shared = [
        "# Shared building blocks",
        "",
        "Geometry, scenes, materials, plane waves and "
        "scattering algebra, Krylov solvers, devices and files: what every method uses.",
        "",
    ]
    for module in SHARED:
        shared += [
            f"## `{module}`",
            "",
            f"::: {module}",
            "    options:",
            "      show_root_heading: false",
            "      heading_level: 3",
            "",
        ]
    (OUT / "shared.md").write_text("\n".join(shared))


if __name__ == "__main__":
    main()
