"""Checkpoints of an orientation average: the per-orientation records, saved after every
batch so that an interrupted :func:`emjax.dda.average` resumes where it stopped.

A checkpoint is an ``.npz`` file (written to a temporary name, then renamed, so a kill during
the write leaves the previous one intact) holding the solved orientations (beta, gamma) and
their records, plus a fingerprint of everything that changes the records, kind by kind: the
particle as the solver sees it (the lattice's occupied cells and domains, hashed, and the
dipole size), the refractive index per domain, the wavelength, the polarizability, the
precision, the scattering angles (and whether Csca is integrated), the alpha count of the
scattering planes and the solver (method, tolerances, iteration limit). Resuming with a
different fingerprint is a ConfigError naming the kinds that differ, and one of an earlier
format (which did not hash the lattice) is refused too; the quadrature may differ (records are
physical orientations, so a run can be resumed with more refinement levels or a symmetry).
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from pathlib import Path

import numpy as np

from ..errors import ConfigError

_FIELDS = ("Cext", "Cabs", "M_avg", "M_yz", "it", "conv", "Csca_int", "g")


FORMAT = "emjax-dda-average-checkpoint/2"

#: kind -> how a refusal names it
LABELS = {
    "particle": "particle (shape, size, dipole lattice)",
    "m": "refractive index per domain (m)",
    "wavelength": "wavelength",
    "polarizability": "polarizability",
    "precision": "precision",
    "angles": "scattering angles (theta, integrate)",
    "alpha": "number of scattering planes (avg_alpha)",
    "solver": "solver (method, rtol, atol, maxiter)",
}


def fingerprint(problem, lattice, n_alpha: int, solver) -> str:
    """The fingerprint text of an average of ``problem`` on ``lattice`` (its
    :meth:`~emjax.dda.DDAProblem.lattice`) with ``n_alpha`` planes and ``solver``."""
    domains = np.ascontiguousarray(np.asarray(lattice.domains))
    cells = hashlib.sha256(domains.tobytes()).hexdigest()
    kinds = {
        "particle": f"lattice {domains.shape} {domains.dtype.str} {cells}, d {float(lattice.d)!r}",
        "m": repr([complex(m) for m in problem.refractive_indices()]),
        "wavelength": repr(float(problem.wavelength)),
        "polarizability": repr(problem.polarizability),
        "precision": str(problem.precision),
        "angles": f"theta {list(map(float, problem.theta))!r}, integrate {bool(problem.integrate)}",
        "alpha": str(int(n_alpha)),
        "solver": f"{solver.name} rtol {float(solver.rtol)!r} atol {float(solver.atol)!r} "
        f"maxiter {int(solver.maxiter)}",
    }
    return json.dumps({"format": FORMAT, **kinds}, sort_keys=True)


def _difference(saved: str, current: str) -> str | None:
    """None if equal; ``"old"`` for an earlier format; else the kinds that differ."""
    try:
        old = json.loads(saved)
    except (ValueError, TypeError):
        return "old"
    if not isinstance(old, dict) or old.get("format") != FORMAT:
        return "old"
    new = json.loads(current)
    diff = []
    for k, label in LABELS.items():
        if old.get(k) != new[k]:
            if k in ("particle", "angles") or len(str(new[k])) > 80:  # too long to show
                diff.append(f"{label} differs")
            else:
                diff.append(f"{label} differs ({old.get(k)} there, {new[k]} here)")
    return "; ".join(diff) or None


def save(path, fp: str, records: dict) -> None:
    """Write ``{(beta, gamma): record}`` atomically to ``path`` (several processes: process 0
    only, each holding the same records)."""
    from ..io import main_process

    if not main_process():
        return
    path = Path(path)
    angles = np.array(sorted(records), dtype=float).reshape(-1, 2)
    recs = [records[tuple(a)] for a in angles]
    arrays = {"fingerprint": np.array(fp), "angles": angles}
    for name in _FIELDS:
        if recs and name in recs[0]:
            arrays[name] = np.stack([r[name] for r in recs])
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        np.savez(f, **arrays)
    os.replace(tmp, path)


def load(path, fp: str) -> dict:
    """``{(beta, gamma): record}`` from ``path`` ({} if it does not exist); a checkpoint of
    another problem or of an earlier format is a ConfigError naming what differs."""
    path = Path(path)
    if not path.exists():
        return {}
    hint = "delete it to start afresh, or name another file"
    try:
        with np.load(path, allow_pickle=False) as data:
            diff = _difference(str(data["fingerprint"]), fp)
            if diff == "old":
                raise ConfigError(
                    f"checkpoint {str(path)!r} was written by an earlier emjax whose fingerprint does not "
                    f"cover the dipole lattice, so it cannot be checked against this problem; {hint}"
                )
            if diff is not None:
                raise ConfigError(
                    f"checkpoint {str(path)!r} was written for a different problem: {diff}; {hint}"
                )
            angles = data["angles"]
            fields = {name: data[name] for name in _FIELDS if name in data.files}
    except ConfigError:
        raise
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        why = str(exc).split("\n")[0] or type(exc).__name__
        raise ConfigError(f"checkpoint {str(path)!r} cannot be read ({why}); {hint}") from None
    return {
        (float(b), float(g)): {name: values[i] for name, values in fields.items()}
        for i, (b, g) in enumerate(angles)
    }
