"""FDTD: a dielectric sphere lit by a TF/SF plane wave, against the Mie series.

Sphere m = 1.5, radius 0.35 (lengths in any unit), wavelengths 0.8..1.25, 20 cells per
wavelength in the sphere. Prints Csca(lambda) from the flux box next to Mie's and draws the
far field (near-to-far transform) in the E- and H-planes: examples/figures/fdtd_sphere.png.
About 30 s on a 2-core CPU.

    python examples/fdtd_sphere_mie.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from emjax import fdtd
from emjax.fdtd import monitors
from emjax.fdtd.tfsf import TFSF, incident_spectrum
from emjax.scattering import PlaneWave

M, R = 1.5, 0.35
FREQS = 1 / np.linspace(1.25, 0.8, 9)
STEPS = 3000


def main():
    dx = 0.8 / M / 20
    n, c, rc = 68, 34.0, R / dx
    idx = np.arange(n) + 0.5
    X, Y, Z = np.meshgrid(idx, idx, idx, indexing="ij")
    eps = np.where((X - c) ** 2 + (Y - c) ** 2 + (Z - c) ** 2 <= rc**2, M**2, 1.0)
    grid = fdtd.Grid((n, n, n), dx=dx, boundary=fdtd.CPML(10))
    src = TFSF(
        (17,) * 3,
        (51,) * 3,
        PlaneWave((0, 0, 1), (1, 0, 0)),
        fdtd.GaussianPulse(frequency=FREQS.mean(), bandwidth=0.4),
    )
    box = monitors.flux_box((14,) * 3, (54,) * 3, FREQS)
    res = fdtd.run(
        fdtd.GridSimulation(grid, eps=eps, sources=(src,), monitors=box),
        STEPS,
        progress=lambda d, t: print(f"\rstep {d}/{t}", end="", flush=True),
    )
    print(f"\n{res.cells_per_second / 1e6:.0f} M cell updates/s, compile {res.compile_seconds:.1f} s")
    e_inc = incident_spectrum(src, FREQS, STEPS, grid.dt)
    csca = monitors.box_flux([res.flux(i) for i in range(6)]) / (0.5 * np.abs(e_inc) ** 2)
    try:
        import miepython
    except ImportError:
        miepython = None
    print(f"{'wavelength':>10s} {'x':>6s} {'Csca FDTD':>10s} {'Csca Mie':>10s}")
    mie = []
    for f, cs in zip(FREQS, csca):
        x = 2 * np.pi * f * R
        ref = miepython.efficiencies_mx(M, x)[1] * np.pi * R**2 if miepython else np.nan
        mie.append(ref)
        print(f"{1 / f:10.3f} {x:6.2f} {cs:10.5f} {ref:10.5f}")

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4), layout="constrained")
    FigureCanvasAgg(fig)
    ax1, ax2 = fig.subplots(1, 2)
    ax1.plot(1 / FREQS, csca, "o", label="FDTD (flux box)")
    ax1.plot(1 / FREQS, mie, "-", label="Mie")
    ax1.set(xlabel="wavelength", ylabel="Csca", title=f"sphere m = {M}, radius {R}")
    ax1.legend()
    fi = 4
    theta = np.arange(0, 181, 2.0)
    k = 2 * np.pi * FREQS[fi]
    for phi, name in ((0.0, "E-plane (xz)"), (90.0, "H-plane (yz)")):
        ft, fp = monitors.far_field(res.dft, box, dx, fi, theta, phi)
        ax2.semilogy(
            theta, (np.abs(ft) ** 2 + np.abs(fp) ** 2) / np.abs(e_inc[fi]) ** 2, label=f"FDTD {name}"
        )
        if miepython:
            s1, s2 = miepython.S1_S2(M, k * R, np.cos(np.deg2rad(theta)), norm="wiscombe")
            ax2.semilogy(theta, np.abs(s2 if phi == 0 else s1) ** 2 / k**2, "k--", lw=0.8)
    ax2.set(
        xlabel="theta (deg)",
        ylabel="dCsca/dOmega",
        title=f"far field at wavelength {1 / FREQS[fi]:.3f} (Mie dashed)",
    )
    ax2.legend()
    out = Path(__file__).with_name("figures")
    out.mkdir(exist_ok=True)
    fig.savefig(out / "fdtd_sphere.png", dpi=110)
    print(f"wrote {out / 'fdtd_sphere.png'}")


if __name__ == "__main__":
    main()
