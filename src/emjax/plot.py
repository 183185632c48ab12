"""Matplotlib figures of emjax results.

matplotlib is imported inside the functions and figures are drawn on an Agg canvas without
pyplot, so plotting never changes the user's backend or global pyplot state.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .scattering import degree_of_polarization

__all__ = ["plot_mueller"]

_RATIOS = (  # (title, row, col, sign) of the normalised elements, indices from 0
    ("-S12/S11", 0, 1, -1.0),
    ("S22/S11", 1, 1, 1.0),
    ("S33/S11", 2, 2, 1.0),
    ("S34/S11", 2, 3, 1.0),
    ("S44/S11", 3, 3, 1.0),
)


def plot_mueller(result, path, *, title: str | None = None) -> Path:
    """Mueller-matrix figure of a DDA result, written as PNG to ``path``.

    Panels versus the scattering angle theta (deg): S11 (log scale), -S12/S11, S22/S11,
    S33/S11, S34/S11, S44/S11 and the degree of polarization, one curve per scattering
    plane ``phi``. Returns the path written.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    theta = np.asarray(result.theta, dtype=float)
    M = np.asarray(result.mueller, dtype=float)  # (n_phi, n_theta, 4, 4)
    if M.ndim == 3:  # orientation-averaged: one curve, the same in every plane
        M = M[None]
        labels = ["orientation average"]
    else:
        labels = [f"phi = {p:g} deg" for p in np.asarray(result.phi, dtype=float)]
    dop = degree_of_polarization(M)
    s11 = M[..., 0, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        panels = [("S11", s11, True)]
        panels += [(name, sign * M[..., r, c] / s11, False) for name, r, c, sign in _RATIOS]
    panels.append(("degree of polarization", dop, False))

    fig = Figure(figsize=(14, 6.5), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(2, 4, sharex=True).ravel()
    for ax, (name, values, log) in zip(axes, panels, strict=False):
        for ip, label in enumerate(labels):
            y = values[ip]
            if log:
                y = np.where(y > 0, y, np.nan)
            ax.plot(theta, y, label=label)
        if log:
            ax.set_yscale("log")
        else:  # normalised elements and P lie in [-1, 1]; fixed limits keep flat curves flat
            ax.set_ylim(-1.05, 1.05)
        ax.set_title(name)
        ax.grid(True, alpha=0.3)
    for ax in axes[4:]:
        ax.set_xlabel("theta (deg)")
    if len(labels) > 1:
        axes[0].legend(fontsize="small")
    info = axes[-1]
    info.axis("off")
    info.text(
        0.0,
        1.0,
        _summary_text(result),
        va="top",
        family="monospace",
        fontsize=9,
        transform=info.transAxes,
    )
    prob = getattr(result, "problem", None)
    if title is None and prob is not None:
        title = f"emjax DDA: {prob.shape.name}, wavelength {prob.wavelength:.6g}"
    if title:
        fig.suptitle(title)
    path = Path(path)
    fig.savefig(path, format="png", dpi=100)
    return path


def _summary_text(result) -> str:
    lines = []
    for key in ("Qext", "Qabs", "Qsca", "g"):
        val = getattr(result, key, None)
        if val is not None:
            lines.append(f"{key:5s} = {val:.6g}")
    lat = getattr(result, "lattice", None)
    if lat is not None:
        nx, ny, nz = lat.shape
        lines.append(f"grid  = {nx}x{ny}x{nz}")
        lines.append(f"N     = {lat.n_dipoles}")
    n_orient = getattr(result, "n_orientations", None)
    if n_orient is not None:
        lines.append(f"orientations = {n_orient} (x {result.quadrature.n_alpha} alpha)")
    if hasattr(result, "all_converged") and not result.all_converged:
        lines.append("NOT CONVERGED")
    return "\n".join(lines)


def plot_fdtd(result, path, boxes=()) -> Path:
    """PNG with the probes' time series and spectra (without probes: the DFT monitors' flux
    spectra and the flux boxes' spectra, ``boxes`` as ``emjax fdtd`` makes them), and |E| on
    the mid-z plane."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(14, 4.2), layout="constrained")
    FigureCanvasAgg(fig)
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
        mons = result.simulation.monitors
        for i, mon in enumerate(mons):
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
    path = Path(path)
    fig.savefig(path, dpi=110)
    return path


def plot_layered_map(result, shape, axes, path, component: int = 2) -> Path:
    """PNG of |E_component| and log10 |E| on a plane map of a dipole in a stack, with the
    interfaces drawn (like Quinto et al.'s Fig. 5)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    n1, n2 = shape
    idx = {"x": 0, "y": 1, "z": 2}
    pts = np.asarray(result.points).reshape(n1, n2, 3)
    u, v = pts[:, 0, idx[axes[0]]], pts[0, :, idx[axes[1]]]
    E = np.asarray(result.E).reshape(n1, n2, 3)
    fig = Figure(figsize=(11, 4.4), layout="constrained")
    FigureCanvasAgg(fig)
    ax1, ax2 = fig.subplots(1, 2)
    extent = (u[0], u[-1], v[0], v[-1])
    name = "xyz"[component]
    mag = np.abs(E[:, :, component]).T
    im = ax1.imshow(mag, origin="lower", extent=extent, cmap="magma", aspect="auto")
    fig.colorbar(im, ax=ax1)
    ax1.set(title=f"|E{name}| ({result.part})", xlabel=axes[0], ylabel=axes[1])
    norm = np.sqrt(np.sum(np.abs(E) ** 2, axis=2)).T
    im = ax2.imshow(np.log10(norm + 1e-300), origin="lower", extent=extent, cmap="viridis", aspect="auto")
    fig.colorbar(im, ax=ax2)
    ax2.set(title="log10 |E|", xlabel=axes[0], ylabel=axes[1])
    if axes[1] == "z":
        for zi in result.stack.interfaces:
            for ax in (ax1, ax2):
                if v[0] <= zi <= v[-1]:
                    ax.axhline(zi, color="w", lw=0.8, ls="--")
    where = ", ".join(f"{v:g}" for v in np.asarray(result.source, float))
    p = np.round(result.p, 4).tolist()
    fig.suptitle(f"dipole at ({where}), p = {p}, wavelength {result.wavelength:g}")
    path = Path(path)
    fig.savefig(path, dpi=110)
    return path
