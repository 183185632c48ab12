"""FDTD results: :class:`FDTDResult` (probe series, DFT monitors, fields), the flux boxes'
cross sections, and the result as a labelled ``xarray.Dataset`` (xarray imported inside)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import jax
import numpy as np

from .._repr import concise_repr
from ..errors import ConfigError
from ..io import version
from . import monitors as mon_mod
from .monitors import box_flux
from .tfsf import TFSF, incident_spectrum

if TYPE_CHECKING:
    from .spec import GridSimulation

__all__ = ["FDTDResult", "box_results", "fdtd_to_xarray"]


@dataclass(frozen=True, eq=False)
class FDTDResult:
    """Probe time series ``(steps, n_probes)`` at times ``(n + 1) dt`` (E) and the fields."""

    __repr__ = concise_repr

    simulation: GridSimulation
    probes: np.ndarray
    times: np.ndarray
    E: jax.Array
    H: jax.Array
    steps: int  # the steps timed for cells_per_second (the run's, less its compiling chunks)
    seconds: float
    compile_seconds: float
    dft: tuple = ()  # per monitor: {"E": (nf, 2, n1 + 1, n2 + 1), "H": ...} complex
    total_steps: int = 0  # the steps the fields and the DFTs have advanced

    def flux(self, monitor: int = 0) -> np.ndarray:
        """Flux spectrum through DFT monitor ``monitor`` (towards +axis)."""
        d = self.dft[monitor]
        _flux_monitor(self.simulation.monitors[monitor])
        axis = self.simulation.monitors[monitor].axis
        return mon_mod.flux(d["E"], d["H"], self.simulation.grid.dx**2, axis)

    def flux_difference(self, other: FDTDResult, monitor: int = 0) -> np.ndarray:
        """Flux of (this - other) fields: e.g. the reflected flux, with ``other`` the run
        without the scatterer (same sources and monitors)."""
        a, b = self.dft[monitor], other.dft[monitor]
        _flux_monitor(self.simulation.monitors[monitor])
        axis = self.simulation.monitors[monitor].axis
        return mon_mod.flux(a["E"] - b["E"], a["H"] - b["H"], self.simulation.grid.dx**2, axis)

    @property
    def cells_per_second(self) -> float:
        return self.simulation.grid.n_cells * self.steps / max(self.seconds, 1e-12)

    def to_xarray(self, boxes=()):
        """The probes, flux spectra, mid-z fields and flux boxes as an ``xarray.Dataset``."""
        return fdtd_to_xarray(self, boxes)

    def save(self, path, boxes=()):
        """Write :meth:`to_xarray` to ``path`` (``.nc``, ``.h5``)."""
        from ..io import save_dataset

        return save_dataset(self.to_xarray(boxes), path)


def _flux_monitor(mon) -> None:
    if isinstance(mon, mon_mod.DFTField):
        raise ConfigError("a field monitor (DFTField) has no flux: use a DFTPlane (fields: field_on_nodes)")


def box_results(res, n_boxes: int) -> list:
    """Outward flux of each flux box (the last ``6 * n_boxes`` monitors of ``res``'s
    simulation) and, with a TF/SF source, the cross section it stands for (scattered outside,
    -absorbed inside the box): dicts with "frequencies", "outward_flux" and
    "flux_over_incident_intensity"."""
    sim, steps = res.simulation, res.total_steps
    out = []
    first = len(sim.monitors) - 6 * n_boxes
    tf = next((s for s in sim.sources if isinstance(s, TFSF)), None)
    for b in range(n_boxes):
        idx = range(first + 6 * b, first + 6 * b + 6)
        flux = box_flux([res.flux(i) for i in idx])
        freqs = sim.monitors[first + 6 * b].frequencies
        entry = {"frequencies": list(freqs), "outward_flux": flux.tolist()}
        if tf is not None:
            intensity = 0.5 * np.abs(incident_spectrum(tf, freqs, steps, sim.grid.dt)) ** 2
            entry["flux_over_incident_intensity"] = (flux / intensity).tolist()
        out.append(entry)
    return out


def fdtd_to_xarray(result, boxes=()):
    """FDTD result -> Dataset: probe time series, DFT flux spectra, final fields' mid-z slice,
    and per closed flux box (``boxes``: dicts as ``emjax fdtd`` makes them, with
    "frequencies", "outward_flux" and, under a TF/SF source, "flux_over_incident_intensity")
    ``box{b}_outward_flux`` and ``box{b}_cross_section`` over ``box_frequency{b}``."""
    import xarray as xr

    sim = result.simulation
    g = sim.grid
    data = {
        "probes": (("time", "probe"), np.asarray(result.probes), {"units": "field (natural units)"}),
    }
    coords = {"time": ("time", result.times, {"units": "length / c"}), "probe": np.arange(len(sim.probes))}
    for i, mon in enumerate(sim.monitors):
        if isinstance(mon, mon_mod.DFTField):  # fields, not a flux: Result.field_plane
            continue
        data[f"flux{i}"] = ((f"frequency{i}",), result.flux(i), {"units": "power / length^2 (c = 1)"})
        coords[f"frequency{i}"] = (f"frequency{i}", np.asarray(mon.frequencies), {"units": "1 / length"})
    for b, box in enumerate(boxes):
        dim = f"box_frequency{b}"
        coords[dim] = (dim, np.asarray(box["frequencies"]), {"units": "1 / length"})
        data[f"box{b}_outward_flux"] = ((dim,), np.asarray(box["outward_flux"]), {"units": "power (c = 1)"})
        if "flux_over_incident_intensity" in box:
            data[f"box{b}_cross_section"] = (
                (dim,),
                np.asarray(box["flux_over_incident_intensity"]),
                {
                    "units": "length^2",
                    "long_name": "outward flux / incident intensity: the scattering cross section "
                    "for a box outside the TF/SF box, minus the absorption cross section inside it",
                },
            )
    E = np.asarray(result.E)
    data["E_mid_z"] = (("component", "x", "y"), E[:, :, :, g.shape[2] // 2], {"units": "natural"})
    attrs = {
        "emjax_version": version(),
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
