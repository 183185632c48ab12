"""One pass of a window run over all slabs: the asynchronous copies to and from the device
and the slabs' computation, on the NumPy host path (:func:`_pass_numpy`) or in pinned
chunks (:func:`_pass_pinned`)."""

from __future__ import annotations

import time

import jax
import numpy as np

from .hoststate import _Chunks, _concat, _split
from .subgrid import _Slot, _sub_state, _write_back


def _to_device(tree, device):
    """A copy on ``device``: the CPU's device_put aliases NumPy arrays, whose planes the
    write-backs change while the slab may still be running."""
    if device.platform == "cpu":
        tree = jax.tree_util.tree_map(np.array, tree)
    return jax.device_put(tree, device)


def _owned(state, q0: int, q1: int):
    """The owned planes of the x-split leaves (one dispatch), psi of the x faces whole."""
    take = lambda x: jax.lax.slice_in_dim(x, q0, q1, axis=0)
    psi = {k: (take(v) if k[1] != "0" else v) for k, v in state["psi"].items()}
    return {
        "E": tuple(take(e) for e in state["E"]),
        "H": tuple(take(h) for h in state["H"]),
        "psi": psi,
        "dft": state["dft"],
        "J": jax.tree_util.tree_map(take, state["J"]),
        "aux": state["aux"],
        "n": state["n"],
    }


_owned_jit = jax.jit(_owned, static_argnames=("q0", "q1"))


@jax.jit
def _owned_small(state):
    """What the pinned path returns besides the chunks: the DFT sums, the TF/SF line, the step."""
    return {"E": (), "H": (), "psi": {}, "dft": state["dft"], "J": (), "aux": state["aux"], "n": state["n"]}


def _pass_numpy(subs, host, plan, n, probes, done, pool, last_reader, device, dev_arrays):
    """One pass, the state in NumPy arrays (pageable host memory)."""

    def finish(j, out, rec, fin, done):  # in a worker: device -> host, then the copies
        out = jax.tree_util.tree_map(np.asarray, out)
        _write_back(subs[j], out, host, plan, np.asarray(rec), probes, done)
        return bool(fin)

    pending, futures, prev = [], [], None
    for k, s in enumerate(subs):
        # on the device (a copy) before any write-back of the planes it reads starts
        st = _to_device(_sub_state(s, host, plan), device)
        arr = dev_arrays[k] if dev_arrays else jax.device_put(s.arrays, device)
        jax.block_until_ready(st)
        res, rec, fin = s.step(arr, st, n)
        q0, q1 = s.ring.own
        out = _owned_jit(res, q0=q0, q1=q1)
        for x in jax.tree_util.tree_leaves((out, rec, fin)):
            x.copy_to_host_async()
        if prev is not None:
            pending.append(prev)
        prev = (k, out, rec, fin)
        for p in pending:
            if last_reader[p[0]] <= k:  # no later slab of this pass reads its planes
                futures.append(pool.submit(finish, *p, done))
        pending = [p for p in pending if last_reader[p[0]] > k]
    futures += [pool.submit(finish, *p, done) for p in pending + [prev]]
    return all([f.result() for f in futures]), prev[1]


