"""Packages whose public names load on first use (PEP 562), so that ``emjax --help`` can
read every method's command-line options without importing JAX.

A method package keeps an ``_EXPORTS`` table ``{public name: module}`` (module names
relative to the package, e.g. ``".problem"``) and sets
``__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)``; ``from emjax.dda
import solve`` and ``emjax.dda.solve`` work as with eager imports. A public name must not
equal one of the package's submodules (the submodule would shadow it once imported).
"""

from __future__ import annotations

import importlib
import sys

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: dict[str, str]):
    """``(__getattr__, __dir__, __all__)`` for ``package`` exporting ``exports`` lazily."""

    def __getattr__(name: str):
        try:
            module = exports[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)  # later lookups skip __getattr__
        return value

    def __dir__():
        return sorted(set(exports) | set(vars(sys.modules[package])))

    return __getattr__, __dir__, sorted(exports)
