"""Figures of FDTD results: probes, spectra, flux boxes and |E| on a plane."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..plot import new_figure, save_figure

__all__ = ["plot_fdtd", "plot_field_plane"]


def plot_fdtd(result, path, boxes=()) -> Path:
    """PNG with the probes' time series and spectra (without probes: the DFT monitors' flux
    spectra and the flux boxes' spectra, ``boxes`` as ``emjax fdtd`` makes them), and |E| on
    the mid-z plane."""
    fig = new_figure((14, 4.2))
    ax_t, ax_f, ax_e = fig.subplots(1, 3)
    probes = np.asarray(result.probes)
    if probes.shape[1]:
        for i in range(probes.shape[1]):
            ax_t.plot(result.times, probes[:, i], label=f"probe {i}")
            spec = np.abs(np.fft.rfft(probes[:, i]))
            f = np.fft.rfftfreq(len(probes), result.simulation.grid.dt)
            ax_f.semilogy(f[1:], spec[1:] + 1e-30)
        ax_t.set(xlabel="time (length / c)", title="probes")
        ax_f.set(xlabel="frequency (1 / length)", title="probe spectra")
        ax_t.legend(fontsize="small")
    else:
        from .monitors import DFTField

        mons = [m for m in result.simulation.monitors if not isinstance(m, DFTField)]
        for i, mon in enumerate(result.simulation.monitors):
            if isinstance(mon, DFTField):
                continue
            ax_t.plot(mon.frequencies, result.flux(i), "o-", label=f"monitor {i}")
        ax_t.set(xlabel="frequency (1 / length)", title="flux through the DFT monitors (towards +axis)")
        if mons:
            ax_t.legend(fontsize="x-small", ncol=2)
        for b, box in enumerate(boxes):
            key = "flux_over_incident_intensity" if "flux_over_incident_intensity" in box else "outward_flux"
            ax_f.plot(box["frequencies"], box[key], "o-", label=f"box {b}")
        if boxes:
            cross = "flux_over_incident_intensity" in boxes[0]
            ax_f.set(
                xlabel="frequency (1 / length)",
                ylabel="cross section (length^2)" if cross else "outward flux",
                title="flux boxes: outward flux / incident intensity" if cross else "flux boxes",
            )
            ax_f.legend(fontsize="small")
        else:
            ax_f.set_axis_off()
    E = np.asarray(result.E)
    nz = E.shape[3]
    mag = np.sqrt(np.sum(E[:, :, :, nz // 2] ** 2, axis=0))
    im = ax_e.imshow(mag.T, origin="lower", cmap="magma")
    ax_e.set(title="|E| on the mid-z plane (final step)", xlabel="i", ylabel="j")
    fig.colorbar(im, ax=ax_e)
    return save_figure(fig, path, dpi=110)


def plot_field_plane(ds, path, frequency_index: int = 0) -> Path:
    """PNG of a :class:`~emjax.fdtd.FieldPlane`'s ``Result.field_plane`` dataset at one
    frequency: |E|, and Re of the component with the most power, on the plane's axes."""
    a, b = (d for d in ds["Ex"].dims if d != "frequency")
    f = float(ds["frequency"][frequency_index])
    comps = {k: np.asarray(ds[k].values[frequency_index]) for k in ("Ex", "Ey", "Ez")}
    mag = np.sqrt(sum(np.abs(v) ** 2 for v in comps.values()))
    main = max(comps, key=lambda k: float(np.sum(np.abs(comps[k]) ** 2)))
    extent = [float(ds[a][0]), float(ds[a][-1]), float(ds[b][0]), float(ds[b][-1])]
    fig = new_figure((10, 4.2))
    ax1, ax2 = fig.subplots(1, 2)
    im = ax1.imshow(mag.T, origin="lower", extent=extent, cmap="magma")
    fig.colorbar(im, ax=ax1)
    ax1.set(xlabel=a, ylabel=b, title=f"|E| at f = {f:.4g} ({ds.attrs.get('plane', '')})")
    re = np.real(comps[main])
    lim = float(np.abs(re).max()) or 1.0
    im = ax2.imshow(re.T, origin="lower", extent=extent, cmap="RdBu_r", vmin=-lim, vmax=lim)
    fig.colorbar(im, ax=ax2)
    ax2.set(xlabel=a, ylabel=b, title=f"Re {main}")
    return save_figure(fig, path, dpi=110)
