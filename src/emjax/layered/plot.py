"""Figures of emjax.layered results: field maps of a dipole in a stack."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..plot import new_figure, save_figure

__all__ = ["plot_layered_map"]


def plot_layered_map(result, shape, axes, path, component: int = 2) -> Path:
    """PNG of |E_component| and log10 |E| on a plane map of a dipole in a stack, with the
    interfaces drawn (like Quinto et al.'s Fig. 5)."""
    n1, n2 = shape
    idx = {"x": 0, "y": 1, "z": 2}
    pts = np.asarray(result.points).reshape(n1, n2, 3)
    u, v = pts[:, 0, idx[axes[0]]], pts[0, :, idx[axes[1]]]
    E = np.asarray(result.E).reshape(n1, n2, 3)
    fig = new_figure((11, 4.4))
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
    return save_figure(fig, path, dpi=110)
