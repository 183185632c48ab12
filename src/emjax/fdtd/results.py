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

__all__ = ["FDTDResult", "box_results", "fdtd_to_xarray", "label_field_plane", "physical_to_xarray"]


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
    kernel: str = "xla"  # the step that ran, and why (emjax.fdtd.run's ``kernel``)

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

    def resonances(self, probe: int = 0, fmin=None, fmax=None, *, start=None, **options) -> list:
        """The resonances (:class:`emjax.resonances.Resonance`: frequency, decay, Q, amplitude,
        error) in ``[fmin, fmax]`` (1 / length) of probe ``probe``'s ring-down: its record
        from ``start`` (length / c; default when the sources have died out) by filter
        diagonalization. ``options``: as :func:`emjax.resonances.resonances`."""
        from .ringdown import probe_resonances

        return probe_resonances(self, probe, fmin, fmax, start, **options)

    @property
    def cells_per_second(self) -> float:
        return self.simulation.grid.n_cells * self.steps / max(self.seconds, 1e-12)

    def to_xarray(self, boxes=()):
        """The probes, flux spectra, mid-z fields and flux boxes as an ``xarray.Dataset``
        (:func:`fdtd_to_xarray`)."""
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


#: units of the fields (natural units: eps0 = mu0 = c = 1, in the sources' amplitude unit)
FIELD_UNITS = "field (natural units: eps0 = mu0 = c = 1)"
#: a DFT monitor's amplitude: the sum over steps of field x dt
DFT_UNITS = "field x length / c (the DFT of the field over time; natural units)"
#: a flux spectrum: 0.5 Re(E x H*) of the DFT amplitudes, summed over the monitor's area
FLUX_UNITS = "field^2 x length^4 / c^2 (natural units: the flux of the DFT amplitudes)"
#: names a monitor may not take in a dataset (a monitor so named is stored as flux_NAME)
_RESERVED = {"probes", "probe", "time", "E_mid_z", "component", "x", "y", "frequency", "Csca", "Cabs", "Cext"}


def _common(result, origin=(0.0, 0.0, 0.0)):
    """(data, coords, attrs) shared by both kinds of run: the probes' time series and the
    final E on the mid-z plane over positions in the simulation's length unit."""
    sim = result.simulation
    g = sim.grid
    k = g.shape[2] // 2
    data = {
        "probes": (
            ("time", "probe"),
            np.asarray(result.probes),
            {"units": FIELD_UNITS, "long_name": "probed field component at each time"},
        ),
    }
    coords = {
        "time": ("time", np.asarray(result.times), {"units": "length / c"}),
        "probe": ("probe", np.arange(len(sim.probes)), {"units": "1", "long_name": "probe number"}),
        "probe_field": (
            "probe",
            [f"{p.field}{'xyz'[p.component]}" for p in sim.probes],
            {"units": "1", "long_name": "the field component each probe records"},
        ),
    }
    for ax in range(3):
        name = f"probe_{'xyz'[ax]}"
        pos = [origin[ax] + p.index[ax] * g.dx for p in sim.probes]
        text = f"{'xyz'[ax]} of the probe's cell corner (the component sits at its Yee position)"
        coords[name] = ("probe", np.asarray(pos, float), {"units": "length", "long_name": text})
    E = np.asarray(result.E)
    data["E_mid_z"] = (
        ("component", "x", "y"),
        E[:, :, :, k],
        {
            "units": FIELD_UNITS,
            "long_name": f"E (x, y, z components) on the plane z = {origin[2] + k * g.dx:.6g} after the "
            "last step; each component at its Yee position of cell (i, j), x and y giving the cell corner",
        },
    )
    for ax in (0, 1):
        name = "xy"[ax]
        pos = origin[ax] + np.arange(g.shape[ax]) * g.dx
        coords[name] = (name, pos, {"units": "length", "long_name": f"{name} of the cell corner"})
    coords["component"] = ("component", ["x", "y", "z"], {"units": "1"})
    attrs = {
        "emjax_version": version(),
        "shape": list(g.shape),
        "dx": g.dx,
        "dt": g.dt,
        "courant": g.courant,
        "order": g.order,
        "precision": g.precision,
        "steps": int(result.total_steps or result.steps),
        "timed_steps": int(result.steps),
        "cells_per_s": result.cells_per_second,
        "units": "natural units (eps0 = mu0 = c = 1); lengths in the simulation's unit, time in length / c",
    }
    return data, coords, attrs