def _pass_pinned(
    subs, store: _Chunks, host, plan, n, probes, done, pool, last_reader, wait, first=None, ahead=False
):
    """One pass, the x-split leaves in pinned chunks: slab k + 1's chunks go to the device
    (``device_put``, asynchronous) while slab k runs, slab k's owned chunks come back to
    pinned memory while slab k + 1 runs; a slab's ring is concatenated on the device. The
    small parts (x-face psi, DFT sums, probes) take the NumPy path's write-back. ``first``:
    slab 0's ring, uploaded by the previous pass; ``ahead`` (:attr:`_Chunks.ahead`): the
    next pass's first ring goes up while this pass's last slab runs (returned third), so
    that no pass starts with the device waiting for its first upload."""
    nxt = {name: list(store.data[name]) for name in store.state_names}

    def upload(k, data, later=frozenset()):
        """Ring k's chunks to the device, per leaf in ring order; chunks in ``later`` (of
        state leaves) are left as their ids, to be filled by the caller."""
        want = []
        for nm in store.up[k]:
            src = data[nm] if nm in data else store.data[nm]
            ids = [c for c in store.ring_ids[k] if src[c] is not None]
            want.append((ids, [src[c] for c in ids if c not in later or nm not in data]))
        sent = jax.device_put([x for _, x in want], store.dev)
        lists = []
        for nm, (ids, _), got in zip(store.up[k], want, sent):
            it = iter(got)
            lists.append([c if c in later and nm in data else next(it) for c in ids])
        for c in store.ring_ids[k]:  # the pass's input chunk is not read again (its new version is in nxt)
            if store.last_reader[c] == k and c not in later:
                for nm in store.state_names:
                    data[nm][c] = None
        return lists

    def finish(j, out, rec, fin, done):  # in a worker: the small parts (pinned: views) to NumPy
        out = jax.tree_util.tree_map(np.asarray, out)
        _write_back(subs[j], out, host, plan, np.asarray(rec), probes, done, big=False)
        return bool(fin)

    pending, futures, prev, prev_fin, following = [], [], None, None, None
    lists = first if first is not None else upload(0, store.data)
    for k, s in enumerate(subs):
        ring_in, lists = lists, None  # dropped once concatenated
        big = dict(zip(store.up[k], _concat(ring_in, axes=store.axes_of(store.up[k]))))
        del ring_in
        if store.resident is not None:
            big.update(store.resident)
        leaves, tree = jax.tree_util.tree_flatten(_sub_state(s, host, plan, take=lambda x: x))
        # the small parts: fresh copies (the write-backs change host arrays in place)
        small = jax.device_put([np.array(x) for x in leaves if not isinstance(x, _Slot)], store.dev)
        it = iter(small)
        st = jax.tree_util.tree_unflatten(
            tree, [big[x.name] if isinstance(x, _Slot) else next(it) for x in leaves]
        )
        leaves, tree = jax.tree_util.tree_flatten(s.arrays)
        it = iter(store.small[k])
        arr = jax.tree_util.tree_unflatten(
            tree, [big[x.name] if isinstance(x, _Slot) else next(it) for x in leaves]
        )
        del big, small, leaves
        if prev_fin is not None:  # slab k - 1 done: bounds the device's memory
            t0 = time.perf_counter()
            prev_fin.block_until_ready()
            wait[0] += time.perf_counter() - t0
        # slab k + 1's chunks are enqueued before slab k's computation: a copy waits for the
        # work enqueued on the device before it, so an upload issued after slab k's dispatch
        # would run after slab k instead of beside it (benchmarks/pinned_overlap.py, H100:
        # six 2 GB slabs 0.407 s this way, the overlapped model's 0.407 s; 0.615 s the other way)
        t1 = time.perf_counter()
        if k + 1 < len(subs):
            lists = upload(k + 1, store.data)
        elif ahead:  # slabs 0 .. K - 2 have sent their new chunks (pending copies) to nxt;
            # the last slab's (wall or ghost planes) are taken from its result on the device
            late = frozenset(store.ring_ids[0]) & frozenset(store.own_ids[k])
            following = upload(0, nxt, later=late)
        t2 = time.perf_counter()
        res, rec, fin = s.step(arr, st, n)
        wait[1] += t2 - t1  # host seconds between slab k - 1's end and slab k's dispatch:
        wait[2] += time.perf_counter() - t2  # issuing the upload, dispatching the step loop
        del st, arr
        prev_fin = fin  # on the device: ready when slab k has run (its copies back may still go on)
        down = store.down[k]
        outs = _split(
            tuple(store.leaf(res, nm) for nm, _, _ in down),
            bounds=tuple(bd for _, _, bd in down),
            axes=store.axes_of([nm for nm, _, _ in down]),
        )
        if following is not None:  # the next pass's first ring: the last slab's chunks as they are
            mine = {(nm, c): x for (nm, ids, _), xs in zip(down, outs) for c, x in zip(ids, xs)}
            following = [
                [x if not isinstance(x, int) else mine[nm, x] for x in xs]
                for nm, xs in zip(store.up[0], following)
            ]
        out = _owned_small(res)
        del res
        # everything back to pinned memory (page-locked: the link's rate; np.asarray a view)
        back, (out, rec, fin) = jax.device_put((outs, (out, rec, fin)), store.pinned)
        del outs
        for (nm, ids, _), chunks in zip(down, back):
            for c, x in zip(ids, chunks):
                nxt[nm][c] = x
        if prev is not None:
            pending.append(prev)
        prev = (k, out, rec, fin)
        for p in pending:
            if last_reader[p[0]] <= k:  # no later slab of this pass reads its planes
                futures.append(pool.submit(finish, *p, done))
        pending = [p for p in pending if last_reader[p[0]] > k]
    futures += [pool.submit(finish, *p, done) for p in pending + [prev]]
    finite = all([f.result() for f in futures])
    store.data.update(nxt)
    return finite, prev[1], following
