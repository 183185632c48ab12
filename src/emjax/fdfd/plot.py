"""Figures of emjax.fdfd results: the RCS on polar axes in dB (``rcs.png``) and a map of the
field magnitude (``field.png``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..plot import new_figure, save_figure
from .results import decibels

__all__ = ["plot_field", "plot_rcs"]


def _polar(ax, angles_deg, curves: dict, title: str, half: bool) -> None:
    top = -np.inf
    for label, db in curves.items():
        ax.plot(np.deg2rad(angles_deg), db, label=label, lw=1.2)
        top = max(top, float(np.max(db)))
    top = 10 * np.ceil(top / 10)
    ax.set_rlim(top - 50, top)
    if half:
        ax.set_thetamin(0)
        ax.set_thetamax(180)
    ax.set_title(title, fontsize=10)
    if len(curves) > 1:
        ax.legend(loc="upper right", fontsize=8, bbox_to_anchor=(1.1, 1.05))


def plot_rcs(result, path) -> Path:
    """PNG of the bistatic RCS in dB on polar axes (2-D: sigma / wavelength over phi; 3-D:
    sigma / wavelength^2 over theta in the E- and H-plane), and the monostatic sweep beside
    it when one was run."""
    p = result.problem
    mono = result.monostatic_rcs is not None
    fig = new_figure((10 if mono else 5.5, 5))
    axes = [fig.add_subplot(1, 2 if mono else 1, k + 1, projection="polar") for k in range(2 if mono else 1)]
    unit = "dB re wavelength" if p.dims == 2 else "dB re wavelength^2"
    if p.dims == 2:
        curves = {p.polarization: decibels(result.rcs, p.wavelength, 2)}
        title = f"bistatic RCS ({unit}), incidence phi = {p.incidence_angle:g} deg"
        _polar(axes[0], result.angles_deg, curves, title, half=False)
    else:
        curves = {
            "E-plane": decibels(result.rcs_E, p.wavelength, 3),
            "H-plane": decibels(result.rcs_H, p.wavelength, 3),
        }
        _polar(
            axes[0], result.angles_deg, curves, f"bistatic RCS ({unit}) vs theta from incidence", half=True
        )
    if mono:
        db = decibels(result.monostatic_rcs, p.wavelength, p.dims)
        a = np.asarray(p.monostatic_angles, float)
        if len(a) > 2 and a[0] + 360 - a[-1] <= np.max(np.diff(a)) + 1e-9:  # a full turn: close it
            a, db = np.append(a, a[0] + 360), np.append(db, db[0])
        _polar(
            axes[1],
            a,
            {"backscatter": db},
            f"monostatic RCS ({unit}) vs incidence",
            half=False,
        )
    fig.suptitle(f"FDFD, wavelength {p.wavelength:g}, {p.resolution:g} cells per wavelength", fontsize=10)
    return save_figure(fig, path, dpi=110)


def plot_field(result, path) -> Path:
    """PNG of the total field's magnitude outside the PML: |E_z| (2-D TM), |H_z| (2-D TE),
    or |E| on the plane z = center (3-D), with the objects' outlines."""
    p = result.problem
    r = result.field
    L = r.pml_cells  # the field's own grid
    fig = new_figure((6, 5))
    ax = fig.add_subplot(1, 1, 1)
    if p.dims == 2:
        sx, sy = r.interior()
        mag = np.abs(np.asarray(r.Ez)[sx, sy])
        eps = np.asarray(r.eps)[sx, sy]
        x, y = np.asarray(r.x)[sx], np.asarray(r.y)[sy]
        name = "|E_z|" if p.polarization == "TM" else "|H_z|"
    else:
        x, y, z = (np.asarray(a) for a in (r.x, r.y, r.z))
        k = int(np.argmin(np.abs(z - p.center[2])))
        E = np.asarray(r.E)[:, L : len(x) - L, L : len(y) - L, k]
        mag = np.sqrt(np.sum(np.abs(E) ** 2, axis=0))
        eps = np.asarray(r.eps)[2, L : len(x) - L, L : len(y) - L, k]
        x, y = x[L : len(x) - L], y[L : len(y) - L]
        name = f"|E| at z = {z[k]:.3g}"
    im = ax.imshow(
        mag.T, origin="lower", extent=(x[0], x[-1], y[0], y[-1]), cmap="magma", interpolation="nearest"
    )
    fig.colorbar(im, ax=ax, shrink=0.85)
    inside = np.where(np.isfinite(eps), np.abs(eps - 1) > 1e-12, True).astype(float)
    if 0 < inside.sum() < inside.size:
        ax.contour(x, y, inside.T, levels=[0.5], colors="w", linewidths=0.8)
    ax.set(title=f"{name} (total field, incident amplitude 1)", xlabel="x", ylabel="y")
    return save_figure(fig, path, dpi=110)
