"""Results as labelled datasets (xarray -> NetCDF/HDF5) and ADDA-compatible text outputs.

xarray and the NetCDF engine are imported inside the functions, so ``import emjax.io``
works where they are not installed (the solvers never need them).

Lengths are in the unit of the wavelength (whatever the user chose, e.g. micrometres), so
unit attributes say ``length`` and ``length^2``; angles are in degrees.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .errors import ConfigError

__all__ = ["dda_to_xarray", "save_dataset", "write_adda_outputs", "mueller_plane_index"]

POLARIZATIONS = ("X", "Y")
AMPLITUDE_ELEMENTS = ("S1", "S2", "S3", "S4")
CONVENTIONS = (
    "time dependence exp(-i omega t); m = n + i k with k >= 0 absorbing; incidence along +z "
    "in the lab frame; polarization X: incident E along lab x, Y: along lab y; amplitude "
    "and Mueller matrices as Bohren & Huffman; phi = 90 deg is the yz plane (ADDA's default); "
    "orientation: ZYZ Euler angles (alpha, beta, gamma) of the particle in degrees; "
    "Q = C / (pi a_eq^2); lengths in the unit of the wavelength"
)
#: suffixes that :func:`save_dataset` writes, all through the h5netcdf engine
DATASET_SUFFIXES = (".nc", ".h5", ".hdf5")


def _version() -> str:
    from . import __version__

    return __version__


def _complex_str(z: complex) -> str:
    z = complex(z)
    return f"{z.real:.10g}{z.imag:+.10g}j"


def _pad_histories(histories) -> np.ndarray:
    n = max(len(h) for h in histories)
    out = np.full((len(histories), n), np.nan)
    for i, h in enumerate(histories):
        out[i, : len(h)] = np.asarray(h, dtype=float)
    return out


def dda_to_xarray(result):
    """A :class:`~emjax.dda.DDAResult` as an ``xarray.Dataset``.

    Dimensions: ``polarization`` (X, Y: incident field along lab x / y), ``phi`` and
    ``theta`` (deg), ``element`` (S1..S4), ``row``/``col`` (1..4, Mueller indices),
    ``iteration`` (residual histories, NaN-padded to equal length), ``domain``.
    Complex quantities are stored as ``*_real``/``*_imag`` pairs (NetCDF has no complex type).
    Scalars of unpolarized incidence (averages over X and Y) and the run's inputs are attrs.
    """
    import xarray as xr

    prob, lat = result.problem, result.lattice
    ms = np.asarray(prob.refractive_indices(), dtype=complex)
    length2 = {"units": "length^2"}
    one = {"units": "1"}
    pol = ("polarization",)
    data = {
        "Cext": (
            pol,
            np.asarray(result.Cext_xy, float),
            {**length2, "long_name": "extinction cross section"},
        ),
        "Cabs": (
            pol,
            np.asarray(result.Cabs_xy, float),
            {**length2, "long_name": "absorption cross section"},
        ),
        "Cext_optical_theorem": (
            pol,
            np.asarray(result.Cext_optical_theorem, float),
            {**length2, "long_name": "Cext from the forward amplitude"},
        ),
    }
    if result.Csca_int_xy is not None:
        data["Csca_integrated"] = (
            pol,
            np.asarray(result.Csca_int_xy, float),
            {**length2, "long_name": "scattering cross section, integrated over all directions"},
        )
    if result.g_xy is not None:
        data["g"] = (
            pol,
            np.asarray(result.g_xy, float),
            {**one, "long_name": "asymmetry parameter <cos theta>"},
        )
    S = np.asarray(result.S)
    amp = ("phi", "theta", "element")
    data["S_real"] = (amp, S.real, {**one, "long_name": "amplitude matrix, real part"})
    data["S_imag"] = (amp, S.imag, {**one, "long_name": "amplitude matrix, imaginary part"})
    data["mueller"] = (
        ("phi", "theta", "row", "col"),
        np.asarray(result.mueller, float),
        {**one, "long_name": "Mueller matrix S_ij (Bohren & Huffman)"},
    )
    data["degree_of_polarization"] = (
        ("phi", "theta"),
        np.asarray(result.degree_of_polarization),
        {**one, "long_name": "degree of polarization for unpolarized incidence"},
    )
    data["residual_history"] = (
        ("polarization", "iteration"),
        _pad_histories(result.residual_history),
        {**one, "long_name": "relative residual ||b - Ax|| / ||b||"},
    )
    alpha = np.asarray(result.alpha)
    data["alpha_real"] = (
        ("polarization", "domain"),
        alpha.real,
        {"units": "length^3", "long_name": "dipole polarizability, real part"},
    )
    data["alpha_imag"] = (
        ("polarization", "domain"),
        alpha.imag,
        {"units": "length^3", "long_name": "dipole polarizability, imaginary part"},
    )
    data["refractive_index_real"] = (
        ("domain",),
        ms.real,
        {**one, "long_name": "refractive index n (m = n + ik)"},
    )
    data["refractive_index_imag"] = (
        ("domain",),
        ms.imag,
        {**one, "long_name": "refractive index k (m = n + ik)"},
    )
    coords = {
        "polarization": (
            "polarization",
            list(POLARIZATIONS),
            {"long_name": "incident polarization (lab axis of E)"},
        ),
        "theta": (
            "theta",
            np.asarray(result.theta, float),
            {"units": "deg", "long_name": "scattering angle"},
        ),
        "phi": (
            "phi",
            np.asarray(result.phi, float),
            {"units": "deg", "long_name": "azimuth of the scattering plane (90 = yz)"},
        ),
        "element": ("element", list(AMPLITUDE_ELEMENTS)),
        "row": ("row", np.arange(1, 5)),
        "col": ("col", np.arange(1, 5)),
        "iteration": ("iteration", np.arange(data["residual_history"][1].shape[1])),
        "domain": ("domain", np.arange(alpha.shape[-1])),
    }
    attrs = {
        "title": "emjax DDA result",
        "emjax_version": _version(),
        "conventions": CONVENTIONS,
        "Cext": result.Cext,
        "Cabs": result.Cabs,
        "Csca": result.Csca,
        "Qext": result.Qext,
        "Qabs": result.Qabs,
        "Qsca": result.Qsca,
        "Csca_integrated": result.Csca_integrated,
        "g_unpolarized": result.g,
        "a_eq": result.a_eq,
        "size_parameter": prob.k * result.a_eq,
        "n_dipoles": lat.n_dipoles,
        "grid": np.asarray(lat.shape, dtype=np.int64),
        "dipole_size": lat.d,
        "size_x": lat.size_x,
        "dipoles_per_wavelength": prob.wavelength / lat.d,
        "wavelength": float(prob.wavelength),
        # one string (a 1-element list would read back as a plain string)
        "refractive_index": ", ".join(_complex_str(m) for m in ms),
        "shape": prob.shape.name,
        "shape_spec": repr(prob.shape),
        "polarizability": repr(prob.polarizability),
        "orientation": np.asarray(prob.orientation, dtype=float),
        "precision": prob.precision,
        "volume_correction": int(bool(prob.volume_correction)),
        "iterations": np.asarray(result.iterations, dtype=np.int64),
        "converged": np.asarray(result.converged, dtype=np.int8),
        "all_converged": int(result.all_converged),
        "solver_messages": [str(m) for m in result.solver_messages],
        "seconds": float(result.seconds),
    }
    for key, val in result.timings.items():
        attrs[f"timing_{key}"] = float(val)
    attrs = {k: v for k, v in attrs.items() if v is not None}
    return xr.Dataset(data, coords=coords, attrs=attrs)


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


# --- ADDA-like text outputs -----------------------------------------------------------------


def mueller_plane_index(phi) -> int:
    """Index of the yz plane (phi = 90 deg) in ``phi`` if present, else 0."""
    phi = np.asarray(phi, dtype=float)
    hits = np.flatnonzero(np.isclose(np.mod(phi, 360.0), 90.0))
    return int(hits[0]) if hits.size else 0


def _g10(x) -> str:
    return f"{float(x):.10g}"


def _crosssec_text(result, i: int) -> str:
    G = result.geometric_cross_section
    lines = [
        ("Cext", result.Cext_xy[i]),
        ("Qext", result.Cext_xy[i] / G),
        ("Cabs", result.Cabs_xy[i]),
        ("Qabs", result.Cabs_xy[i] / G),
    ]
    if result.Csca_int_xy is not None:
        c = result.Csca_int_xy[i]
        lines += [("Csca", c), ("Qsca", c / G)]
        if result.g_xy is not None:
            lines.append(("g", result.g_xy[i]))
    return "".join(f"{name}\t= {_g10(v)}\n" for name, v in lines)


def _mueller_text(result) -> str:
    ip = mueller_plane_index(result.phi)
    M = np.asarray(result.mueller)[ip]  # (n_theta, 4, 4)
    header = "theta " + " ".join(f"s{r}{c}" for r in range(1, 5) for c in range(1, 5))
    rows = [header]
    for t, m in zip(np.asarray(result.theta, float), M, strict=True):
        rows.append(f"{t:.2f} " + " ".join(f"{v:.9E}" for v in m.reshape(16)))
    return "\n".join(rows) + "\n"


def _log_text(result, command: str | None, notes: dict | None) -> str:
    prob, lat = result.problem, result.lattice
    ms = prob.refractive_indices()
    nx, ny, nz = lat.shape
    ip = mueller_plane_index(result.phi)
    out = [
        f"Generated by emjax v.{_version()}",
        f"command: '{command}'" if command else "command: (Python API)",
        f"lambda: {_g10(prob.wavelength)}",
        "refractive index: " + ", ".join(f"{i + 1}. {_complex_str(m)}" for i, m in enumerate(ms)),
        f"shape: {prob.shape.name}  {prob.shape!r}",
        f"lattice: {nx}x{ny}x{nz}",
        f"Dipoles/lambda: {_g10(prob.wavelength / lat.d)}",
        f"dipole size d: {_g10(lat.d)}   size along x: {_g10(lat.size_x)}",
        f"Total number of occupied dipoles: {lat.n_dipoles}",
        f"Volume-equivalent size parameter: {_g10(prob.k * result.a_eq)}   a_eq: {_g10(result.a_eq)}",
        f"Polarizability: {prob.polarizability!r}",
    ]
    for label, alpha in zip(POLARIZATIONS, np.asarray(result.alpha), strict=True):
        out.append(f"  alpha {label}: " + ", ".join(_complex_str(a) for a in alpha))
    out += [f"{key}: {val}" for key, val in (notes or {}).items()]
    a, b, g = prob.orientation
    out += [
        f"Particle orientation (deg): alpha={_g10(a)}, beta={_g10(b)}, gamma={_g10(g)}",
        f"Precision: {prob.precision}",
        f"Scattering angles: {len(result.theta)} theta in [{_g10(np.min(result.theta))}, "
        f"{_g10(np.max(result.theta))}] deg; mueller file for phi = "
        f"{_g10(result.phi[ip])} deg",
        "",
        "Iterative solver:",
    ]
    for label, it, conv, msg in zip(
        POLARIZATIONS, result.iterations, result.converged, result.solver_messages, strict=True
    ):
        out.append(f"  {label}: iterations {it}, converged {bool(conv)}: {msg}")
    out += ["", "Timing:", f"  total: {result.seconds:.4f} s"]
    out += [f"  {k}: {float(v):.4f} s" for k, v in result.timings.items()]
    return "\n".join(out) + "\n"


def write_adda_outputs(result, folder, command: str | None = None, notes: dict | None = None) -> list[Path]:
    """ADDA-like text files in ``folder``: ``CrossSec-X``, ``CrossSec-Y``, ``mueller``, ``log``.

    ``CrossSec-*`` hold ``name\\t= value`` lines (10 significant digits) for the incident
    polarization along lab x / y; ``Csca``, ``Qsca`` and ``g`` only if they were integrated.
    ``mueller`` has one line per theta of the yz plane (phi = 90 deg, else the first phi).
    ``command`` (the command line, if any) and ``notes`` (``{name: value}``, e.g. the solver,
    which the result does not record) go into ``log``. Returns the paths.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "CrossSec-X": _crosssec_text(result, 0),
        "CrossSec-Y": _crosssec_text(result, 1),
        "mueller": _mueller_text(result),
        "log": _log_text(result, command, notes),
    }
    paths = []
    for name, text in files.items():
        p = folder / name
        p.write_text(text)
        paths.append(p)
    return paths


