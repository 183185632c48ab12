"""Datasets to files: ``save_dataset`` writes an ``xarray.Dataset`` as NetCDF4/HDF5 (complex
variables split into real and imaginary parts, attributes made NetCDF-safe). Each method's
``results`` module builds its Dataset; this module names no method.

Output paths are checked before a computation starts (:func:`prepare_output_dir`,
:func:`check_output_file`: created, writable, not a file where a folder is expected) and
written atomically (:func:`atomic_path`, :func:`write_text`, :func:`staged_outputs`: a
temporary file in the same folder, then ``os.replace``), so a long run never ends in an
unwritable path and a kill never leaves a half-written file in place of a good one. The
commands' run folders (``--out``, ``--overwrite``, fresh ``runNNN_...`` folders) are
:mod:`emjax.outdir`'s.

xarray and the NetCDF engine are imported inside the functions, so ``import emjax.io``
works where they are not installed (the solvers never need them).

Lengths are in the unit of the wavelength (whatever the user chose, e.g. micrometres), so
unit attributes say ``length`` and ``length^2``; angles are in degrees.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

from .errors import ConfigError

__all__ = [
    "DATASET_SUFFIXES",
    "atomic_path",
    "check_folder_of",
    "check_npz",
    "check_output_file",
    "complex_str",
    "prepare_output_dir",
    "save_dataset",
    "staged_outputs",
    "version",
    "write_text",
]


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def prepare_output_dir(path, what: str = "--out") -> Path:
    """Create the output folder ``path`` (and its parents) and check a file can be written
    there; a :class:`ConfigError` naming ``what`` otherwise (a file in the way, no
    permission, a read-only disk). Call it before the computation."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{what}: {str(path)!r} is a file; give a folder (it is created if missing)")
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".emjax-write-check-"):
            pass
    except OSError as exc:
        raise ConfigError(f"{what}: cannot write to {str(path)!r}: {_reason(exc)}") from None
    return path


def check_folder_of(path) -> Path:
    """The folder ``path`` is to be written in must exist (as ADDA, nothing is created): a
    :class:`ConfigError` naming it otherwise, and ``path`` must not be a folder."""
    path = Path(path)
    folder = path.parent
    if path.is_dir():
        raise ConfigError(f"cannot write {str(path)!r}: it is a folder; give a file name")
    if not folder.is_dir():
        why = "is a file, not a folder" if folder.exists() else "does not exist (create it first)"
        raise ConfigError(f"cannot write {str(path)!r}: the folder {str(folder)!r} {why}")
    return path


