"""Checkpoints of an orientation average: the per-orientation records, saved after every
batch so that an interrupted :func:`emjax.dda.average` resumes where it stopped.

A checkpoint is an ``.npz`` file (written to a temporary name, then renamed, so a kill during
the write leaves the previous one intact) holding the solved orientations (beta, gamma) and
their records, plus a fingerprint of everything that changes the records (particle, lattice,
wavelength, polarizability, precision, angles, alpha count, solver tolerance). Resuming with a
different fingerprint is a ConfigError; the quadrature may differ (records are physical
orientations, so a run can be resumed with more refinement levels or a symmetry).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..errors import ConfigError

_FIELDS = ("Cext", "Cabs", "M_avg", "M_yz", "it", "conv", "Csca_int", "g")


def fingerprint(problem, n_alpha: int, solver) -> str:
    ms = [complex(m) for m in problem.refractive_indices()]
    return repr(
        (
            repr(problem.shape),
            ms,
            float(problem.wavelength),
            problem.size_x,
            problem.eq_rad,
            problem.dipoles_per_wavelength,
            problem.grid,
            repr(problem.polarizability),
            problem.precision,
            tuple(problem.theta),
            bool(problem.integrate),
            bool(problem.volume_correction),
            int(n_alpha),
            solver.name,
            float(solver.rtol),
            float(solver.atol),
        )
    )


def save(path, fp: str, records: dict) -> None:
    """Write ``{(beta, gamma): record}`` atomically to ``path``."""
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
    """``{(beta, gamma): record}`` from ``path`` ({} if it does not exist)."""
    path = Path(path)
    if not path.exists():
        return {}
    try:
        with np.load(path) as data:
            if str(data["fingerprint"]) != fp:
                raise ConfigError(
                    f"checkpoint {str(path)!r} belongs to another problem (particle, lattice, angles, "
                    "alpha count or solver differ); use another file or delete it"
                )
            angles = data["angles"]
            fields = {name: data[name] for name in _FIELDS if name in data.files}
    except (OSError, ValueError, KeyError) as exc:
        raise ConfigError(f"checkpoint {str(path)!r} cannot be read: {exc}") from exc
    return {
        (float(b), float(g)): {name: values[i] for name, values in fields.items()}
        for i, (b, g) in enumerate(angles)
    }
