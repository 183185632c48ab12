"""Checkpoints of an FDTD run: the whole state and the probe records, written atomically
at chunk boundaries; a fingerprint of everything that changes the answer
(:mod:`emjax.fdtd.fingerprint`) guards against resuming another problem.

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

import zipfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import ConfigError
from . import sharded
from .fingerprint import Fingerprint, difference


def save(path: Path, state, recs, fp: Fingerprint) -> None:
    leaves = [np.asarray(v) for v in jax.tree_util.tree_leaves(state)]
    save_leaves(path, leaves, np.concatenate(recs) if recs else np.zeros((0,)), fp)


def save_leaves(path: Path, leaves, probes, fp: Fingerprint) -> None:
    """The one-file checkpoint of the state ``leaves`` (arrays, or objects NumPy turns into
    arrays one at a time while the file is written: the window's chunked leaves), the probe
    records ``probes`` and the run's fingerprint ``fp``."""
    data = {f"leaf{i}": v for i, v in enumerate(leaves)}
    data["probes"] = np.asarray(probes) if len(probes) else np.zeros((0,))
    data["fingerprint"] = np.array(fp.text)
    old = _shard_names(path)
    _write_npz(path, data)  # atomic: a crash never leaves a half-written checkpoint
    for name in old:  # a sharded run's files, resumed here on one device
        path.with_name(name).unlink(missing_ok=True)


def _write_npz(path: Path, data: dict) -> None:
    """``np.savez`` to a temporary file in ``path``'s folder, then ``os.replace``
    (:func:`emjax.io.atomic_path`); a path that cannot be written is a ConfigError naming it."""
    from ..io import atomic_path

    try:
        with atomic_path(path) as tmp, open(tmp, "wb") as f:  # a file: savez adds no ".npz"
            np.savez(f, **data)
    except OSError as exc:
        raise ConfigError(
            f"checkpoint {str(path)!r} cannot be written ({exc.strerror or exc}); "
            "name a file in a writable folder"
        ) from None


def _shard_names(path: Path) -> list:
    if not path.exists():
        return []
    try:
        with np.load(path) as f:
            return [str(x) for x in f["shards"]] if "shards" in f.files else []
    except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile):
        return []  # not a checkpoint: nothing of ours to remove


_HINT = "delete it to start afresh, or name another file"


def load(path: Path, template, fp: Fingerprint):
    state, recs = load_host(path, template, fp)
    return jax.tree_util.tree_map(jnp.asarray, state), recs


def _read_npz(path: Path, what: str, keys=None) -> dict:
    """Every array of the ``.npz`` file ``path`` (or only ``keys``), read fully (so a
    corrupt member shows here); a :class:`ConfigError` naming the file and what is wrong
    instead of NumPy's or zipfile's message (not a zip, truncated, pickled data, bad CRC)."""
    import zlib

    try:
        with np.load(path, allow_pickle=False) as f:
            names = f.files if keys is None else [k for k in keys if k in f.files]
            return {k: f[k] for k in names}
    except FileNotFoundError:
        raise ConfigError(f"{what} {str(path)!r} is missing; {_HINT}") from None
    except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile, zlib.error) as exc:
        _unreadable(path, exc, what)


def _unreadable(path: Path, exc: Exception, what: str = "checkpoint"):
    """The ConfigError for a file NumPy or zipfile could not read (instead of their message)."""
    why = str(exc).split("\n")[0] or type(exc).__name__
    if isinstance(exc, ValueError) and "pickle" in why:
        why = "not a NumPy .npz archive"
    raise ConfigError(
        f"{what} {str(path)!r} is not a readable emjax FDTD checkpoint (corrupt, truncated or "
        f"another kind of file: {why}); {_HINT}"
    ) from None


def load_host(path: Path, template, fp: Fingerprint):
    """The state (NumPy leaves of ``template``'s logical shapes and dtypes) and the probe
    records of a checkpoint of either format. A file that is not a readable checkpoint
    (corrupt, truncated, foreign) or one written for another problem (``fp``: this run's
    :class:`~emjax.fdtd.fingerprint.Fingerprint`) raises a :class:`ConfigError` naming the
    file and what is wrong (for another problem: what differs)."""
    path = Path(path)
    f = _read_npz(path, "checkpoint")
    leaves, treedef = jax.tree_util.tree_flatten(template)
    _check_fingerprint(path, f, fp)
    data = {k: v for k, v in f.items() if k.startswith("leaf")}
    probes = f["probes"]
    shard_files = [str(x) for x in f["shards"]] if "shards" in f else []
    split = [int(a) for a in f["split_axes"]] if "split_axes" in f else []
    if shard_files:
        if len(split) != len(leaves):
            raise ConfigError(
                f"checkpoint {str(path)!r}: split_axes holds {len(split)} entries for a state of "
                f"{len(leaves)} arrays; {_HINT}"
            )
        parts = {}
        for name in shard_files:
            shard = _read_npz(path.with_name(name), f"checkpoint {str(path)!r}: its shard file")
            for k, v in shard.items():
                parts.setdefault(k, []).append(v)
        for k, blocks in parts.items():
            i = int(k[4:]) if k[4:].isdigit() else -1
            if not k.startswith("leaf") or not 0 <= i < len(leaves) or split[i] < 0:
                raise ConfigError(
                    f"checkpoint {str(path)!r}: a shard file holds an unknown array {k!r}; {_HINT}"
                )
            try:
                data[k] = np.concatenate(blocks, axis=split[i])
            except (ValueError, np.exceptions.AxisError) as exc:
                raise ConfigError(
                    f"checkpoint {str(path)!r}: the shards of {k} do not fit together ({exc}); {_HINT}"
                ) from None
    _check_leaf_names(path, data, len(leaves))
    loaded = [
        np.asarray(data[f"leaf{i}"], dtype=_check_leaf(path, i, data[f"leaf{i}"], x))
        for i, x in enumerate(leaves)
    ]
    _check_probes(path, probes)
    state = jax.tree_util.tree_unflatten(treedef, loaded)
    return state, ([probes] if probes.size else [])


