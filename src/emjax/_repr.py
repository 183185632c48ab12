"""A concise ``repr`` for result records: scalars in full, arrays as their shape and dtype,
long sequences by length, so that ``print(result)`` fits a screen."""

from __future__ import annotations

import dataclasses

import numpy as np


def _is_array(v) -> bool:
    return isinstance(v, (np.ndarray, np.generic)) or (
        hasattr(v, "__array__") and isinstance(getattr(v, "shape", None), tuple) and hasattr(v, "dtype")
    )


def _short(v, depth: int = 0) -> str:
    if _is_array(v) and np.ndim(v) > 0:
        return f"array{tuple(v.shape)} {v.dtype}"
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, complex):
        return f"{v:.6g}"
    if isinstance(v, dict):
        if depth or len(v) > 8:
            return f"{{{len(v)} entries}}"
        return "{" + ", ".join(f"{k!r}: {_short(x, depth + 1)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        if len(v) > 6 or depth:
            return f"{type(v).__name__} of {len(v)}"
        return (
            ("[" if isinstance(v, list) else "(")
            + ", ".join(_short(x, depth + 1) for x in v)
            + ("]" if isinstance(v, list) else ")")
        )
    if _is_array(v):  # a NumPy/JAX scalar
        return _short(v.item(), depth)
    r = " ".join(repr(v).split())
    return r if len(r) <= 60 else r[:57] + "..."


def concise_repr(self) -> str:
    """``Name(field=value, ...)`` over the dataclass fields, arrays shortened."""
    fields = dataclasses.fields(self) if dataclasses.is_dataclass(self) else ()
    parts = [f"{f.name}={_short(getattr(self, f.name))}" for f in fields if f.repr]
    return f"{type(self).__name__}(" + ", ".join(parts) + ")"
