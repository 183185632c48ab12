"""Configuration plumbing shared by every method's command: TOML files, unknown keys refused
with the valid ones listed, argparse that reports errors emjax's way, and parsers for
numbers, complex numbers and vectors written in a config or on the command line.

Nothing here imports JAX, so ``emjax --help`` stays fast. Values stay plain Python; each
method's ``cli`` maps them onto its dataclasses. This module names no method.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from .errors import ConfigError

__all__ = [
    "ArgumentParser",
    "UsageError",
    "append_json",
    "Table",
    "check_keys",
    "dispersive_material",
    "finite_or_none",
    "load_toml",
    "number",
    "parse_complex",
    "parse_refractive_index",
    "refractive_indices",
]


class UsageError(Exception):
    """A command line argparse could not read (reported as ``emjax: error: ...``)."""

    def __init__(self, message: str, usage: str = ""):
        super().__init__(message)
        self.usage = usage


class ArgumentParser(argparse.ArgumentParser):
    """argparse exits with status 2 on a bad argument; emjax reserves 2 for "not converged"
    and reports every input error the same way (status 1, one line): raise UsageError."""

    def error(self, message):
        raise UsageError(message, self.format_usage())


def load_toml(path) -> dict:
    """Read a TOML file (tomllib on Python >= 3.11, else the ``tomli`` package)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib
        except ModuleNotFoundError as exc:
            raise ConfigError(
                "reading TOML configs needs Python >= 3.11 or the tomli package (pip install tomli)"
            ) from exc
    path = Path(path)
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except OSError as exc:
        raise ConfigError(f"config: cannot read {str(path)!r}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config: {str(path)!r} is not valid TOML: {exc}") from exc


def check_keys(table: dict, allowed, where: str) -> None:
    """Refuse keys of ``table`` outside ``allowed``, naming them and the allowed ones."""
    unknown = set(table) - set(allowed)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)}; allowed: {sorted(allowed)}")


def dispersive_material(kind: str, table, where: str):
    """An :mod:`emjax.materials` pole material from a config table: ``kind`` "drude"
    (eps_inf, omega_p, gamma) or "lorentz" (eps_inf, delta_eps, omega_0, gamma); ``eps_inf``
    defaults to 1, the others are required (``where`` names the table in errors)."""
    from . import materials

    if not isinstance(table, dict):
        raise ConfigError(f"{where}.{kind} must be a table, got {table!r}")
    table = dict(table)
    if kind == "drude":
        check_keys(table, {"eps_inf", "omega_p", "gamma"}, f"{where}.drude")
        try:
            return materials.Drude(table.get("eps_inf", 1.0), table["omega_p"], table["gamma"])
        except KeyError as exc:
            raise ConfigError(f"{where}.drude needs {exc.args[0]}") from None
    if kind != "lorentz":
        raise ConfigError(f"{where}: unknown material kind {kind!r}; allowed: drude, lorentz")
    check_keys(table, {"eps_inf", "delta_eps", "omega_0", "gamma"}, f"{where}.lorentz")
    try:
        return materials.Lorentz(
            table.get("eps_inf", 1.0), table["delta_eps"], table["omega_0"], table["gamma"]
        )
    except KeyError as exc:
        raise ConfigError(f"{where}.lorentz needs {exc.args[0]}") from None


def number(value, error: Exception) -> float:
    """``float(value)``, raising ``error`` for anything else (booleans included)."""
    if isinstance(value, bool):
        raise error
    try:
        return float(value)
    except (TypeError, ValueError):
        raise error from None


def parse_complex(value, field: str) -> complex:
    """A complex number from a number, a string like ``'2.25+0.1j'`` or ``[re, im]``."""
    try:
        if isinstance(value, (list, tuple)):
            if len(value) != 2:
                raise ValueError
            return complex(float(value[0]), float(value[1]))
        return (
            complex(str(value).replace(" ", "").replace("i", "j"))
            if isinstance(value, str)
            else complex(value)
        )
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            f"{field} must be a number, a string like '2.25+0.1j' or [re, im], got {value!r}"
        ) from exc


def parse_refractive_index(value, name: str = "m") -> complex:
    """A refractive index from ``1.5+0.01j``, ``1.5,0.01``, ``1.33``, a number or ``[n, k]``.

    Only the form is checked here; the API checks the range (``k >= 0``, finite).
    """
    bad = ConfigError(
        f"{name}: cannot read {value!r} as a refractive index; write it as 1.5+0.01j, 1.5,0.01 or 1.33"
    )
    if isinstance(value, bool):
        raise bad
    if isinstance(value, (int, float, complex)):
        return complex(value)
    if isinstance(value, (list, tuple)) and len(value) == 2:
        n, k = (number(v, bad) for v in value)
        return complex(n, k)
    if not isinstance(value, str):
        raise bad
    text = value.strip().replace(" ", "")
    if "," in text:
        parts = text.split(",")
        if len(parts) != 2:
            raise bad
        return complex(*(number(v, bad) for v in parts))
    try:
        return complex(text.replace("i", "j"))
    except ValueError:
        raise bad from None


def refractive_indices(value) -> tuple[complex, ...]:
    """All domains' indices from ``--m`` (list of strings) or a config's ``m``."""
    items = value if isinstance(value, list) else [value]
    if not items:
        raise ConfigError("m: give at least one refractive index")
    return tuple(parse_refractive_index(v, f"m[{i}]") for i, v in enumerate(items))


