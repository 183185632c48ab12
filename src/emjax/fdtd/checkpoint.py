"""Checkpoints of an FDTD run: the whole state and the probe records, written atomically
at chunk boundaries; a fingerprint of the simulation guards against resuming another one.

One device: one ``.npz`` file (``leaf{i}``: the state's leaves). Several devices
(:func:`save_sharded`): the file named ``path`` is an index holding the replicated leaves,
the probes, the fingerprint and the names of the shard files; each shard file
(``<name>.step<N>.shard<k>of<n>.npz``, next to it) holds device ``k``'s planes of the
x-split leaves (without the padding). Each process writes the shards of its own devices,
process 0 the index, last and atomically; the shard files of the previous index are removed
after it. :func:`load_host` reads either format into NumPy arrays of the logical shapes, so
a run on any layout (one device included) resumes from a checkpoint written on any other.
"""

from __future__ import annotations

import os
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import ConfigError
from . import sharded


def fingerprint(plan) -> str:
    return repr(
        (
            plan.shape,
            plan.dx,
            plan.dt,
            plan.order,
            plan.pml,
            plan.pml_faces,
            plan.walls,
            len(plan.probes),
            len(plan.monitors),
            plan.n_poles,
            plan.n_lorentz,
            plan.has_pec,
            plan.aux_len,
            plan.subpixel,
            plan.subpixel_poles,
            plan.subpixel_inline,
        )
    )


def save(path: Path, state, recs, plan) -> None:
    leaves = jax.tree_util.tree_leaves(state)
    data = {f"leaf{i}": np.asarray(v) for i, v in enumerate(leaves)}
    data["probes"] = np.concatenate(recs) if recs else np.zeros((0,))
    data["fingerprint"] = np.array(fingerprint(plan))
    old = _shard_names(path)
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez(tmp, **data)
    os.replace(tmp, path)  # atomic: a crash never leaves a half-written checkpoint
    for name in old:  # a sharded run's files, resumed here on one device
        path.with_name(name).unlink(missing_ok=True)


def _shard_names(path: Path) -> list:
    if not path.exists():
        return []
    try:
        with np.load(path) as f:
            return [str(x) for x in f["shards"]] if "shards" in f.files else []
    except (OSError, ValueError):
        return []


def load(path: Path, template, plan):
    state, recs = load_host(path, template, plan)
    return jax.tree_util.tree_map(jnp.asarray, state), recs


def load_host(path: Path, template, plan):
    """The state (NumPy leaves of ``template``'s logical shapes and dtypes) and the probe
    records of a checkpoint of either format."""
    with np.load(path) as f:
        if str(f["fingerprint"]) != fingerprint(plan):
            raise ConfigError(f"checkpoint {path} belongs to a different simulation")
        leaves, treedef = jax.tree_util.tree_flatten(template)
        data = {k: f[k] for k in f.files if k.startswith("leaf")}
        probes = f["probes"]
        shard_files = [str(x) for x in f["shards"]] if "shards" in f.files else []
        split = [int(a) for a in f["split_axes"]] if "split_axes" in f.files else []
    if shard_files:
        parts = {}
        for name in shard_files:
            with np.load(path.with_name(name)) as sf:
                for k in sf.files:
                    parts.setdefault(k, []).append(sf[k])
        for k, blocks in parts.items():
            data[k] = np.concatenate(blocks, axis=split[int(k[4:])])
    loaded = [np.asarray(data[f"leaf{i}"], dtype=leaf.dtype) for i, leaf in enumerate(leaves)]
    for x, leaf in zip(loaded, leaves):
        if x.shape != np.shape(leaf):
            raise ConfigError(f"checkpoint {path}: a leaf of shape {x.shape}, expected {np.shape(leaf)}")
    state = jax.tree_util.tree_unflatten(treedef, loaded)
    return state, ([probes] if probes.size else [])


def save_sharded(path: Path, state, recs, plan, axes) -> None:
    """Write a checkpoint of a sharded run (``axes``: per leaf, its x axis or None) as an
    index and one file per shard (see the module docstring)."""
    nx = plan.shape[0]
    leaves = jax.tree_util.tree_leaves(state)
    n_dev = plan.layout.n
    m = plan.layout.padded(nx) // n_dev
    step = int(sharded.host_copy(state["n"]))
    names = [f"{path.name}.step{step}.shard{k}of{n_dev}.npz" for k in range(n_dev)]
    mine = {}  # shard k -> {leaf name: planes}, for this process's devices
    for i, (x, ax) in enumerate(zip(leaves, axes)):
        if ax is None:
            continue
        for sh in x.addressable_shards:
            start = sh.index[ax].start or 0
            k = start // m
            stop = min(start + m, nx)
            block = np.asarray(sh.data)[(slice(None),) * ax + (slice(0, max(stop - start, 0)),)]
            mine.setdefault(k, {})[f"leaf{i}"] = block
    for k, data in mine.items():
        tmp = path.with_name(names[k] + ".tmp.npz")
        np.savez(tmp, **data)
        os.replace(tmp, path.with_name(names[k]))
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices(f"emjax fdtd checkpoint {step}")
    if jax.process_index() != 0:
        return
    old = _shard_names(path)
    data = {f"leaf{i}": sharded.host_copy(v) for i, (v, ax) in enumerate(zip(leaves, axes)) if ax is None}
    data["probes"] = np.concatenate(recs) if recs else np.zeros((0,))
    data["fingerprint"] = np.array(fingerprint(plan))
    data["shards"] = np.array(names)
    data["split_axes"] = np.array([-1 if a is None else a for a in axes])
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez(tmp, **data)
    os.replace(tmp, path)  # the index last: a crash leaves the previous index and its shards
    for name in old:
        if name not in names:
            path.with_name(name).unlink(missing_ok=True)
