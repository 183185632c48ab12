"""Figures of DDA results: the Mueller matrix versus the scattering angle."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..plot import new_figure, save_figure
from ..scattering import degree_of_polarization

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

    fig = new_figure((14, 6.5))
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
    return save_figure(fig, path, dpi=100)


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
