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
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"config: cannot read {str(path)!r}: {exc.strerror}") from exc
    text = _utf8_text(data, path)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config: {str(path)!r} is not valid TOML: {exc}") from exc


def _utf8_text(data: bytes, path: Path) -> str:
    """The file's text, or a one-line :class:`ConfigError` saying where it stops being UTF-8
    text (byte offset, line, column) and what a config must be."""
    where = str(path)
    nul = data.find(b"\0")
    try:
        text = data.decode("utf-8")
        bad = nul
    except UnicodeDecodeError as exc:
        bad = exc.start if nul < 0 else min(nul, exc.start)
    if bad < 0:
        return text
    if bad == nul or _looks_binary(data):
        raise ConfigError(
            f"config: {where!r} is a binary file, not a TOML config (byte {data[bad]:#04x} at "
            f"offset {bad}); expected a UTF-8 text file of key = value lines"
        )
    line = data.count(b"\n", 0, bad) + 1
    column = bad - (data.rfind(b"\n", 0, bad) + 1) + 1
    raise ConfigError(
        f"config: {where!r} is not UTF-8 text: byte {data[bad]:#04x} at offset {bad} (line "
        f"{line}, column {column}); expected UTF-8 (TOML's encoding): save the file as UTF-8"
    )


def _looks_binary(data: bytes) -> bool:
    """A known binary signature or many control bytes in the first KiB (not text in some
    other encoding)."""
    head = data[:1024]
    if head.startswith((b"\x89PNG", b"%PDF", b"PK\x03\x04", b"\x7fELF", b"GIF8", b"\xff\xd8\xff")):
        return True
    control = sum(b < 32 and b not in b"\t\n\r\f" for b in head)
    return control > len(head) // 100 + 1


def check_devices_option(devices) -> None:
    """``--devices N`` (None: not given) against the devices JAX sees, named as typed."""
    if devices is None:
        return
    import jax

    from .errors import require_int

    require_int("--devices", devices, 1, len(jax.devices()), why="the devices JAX sees")


def check_keys(table: dict, allowed, where: str) -> None:
    """Refuse keys of ``table`` outside ``allowed``, naming them and the allowed ones."""
    unknown = set(table) - set(allowed)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)}; allowed: {sorted(allowed)}")


def dispersive_material(kind: str, table, where: str):
    """An :mod:`emjax.materials` pole material from a config table: ``kind`` "drude"
    (eps_inf; the plasma frequency as f_p > 0 in 1/length, emjax's frequency convention, or
    omega_p > 0 in rad per unit time = 2 pi f_p; gamma >= 0 in the same unit) or "lorentz"
    (eps_inf, delta_eps; f_0 or omega_0 > 0; gamma >= 0 likewise); ``eps_inf`` defaults to 1,
    exactly one frequency key and the others are required (``where`` names the table)."""
    from . import materials

    if kind not in ("drude", "lorentz"):
        raise ConfigError(f"{where}: unknown material kind {kind!r}; allowed: drude, lorentz")
    if not isinstance(table, dict):
        raise ConfigError(f"{where}.{kind} must be a table {{...}}, got {table!r}")
    f_key, w_key = ("f_p", "omega_p") if kind == "drude" else ("f_0", "omega_0")
    extra = {"delta_eps"} if kind == "lorentz" else set()
    t = Table(table, f"{where}.{kind}", {"eps_inf", f_key, w_key, "gamma"} | extra)
    if t.has(f_key) == t.has(w_key):
        raise ConfigError(
            f"{where}.{kind}: give exactly one of {f_key} (frequency in 1/length, c/wavelength: the "
            f"unit of every frequency key) or {w_key} (rad per unit time, 2 pi {f_key}); gamma "
            f"is in the same unit"
        )
    key = f_key if t.has(f_key) else w_key
    freq = {key: t.real(key, lo=0, lo_open=True), "gamma": t.real("gamma", lo=0)}
    if kind == "drude":
        return materials.Drude(t.real("eps_inf", default=1.0), **freq)
    return materials.Lorentz(t.real("eps_inf", default=1.0), t.real("delta_eps"), **freq)


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


def _interval(lo, hi, lo_open=False, hi_open=False) -> str:
    left = "(" if lo_open or lo is None else "["
    right = ")" if hi_open else "]"
    return f"{left}{'-inf' if lo is None else lo}, {'inf' if hi is None else hi}{right}"


