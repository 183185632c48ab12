"""Drude and Lorentz poles (:mod:`emjax.fdtd.dispersive`) in the CUDA blocked kernel.

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
Lorentz poles (``P^(n+1) = c1 P^n + c2 P^(n-1) + c3 E^n``, Ampere's law taking
``-(P^(n+1) - P^n) / dt`` after the Drude terms) ride the same way, two values per component:
the polarization now and one step before. A Lorentz pole's c1 and c2 are one value each
(the pole's parameters and dt). On several devices (:mod:`.shards`) the state rides after H,
extended and exchanged like it.
"""

from __future__ import annotations

import numpy as np

KINDS = {"array": 0, "grid": 1, "comp": 2}


def _kind(values, shape) -> str:
    ndims = {np.ndim(v) for v in values}
    if ndims <= {0}:
        return "array"
    if ndims <= {0, 3}:
        return "grid"
    return "comp"


def spec_entry(plan, arrays) -> tuple | None:
    """(Drude poles, kind of their k, kind of their beta, Lorentz poles, kind of their c3),
    or None without poles."""
    if not plan.n_poles and not plan.n_lorentz:
        return None
    shape = tuple(plan.shape)
    lor = arrays.get("lorentz", ())
    return (
        int(plan.n_poles),
        _kind(arrays["pole_k"], shape),
        _kind(arrays["pole_beta"], shape),
        int(plan.n_lorentz),
        _kind([c3 for _, _, c3 in lor], shape),
    )


def n_j(spec) -> int:
    """State arrays the kernel carries: three currents per Drude pole, then per Lorentz pole
    and component the polarization now and one step before (the state's order)."""
    return 3 * spec.poles[0] + 6 * spec.poles[3] if spec.poles else 0


def _stacked(vals, kind, shape, dtype, xp):
    full = {"array": (), "grid": shape, "comp": (3,) + shape}[kind]
    vals = [xp.broadcast_to(xp.asarray(v, dtype), full) for v in vals]
    return xp.stack(vals) if vals else xp.zeros((0,), dtype)


def coefficient_inputs(plan, arrays, spec, xp) -> list:
    """The kernel's pole coefficients: ``pk`` and ``pb`` (every Drude pole's k and beta
    broadcast to the spec's kind, stacked along a leading pole axis), ``lc`` (each Lorentz
    pole's c1, c2) and ``l3`` (their c3, as pk)."""
    if not spec.poles:
        return []
    shape, dt = tuple(plan.shape), spec.dtype
    nd, kk, bk, nl, ck = spec.poles
    out = []
    if nd:
        out += [
            _stacked(arrays["pole_k"], kk, shape, dt, xp),
            _stacked(arrays["pole_beta"], bk, shape, dt, xp),
        ]
    if nl:
        lor = arrays["lorentz"]
        out.append(xp.reshape(xp.asarray([[c1, c2] for c1, c2, _ in lor], dt), (2 * nl,)))
        out.append(_stacked([c3 for _, _, c3 in lor], ck, shape, dt, xp))
    return out


def inputs(spec) -> list:
    """(name, shape) of the pole coefficients among the kernel's inputs."""
    if not spec.poles:
        return []
    nd, kk, bk, nl, ck = spec.poles
    full = spec.ashape

    def shape(n, kind):
        return {"array": (n,), "grid": (n,) + full, "comp": (n, 3) + full}[kind]

    out = [("pk", shape(nd, kk)), ("pb", shape(nd, bk))] if nd else []
    if nl:
        out += [("lc", (2 * nl,)), ("l3", shape(nl, ck))]
    return out


def defines(spec) -> dict:
    nd, kk, bk, nl, ck = spec.poles if spec.poles else (0, "array", "array", 0, "array")
    d = {"NPOLE": nd, "NLOR": nl, "NJ": n_j(spec)}
    if nd:
        d["PK_KIND"] = KINDS[kk]
        d["PB_KIND"] = KINDS[bk]
    if nl:
        d["L3_KIND"] = KINDS[ck]
    if nd or nl:
        d["JIN_LIST"] = ", ".join(f"jin{i}" for i in range(n_j(spec)))
        d["JOUT_LIST"] = ", ".join(f"jout{i}" for i in range(n_j(spec)))
    return d