def fdtd_to_xarray(result, boxes=()):
    """FDTD result -> Dataset: probe time series, DFT flux spectra ``flux{i}`` over
    ``frequency{i}``, final fields' mid-z slice, and per closed flux box (``boxes``: dicts as
    ``emjax fdtd`` makes them, with "frequencies", "outward_flux" and, under a TF/SF source,
    "flux_over_incident_intensity") ``box{b}_outward_flux`` and ``box{b}_cross_section``
    over ``box_frequency{b}``. Attribute ``steps``: the steps run; ``timed_steps``: those
    timed for ``cells_per_s``."""
    import xarray as xr

    sim = result.simulation
    data, coords, attrs = _common(result)
    for i, mon in enumerate(sim.monitors):
        if isinstance(mon, mon_mod.DFTField):  # fields, not a flux: Result.field_plane
            continue
        data[f"flux{i}"] = (
            (f"frequency{i}",),
            result.flux(i),
            {"units": FLUX_UNITS, "long_name": f"flux through DFT monitor {i} (towards +axis)"},
        )
        coords[f"frequency{i}"] = (f"frequency{i}", np.asarray(mon.frequencies), {"units": "1 / length"})
    for b, box in enumerate(boxes):
        dim = f"box_frequency{b}"
        coords[dim] = (dim, np.asarray(box["frequencies"]), {"units": "1 / length"})
        data[f"box{b}_outward_flux"] = ((dim,), np.asarray(box["outward_flux"]), {"units": FLUX_UNITS})
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
    return xr.Dataset(
        {k: xr.Variable(*v) for k, v in data.items()},
        coords={k: xr.Variable(*v) for k, v in coords.items()},
        attrs=attrs,
    )


def physical_to_xarray(res):
    """A physical-unit run (:class:`emjax.fdtd.Result`) -> Dataset: ``Csca``, ``Cabs``,
    ``Cext`` (length^2) over ``frequency`` from a CrossSections monitor; each FluxPlane
    (flux towards +axis) and FluxBox (outward flux) under its own name over
    ``<name>_frequency`` (``flux_<name>`` where the name is taken); the probes; the final E
    on the mid-z plane over x, y in the simulation's length unit. FieldPlane monitors are
    not here: :meth:`Result.field_plane`. Attribute ``steps``: the steps run."""
    import xarray as xr

    sim = res.simulation
    data, coords, attrs = _common(res.raw, sim.origin)
    if "cross_sections" in res.monitor_planes:
        cs = res.cross_sections()
        coords["frequency"] = ("frequency", np.asarray(cs["frequency"]), {"units": "1 / length"})
        what = {
            "Csca": "scattering cross section: scattered power / incident intensity",
            "Cabs": "absorption cross section: absorbed power / incident intensity",
            "Cext": "extinction cross section: Csca + Cabs",
        }
        for key, text in what.items():
            data[key] = (("frequency",), np.asarray(cs[key]), {"units": "length^2", "long_name": text})
    given = res.symmetry.full if getattr(res, "symmetry", None) is not None else sim
    kinds = {m.name: type(m).__name__ for m in given.monitors if hasattr(m, "name")}
    for name, planes in res.monitor_planes.items():
        if name == "cross_sections" or name in sim.field_plane_names:
            continue
        var = str(name).replace("/", "_")
        var = f"flux_{var}" if var in _RESERVED or var in data else var
        dim = f"{var}_frequency"
        box = kinds.get(name) == "FluxBox"
        coords[dim] = (dim, np.asarray(res.frequencies(name)), {"units": "1 / length"})
        text = f"outward flux through FluxBox {name!r}" if box else f"flux through FluxPlane {name!r}"
        if not box:
            axis = planes.axis if hasattr(planes, "factor") else res.grid_simulation.monitors[planes[0]].axis
            text += f" (towards +{'xyz'[axis]})"
        data[var] = ((dim,), np.asarray(res.flux(name)), {"units": FLUX_UNITS, "long_name": text})
    if given is not sim:  # mirror symmetry: the fields are the half domain that ran
        attrs["symmetry"] = list(given.symmetry)
        attrs["symmetry_note"] = (
            "fluxes, cross sections and probes are the whole domain's (probe positions: the "
            "nodes read, mirror images for probes in the removed half); E_mid_z and the grid "
            "attributes are the half domain's"
        )
    attrs.update(
        resolution=float(sim.resolution),
        size=list(sim.size),
        center=list(sim.center),
        origin=list(sim.origin),
        averaging=sim.averaging,
    )
    return xr.Dataset(
        {k: xr.Variable(*v) for k, v in data.items()},
        coords={k: xr.Variable(*v) for k, v in coords.items()},
        attrs=attrs,
    )


def label_field_plane(ds, normalized: bool):
    """Units and descriptions on a :meth:`Result.field_plane` Dataset (in place; returned)."""
    unit = "1" if normalized else DFT_UNITS
    per = " / the incident plane wave's amplitude at each frequency" if normalized else ""
    pec = "; E at the Yee positions inside a perfect conductor (PEC) is 0, a node averages those around it"
    for c in ("Ex", "Ey", "Ez", "Hx", "Hy", "Hz"):
        text = f"complex amplitude of {c} at the grid's nodes{per}" + (pec if c[0] == "E" else "")
        ds[c].attrs.update(units=unit, long_name=text)
    ds["frequency"].attrs["units"] = "1 / length"
    for ax in ds["Ex"].dims[1:]:
        ds[ax].attrs["units"] = "length"
    return ds
