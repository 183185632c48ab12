"""The groups' quadrature paths refined together, round by round (the driver behind
:meth:`emjax.layered.groups._Group.refine` and the map's refinement pass).

A group's path is refined on a sample of its points (see :mod:`emjax.layered.sommerfeld`):
each round evaluates the per-panel Gauss-Kronrod sums at the sample and bisects the panels
whose difference is too large, until every sample point meets rtol. All groups still
refining take each round together: their node chunks and sample tiles are the *slots* of a
few batched device calls (:func:`emjax.layered.sommerfeld.refine_sums`, one compiled size
per kind of node and medium), queued before any is read, and the round's results come back
in one read. So a round costs one host round-trip whatever the number of groups, and the
device evaluates the groups' slots side by side instead of one small call after another.

A group's rounds depend on its own points, sample and tables only (a slot's sums are the
same whichever slots share its call), so the paths are the same for any number of devices
that later integrate the points, and the same as refining each group alone.
"""

from __future__ import annotations

import time

import jax
import numpy as np

from ..errors import ConfigError
from . import sommerfeld as som

#: slots per call of the batched refinement kernel on a GPU (one compiled size; a round of
#: many groups is a few such calls); on a CPU one slot per call (no launch cost to save,
#: no padded slots to compute)
GPU_SLOTS = 8


def _sample(rho, h, size: int, rng):
    idx = {int(np.argmax(rho)), int(np.argmin(h)), int(np.argmax(rho - h * rho.max() / max(h.max(), 1e-300)))}
    idx |= {int(np.argmin(rho)), int(np.argmax(h))}
    if len(rho) > size:
        idx |= set(rng.choice(len(rho), size, replace=False).tolist())
    else:
        idx |= set(range(len(rho)))
    return np.array(sorted(idx))


def slots_per_call(device) -> int:
    """Slots per call of :func:`emjax.layered.sommerfeld.refine_sums` on ``device``."""
    return 1 if device.platform == "cpu" else GPU_SLOTS


def _edge(x: np.ndarray, size: int) -> np.ndarray:
    """``x`` padded along its first axis to ``size`` with copies of its last entry."""
    return x if len(x) == size else np.concatenate([x, np.repeat(x[-1:], size - len(x), 0)])


def _zeros(x: np.ndarray, size: int) -> np.ndarray:
    return x if len(x) == size else np.concatenate([x, np.zeros((size - len(x),) + x.shape[1:], x.dtype)])


