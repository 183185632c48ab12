"""The result of :func:`emjax.fdfd.solve_rcs` (:class:`RCSResult`) and its labelled
``xarray.Dataset`` forms (xarray imported inside): the radar cross sections (``rcs.nc``) and,
in 2-D, the field map outside the PML (``fields.nc``).

Lengths in the wavelength's unit; angles in degrees; sigma in length (2-D, the scattering
width) or length^2 (3-D); ``*_db`` variables are ``10 log10(sigma / wavelength)`` (2-D, dB
re wavelength) or ``10 log10(sigma / wavelength^2)`` (3-D).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._repr import concise_repr
from ..io import complex_str, version

__all__ = ["RCSResult", "decibels"]


def decibels(sigma, wavelength: float, dims: int) -> np.ndarray:
    """``10 log10(sigma / wavelength^(dims - 1))``, floored at -300 dB."""
    ref = wavelength ** (dims - 1)
    return 10 * np.log10(np.maximum(np.asarray(sigma, float) / ref, 1e-30))


@dataclass(frozen=True, eq=False)
class RCSResult:
    """Radar cross sections of one :class:`~emjax.fdfd.config.FDFDProblem`.

    ``angles_deg``: phi (2-D) or theta from the incident direction (3-D); ``rcs`` (2-D) or
    ``rcs_E``, ``rcs_H`` (3-D, E- and H-plane) at those angles; ``monostatic_rcs``
    backscatter per ``problem.monostatic_angles`` (or None); ``field`` the solver's result
    for the bistatic incidence (``TMResult`` or ``Result3D``); ``stats`` the solve's
    statistics (unknowns, iterations, converged, residual, solver, seconds, ...)."""

    __repr__ = concise_repr

    problem: object
    angles_deg: np.ndarray
    field: object
    stats: dict
    rcs: np.ndarray | None = None
    rcs_E: np.ndarray | None = None
    rcs_H: np.ndarray | None = None
    monostatic_rcs: np.ndarray | None = None
    rcs_seconds: float = 0.0

    @property
    def converged(self) -> bool:
        return bool(self.stats.get("converged", True))

    def summary(self) -> dict:
        """The JSON summary of ``emjax fdfd --json`` (plain Python values)."""
        p = self.problem
        out = {"dims": p.dims, "rcs_angles_deg": [float(a) for a in self.angles_deg]}
        if p.dims == 2:
            out["rcs"] = [float(v) for v in self.rcs]
        else:
            out["rcs_E"] = [float(v) for v in self.rcs_E]
            out["rcs_H"] = [float(v) for v in self.rcs_H]
        if self.monostatic_rcs is not None:
            out["monostatic_angles_deg"] = [float(a) for a in p.monostatic_angles]
            out["monostatic_rcs"] = [float(v) for v in self.monostatic_rcs]
        out.update(self.stats)
        out["grid"] = [len(self.field.x), len(self.field.y)] + ([len(self.field.z)] if p.dims == 3 else [])
        out["rcs_seconds"] = self.rcs_seconds
        return out

    def _attrs(self) -> dict:
        p = self.problem
        pol = p.polarization if isinstance(p.polarization, str) else [complex_str(v) for v in p.polarization]
        st = {k: v for k, v in self.stats.items() if isinstance(v, (int, float, str, bool))}
        return {
            "emjax_version": version(),
            "dims": p.dims,
            "wavelength": p.wavelength,
            "resolution_cells_per_wavelength": p.resolution,
            "polarization": pol if isinstance(pol, str) else ", ".join(pol),
            "direction": list(p.direction),
            "size": list(p.size),
            "center": list(p.center),
            "pml_cells": p.pml_cells,
            "averaging": p.averaging,
            "objects": repr(list(p.objects)),
            "convention": "exp(-i omega t); unit incident plane wave",
            **st,
        }

    def to_xarray(self):
        """The RCS as a Dataset: ``rcs``/``rcs_db`` over ``phi`` (2-D) or ``rcs_E``,
        ``rcs_H`` (+ ``_db``) over ``theta`` (3-D); ``monostatic_rcs`` over
        ``incidence_angle`` when a sweep was run."""
        import xarray as xr

        p = self.problem
        unit = "length" if p.dims == 2 else "length^2"
        db = "dB re wavelength" if p.dims == 2 else "dB re wavelength^2"
        dim = "phi" if p.dims == 2 else "theta"
        data = {}
        names = ["rcs"] if p.dims == 2 else ["rcs_E", "rcs_H"]
        for name in names:
            sigma = np.asarray(getattr(self, name), float)
            data[name] = ((dim,), sigma, {"units": unit, "long_name": f"radar cross section ({name})"})
            data[f"{name}_db"] = ((dim,), decibels(sigma, p.wavelength, p.dims), {"units": db})
        coords = {dim: (dim, np.asarray(self.angles_deg, float), {"units": "degree"})}
        if self.monostatic_rcs is not None:
            mono = np.asarray(self.monostatic_rcs, float)
            data["monostatic_rcs"] = (("incidence_angle",), mono, {"units": unit, "long_name": "backscatter"})
            data["monostatic_rcs_db"] = (
                ("incidence_angle",),
                decibels(mono, p.wavelength, p.dims),
                {"units": db},
            )
            coords["incidence_angle"] = (
                "incidence_angle",
                np.asarray(p.monostatic_angles, float),
                {"units": "degree"},
            )
        return xr.Dataset(
            {k: xr.Variable(*v) for k, v in data.items()},
            coords={k: xr.Variable(*v) for k, v in coords.items()},
            attrs=self._attrs(),
        )

    def fields_to_xarray(self):
        """2-D: the field outside the PML as a Dataset over (x, y): ``Ez`` and ``Ez_scattered``
        (TM) or ``Hz`` and ``Hz_scattered`` (TE) complex, and the permittivity at E_z nodes
        (TM) or 1/eps at the E_x nodes (TE)."""
        import xarray as xr

        p = self.problem
        if p.dims != 2:
            raise NotImplementedError("fields_to_xarray: 2-D results only (3-D fields stay in .field)")
        r = self.field
        sx, sy = r.interior()  # outside the field's own PML
        name = "Ez" if p.polarization == "TM" else "Hz"
        ratio = "in units of the incident plane wave's amplitude"
        pec = "; 0 at the nodes inside a perfect conductor (PEC)" if name == "Ez" else ""
        data = {
            name: (
                ("x", "y"),
                np.asarray(r.Ez)[sx, sy],
                {"units": "1", "long_name": f"total {name}, {ratio}{pec}"},
            ),
            f"{name}_scattered": (
                ("x", "y"),
                np.asarray(r.Es)[sx, sy],
                {"units": "1", "long_name": f"scattered {name} (total - incident), {ratio}"},
            ),
        }
        if p.polarization == "TM":
            text = "relative permittivity at the E_z nodes; inf at the nodes inside a perfect conductor (PEC)"
            data["eps"] = (("x", "y"), np.asarray(r.eps)[sx, sy], {"units": "1", "long_name": text})
        else:
            text = (
                "1 / relative permittivity at the E_x nodes; 0 on the edges inside a perfect conductor "
                "(PEC; conformal: times the edge's open fraction)"
            )
            data["inverse_eps_x"] = (
                ("x", "y"),
                np.asarray(r.eps)[sx, sy],
                {"units": "1", "at": "E_x nodes", "long_name": text},
            )
        coords = {"x": np.asarray(r.x)[sx], "y": np.asarray(r.y)[sy]}
        ds = xr.Dataset({k: xr.Variable(*v) for k, v in data.items()}, coords=coords, attrs=self._attrs())
        ds["x"].attrs["units"] = ds["y"].attrs["units"] = "length"
        return ds

    def save(self, path) -> None:
        """The RCS Dataset to ``path`` (.nc, .h5: :func:`emjax.io.save_dataset`)."""
        from ..io import save_dataset

        save_dataset(self.to_xarray(), path)
