"""Which step advances the window's slabs: the XLA step or the blocked kernel
(:mod:`emjax.fdtd.blocked`), chosen as :func:`emjax.fdtd.run` chooses it in memory
(``kernel="auto" | "xla" | "blocked"``), and the ghost planes' check against the seams.

The blocked kernel marches its CTAs along x and needs x walled (PEC or CPML). A slab's
sub-grid is cut where its planes stop being the grid's neighbours: an interior slab at both
ends (its periodic wrap), an edge ring between planes ``e - 1`` and ``s``. Everything within
``n r`` planes of a cut is spoiled after ``n`` steps whatever the sub-grid does there, and the
ghost planes keep the owned planes at least ``n r + 1`` away (:func:`check_ghosts`). So the
kernel runs an interior slab's sub-grid as if x were walled (PEC) at its two ends
(:func:`seam_walled`): the wall spoils only the ghost planes that the periodic wrap of the
XLA step spoils. An edge ring keeps the grid's own x wall and x-CPML (its sub-grid's ends
are the grid's faces) and its seam sits inside the march, where the march reads unrelated
neighbours exactly as the XLA step's sub-grid does.

Kernel TH: the measured best of the in-memory run (:func:`emjax.fdtd.blocked.choice.
default_tiling`: 4 in float32; in float64 3 where it divides the window's ``th``, else 2),
at most the window's ``th``; where it does not divide a pass's steps the kernel ends that
slab visit with one shorter pass.
"""

from __future__ import annotations

import dataclasses
import logging
from functools import partial

import jax.numpy as jnp
import numpy as np

from ...errors import ConfigError
from .. import step as engine
from ..blocked import choice
from .slabs import _Ring, reach

#: the steps a window run may take: "emulate" is the blocked kernel's text run on the host
#: (threads and barriers emulated; small grids: how the CPU tests check the slabs)
KERNELS = ("auto", "xla", "blocked", "emulate")
_log = logging.getLogger("emjax.fdtd")


def check_kernel(kernel) -> str:
    if kernel not in KERNELS:
        raise ConfigError(
            "run_window: kernel must be 'auto', 'xla', 'blocked' or 'emulate' (the blocked "
            f"kernel emulated on the host, for tests), got {kernel!r}"
        )
    return kernel


def clearance(ring: _Ring) -> int | None:
    """Planes between the slab's owned planes and the nearest cut of its sub-grid (an edge
    ring's seam; an interior ring's two ends); None for a ring that is the whole grid."""
    q0, q1 = ring.own
    cuts = [int(c) for c in np.cumsum([b - a for a, b in ring.pieces])[:-1]]
    if not ring.edge:
        cuts += [0, ring.m]
    if not cuts:
        return None
    return min(q0 - c if c <= q0 else c - q1 for c in cuts)


def check_ghosts(subs, steps_per_pass: int, order: int) -> None:
    """Every slab's owned planes at least ``n r + 1`` planes from its sub-grid's cuts (``n``
    steps per pass, ``r`` planes a step reaches; the 1: x-normal DFT planes read H one plane
    below), so that what the cuts spoil in a pass stays in the ghost planes."""
    need = steps_per_pass * reach(order) + 1
    for k, s in enumerate(subs):
        d = clearance(s.ring)
        if d is not None and d < need:
            r = s.ring
            raise ConfigError(
                f"run_window: slab {k} (planes {r.lo}..{r.hi - 1}) keeps its owned planes {d} planes "
                f"from its sub-grid's cut, under the {need} that th = {steps_per_pass} steps per pass "
                f"spoil (ghost planes per side must be at least th * {reach(order)} + 1)"
            )


def seam_walled(plan, ring: _Ring):
    """The plan the blocked kernel runs for a slab: an interior slab's sub-grid walled
    (PEC) at both ends instead of wrapping; an edge ring's plan as it is (the grid's wall
    and x-CPML at its ends)."""
    if ring.edge:
        return plan
    return dataclasses.replace(plan, walls=(True,) + tuple(plan.walls[1:]))


def tiling(dtype, th: int, shape: tuple) -> tuple:
    """(kernel TH, (BY, BZ, rows per thread)) for slabs of ``shape``: the in-memory run's
    measured best, TH at most the window's ``th``."""
    th_k, tile, ry = choice.default_tiling(dtype, within=th)
    th_k = min(th_k, th)
    by, bz = (min(b, n) for b, n in zip(tile[1:], shape[1:]))
    if (by + 2 * th_k) % ry:
        ry = 1
    return th_k, (by, bz, ry)


def _blocked_step(kplan, th_k, block, kernel, arrays, state, n):
    from .. import blocked

    tile = (kplan.shape[0],) + tuple(block[:2])
    new, rec, fin = blocked.advance(  # the slabs' coefficients whole: one program for them all
        kplan, arrays, state, n, th=th_k, tile=tile, kernel=kernel, rows_per_thread=block[2], crop=False
    )
    return new, jnp.asarray(rec), jnp.asarray(fin)  # the emulation's are NumPy / bool


def choose(plan, dtype, kernel: str, subs, th: int) -> tuple:
    """Set each slab's step (``s.step(arrays, state, n)``, as :func:`emjax.fdtd.step.advance`
    of its plan) and return ``(name, why)``: the XLA step or the blocked kernel, chosen on
    the whole grid's ``plan`` as :func:`emjax.fdtd.blocked.select` chooses in memory, the
    device check counting the largest slab; "blocked" (or "emulate") where a slab's features
    are not carried is a ConfigError naming why, "auto" falls back to XLA saying why."""
    check_kernel(kernel)
    why = None
    if kernel != "xla":
        cells = max(s.ring.m for s in subs) * int(np.prod(plan.shape[1:]))
        why = choice.carries(plan, dtype) if kernel == "emulate" else choice.why_not(plan, dtype, cells)
        for k, s in enumerate(subs):
            if why is not None:
                break
            w = choice.carries(seam_walled(s.plan, s.ring), dtype)
            why = None if w is None else f"slab {k}: {w}"
        if kernel != "auto" and why is not None:
            raise ConfigError(
                f"run_window: kernel={kernel!r} cannot run this simulation's slabs: {why}; "
                "use kernel='xla' or 'auto'"
            )
        if why is None and kernel == "auto":
            why = choice.auto_reason(plan, dtype)
    if kernel == "xla" or why is not None:
        for s in subs:
            s.step = partial(engine.advance, s.plan)
        if kernel == "xla":
            return "xla", "asked for"
        _log.info("FDTD window kernel: xla (the blocked kernel not taken: %s)", why)
        return "xla", f"the blocked kernel not taken: {why}"
    run = "emulate" if kernel == "emulate" else "cuda"
    th_k, block = tiling(dtype, th, plan.shape)
    for s in subs:
        s.step = partial(_blocked_step, seam_walled(s.plan, s.ring), th_k, block, run)
    what = f"TH = {th_k}, tiles of {block[0]} x {block[1]}, slab seams walled"
    _log.info("FDTD window kernel: blocked (%s)", what)
    return "blocked", what