class Table:
    """A TOML table read field by field with types, ranges and required keys checked, every
    failure a one-line :class:`ConfigError` naming ``where.key`` and what is allowed.

    ``Table(cfg["grid"], "[grid]", allowed={...})`` refuses unknown keys at once (listing the
    allowed ones); then ``t.int("steps", lo=1)``, ``t.real("dx", lo=0, lo_open=True)``,
    ``t.positive("wavelength")``, ``t.ints("index", 3)``, ``t.reals("size", length=3)``,
    ``t.choice("component", ("x", "y", "z"), default="z")``, ``t.number("eps")`` (real, or
    complex as ``[re, im]``), ``t.complex("eps")`` (also ``"2.25+0.1j"``), ``t.string``,
    ``t.boolean`` read one key each; a key without ``default`` is required. ``t.sub("map",
    allowed)`` and ``t.tables("objects")`` read nested tables, named by their path
    (``[map].size``, ``objects[2].radius``). ``where=""`` is the file's top level: its keys are
    named bare (``wavelength``)."""

    def __init__(self, table, where: str, allowed=None):
        if table is None:
            table = {}
        if not isinstance(table, dict):
            raise ConfigError(f"{where or 'config'} must be a table (key = value lines), got {table!r}")
        self.table, self.where = table, where
        if allowed is not None:
            check_keys(table, allowed, where or "config")

    def name(self, key) -> str:
        """The field's path as the messages write it."""
        return f"{self.where}.{key}" if self.where else str(key)

    def has(self, key: str) -> bool:
        return key in self.table

    def get(self, key, default=None):
        """The raw value (unchecked)."""
        return self.table.get(key, default)

    def _get(self, key, default, what):
        if key in self.table:
            return self.table[key]
        if default is _MISSING:
            raise ConfigError(f"{self.name(key)} is required ({what})")
        return default

    def _range(self, key, v, lo, hi, lo_open, kind, hi_open=False):
        bad = (lo is not None and (v <= lo if lo_open else v < lo)) or (
            hi is not None and (v >= hi if hi_open else v > hi)
        )
        if bad:
            rng = _interval(lo, hi, lo_open, hi_open)
            raise ConfigError(f"{self.name(key)} must be {kind} in {rng}, got {v!r}")
        return v

    def int(self, key, *, default=_MISSING, lo=None, hi=None):
        v = self._get(key, default, "an integer")
        if v is default and default is not _MISSING:
            return v
        if isinstance(v, bool) or not isinstance(v, int):
            rng = f" in {_interval(lo, hi)}" if lo is not None or hi is not None else ""
            raise ConfigError(f"{self.name(key)} must be an integer{rng}, got {v!r}")
        return self._range(key, v, lo, hi, False, "an integer")

    def real(self, key, *, default=_MISSING, lo=None, hi=None, lo_open=False, hi_open=False):
        v = self._get(key, default, "a number")
        if v is default and default is not _MISSING:
            return v
        if not _is_real(v):
            rng = f" in {_interval(lo, hi, lo_open, hi_open)}" if lo is not None or hi is not None else ""
            raise ConfigError(f"{self.name(key)} must be a finite number{rng}, got {v!r}")
        return self._range(key, float(v), lo, hi, lo_open, "a number", hi_open)

    def positive(self, key, *, default=_MISSING):
        """A finite number > 0 ("X must be > 0")."""
        v = self._get(key, default, "a number > 0")
        if v is default and default is not _MISSING:
            return v
        if not _is_real(v):
            raise ConfigError(f"{self.name(key)} must be a number > 0, got {v!r}")
        if v <= 0:
            raise ConfigError(f"{self.name(key)} must be > 0, got {v!r}")
        return float(v)

    def number(self, key, *, default=_MISSING):
        """A real number, or a complex one written ``[re, im]``."""
        v = self._get(key, default, "a number or [re, im]")
        if v is default and default is not _MISSING:
            return v
        if isinstance(v, list) and len(v) == 2 and all(_is_real(x) for x in v):
            return complex(v[0], v[1])
        if _is_real(v):
            return float(v)
        raise ConfigError(f"{self.name(key)} must be a finite number or [re, im], got {v!r}")

    def complex(self, key, *, default=_MISSING, lossy=False):
        """A finite complex number: a number, ``"2.25+0.1j"`` or ``[re, im]``; ``lossy``: Im
        >= 0 (``exp(-i omega t)``: absorption)."""
        v = self._get(key, default, "a number, '2.25+0.1j' or [re, im]")
        if v is default and default is not _MISSING:
            return v
        return _complex(v, self.name(key), lossy)

    def complexes(self, key, *, length=None, min_length=1, default=_MISSING, lossy=False):
        """A list of complex numbers (each as :meth:`complex`)."""
        v = self._get(key, default, "a list of numbers")
        if v is default and default is not _MISSING:
            return v
        n = f"{length}" if length is not None else f">= {min_length}"
        if not isinstance(v, list) or (len(v) != length if length is not None else len(v) < min_length):
            raise ConfigError(
                f"{self.name(key)} must be a list of {n} numbers ('2.25+0.1j' or [re, im] allowed), got {v!r}"
            )
        return tuple(_complex(x, self.name(f"{key}[{k}]"), lossy) for k, x in enumerate(v))

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
            raise ConfigError(f"{self.name(key)} must be a list of {length} integers, got {v!r}")
        for k, x in enumerate(v):
            lk = lo[k] if isinstance(lo, (list, tuple)) else lo
            hk = hi[k] if isinstance(hi, (list, tuple)) else hi
            self._range(f"{key}[{k}]", x, lk, hk, False, "an integer")
        return tuple(v)

    def reals(self, key, *, length=None, default=_MISSING, lo=None, hi=None, lo_open=False):
        """A non-empty list of finite numbers (``length`` of them if given), each in the range."""
        v = self._get(key, default, "a list of numbers" if length is None else f"{length} numbers")
        if v is default and default is not _MISSING:
            return v
        if not isinstance(v, list) or not v or any(not _is_real(x) for x in v):
            what = "a non-empty list of finite numbers" if length is None else f"a list of {length} numbers"
            raise ConfigError(f"{self.name(key)} must be {what}, got {v!r}")
        if length is not None and len(v) != length:
            raise ConfigError(f"{self.name(key)} must be a list of {length} numbers, got {len(v)}: {v!r}")
        for k, x in enumerate(v):
            self._range(f"{key}[{k}]", float(x), lo, hi, lo_open, "a number")
        return tuple(float(x) for x in v)

    def choice(self, key, options, *, default=_MISSING, fold=False):
        """One of ``options`` (``fold``: strings compared case-insensitively, the option's
        spelling returned)."""
        v = self._get(key, default, f"one of {', '.join(map(str, options))}")
        if v is default and default is not _MISSING:
            return v
        if fold and isinstance(v, str):
            v = next((o for o in options if isinstance(o, str) and o.lower() == v.lower()), v)
        if isinstance(v, bool) or v not in options:
            raise ConfigError(f"{self.name(key)} must be one of {', '.join(map(str, options))}, got {v!r}")
        return v

    def string(self, key, *, default=_MISSING, what="a string"):
        v = self._get(key, default, what)
        if v is default and default is not _MISSING:
            return v
        if not isinstance(v, str) or not v:
            raise ConfigError(f"{self.name(key)} must be {what}, got {v!r}")
        return v

    def boolean(self, key, *, default=_MISSING):
        v = self._get(key, default, "true or false")
        if not isinstance(v, bool):
            raise ConfigError(f"{self.name(key)} must be true or false, got {v!r}")
        return v

    def sub(self, key, allowed=None, *, required=False) -> Table:
        """The nested table ``key`` (``[key]`` at the top level, ``where.key`` below)."""
        where = f"[{key}]" if not self.where else self.name(key)
        if required and key not in self.table:
            raise ConfigError(f"{where} is required (a table)")
        return Table(self.table.get(key), where, allowed)

    def tables(self, key, allowed=None) -> list:
        """The array of tables ``[[key]]``: one :class:`Table` per entry, named ``key[i]``."""
        v = self.table.get(key, [])
        if not isinstance(v, list) or not all(isinstance(x, dict) for x in v):
            raise ConfigError(f"{self.name(key)} must be an array of tables ([[{key}]] sections), got {v!r}")
        prefix = self.name(key)
        return [Table(x, f"{prefix}[{i}]", allowed) for i, x in enumerate(v)]


def _complex(v, field: str, lossy: bool) -> complex:
    z = parse_complex(v, field) if not isinstance(v, bool) else None
    if z is None:
        raise ConfigError(f"{field} must be a number, a string like '2.25+0.1j' or [re, im], got {v!r}")
    if not (math.isfinite(z.real) and math.isfinite(z.imag)):
        raise ConfigError(f"{field} must be finite, got {v!r}")
    if lossy and z.imag < 0:
        raise ConfigError(f"{field}: Im must be >= 0 (exp(-i omega t): absorption), got {v!r}")
    return z


def _is_real(x) -> bool:
    return not isinstance(x, bool) and isinstance(x, (int, float)) and math.isfinite(x)