def fdtd_to_xarray(result):
    """FDTD result -> Dataset: probe time series, DFT flux spectra, final fields' mid-z slice."""
    import xarray as xr

    sim = result.simulation
    g = sim.grid
    data = {
        "probes": (("time", "probe"), np.asarray(result.probes), {"units": "field (natural units)"}),
    }
    coords = {"time": ("time", result.times, {"units": "length / c"}), "probe": np.arange(len(sim.probes))}
    for i, mon in enumerate(sim.monitors):
        data[f"flux{i}"] = ((f"frequency{i}",), result.flux(i), {"units": "power / length^2 (c = 1)"})
        coords[f"frequency{i}"] = (f"frequency{i}", np.asarray(mon.frequencies), {"units": "1 / length"})
    E = np.asarray(result.E)
    data["E_mid_z"] = (("component", "x", "y"), E[:, :, :, g.shape[2] // 2], {"units": "natural"})
    attrs = {
        "emjax_version": _version(),
        "shape": list(g.shape),
        "dx": g.dx,
        "dt": g.dt,
        "courant": g.courant,
        "order": g.order,
        "precision": g.precision,
        "steps": result.steps,
        "cells_per_s": result.cells_per_second,
    }
    return xr.Dataset({k: xr.Variable(*v) for k, v in data.items()}, coords=coords, attrs=attrs)


def layered_to_xarray(result, shape=None, axes=None):
    """Dipole fields in a stack -> Dataset with E, H (point, component) complex.

    ``shape = (n1, n2)`` and ``axes = ("x", "z")``: the points are a plane map in C order
    (index 1 slowest); E and H then get dims (axes[0], axes[1], component) with coordinates.
    """
    import xarray as xr

    pts = np.asarray(result.points)
    comp = ["x", "y", "z"]
    units = {"units": "p / (eps0 L^3) (E); Z0 H in the same units (H)"}
    attrs = {
        "emjax_version": _version(),
        "wavelength": result.wavelength,
        "source": list(map(float, result.source)),
        "p_real": list(map(float, np.real(result.p))),
        "p_imag": list(map(float, np.imag(result.p))),
        "part": result.part,
        "stack_eps": [str(e) for e in result.stack.eps],
        "stack_thickness": list(result.stack.thickness),
        "stack_z_top": result.stack.z_top,
        "seconds": result.seconds,
        "convention": "exp(-i omega t); E = k0^2 G p with curl curl G - k0^2 eps G = I delta",
    }
    if shape is None:
        dims = ("point", "component")
        data = {
            "E": (dims, np.asarray(result.E), units),
            "H": (dims, np.asarray(result.H), units),
            "error_estimate": (("point",), np.asarray(result.error), {"units": "relative"}),
        }
        coords = {
            "component": comp,
            "x": ("point", pts[:, 0]),
            "y": ("point", pts[:, 1]),
            "z": ("point", pts[:, 2]),
        }
        return xr.Dataset({k: xr.Variable(*v) for k, v in data.items()}, coords=coords, attrs=attrs)
    n1, n2 = shape
    a1, a2 = axes
    idx = {"x": 0, "y": 1, "z": 2}
    grid = pts.reshape(n1, n2, 3)
    dims = (a1, a2, "component")
    data = {
        "E": (dims, np.asarray(result.E).reshape(n1, n2, 3), units),
        "H": (dims, np.asarray(result.H).reshape(n1, n2, 3), units),
        "error_estimate": ((a1, a2), np.asarray(result.error).reshape(n1, n2), {"units": "relative"}),
    }
    coords = {"component": comp, a1: grid[:, 0, idx[a1]], a2: grid[0, :, idx[a2]]}
    return xr.Dataset({k: xr.Variable(*v) for k, v in data.items()}, coords=coords, attrs=attrs)
