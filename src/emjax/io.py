"""Datasets to files: ``save_dataset`` writes an ``xarray.Dataset`` as NetCDF4/HDF5 (complex
variables split into real and imaginary parts, attributes made NetCDF-safe). Each method's
``results`` module builds its Dataset; this module names no method.

xarray and the NetCDF engine are imported inside the functions, so ``import emjax.io``
works where they are not installed (the solvers never need them).

Lengths are in the unit of the wavelength (whatever the user chose, e.g. micrometres), so
unit attributes say ``length`` and ``length^2``; angles are in degrees.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .errors import ConfigError

__all__ = ["DATASET_SUFFIXES", "complex_str", "save_dataset", "version"]

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


def save_dataset(ds, path) -> Path:
    """Write ``ds`` to ``path`` (``.nc``: NetCDF4, ``.h5``/``.hdf5``: HDF5; both via h5netcdf).

    Complex variables are split into ``*_real``/``*_imag``. Returns the path written.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in DATASET_SUFFIXES:
        raise ConfigError(f"path must end in one of {DATASET_SUFFIXES}, got {str(path)!r}")
    ds = _split_complex(ds.copy())
    ds.attrs = _netcdf_attrs(ds.attrs)
    for name in ds.variables:
        ds[name].attrs = _netcdf_attrs(ds[name].attrs)
    try:
        ds.to_netcdf(path, engine="h5netcdf")
    except ImportError as exc:  # h5netcdf >= 1.5 no longer pulls in h5py by itself
        raise ImportError(
            f"writing {path.name} needs h5netcdf and h5py (pip install h5netcdf h5py): {exc}"
        ) from exc
    return path
