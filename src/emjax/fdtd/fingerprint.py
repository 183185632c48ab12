"""What an FDTD checkpoint was written for: one digest per kind of input, compared kind by
kind when a run resumes, so a checkpoint is never resumed for another problem and the
refusal names what differs in the user's terms.

The digests are taken of what the time loop consumes, not of the user's configuration:
the step's static plan (grid, sources, probes, monitors, boundaries, pole counts, subpixel
region) and its coefficient arrays (``ca``, ``cb``, pole coefficients, PEC mask, subpixel
tensors, CPML profiles, source coefficients), hashed by their bytes, dtype and shape. A
change of eps, sigma, a pole, an object's size or place, the subpixel averaging, a
source's place, amplitude or waveform, a monitor's plane or frequencies, the PML or the
precision changes one of them, whichever way it was written (TOML, physical
:class:`~emjax.fdtd.Simulation` or cell-index :class:`~emjax.fdtd.GridSimulation`).
Things that do not change the answer stay out: the device layout, the CPML's in-place or
padded form, the chunk, and the number of steps (a run may be extended; only a TF/SF
source's 1-D grid, sized for the whole run, ties a checkpoint to it).

Grid and precision are stored as text (reported with both values); the others as SHA-256
digests. Every coefficient depends on the grid and the precision, so when one of those
differs only it is named. The digests are taken once per run that has a checkpoint (a
4M-cell grid with per-cell eps and sigma: 0.2 s on a 2-core CPU).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json

import jax
import numpy as np

FORMAT = "emjax-fdtd-checkpoint/2"

#: kind -> how a refusal names it
LABELS = {
    "grid": "grid (shape, cell size, time step, order)",
    "precision": "precision",
    "run length": "number of steps (a TF/SF source's 1-D grid is sized for the whole run)",
    "materials": "materials and geometry (eps/sigma, dispersive poles, PEC, subpixel averaging)",
    "sources": "sources (positions, components, amplitudes, waveforms, TF/SF box and plane wave)",
    "monitors": "monitors and probes (positions, planes, frequencies)",
    "boundaries": "boundaries (PML, PEC walls, periodic/Bloch)",
    "initial": "initial fields",
}
_TEXT = ("grid", "precision", "run length")  # stored as text, named with both values


def _array_text(x) -> str:
    a = np.ascontiguousarray(np.asarray(x))
    h = hashlib.sha256(a.tobytes()).hexdigest()
    return f"array({a.dtype.str},{a.shape},{h})"


def _waveform_samples(f, dt: float) -> str:
    """A callable that is not a dataclass (a user's function): its values at the times
    the step evaluates sources (whole and half steps) over the first 4096 steps and on a
    geometric set of later ones up to 1e8 (a function of one time only: the first 512
    steps). One that cannot be evaluated here gets a text no other run shares: its
    checkpoint resumes only in the same process."""
    n = np.unique(np.concatenate([np.arange(4096), np.geomspace(4096, 1e8, 400).astype(np.int64)]))
    t = np.concatenate([n, n + 0.5]) * dt
    with jax.enable_x64(True):
        try:
            v = np.asarray(f(jax.numpy.asarray(t)), dtype=complex)
            if v.shape != t.shape:
                raise ValueError
        except Exception:  # not vectorized: one time at a time
            try:
                v = np.array([complex(np.asarray(f(jax.numpy.asarray(x)))) for x in t[:1024]])
            except Exception:  # cannot be sampled: never equal to another run's
                return f"unsampled {getattr(f, '__qualname__', type(f).__name__)} at {id(f)}"
    return "samples:" + _array_text(v)


def describe(x, dt: float) -> str:
    """A text that changes whenever ``x`` (a spec object, number, array, tuple ...)
    changes in anything the step reads; the same for equal objects in any process."""
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        inner = ",".join(f"{f.name}={describe(getattr(x, f.name), dt)}" for f in dataclasses.fields(x))
        return f"{type(x).__qualname__}({inner})"
    if isinstance(x, (tuple, list)):
        return "(" + ",".join(describe(v, dt) for v in x) + ")"
    if isinstance(x, dict):
        return "{" + ",".join(f"{k!r}:{describe(x[k], dt)}" for k in sorted(x, key=str)) + "}"
    if x is None or isinstance(x, (bool, str, int, np.bool_, np.integer)):
        return repr(x.item() if isinstance(x, np.generic) else x)
    if isinstance(x, (float, np.floating)):
        return repr(float(x))
    if isinstance(x, (complex, np.complexfloating)):
        return repr(complex(x))
    if isinstance(x, (np.ndarray, jax.Array)):
        return _array_text(x)
    if callable(x):
        return _waveform_samples(x, dt)
    if hasattr(x, "__dict__"):  # a plain object holding data (e.g. scattering.PlaneWave)
        return f"{type(x).__qualname__}{describe(dict(vars(x)), dt)}"
    return f"{type(x).__qualname__}:{x!r}"


def _kind_of_array(name: str) -> str:
    if name.startswith("pml"):
        return "boundaries"
    if name == "src_cb":
        return "sources"
    return "materials"  # ca, cb, poles, PEC mask, subpixel tensors: anything else


def digests(plan, arrays: dict, initial=None) -> dict:
    """``{kind: text or digest}`` of a run's plan and coefficient arrays (see the module
    docstring); ``initial``: the run's initial fields (E, H) or None."""
    from .tfsf import TFSF

    dt = plan.dt
    real = np.dtype(arrays["cb"].dtype)  # the coefficients' precision (no host copy here)
    parts = {k: [] for k in LABELS if k not in _TEXT}
    for name in sorted(arrays):  # every leaf as an array (a NumPy scalar, a 0-d NumPy or JAX array alike)
        leaves = jax.tree_util.tree_leaves(arrays[name])
        parts[_kind_of_array(name)].append(f"{name}=" + ",".join(_array_text(x) for x in leaves))
    parts["materials"] += [
        describe((plan.n_poles, plan.n_lorentz, plan.has_pec), dt),
        describe((plan.subpixel, plan.subpixel_poles, plan.subpixel_inline), dt),
    ]
    parts["sources"].append(describe(plan.sources, dt))
    parts["monitors"] += [describe(plan.monitors, dt), describe(plan.probes, dt)]
    parts["boundaries"].append(
        describe((plan.walls, plan.pml, plan.pml_faces, plan.pml_kappa, plan.bloch), dt)
        + (f"; pmc {plan.pmc}" if any(plan.pmc) else "")
    )
    parts["initial"].append("none" if initial is None else describe((initial[0], initial[1]), dt))
    out = {"format": FORMAT}
    out["grid"] = f"shape {tuple(plan.shape)}; dx {plan.dx!r}; dt {plan.dt!r}; order {plan.order}"
    out["precision"] = "single" if real == np.float32 else "double"  # complex fields: a boundary
    tf = any(isinstance(s, TFSF) for s in plan.sources)
    out["run length"] = f"TF/SF 1-D grid of {plan.aux_len} cells" if tf else "any"
    for kind, texts in parts.items():
        out[kind] = hashlib.sha256("\n".join(texts).encode()).hexdigest()
    return out


