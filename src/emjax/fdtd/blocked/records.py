"""DFT monitors in the blocked kernel: the kernel writes every step's field values on each
monitor plane (boxes of cells, :class:`.cuda.Spec` ``boxes``); after a pass of TH steps the
running DFTs take the TH steps' samples at once, with the phases of
:func:`emjax.fdtd.monitors.accumulate`.

A :class:`~emjax.fdtd.monitors.DFTPlane` on E plane ``i`` normal to axis ``a`` needs its two
tangential E components on plane ``i`` and its two tangential H components on planes
``i - 1`` and ``i`` (their mean): four boxes. Along a tangential axis the plane's samples
``lo .. hi`` may wrap past the grid's end (a periodic axis's sample ``n`` is cell 0 again):
the box holds each cell once and the samples are gathered from it.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from .. import monitors as mon_mod

#: boxes a kernel can record (the per-thread masks are 64-bit)
MAX_BOXES = 64


def unsupported(plan) -> str | None:
    """Why the kernel cannot record ``plan``'s monitors (None: it can)."""
    if any(type(m) is not mon_mod.DFTPlane for m in plan.monitors):
        return "DFT monitors of all six components (DFTField)"
    if 4 * len(plan.monitors) > MAX_BOXES:
        return f"more than {MAX_BOXES // 4} DFT planes"
    if 8 * plan.shape[0] + 64 * MAX_BOXES > 60_000:  # the tables live in 64 KB of constant memory
        return "DFT planes on grids of more than 7000 x planes"
    return None


def _samples(mon, shape, ax):
    lo, hi = mon_mod._extent(mon, shape, ax)
    return lo, hi - lo + 1


def boxes(plan) -> tuple:
    """The boxes of ``plan``'s monitors: per monitor E t1, E t2 (plane i), H t1, H t2
    (planes i - 1, i)."""
    out = []
    for m in plan.monitors:
        lo, cnt = [0, 0, 0], [0, 0, 0]
        for ax in range(3):
            if ax != m.axis:
                lo[ax], n = _samples(m, plan.shape, ax)
                cnt[ax] = min(n, plan.shape[ax])
        t1, t2 = mon_mod.TANGENTIAL[m.axis]
        for field, first, count in (("E", m.index, 1), ("H", m.index - 1, 2)):
            lo[m.axis], cnt[m.axis] = first, count
            out += [(field, c, tuple(lo), tuple(cnt)) for c in (t1, t2)]
    return tuple(out)


def accumulate(plan, dft: tuple, mrec, spec, n, dt) -> tuple:
    """The monitors' running DFTs after a pass of ``spec.th`` steps from step ``n`` whose
    records are ``mrec`` (the kernel's flat output)."""
    th = spec.th
    out, off = [], 0
    for m, acc in zip(plan.monitors, dft):
        planes = []
        for b in spec.boxes[4 * len(out) : 4 * len(out) + 4]:
            size = th * math.prod(b[3])
            v = mrec[off : off + size].reshape((th,) + b[3])
            off += size
            for ax in range(3):  # the samples lo .. hi, a wrapped one gathered again
                if ax != m.axis:
                    n_s = _samples(m, plan.shape, ax)[1]
                    if n_s > b[3][ax]:
                        v = jnp.take(v, np.arange(n_s) % plan.shape[ax], axis=1 + ax)
            planes.append(v)
        e = jnp.stack([jnp.squeeze(p, 1 + m.axis) for p in planes[:2]], axis=1)
        h = jnp.stack(
            [0.5 * (jnp.take(p, 1, axis=1 + m.axis) + jnp.take(p, 0, axis=1 + m.axis)) for p in planes[2:]],
            axis=1,
        )
        f = jnp.asarray(m.frequencies, jnp.finfo(e.dtype).dtype)
        steps = (n + jnp.arange(th)).astype(f.dtype)
        cdt = acc["E"].dtype
        pE = mon_mod.phase(f[None], ((steps + 1) * dt)[:, None], dt, cdt)
        pH = mon_mod.phase(f[None], ((steps + 0.5) * dt)[:, None], dt, cdt)
        out.append(
            {
                "E": acc["E"] + jnp.einsum("tf,tcab->fcab", pE, e.astype(cdt)),
                "H": acc["H"] + jnp.einsum("tf,tcab->fcab", pH, h.astype(cdt)),
            }
        )
    return tuple(out)
