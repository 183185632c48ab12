"""Drude poles (:mod:`emjax.fdtd.dispersive`, the J-E scheme) in the CUDA blocked kernel.

Each Drude pole's current J (three components per cell) is state the kernel carries from
time level to time level the way it carries the CPML's psi: level 1 reads J^n of its plane
from memory, every level leaves J^(n+s) for the next level in registers, and the last level
writes J^(n+TH). At a level, Ampere's law takes ``-(1/2) sum_p (1 + k_p) J_p`` (the poles'
betas are already in ca and cb) and then ``J_p <- k_p J_p + beta_p (E_new + E_old)`` with E
after its walls and PEC cells and before the point sources: the XLA step's order
(:func:`emjax.fdtd.dispersive.before_e_update`, ``after_e_update``).

The J arrays travel next to the fields (inputs ``jin*`` after the six fields, outputs
``jout*`` after theirs), so the bulk kernel and the CPML kernels each update the J of the
cells they write. The per-pole coefficients k and beta come in as one array each, every
pole's broadcast to one kind (a value per pole, per cell, or per cell and component).
Lorentz poles are not carried (:func:`unsupported`).
"""

from __future__ import annotations

import numpy as np

KINDS = {"array": 0, "grid": 1, "comp": 2}


def unsupported(plan) -> str | None:
    """Why the CUDA kernel cannot carry ``plan``'s dispersive media (None: it can, or none)."""
    if plan.n_lorentz:
        return "Lorentz poles (Drude poles are carried)"
    if plan.n_poles and plan.layout is not None:
        return "Drude poles on several devices (one device carries them)"
    return None


def _kind(values, shape) -> str:
    ndims = {np.ndim(v) for v in values}
    if ndims <= {0}:
        return "array"
    if ndims <= {0, 3}:
        return "grid"
    return "comp"


def spec_entry(plan, arrays) -> tuple | None:
    """(number of Drude poles, kind of k, kind of beta), or None without poles."""
    if not plan.n_poles:
        return None
    shape = tuple(plan.shape)
    return (int(plan.n_poles), _kind(arrays["pole_k"], shape), _kind(arrays["pole_beta"], shape))


def n_j(spec) -> int:
    """J arrays the kernel carries: three per Drude pole."""
    return 3 * spec.poles[0] if spec.poles else 0


def coefficient_inputs(plan, arrays, spec, xp) -> list:
    """The kernel's ``pk`` and ``pb`` inputs: every pole's k (beta) broadcast to the spec's
    kind and stacked along a leading pole axis (a value per pole: shape (P,))."""
    if not spec.poles:
        return []
    shape = tuple(plan.shape)
    out = []
    for key, kind in (("pole_k", spec.poles[1]), ("pole_beta", spec.poles[2])):
        full = {"array": (), "grid": shape, "comp": (3,) + shape}[kind]
        vals = [xp.broadcast_to(xp.asarray(v, spec.dtype), full) for v in arrays[key]]
        out.append(xp.stack(vals) if vals else xp.zeros((0,), spec.dtype))
    return out


def inputs(spec) -> list:
    """(name, shape) of the pole coefficients among the kernel's inputs."""
    if not spec.poles:
        return []
    n, full = spec.poles[0], spec.ashape
    shapes = {"array": (n,), "grid": (n,) + full, "comp": (n, 3) + full}
    return [("pk", shapes[spec.poles[1]]), ("pb", shapes[spec.poles[2]])]


def defines(spec) -> dict:
    d = {"NPOLE": spec.poles[0] if spec.poles else 0}
    if spec.poles:
        d["PK_KIND"] = KINDS[spec.poles[1]]
        d["PB_KIND"] = KINDS[spec.poles[2]]
        d["JIN_LIST"] = ", ".join(f"jin{i}" for i in range(n_j(spec)))
        d["JOUT_LIST"] = ", ".join(f"jout{i}" for i in range(n_j(spec)))
    return d