def finite_or_none(x):
    """``None`` for a non-finite float (JSON has no NaN), else ``x``."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def append_json(path: Path, record: dict) -> None:
    """Append ``record`` to the JSON list in ``path`` (created if missing), atomically."""
    records = []
    if path.exists():
        try:
            records = json.loads(path.read_text() or "[]")
        except json.JSONDecodeError as exc:
            raise ConfigError(f"--out: {str(path)!r} is not valid JSON: {exc}") from exc
        if not isinstance(records, list):
            raise ConfigError(f"--out: {str(path)!r} must hold a JSON list")
    records.append(record)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(records, indent=1, default=str) + "\n")
    tmp.replace(path)


_MISSING = object()


class Table:
    """A TOML table read field by field with types, ranges and required keys checked, every
    failure a one-line :class:`ConfigError` naming ``where.key`` and what is allowed.

    ``Table(cfg["grid"], "[grid]", allowed={...})`` refuses unknown keys at once (listing the
    allowed ones); then ``t.int("steps", lo=1)``, ``t.real("dx", lo=0, lo_open=True)``,
    ``t.ints("index", 3)``, ``t.choice("component", ("x", "y", "z"), default="z")``,
    ``t.number("eps")`` (real, or complex as ``[re, im]``) read one key each; a key without
    ``default`` is required."""

    def __init__(self, table, where: str, allowed=None):
        if table is None:
            table = {}
        if not isinstance(table, dict):
            raise ConfigError(f"{where} must be a table (key = value lines), got {table!r}")
        self.table, self.where = table, where
        if allowed is not None:
            check_keys(table, allowed, where)

    def has(self, key: str) -> bool:
        return key in self.table

    def _get(self, key, default, what):
        if key in self.table:
            return self.table[key]
        if default is _MISSING:
            raise ConfigError(f"{self.where}.{key} is required ({what})")
        return default

    def _range(self, key, v, lo, hi, lo_open, kind):
        bad = (lo is not None and (v <= lo if lo_open else v < lo)) or (hi is not None and v > hi)
        if bad:
            left = "(" if lo_open else "["
            rng = f"{left}{'-inf' if lo is None else lo}, {'inf' if hi is None else hi}]"
            raise ConfigError(f"{self.where}.{key} must be {kind} in {rng}, got {v!r}")
        return v

    def int(self, key, *, default=_MISSING, lo=None, hi=None):
        v = self._get(key, default, "an integer")
        if v is default and default is not _MISSING:
            return v
        if isinstance(v, bool) or not isinstance(v, int):
            raise ConfigError(f"{self.where}.{key} must be an integer, got {v!r}")
        return self._range(key, v, lo, hi, False, "an integer")

    def real(self, key, *, default=_MISSING, lo=None, hi=None, lo_open=False):
        v = self._get(key, default, "a number")
        if v is default and default is not _MISSING:
            return v
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ConfigError(f"{self.where}.{key} must be a finite number, got {v!r}")
        return self._range(key, float(v), lo, hi, lo_open, "a number")

    def number(self, key, *, default=_MISSING):
        """A real number, or a complex one written ``[re, im]``."""
        v = self._get(key, default, "a number or [re, im]")
        if v is default and default is not _MISSING:
            return v
        if isinstance(v, list) and len(v) == 2 and all(_is_real(x) for x in v):
            return complex(v[0], v[1])
        if _is_real(v):
            return float(v)
        raise ConfigError(f"{self.where}.{key} must be a finite number or [re, im], got {v!r}")

    def ints(self, key, length: int, *, default=_MISSING, lo=None, hi=None):
        """A list of ``length`` integers, each in [lo, hi] (``lo``/``hi`` a number or a list)."""
        v = self._get(key, default, f"{length} integers")
        if v is default and default is not _MISSING:
            return v
        if (
            not isinstance(v, list)
            or len(v) != length
            or any(isinstance(x, bool) or not isinstance(x, int) for x in v)
        ):
            raise ConfigError(f"{self.where}.{key} must be a list of {length} integers, got {v!r}")
        for k, x in enumerate(v):
            lk = lo[k] if isinstance(lo, (list, tuple)) else lo
            hk = hi[k] if isinstance(hi, (list, tuple)) else hi
            self._range(f"{key}[{k}]", x, lk, hk, False, "an integer")
        return tuple(v)

    def reals(self, key, *, length=None, default=_MISSING, lo=None, lo_open=False):
        v = self._get(key, default, "a list of numbers")
        if v is default and default is not _MISSING:
            return v
        if not isinstance(v, list) or not v or any(not _is_real(x) for x in v):
            raise ConfigError(f"{self.where}.{key} must be a non-empty list of finite numbers, got {v!r}")
        if length is not None and len(v) != length:
            raise ConfigError(f"{self.where}.{key} must have {length} numbers, got {len(v)}")
        for k, x in enumerate(v):
            self._range(f"{key}[{k}]", float(x), lo, None, lo_open, "a number")
        return tuple(float(x) for x in v)

    def choice(self, key, options, *, default=_MISSING):
        v = self._get(key, default, f"one of {', '.join(map(str, options))}")
        if v not in options:
            raise ConfigError(f"{self.where}.{key} must be one of {', '.join(map(str, options))}, got {v!r}")
        return v


def _is_real(x) -> bool:
    return not isinstance(x, bool) and isinstance(x, (int, float)) and math.isfinite(x)
