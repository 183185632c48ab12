"""The total-field/scattered-field source (:mod:`emjax.fdtd.tfsf`) in the CUDA blocked kernel.

Axis-aligned incidence (+ or - along any axis, any transverse polarization, the box mirrored
through a PEC wall too): before each pass of TH steps the 1-D auxiliary grid advances TH
steps with :func:`emjax.fdtd.tfsf.aux_step_h` / :func:`~emjax.fdtd.tfsf.aux_step_e` (XLA, a
few hundred values) and the kernel gets, per step of the pass, the incident lines on the 3-D
grid's nodes along the incidence axis (:func:`lines`: E at step ``n`` and H at ``n + 1/2``,
an array ``(TH, 2, n_axis)``, as the point dipoles get their values). The kernel adds the
face corrections of :func:`emjax.fdtd.tfsf.correction_h` / ``correction_e`` where they can
be nonzero (a cell whose stencil reaches the box's nodes), from the same masks and wrapped
differences: ``-dt (m_H curl E_inc - curl(m_E E_inc))`` to H and ``cb (m_E curl H_inc -
curl(m_H H_inc))`` inside E's update, in the XLA step's order. The aux state advanced is the
XLA step's, so the next pass and the incident spectrum are unchanged.

On several devices (:mod:`.shards`) every device advances the same 1-D line and takes the
lines whole: the kernel indexes them, and the box, by the grid's planes.

Not carried (:func:`unsupported` says so, and ``kernel="auto"`` keeps the XLA step): oblique
incidence (an analytic incident field over the box's faces) and more than one TF/SF box.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .. import tfsf as tfsf_mod
from ..tfsf import TFSF


def source(plan):
    """The plan's TF/SF source, or None."""
    return next((s for s in plan.sources if isinstance(s, TFSF)), None)


def unsupported(plan) -> str | None:
    """Why the CUDA kernel cannot carry ``plan``'s TF/SF source (None: it can, or none);
    several devices: :func:`.cuda_advance.unsupported`."""
    boxes = [s for s in plan.sources if isinstance(s, TFSF)]
    if not boxes:
        return None
    if len(boxes) > 1:
        return "more than one TF/SF source"
    if boxes[0].oblique:
        return "oblique TF/SF incidence (its analytic incident field; incidence along an axis is carried)"
    return None


def amplitudes(tf: TFSF) -> tuple:
    """(E, H) factors of the 1-D lines per component, as :func:`emjax.fdtd.tfsf._components`
    takes them (0 where it leaves the component out)."""
    pol = np.real(tf.wave.polarization)
    out = []
    for vec in (pol, np.cross(tf.wave.direction, pol)):
        out.append(tuple(0.0 if abs(v) < 1e-15 else float(v) for v in vec))
    return tuple(out)


def spec_entry(plan) -> tuple | None:
    """The kernel's static description of the box: (axis, n_axis, lower node bounds of
    integer / half-integer positions (2 x 3), upper ones (2 x 3), (E, H) amplitudes (2 x 3)).
    A node at position ``i`` (integer) or ``i + 1/2`` (half) along an axis is in the box
    when ``lo <= i <= hi``: :func:`emjax.fdtd.tfsf._mask_1d`'s ``lo <= pos <= hi - 1``."""
    tf = source(plan)
    if tf is None:
        return None
    lo = [[0] * 3, [0] * 3]
    hi = [[0] * 3, [0] * 3]
    for a in range(3):
        if tf.mirror[a]:  # through the wall: from position 1/2 (tfsf._box_mask)
            lo[0][a], lo[1][a] = 1, 0
        else:
            lo[0][a] = lo[1][a] = int(tf.lo[a])
        hi[0][a], hi[1][a] = int(tf.hi[a]) - 1, int(tf.hi[a]) - 2
    return (
        tf.axis,
        int(plan.shape[tf.axis]),
        tuple(map(tuple, lo)),
        tuple(map(tuple, hi)),
        amplitudes(tf),
    )


def defines(entry: tuple | None, literal) -> dict:
    """The kernel header's ``#define`` s for a spec's ``tfsf`` entry."""
    if entry is None:
        return {"TFSF": 0}
    axis, na, lo, hi, amp = entry

    def table(rows, fmt):
        return ", ".join("{" + ", ".join(fmt(v) for v in r) + "}" for r in rows)

    guard = {}
    for a in range(3):  # the nodes in the box along a lie in [min lo, max hi]
        guard[f"TF_G{a}_LO"] = min(lo[0][a], lo[1][a])
        guard[f"TF_G{a}_HI"] = max(hi[0][a], hi[1][a])
    return {
        **guard,
        "TFSF": 1,
        "TF_AXIS": axis,
        "TF_NA": na,
        "TF_LO_TABLE": table(lo, str),
        "TF_HI_TABLE": table(hi, str),
        "TF_AMP_TABLE": table(amp, literal),
    }


def _on_nodes(line, idx):
    """The line at the 3-D grid's nodes along the axis (0 behind the aux source), as
    :func:`emjax.fdtd.tfsf.incident_fields` reads it."""
    return jnp.where(jnp.asarray(idx >= 0), line[np.clip(idx, 0, None)], 0)


def lines(plan, aux, n, th: int, dtype):
    """The 1-D grid ``aux = (e1, h1)`` advanced ``th`` steps from step ``n`` (as
    :func:`emjax.fdtd.step.step` advances it) and the kernel's input: per step ``s`` of the
    pass the E line before the step and the H line after its half step, on the grid's
    nodes along the axis; flat ``(th * 2 * n_axis,)``. Returns (new aux, lines)."""
    tf = source(plan)
    na = plan.shape[tf.axis]
    idx_e = tfsf_mod._aux_index(tf, na, "E")
    idx_h = tfsf_mod._aux_index(tf, na, "H")
    courant = plan.dt / plan.dx
    real = jnp.finfo(dtype).dtype
    e1, h1 = aux
    rows = []
    for t in range(th):
        rows.append(_on_nodes(e1, idx_e))
        h1 = tfsf_mod.aux_step_h(tf, e1, h1, courant)
        rows.append(_on_nodes(h1, idx_h))
        e1 = tfsf_mod.aux_step_e(tf, e1, h1, courant, (n + t + 1).astype(real) * plan.dt)
    return (e1, h1), jnp.concatenate(rows).astype(dtype)