def check_output_file(path, what: str, create_folder: bool = True) -> Path:
    """Check the file ``path`` can be written (its folder created if missing, not a folder
    itself, the folder writable) before the computation; an existing file is kept (a
    checkpoint to resume, a JSON list to append to). ``create_folder=False`` (checkpoints:
    a mistyped folder would otherwise start a run that never resumes) refuses a missing
    folder instead of creating it."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"{what}: {str(path)!r} is a folder; give a file name")
    folder = path.parent
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{what}: {str(folder)!r} is a file, not a folder")
    if not create_folder and not folder.exists():
        raise ConfigError(
            f"{what}: the folder {str(folder)!r} of {str(path)!r} does not exist; create it or name a "
            "file in an existing folder"
        )
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".emjax-write-check-"):
            pass
    except OSError as exc:
        raise ConfigError(f"{what}: cannot write to {str(folder)!r}: {_reason(exc)}") from None
    if path.exists() and not os.access(path, os.W_OK):
        raise ConfigError(f"{what}: {str(path)!r} is not writable")
    return path


def check_npz(path, what: str, keys=("fingerprint",)) -> Path:
    """An existing ``.npz`` file (a checkpoint to resume) must be a readable NumPy archive
    holding ``keys``; a :class:`ConfigError` naming ``what`` otherwise (rather than NumPy's
    message about pickled data, long after the set-up)."""
    import zipfile

    path = Path(path)
    hint = "delete it to start afresh, or name another file"
    try:
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
            bad = z.testzip() if path.stat().st_size < 2**28 else None  # CRCs of small files
    except (OSError, zipfile.BadZipFile) as exc:
        raise ConfigError(f"{what}: {str(path)!r} is not a readable checkpoint ({exc}); {hint}") from None
    missing = [k for k in keys if f"{k}.npy" not in names]
    if missing or bad is not None:
        why = f"{bad} is corrupt" if bad is not None else f"no {', '.join(missing)}"
        raise ConfigError(f"{what}: {str(path)!r} is not an emjax checkpoint ({why}); {hint}")
    return path


@contextlib.contextmanager
def atomic_path(path):
    """A temporary path in ``path``'s folder (same suffix) to write to; on success it
    replaces ``path`` in one step (``os.replace``), on an exception it is removed and
    ``path`` left as it was."""
    import secrets

    path = Path(path)
    while True:  # created here, with the permissions of any new file (mkstemp's are 0600)
        tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp{path.suffix}"
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            break
        except FileExistsError:
            continue
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_text(path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text)
    return Path(path)


@contextlib.contextmanager
def staged_outputs(folder):
    """A hidden staging folder inside ``folder`` for writers that take a folder (or write
    several files): when the block ends without an exception, every file written there
    replaces its namesake in ``folder`` (each by ``os.replace``, atomic per file); the
    staging folder is removed either way."""
    folder = Path(folder)
    stage = Path(tempfile.mkdtemp(dir=folder, prefix=".emjax-staging-"))
    try:
        yield stage
        for src in sorted(stage.rglob("*")):
            if src.is_file():
                dst = folder / src.relative_to(stage)
                dst.parent.mkdir(parents=True, exist_ok=True)
                os.replace(src, dst)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


#: suffixes that :func:`save_dataset` writes, all through the h5netcdf engine
DATASET_SUFFIXES = (".nc", ".h5", ".hdf5")


def version() -> str:
    """emjax's version, for the files' provenance attributes."""
    from . import __version__

    return __version__


def complex_str(z: complex) -> str:
    """``1.5+0.01j`` with 10 significant digits (attributes and text files)."""
    z = complex(z)
    return f"{z.real:.10g}{z.imag:+.10g}j"


def _split_complex(ds):
    """Replace complex variables ``v`` by ``v_real``/``v_imag`` (NetCDF has no complex)."""
    for name in list(ds.data_vars):
        var = ds[name]
        if np.iscomplexobj(var.values):
            ds = ds.drop_vars(name)
            ds[f"{name}_real"] = var.real.assign_attrs(var.attrs)
            ds[f"{name}_imag"] = var.imag.assign_attrs(var.attrs)
    return ds


def _netcdf_attrs(attrs: dict) -> dict:
    """NetCDF attributes cannot be None or bool: drop the former, store the latter as 0/1."""
    out = {}
    for key, val in attrs.items():
        if val is None:
            continue
        if isinstance(val, (bool, np.bool_)):
            val = int(val)
        elif isinstance(val, (list, tuple)) and val and all(isinstance(v, bool) for v in val):
            val = np.asarray(val, dtype=np.int8)
        out[key] = val
    return out


def main_process() -> bool:
    """Whether this process writes shared results: process 0 of several started by
    ``jax.distributed``, or the only one (JAX not imported: the only one)."""
    jax = sys.modules.get("jax")
    return jax is None or jax.process_index() == 0


def save_dataset(ds, path) -> Path:
    """Write ``ds`` to ``path`` (``.nc``: NetCDF4, ``.h5``/``.hdf5``: HDF5; both via h5netcdf).

    Complex variables are split into ``*_real``/``*_imag``. Written atomically (a
    temporary file in the same folder, then renamed); the folder must exist. Returns the
    path written. When several processes run together (``jax.distributed``), only process
    0 writes (each holds the same result; the others return the path unwritten).
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in DATASET_SUFFIXES:
        raise ConfigError(f"path must end in one of {DATASET_SUFFIXES}, got {str(path)!r}")
    check_folder_of(path)
    if not main_process():
        return path
    ds = _split_complex(ds.copy())
    ds.attrs = _netcdf_attrs(ds.attrs)
    for name in ds.variables:
        ds[name].attrs = _netcdf_attrs(ds[name].attrs)
    try:
        with atomic_path(path) as tmp:
            ds.to_netcdf(tmp, engine="h5netcdf")
    except ImportError as exc:  # h5netcdf >= 1.5 no longer pulls in h5py by itself
        raise ImportError(
            f"writing {path.name} needs h5netcdf and h5py (pip install h5netcdf h5py): {exc}"
        ) from exc
    return path
