"""Checkpoints of an FDTD run: the whole state and the probe records, written atomically
at chunk boundaries; a fingerprint of the simulation guards against resuming another one."""

from __future__ import annotations

import os
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import ConfigError


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
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez(tmp, **data)
    os.replace(tmp, path)  # atomic: a crash never leaves a half-written checkpoint


def load(path: Path, template, plan):
    with np.load(path) as f:
        if str(f["fingerprint"]) != fingerprint(plan):
            raise ConfigError(f"checkpoint {path} belongs to a different simulation")
        leaves, treedef = jax.tree_util.tree_flatten(template)
        loaded = [jnp.asarray(f[f"leaf{i}"], dtype=leaf.dtype) for i, leaf in enumerate(leaves)]
        probes = f["probes"]
    state = jax.tree_util.tree_unflatten(treedef, loaded)
    return state, ([probes] if probes.size else [])
