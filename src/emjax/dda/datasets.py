"""DDA results as labelled ``xarray.Dataset`` s (``DDAResult.to_xarray``,
``AveragedResult.to_xarray``); xarray is imported inside the functions."""

from __future__ import annotations

import numpy as np

from ..io import complex_str as _complex_str
from ..io import version as _version
from .adda_files import POLARIZATIONS

__all__ = ["averaged_to_xarray", "dda_to_xarray"]

AMPLITUDE_ELEMENTS = ("S1", "S2", "S3", "S4")
CONVENTIONS = (
    "time dependence exp(-i omega t); m = n + i k with k >= 0 absorbing; incidence along +z "
    "in the lab frame; polarization X: incident E along lab x, Y: along lab y; amplitude "
    "and Mueller matrices as Bohren & Huffman; phi = 90 deg is the yz plane (ADDA's default); "
    "orientation: ZYZ Euler angles (alpha, beta, gamma) of the particle in degrees; "
    "Q = C / (pi a_eq^2); lengths in the unit of the wavelength"
)


def _pad_histories(histories) -> np.ndarray:
    n = max(len(h) for h in histories)
    out = np.full((len(histories), n), np.nan)
    for i, h in enumerate(histories):
        out[i, : len(h)] = np.asarray(h, dtype=float)
    return out


def _result_attrs(result, title: str) -> dict:
    """Attributes shared by fixed-orientation and averaged DDA datasets."""
    prob, lat = result.problem, result.lattice
    ms = np.asarray(prob.refractive_indices(), dtype=complex)
    return {
        "title": title,
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
        "wavelength": float(prob.wavelength),
        # one string (a 1-element list would read back as a plain string)
        "refractive_index": ", ".join(_complex_str(m) for m in ms),
        "shape": prob.shape.name,
        "shape_spec": repr(prob.shape),
        "polarizability": repr(prob.polarizability),
        "precision": prob.precision,
    }


def _with_timings(attrs: dict, result) -> dict:
    """``attrs`` plus ``timing_*`` entries, without None values (NetCDF cannot store them)."""
    attrs = {**attrs, **{f"timing_{key}": float(val) for key, val in result.timings.items()}}
    return {k: v for k, v in attrs.items() if v is not None}


def _incidence_attrs(prob) -> dict:
    """prop, and the substrate and height of a particle on a substrate (as NetCDF attrs)."""
    out = {}
    if getattr(prob, "prop", None) is not None:
        out["prop"] = np.asarray(prob.prop, dtype=float)
    if getattr(prob, "substrate", None) is not None:
        out["substrate"] = repr(prob.substrate)
        out["height"] = float(prob.height)
        out["angles"] = "surface mode: theta from +z in the plane of prop and z (ADDA's -surf)"
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
    for half, where in (("up", "upper"), ("down", "lower")):  # on a substrate: per hemisphere
        v = getattr(result, f"Csca_{half}_xy", None)
        if v is not None:
            data[f"Csca_{half}"] = (
                pol,
                np.asarray(v, float),
                {**length2, "long_name": f"scattering cross section, {where} hemisphere"},
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
            {**one, "long_name": "incident polarization (lab axis of E)"},
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
        "element": ("element", list(AMPLITUDE_ELEMENTS), {**one, "long_name": "amplitude matrix element"}),
        "row": ("row", np.arange(1, 5), {**one, "long_name": "Mueller matrix row"}),
        "col": ("col", np.arange(1, 5), {**one, "long_name": "Mueller matrix column"}),
        "iteration": ("iteration", np.arange(data["residual_history"][1].shape[1]), one),
        "domain": ("domain", np.arange(alpha.shape[-1]), {**one, "long_name": "material domain number"}),
    }
    attrs = {
        **_result_attrs(result, "emjax DDA result"),
        "size_x": lat.size_x,
        "dipoles_per_wavelength": prob.wavelength / lat.d,
        "orientation": np.asarray(prob.orientation, dtype=float),
        "volume_correction": int(bool(prob.volume_correction)),
        **_incidence_attrs(prob),
        "iterations": np.asarray(result.iterations, dtype=np.int64),
        "converged": np.asarray(result.converged, dtype=np.int8),
        "all_converged": int(result.all_converged),
        "solver_messages": [str(m) for m in result.solver_messages],
        "seconds": float(result.seconds),
    }
    return xr.Dataset(data, coords=coords, attrs=_with_timings(attrs, result))


def averaged_to_xarray(result):
    """An orientation-averaged :class:`~emjax.dda.AveragedResult` as an ``xarray.Dataset``.

    Dimensions: ``theta`` (deg), ``row``/``col`` (Mueller indices), ``orientation`` (the
    solved (beta, gamma) nodes, alpha = 0), ``polarization`` (X, Y). Variables: the averaged
    Mueller matrix, and per orientation the Euler angles, quadrature weight, cross sections,
    iterations and the Mueller matrix in the yz plane. Averaged scalars are attrs.
    """
    import xarray as xr

    q = result.quadrature
    length2 = {"units": "length^2"}
    one = {"units": "1"}
    per = ("orientation", "polarization")
    data = {
        "mueller": (
            ("theta", "row", "col"),
            np.asarray(result.mueller, float),
            {**one, "long_name": "orientation-averaged Mueller matrix S_ij (Bohren & Huffman)"},
        ),
        "beta": ("orientation", result.beta, {"units": "deg", "long_name": "Euler angle beta"}),
        "gamma": ("orientation", result.gamma, {"units": "deg", "long_name": "Euler angle gamma"}),
        "weight": ("orientation", result.weights, {**one, "long_name": "quadrature weight (sum 1)"}),
        "Cext": (per, result.Cext_xy, {**length2, "long_name": "extinction cross section"}),
        "Cabs": (per, result.Cabs_xy, {**length2, "long_name": "absorption cross section"}),
        "iterations": (per, np.asarray(result.iterations, np.int64), {**one}),
        "mueller_orientation": (
            ("orientation", "theta", "row", "col"),
            np.asarray(result.mueller_orientations, float),
            {**one, "long_name": "Mueller matrix at (alpha=0, beta, gamma) in the yz plane"},
        ),
    }
    if result.Csca_int_xy is not None:
        data["Csca_integrated"] = (per, result.Csca_int_xy, {**length2, "long_name": "integrated Csca"})
        data["g"] = (per, result.g_xy, {**one, "long_name": "asymmetry parameter"})
    coords = {
        "theta": (
            "theta",
            np.asarray(result.theta, float),
            {"units": "deg", "long_name": "scattering angle"},
        ),
        "polarization": (
            "polarization",
            list(POLARIZATIONS),
            {**one, "long_name": "incident polarization (lab axis of E)"},
        ),
        "row": ("row", np.arange(1, 5), {**one, "long_name": "Mueller matrix row"}),
        "col": ("col", np.arange(1, 5), {**one, "long_name": "Mueller matrix column"}),
    }
    attrs = {
        **_result_attrs(result, "emjax DDA result, averaged over random orientation"),
        "quadrature": repr(q),
        "n_orientations": result.n_orientations,
        "n_alpha": q.n_alpha,
        "levels": np.asarray(result.levels, dtype=np.int64),
        "error_estimate_beta": float(result.error["beta"]),
        "error_estimate_gamma": float(result.error["gamma"]),
        "all_converged": int(result.all_converged),
        "seconds": float(result.seconds),
    }
    return xr.Dataset(data, coords=coords, attrs=_with_timings(attrs, result))