def _tiles(g, extra) -> list:
    """The group's sample (extremes, a random subset of its points and ``extra``) as whole
    tiles of ``REFINE_POINTS`` points (repeats filling the last): (rho, z_up, zd) each."""

    sample = np.union1d(_sample(g.rho, g.h, 48, g.rng), np.asarray(extra, int))
    tile = som.REFINE_POINTS
    sample = np.resize(sample, -(-len(sample) // tile) * tile)
    cols = (g.rho, g.z_up, g.zd)
    return [tuple(a[sample[t : t + tile]] for a in cols) for t in range(0, len(sample), tile)]


def _slots(g, i: int, tiles) -> list:
    """One round's slots of group ``i``: (statics key, (group, kind, chunk, tile), valid
    nodes, host arrays) for every node chunk of both kinds and every sample tile."""
    c = g.ctx
    RC = som.REFINE_CHUNK
    out = []
    for k, (kr, wk, wg, coef, kzm, real) in enumerate(g._tables()):
        key = tuple(sorted(g._statics(real).items()))
        for j, a in enumerate(range(0, len(kr), RC)):
            sl = slice(a, a + RC)
            n = len(kr[sl])
            nodes = (
                _edge(kr[sl].real if real else kr[sl], RC).astype(c["rdtype"] if real else c["cdtype"]),
                _zeros(wk[sl], RC).astype(c["cdtype"]),
                _zeros(wg[sl], RC).astype(c["cdtype"]),
                _edge(coef[sl], RC),
                _edge(kzm[sl], RC),
            )
            for t, pts in enumerate(tiles):
                out.append((key, (i, k, j, t), n, nodes + tuple(p.astype(c["rdtype"]) for p in pts)))
    return out


def _dispatch(slots: list, per_call: int) -> list:
    """Queue the slots' sums on the default device, ``per_call`` slots per call (slots of one
    statics key together, by node count: a call loops over its largest slot's blocks; the
    last call padded with copies of its last slot, read back never); returns [(the calls'
    slot ids, pending (Ksum, D))]."""
    by_key: dict = {}
    for key, sid, n, arrays in slots:
        by_key.setdefault(key, []).append((sid, n, arrays))
    pending = []
    for key, items in by_key.items():
        statics = dict(key)
        items.sort(key=lambda item: item[1])  # calls of slots of similar node counts
        for a in range(0, len(items), per_call):
            part = items[a : a + per_call]
            part = part + [part[-1]] * (per_call - len(part))
            stacked = [np.stack([arrays[j] for _, _, arrays in part]) for j in range(8)]
            args = jax.device_put(stacked)  # one transfer call, to the default device
            n_blocks = np.int32(max(-(-n // som.REFINE_BLOCK) for _, n, _ in part))
            out = som.call(som.refine_sums, *args, n_blocks=n_blocks, **statics)
            pending.append(([(sid, n) for sid, n, _ in items[a : a + per_call]], out))
    return pending


def refine_groups(gs, extras, device=None) -> list[float]:
    """Refine the paths of the groups ``gs`` (with the extra sample point indices
    ``extras``, one entry per group) together on ``device`` (default: the default device),
    round by round (see the module docstring). Returns per group the seconds of the rounds
    it took part in. A group whose path does not converge within ``MAX_ROUNDS`` rounds or
    ``MAX_PANELS`` panels is a ConfigError."""
    device = som._device(device)
    per_call = slots_per_call(device)
    tiles = [_tiles(g, extra) for g, extra in zip(gs, extras)]
    seconds = [0.0] * len(gs)
    rounds = [0] * len(gs)
    active = list(range(len(gs)))
    while active:
        t0 = time.perf_counter()
        slots = [s for i in active for s in _slots(gs[i], i, tiles[i])]
        n_nodes = {(i, k, j): n for _, (i, k, j, _t), n, _ in slots}
        res = {}
        with jax.default_device(device):  # uncommitted arrays: the programs warm() compiled
            pending = _dispatch(slots, per_call)
        for sids, (K, D) in pending:
            K, D = np.asarray(K), np.asarray(D)  # the round's one wait (the calls are queued)
            for b, (sid, _) in enumerate(sids):
                res[sid] = (K[b], D[b])
        still = []
        for i in active:
            if not _round_done(gs[i], i, len(tiles[i]), res, n_nodes):
                still.append(i)
            rounds[i] += 1
            if still[-1:] == [i] and (gs[i].path.n_panels > som.MAX_PANELS or rounds[i] >= som.MAX_ROUNDS):
                c = gs[i].ctx
                raise ConfigError(
                    f"points: the quadrature did not reach rtol = {c['rtol']:g} within {som.MAX_PANELS} "
                    f"panels (observation medium {gs[i].m}); loosen rtol or move points away from the "
                    "source/interfaces"
                )
        dt = time.perf_counter() - t0
        for i in active:
            seconds[i] += dt
        active = still
    return seconds


def _round_done(g, i: int, n_tiles: int, res: dict, n_nodes: dict) -> bool:
    """Read group ``i``'s round: True when every sample point meets rtol, else bisect the
    panels with too large an error share (and False)."""
    c = g.ctx
    total = 0
    errs = []
    for k in (0, 1):
        cols, j = [], 0
        while (i, k, j) in n_nodes:
            n = n_nodes[i, k, j]
            cols.append(np.concatenate([res[i, k, j, t][1][:, : n // 15] for t in range(n_tiles)], 0))
            total = total + np.concatenate([res[i, k, j, t][0] for t in range(n_tiles)], 0)
            j += 1
        errs.append(np.concatenate(cols, 1))
    scale = np.maximum(np.linalg.norm(total, axis=1), 1e-300)
    errs = [e / (c["rtol"] * scale[:, None]) for e in errs]
    worst = sum(e.sum(1) for e in errs)
    g.rounds += 1
    if np.all(worst <= 1.0):
        return True
    n_pan = g.path.n_panels
    for which, e in zip(("ellipse", "tail"), errs):
        mask = e.max(0) > 1.0 / n_pan
        if mask.any():
            g.path.bisect(which, mask)
    return False