def load_into(path: Path, leaves, fp: Fingerprint) -> np.ndarray:
    """Resume into NumPy arrays: the checkpoint ``path`` (either format) copied into
    ``leaves`` (the state's leaves, in its flattening order, written in place: the window
    run's host state); returns the probe records. A one-file checkpoint is read one array
    at a time (a grid that fills the host's memory has room for one more leaf, not a
    second state); every check of :func:`load_host` first."""
    import zlib

    path = Path(path)
    f = _read_npz(path, "checkpoint", keys=("fingerprint", "probes", "shards"))
    if "shards" in f:  # a sharded run's index: through load_host
        state, recs = load_host(path, list(leaves), fp)
        for dst, src in zip(leaves, state):
            np.copyto(dst, src)
        return np.concatenate(recs) if recs else np.zeros((0,))
    try:
        with np.load(path, allow_pickle=False) as z:
            _check_fingerprint(path, z, fp)
            _check_leaf_names(path, [k for k in z.files if k.startswith("leaf")], len(leaves))
            for i, dst in enumerate(leaves):
                x = z[f"leaf{i}"]
                _check_leaf(path, i, x, dst)
                np.copyto(dst, x)
                del x
            probes = z["probes"]
    except ConfigError:
        raise
    except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile, zlib.error) as exc:
        _unreadable(path, exc)
    _check_probes(path, probes)
    return probes


def _check_fingerprint(path, f, fp: Fingerprint) -> None:
    """``f`` (a dict or an open .npz) holds a fingerprint and probes, and the fingerprint is
    ``fp``'s: else a ConfigError naming what differs (:func:`fingerprint.difference`)."""
    missing = [k for k in ("fingerprint", "probes") if k not in f]
    if missing:
        raise ConfigError(
            f"checkpoint {str(path)!r} is not an emjax FDTD checkpoint (no {', '.join(missing)}); {_HINT}"
        )
    saved = f["fingerprint"]
    if saved.dtype.kind != "U" or saved.shape != ():
        raise ConfigError(
            f"checkpoint {str(path)!r} is not an emjax FDTD checkpoint (a bad fingerprint); {_HINT}"
        )
    diff = difference(str(saved), fp)
    if diff == "old":
        raise ConfigError(
            f"checkpoint {str(path)!r} was written by an earlier emjax whose fingerprint does not "
            f"cover materials, sources or monitors, so it cannot be checked against this problem; {_HINT}"
        )
    if diff is not None:
        raise ConfigError(f"checkpoint {str(path)!r} was written for a different problem: {diff}; {_HINT}")


def _check_leaf_names(path, names, n_leaves: int) -> None:
    """The state arrays ``names`` are exactly leaf0 .. leaf{n_leaves - 1}."""
    absent = [f"leaf{i}" for i in range(n_leaves) if f"leaf{i}" not in names]
    extra = sorted(set(names) - {f"leaf{i}" for i in range(n_leaves)})
    if absent or extra:
        which = "missing " + ", ".join(absent[:3]) if absent else "extra " + ", ".join(extra[:3])
        raise ConfigError(
            f"checkpoint {str(path)!r} holds {len(names)} state arrays, this run's state "
            f"{n_leaves} ({which}); "
            f"it belongs to a different simulation; {_HINT}"
        )


def _check_leaf(path, i, x, leaf) -> np.dtype:
    """Saved array ``x`` fits state leaf ``i`` (shape, kind and float precision); returns
    the leaf's dtype."""
    want = np.dtype(getattr(leaf, "dtype", np.asarray(leaf).dtype))
    if x.shape != np.shape(leaf):
        raise ConfigError(
            f"checkpoint {str(path)!r}: state array leaf{i} has shape {x.shape}, this run needs "
            f"{np.shape(leaf)}; it belongs to a different simulation; {_HINT}"
        )
    if x.dtype.kind != want.kind or (want.kind in "fc" and x.dtype != want):
        raise ConfigError(
            f"checkpoint {str(path)!r}: state array leaf{i} is {x.dtype}, this run needs {want} "
            f"(another precision or field type); {_HINT}"
        )
    return want


def _check_probes(path, probes) -> None:
    if probes.ndim < 1 or not np.issubdtype(probes.dtype, np.number):
        raise ConfigError(
            f"checkpoint {str(path)!r}: bad probe records ({probes.dtype}, {probes.shape}); {_HINT}"
        )


def save_sharded(path: Path, state, recs, fp: Fingerprint, axes) -> None:
    """Write a checkpoint of a sharded run (``axes``: per leaf, its x axis or None) as an
    index and one file per shard (see the module docstring)."""
    plan = fp.plan
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
        _write_npz(path.with_name(names[k]), data)
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices(f"emjax fdtd checkpoint {step}")
    if jax.process_index() != 0:
        return
    old = _shard_names(path)
    data = {f"leaf{i}": sharded.host_copy(v) for i, (v, ax) in enumerate(zip(leaves, axes)) if ax is None}
    data["probes"] = np.concatenate(recs) if recs else np.zeros((0,))
    data["fingerprint"] = np.array(fp.text)
    data["shards"] = np.array(names)
    data["split_axes"] = np.array([-1 if a is None else a for a in axes])
    _write_npz(path, data)  # the index last: a crash leaves the previous index and its shards
    for name in old:
        if name not in names:
            path.with_name(name).unlink(missing_ok=True)
