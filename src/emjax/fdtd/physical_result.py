"""The result of a physical-unit FDTD run (:func:`emjax.fdtd.physical.run`): the monitors by
name, spectra normalized by the incident plane wave (fluxes, transmission, cross sections,
field planes), over the cell-level :class:`~emjax.fdtd.FDTDResult`."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError
from .monitors import DFTField
from .spec import GridSimulation
from .tfsf import TFSF


@dataclass(frozen=True, eq=False)
class Result:
    """What :func:`emjax.fdtd.run` returns for a physical :class:`Simulation`: the monitors
    by name, normalized spectra, and the cell-level :class:`~emjax.fdtd.FDTDResult`.

    Under mirror symmetry (``symmetry`` set, a :class:`~emjax.fdtd.symmetry.Reduction`)
    fluxes, cross sections and probes are the whole domain's, while ``simulation`` is the
    reduced simulation that ran (the fields in ``raw`` are its half domain) and
    ``symmetry.full`` the one given."""

    simulation: object  # the emjax.fdtd.Simulation that ran
    grid_simulation: GridSimulation
    raw: object  # FDTDResult
    monitor_planes: dict
    symmetry: object = None

    def frequencies(self, name: str) -> np.ndarray:
        idx = self._planes(name)
        first = idx[0] if isinstance(idx, tuple) else idx
        first = first.first if hasattr(first, "first") else first[0]
        return np.asarray(self.grid_simulation.monitors[first].frequencies)

    def _planes(self, name):
        if name not in self.monitor_planes:
            raise ConfigError(f"no monitor named {name!r}; the monitors are {sorted(self.monitor_planes)}")
        return self.monitor_planes[name]

    def field_plane(self, name: str, normalize: bool = False):
        """A :class:`FieldPlane`'s fields as an ``xarray.Dataset``: complex ``Ex .. Hz`` over
        (frequency, and the plane's two axes in increasing order, at the grid's nodes: lengths
        in the simulation's units), with the run's time origin (E's at t = 0 of the steps).
        ``normalize``: divided by the incident plane wave's amplitude at each frequency (needs
        a :class:`PlaneWaveSource`), so that the incident field has |E| = 1."""
        import xarray as xr

        from .monitors import field_on_nodes
        from .results import label_field_plane

        idx = self._planes(name)
        mon = self.grid_simulation.monitors[idx[0]] if not isinstance(idx, tuple) else None
        if not isinstance(mon, DFTField):
            raise ConfigError(f"{name!r} is not a FieldPlane")
        E, H = field_on_nodes(self.raw.dft[idx[0]], mon)
        if normalize:
            amp = np.sqrt(2 * self.incident_intensity(mon.frequencies))[:, None, None, None]
            E, H = E / amp, H / amp
        sim = self.simulation
        axes = [ax for ax in range(3) if ax != mon.axis]
        coords = {"frequency": np.asarray(mon.frequencies)}
        for ax in axes:
            coords["xyz"[ax]] = sim.origin[ax] + np.arange(mon.lo[ax], mon.hi[ax] + 1) * sim.dx
        dims = ("frequency",) + tuple("xyz"[ax] for ax in axes)
        data = {f"E{'xyz'[c]}": (dims, E[:, c]) for c in range(3)}
        data.update({f"H{'xyz'[c]}": (dims, H[:, c]) for c in range(3)})
        ds = xr.Dataset(data, coords=coords)
        ds.attrs["plane"] = f"{'xyz'[mon.axis]} = {sim.origin[mon.axis] + mon.index * sim.dx:.6g}"
        return label_field_plane(ds, normalize)

    def mode_amplitudes(self, name: str) -> np.ndarray:
        """A :class:`~emjax.fdtd.ModeMonitor`'s mode amplitudes, ``(n_freq, n_modes, 2)``
        complex: ``[..., 0]`` towards +axis, ``[..., 1]`` towards -axis, ``|a|^2`` the power
        in the mode (:mod:`emjax.fdtd.mode_monitor` for the overlap formula). Under
        ``jax.grad`` over the scene's parameters a JAX array of the recorded fields, the
        plane's modes held fixed (solved on the scene's values; the design must stay off
        the plane)."""
        from .mode_monitor import amplitudes

        return amplitudes(self, name)

    def resonances(self, probe: int = 0, fmin=None, fmax=None, *, start=None, **options) -> list:
        """The resonances in ``[fmin, fmax]`` (1 / the simulation's length unit) of probe
        ``probe`` (its index in ``Simulation.probes``) from its record after ``start`` (a
        time in length / c; default: when the sources have died out): frequency, decay
        rate (1 / (length / c)), Q, complex amplitude, relative error
        (:class:`emjax.resonances.Resonance`). ``options``: as
        :func:`emjax.resonances.resonances`."""
        from .ringdown import probe_resonances

        return probe_resonances(self.raw, probe, fmin, fmax, start, **options)

    def to_xarray(self):
        """Cross sections, named flux spectra, probes and mid-z E (:func:`physical_to_xarray`)."""
        from .results import physical_to_xarray

        return physical_to_xarray(self)

    def save(self, path):
        """Write :meth:`to_xarray` to ``path`` (``.nc``, ``.h5``)."""
        from ..io import save_dataset

        return save_dataset(self.to_xarray(), path)

    def flux(self, name: str) -> np.ndarray:
        """Flux spectrum of a FluxPlane (towards +axis) or the outward flux of a FluxBox."""
        from .monitors import box_flux

        idx = self._planes(name)
        if isinstance(idx, tuple):
            raise ConfigError("cross_sections is not a flux monitor: use Result.cross_sections()")
        if hasattr(idx, "factor"):  # folded by a mirror symmetry
            return idx.flux(self.raw)
        if len(idx) == 1:
            return self.raw.flux(idx[0])
        return box_flux([self.raw.flux(i) for i in idx])

    def flux_difference(self, other: Result, name: str) -> np.ndarray:
        """Flux of (these fields - ``other``'s) through monitor ``name``: with ``other`` the
        same simulation without the structure, the scattered (e.g. reflected) power."""
        idx = self._planes(name)
        if hasattr(idx, "factor") and idx.axis is not None:
            return idx.flux(self.raw, other.raw)
        if isinstance(idx, tuple) or len(idx) != 1 or hasattr(idx, "factor"):
            raise ConfigError(f"{name!r} is not a FluxPlane")
        return self.raw.flux_difference(other.raw, idx[0])

    def incident_intensity(self, frequencies) -> np.ndarray:
        """Intensity ``|E_inc(f)|^2 / 2`` (c = 1) of the plane wave's spectrum at ``frequencies``:
        the flux per unit area that the monitors' DFTs of the incident wave would give."""
        from .tfsf import incident_spectrum

        tf = next((s for s in self.grid_simulation.sources if isinstance(s, TFSF)), None)
        if tf is None:
            raise ConfigError("normalization needs a PlaneWaveSource")
        e = incident_spectrum(tf, frequencies, self.raw.total_steps, self.grid_simulation.grid.dt)
        return 0.5 * np.abs(e) ** 2

    def cross_sections(self) -> dict:
        """``{"frequency", "Csca", "Cabs", "Cext"}`` spectra (length^2) from the
        :class:`CrossSections` monitor: Csca = outward flux of the scattered field around the
        TF/SF box, Cabs = net inward flux of the total field inside it, each divided by the
        incident intensity; Cext = Csca + Cabs."""
        from .monitors import box_flux

        if "cross_sections" not in self.monitor_planes:
            raise ConfigError("add a CrossSections(frequencies) monitor to get cross sections")
        outer, inner = self.monitor_planes["cross_sections"]
        f = self.frequencies("cross_sections")
        intensity = self.incident_intensity(f)

        def flux(planes):
            if hasattr(planes, "factor"):  # folded by a mirror symmetry
                return planes.flux(self.raw)
            return box_flux([self.raw.flux(i) for i in planes])

        csca = flux(outer) / intensity
        cabs = -flux(inner) / intensity
        return {"frequency": f, "Csca": csca, "Cabs": cabs, "Cext": csca + cabs}

    def transmission(self, name: str) -> np.ndarray:
        """Flux through a FluxPlane over the incident power through it: T (or minus R for a
        plane in the scattered-field region before the object).

        The incident power is what the same discrete monitor measures for the plane wave
        alone: ``|E|^2 / 2`` times the plane's area in cells, times ``cos(k~ dx / 2) * d_n``
        with ``k~`` the wave's numerical wavenumber on the Yee grid (``sin(k~ dx / 2) =
        sin(pi f dt) dx / dt`` along an axis) and ``d_n`` the direction's component along the
        plane's normal: the monitor averages H over the two planes around its E plane. An
        empty box then gives T = 1 to rounding instead of the O((k dx)^2) bias."""
        idx = self._planes(name)
        folded = idx if hasattr(idx, "factor") else None  # by a mirror symmetry: the full plane's area
        if folded is not None:
            if folded.axis is None:
                raise ConfigError(f"{name!r} is not a FluxPlane")
            idx = list(folded.planes)
        if isinstance(idx, tuple) or len(idx) != 1:
            raise ConfigError(f"{name!r} is not a FluxPlane")
        mon = self.grid_simulation.monitors[idx[0]]
        g = self.grid_simulation.grid
        cells = (
            folded.area
            if folded is not None
            else math.prod(mon.hi[a] - mon.lo[a] for a in range(3) if a != mon.axis)
        )
        area = cells * g.dx**2
        f = np.asarray(mon.frequencies)
        tf = next((s for s in self.grid_simulation.sources if isinstance(s, TFSF)), None)
        if tf is None:
            raise ConfigError(
                "transmission() normalizes by a PlaneWaveSource's incident power; with a PlaneCurrent "
                "divide by a run without the structure (flux, flux_difference)"
            )
        d = np.asarray(tf.wave.direction, float)
        if tf.oblique:
            k_dx = 2 * np.pi * f * g.dx  # the analytic incident field: the vacuum wavenumber
        else:
            k_dx = 2 * np.arcsin(np.clip(np.sin(np.pi * f * g.dt) / g.courant, -1, 1))
        power = self.incident_intensity(f) * area * np.cos(k_dx * abs(d[mon.axis]) / 2) * d[mon.axis]
        return self.flux(name) / power
