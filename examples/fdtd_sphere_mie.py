"""FDTD in physical units: a dielectric sphere lit by a plane wave, against the Mie series.

An eps = 6 sphere of radius 0.24 (size parameter 1.5 at f = 1; lengths in any unit) at
10 cells per radius, with subpixel averaging and staircased; Csca spectra next to Mie's,
figure fdtd_sphere.png in --out (default out/fdtd_sphere_mie; the README's copy is
examples/figures/fdtd_sphere.png: `--out examples/figures` regenerates it). About a minute on a 2-core CPU.

    python examples/fdtd_sphere_mie.py
"""

from pathlib import Path

import numpy as np

from emjax import fdtd, geometry, scene

R, EPS = 1.5 / (2 * np.pi), 6.0
FREQS = np.linspace(0.8, 1.2, 21)


def cross_sections(averaging):
    sim = fdtd.Simulation(
        size=(2 * R + 2.0 * R,) * 3,  # the TF/SF box, the two flux boxes, a margin
        resolution=10 / R,  # 10 cells per radius
        scene=scene.Scene([scene.Object(geometry.Sphere(), EPS, size=2 * R)]),
        averaging=averaging,
        sources=[
            fdtd.PlaneWaveSource((0, 0, 0), (2 * R + 0.8 * R,) * 3, waveform=fdtd.GaussianPulse(1.0, 0.5))
        ],
        monitors=[fdtd.CrossSections(FREQS)],
    )
    return fdtd.run(sim, until=120).cross_sections()


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--out", type=Path, default=Path(__file__).resolve().parents[1] / "out" / "fdtd_sphere_mie"
    )
    out_dir = ap.parse_args(argv).out
    sub, stair = cross_sections("subpixel"), cross_sections("staircase")
    try:
        import miepython

        mie = np.array([miepython.efficiencies_mx(np.sqrt(EPS), 2 * np.pi * f * R)[1] for f in FREQS])
        mie = mie * np.pi * R**2
    except ImportError:
        mie = np.full_like(FREQS, np.nan)
    print(f"{'f':>6s} {'Csca subpixel':>14s} {'staircase':>10s} {'Mie':>10s}")
    for row in zip(FREQS, sub["Csca"], stair["Csca"], mie):
        print(f"{row[0]:6.3f} {row[1]:14.5f} {row[2]:10.5f} {row[3]:10.5f}")
    from emjax.plot import new_figure, save_figure

    fig = new_figure((7, 4))
    ax = fig.subplots()
    ax.plot(FREQS, mie, "k-", label="Mie")
    ax.plot(FREQS, sub["Csca"], "o", label="FDTD, subpixel averaging")
    ax.plot(FREQS, stair["Csca"], "x", label="FDTD, staircased")
    ax.set(
        xlabel="frequency (1 / length)",
        ylabel="Csca (length^2)",
        title=f"eps = {EPS} sphere, 10 cells per radius",
    )
    ax.legend()
    out = out_dir / "fdtd_sphere.png"
    print("figure:", save_figure(fig, out, dpi=110))


if __name__ == "__main__":
    main()
