"""Waveguide modes with ``emjax.modes``: a silicon wire's TE0 and TM0, and the even and odd
supermodes of the directional coupler in examples/waveguide_coupler.py.

Left: |E| of the two modes of a 500 x 220 nm Si wire in SiO2 at 1.55 um (40 cells per um,
the wire's outline drawn). Right: E_z across the coupler's straight section (two 0.5 um
Si3N4 strips 0.25 um apart, 2-D), its even and odd supermodes and the coupling length
``lambda / (2 (n_even - n_odd))`` they give.

Figure waveguide_modes.png in --out (default out/waveguide_modes; the docs' copy is
examples/figures/waveguide_modes.png: ``--out examples/figures`` regenerates it). A few
seconds on a CPU.

    python examples/waveguide_modes.py
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # small sparse eigenproblems

from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from emjax import geometry, modes, scene  # noqa: E402

WAVELENGTH = 1.55


def silicon_wire():
    """The 500 x 220 nm wire at 40 cells per um (docs/modes.md's example)."""
    res, n_si, n_ox = 40, 3.476, 1.444
    eps = np.full((64, 48), n_ox**2)
    eps[22:42, 20:29] = n_si**2  # 20 x 9 cells: 0.5 x 0.225 um
    return modes.solve(eps, res, 1 / WAVELENGTH, num_modes=2), (22 / res, 42 / res, 20 / res, 29 / res)


def coupler_section(width=0.5, gap=0.25, n_core=1.996, n_clad=1.444, resolution=20):
    """The coupler's straight section as a 2-D scene (guides along x) and its two best
    guided modes with E along z (a section three cells thick along z, PEC walls: the
    FDTD's mode planes do the same on a 2-D grid)."""
    c = (width + gap) / 2
    objs = []
    for s in (1, -1):
        lo, hi = s * c - width / 2, s * c + width / 2
        v = [[-10, lo], [10, lo], [10, hi], [-10, hi]]
        objs.append(scene.Object(geometry.Polygon(vertices=v), n_core**2, size=20.0, center=(0, s * c, 0)))
    sc = scene.Scene(objs, background=n_clad**2)
    dx = 1 / resolution
    plane = modes.Plane((0, 0, 1.5 * dx), (0, 5.0, 3 * dx))
    r = modes.solve_scene(sc, plane, resolution, 1 / WAVELENGTH, 2, boundary="pec", averaging="staircase")
    return r, c, width


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default = Path(__file__).resolve().parents[1] / "out" / "waveguide_modes"
    ap.add_argument("--out", type=Path, default=default)
    out_dir = ap.parse_args(argv).out
    wire, (x0, x1, y0, y1) = silicon_wire()
    sup, c, w = coupler_section()
    for name, r in (("Si wire", wire), ("coupler section", sup)):
        print(f"{name}: n_eff {np.round(r.n_eff.real, 4)}, group index {np.round(r.group_index, 3)}")
    n_even, n_odd = sup.n_eff.real
    lc = WAVELENGTH / (2 * (n_even - n_odd))
    print(f"coupling length lambda / (2 (n_even - n_odd)) = {lc:.2f} um")

    from emjax.plot import new_figure, save_figure

    fig = new_figure((10, 3.4))
    axes = fig.subplots(1, 3, width_ratios=[1, 1, 1.3])
    for m, ax in enumerate(axes[:2]):
        e = np.sqrt(np.sum(np.abs(wire.E[m]) ** 2, axis=0))
        ax.pcolormesh(wire.x, wire.y, e.T, shading="auto", cmap="magma")
        ax.plot([x0, x1, x1, x0, x0], [y0, y0, y1, y1, y0], "w-", lw=0.8)
        label = "TE0" if wire.te_fraction[m] > 0.5 else "TM0"
        ax.set_title(f"Si wire {label}: |E|, n_eff = {wire.n_eff[m].real:.3f}", fontsize=9)
        ax.set_aspect("equal")
        ax.set_xlabel("x (um)")
    axes[0].set_ylabel("y (um)")
    ax = axes[2]
    ez = sup.E[:, 1, :, 1].real  # the section's second axis is z: E_z along y, middle row
    for m, (style, name) in enumerate((("-", "even"), ("--", "odd"))):
        ax.plot(sup.x, ez[m] / np.abs(ez[m]).max(), style, label=f"{name}, n_eff = {sup.n_eff[m].real:.4f}")
    for s in (1, -1):
        ax.axvspan(s * c - w / 2, s * c + w / 2, color="0.85", zorder=0)
    ax.set_xlim(-2, 2)
    ax.set_xlabel("y (um)")
    ax.set_ylabel("E_z (normalized)")
    ax.set_title(f"coupler section: supermodes, L_c = {lc:.1f} um", fontsize=9)
    ax.legend(fontsize=8, loc="lower left")
    print("figure:", save_figure(fig, out_dir / "waveguide_modes.png", dpi=110))


if __name__ == "__main__":
    main()
