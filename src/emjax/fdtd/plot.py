"""Figures of FDTD results: probes, spectra, flux boxes and |E| on a plane."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..plot import new_figure, save_figure

__all__ = ["plot_fdtd", "plot_field_plane", "plot_physical"]


def _probes_panels(result) -> list:
    """The probes' time series and their spectra (none without probes)."""
    probes = np.asarray(result.probes)
    if not probes.shape[1]:
        return []
    dt = result.simulation.grid.dt

    def series(ax):
        for i in range(probes.shape[1]):
            ax.plot(result.times, probes[:, i], label=f"probe {i}")
        ax.set(xlabel="time (length / c)", ylabel="field (natural units)", title="probes")
        ax.legend(fontsize="small")

    def spectra(ax):
        f = np.fft.rfftfreq(len(probes), dt)
        for i in range(probes.shape[1]):
            ax.semilogy(f[1:], np.abs(np.fft.rfft(probes[:, i]))[1:] + 1e-30, label=f"probe {i}")
        ax.set(xlabel="frequency (1 / length)", ylabel="|DFT|", title="probe spectra")

    return [series, spectra]


def _spectra_panel(curves: list, title: str, ylabel: str):
    """One panel of spectra ``(label, frequencies, values)``; None without any."""
    if not curves:
        return None

    def draw(ax):
        for label, f, v in curves:
            ax.plot(f, v, "o-", label=label)
        ax.set(xlabel="frequency (1 / length)", ylabel=ylabel, title=title)
        ax.legend(fontsize="x-small" if len(curves) > 6 else "small", ncol=2 if len(curves) > 6 else 1)

    return draw


def _field_panel(result, origin):
    """|E| on the mid-z plane after the last step, on axes in the simulation's length unit."""
    E = np.asarray(result.E)
    g = result.simulation.grid
    k = E.shape[3] // 2
    mag = np.sqrt(np.sum(np.abs(E[:, :, :, k]) ** 2, axis=0))
    extent = [
        origin[0] - g.dx / 2,
        origin[0] + (E.shape[1] - 0.5) * g.dx,
        origin[1] - g.dx / 2,
        origin[1] + (E.shape[2] - 0.5) * g.dx,
    ]

    def draw(ax):
        im = ax.imshow(mag.T, origin="lower", cmap="magma", extent=extent)
        z = origin[2] + k * g.dx
        ax.set(title=f"|E| on the plane z = {z:.4g} (final step)", xlabel="x (length)", ylabel="y (length)")
        ax.figure.colorbar(im, ax=ax)

    return draw


def _figure(panels, path) -> Path:
    panels = [p for p in panels if p is not None]
    fig = new_figure((4.7 * len(panels), 4.2))
    axes = np.atleast_1d(fig.subplots(1, len(panels)))
    for draw, ax in zip(panels, axes):
        draw(ax)
    return save_figure(fig, path, dpi=110)


def plot_fdtd(result, path, boxes=()) -> Path:
    """PNG of a cell-index run: the probes' time series and spectra, the DFT monitors' flux
    spectra, the flux boxes' spectra (``boxes`` as ``emjax fdtd`` makes them), and |E| on
    the mid-z plane (axes in length: cell corner i at i dx). Panels without data are left
    out."""
    from .monitors import DFTField

    flux = [
        (f"monitor {i}", mon.frequencies, result.flux(i))
        for i, mon in enumerate(result.simulation.monitors)
        if not isinstance(mon, DFTField)
    ]
    panels = [*_probes_panels(result)]
    panels.append(_spectra_panel(flux, "flux through the DFT monitors (towards +axis)", "flux"))
    if boxes:
        cross = "flux_over_incident_intensity" in boxes[0]
        key = "flux_over_incident_intensity" if cross else "outward_flux"
        curves = [(f"box {b}", box["frequencies"], box[key]) for b, box in enumerate(boxes)]
        title = "flux boxes: outward flux / incident intensity" if cross else "flux boxes: outward flux"
        panels.append(_spectra_panel(curves, title, "cross section (length^2)" if cross else "outward flux"))
    panels.append(_field_panel(result, (0.0, 0.0, 0.0)))
    return _figure(panels, path)


def plot_physical(res, path) -> Path:
    """PNG of a physical-unit run (:class:`emjax.fdtd.Result`): Csca, Cabs, Cext; each flux
    monitor's spectrum under its name; the probes; |E| on the mid-z plane over x, y in the
    simulation's length unit. Panels without data are left out."""
    panels = [*_probes_panels(res.raw)]
    if "cross_sections" in res.monitor_planes:
        cs = res.cross_sections()
        curves = [(k, cs["frequency"], cs[k]) for k in ("Csca", "Cabs", "Cext")]
        panels.append(_spectra_panel(curves, "cross sections", "length^2"))
    names = [
        n for n in res.monitor_planes if n != "cross_sections" and n not in res.simulation.field_plane_names
    ]
    curves = [(n, res.frequencies(n), res.flux(n)) for n in names]
    panels.append(_spectra_panel(curves, "flux monitors", "flux (planes: towards +axis; boxes: outward)"))
    panels.append(_field_panel(res.raw, res.simulation.origin))
    return _figure(panels, path)


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