class Fingerprint:
    """The digests of one run (computed once, at its start) and its plan (the sharded
    checkpoint reads the layout from it)."""

    def __init__(self, plan, arrays: dict, initial=None):
        self.plan = plan
        self.digests = digests(plan, arrays, initial)
        self.text = json.dumps(self.digests, sort_keys=True)


def difference(saved: str, current: Fingerprint) -> str | None:
    """None if the checkpoint's fingerprint text ``saved`` is ``current``'s; otherwise
    what differs, e.g. ``materials and geometry (...) differ``; ``"old"`` for a checkpoint
    of an earlier format (its fingerprint covered neither materials nor sources)."""
    try:
        old = json.loads(saved)
    except (ValueError, TypeError):
        return "old"
    if not isinstance(old, dict) or old.get("format") != FORMAT:
        return "old"
    new = current.digests
    if all(old.get(k) == new[k] for k in new):
        return None
    kinds = [k for k in ("grid", "precision") if old.get(k) != new[k]]
    if not kinds:  # every coefficient follows from grid and precision: else name only them
        kinds = [k for k in LABELS if old.get(k) != new[k]]
    return "; ".join(_differs(k, old.get(k), new[k]) for k in kinds)


def _differs(kind: str, there, here: str) -> str:
    if kind not in _TEXT:
        return f"{LABELS[kind]} differ"
    if kind == "grid" and isinstance(there, str):  # only the entries that differ
        pairs = [(a.split(" ", 1), b.split(" ", 1)) for a, b in zip(there.split("; "), here.split("; "))]
        diff = [f"{b[0]} {a[-1]} there, {b[-1]} here" for a, b in pairs if a != b]
        return f"grid differs ({'; '.join(diff) or f'{there} there, {here} here'})"
    return f"{LABELS[kind]} differs ({there} there, {here} here)"
