"""Full vs mirror-symmetric FDTD run time on the CPU: a dielectric sphere under a plane
wave on a 64 x 65 x 64 grid (a 54 x 55 x 54 region and a 5-cell CPML), then on the quarter
that symmetry=(-1, 1, 0) leaves. Prints the stepping time (compilation excluded), the
wall time and the cross sections (equal to rounding)."""

import time

import numpy as np

from emjax import fdtd, geometry, scene

WF = fdtd.GaussianPulse(1.0, 0.5)
RES = 20
STEPS = 1200


def sphere(symmetry, ny=55):
    sc = scene.Scene([scene.Object(geometry.Sphere(), 4.0, size=1.0)])
    return fdtd.Simulation(
        size=(54 / RES, ny / RES, 54 / RES),
        resolution=RES,
        scene=sc,
        sources=[fdtd.PlaneWaveSource((0, 0, 0), (40 / RES, (ny - 14) / RES, 40 / RES), waveform=WF)],
        monitors=[fdtd.CrossSections([0.8, 1.0, 1.2])],
        symmetry=symmetry,
        boundary=fdtd.CPML(5),
    )


if __name__ == "__main__":
    for label, sym in (("full", (0, 0, 0)), ("x odd, y even", (-1, 1, 0))):
        sim = sphere(sym)
        g = sim.to_grid()[0].grid
        t = time.time()
        r = fdtd.run(sim, steps=STEPS)
        wall = time.time() - t
        cs = np.round(r.cross_sections()["Csca"], 5)
        print(
            f"{label:14s} grid {g.shape} cells {g.n_cells:8d}  stepping {r.raw.seconds:6.2f} s  "
            f"total {wall:6.2f} s  compile {r.raw.compile_seconds:5.2f} s  Csca {cs}",
            flush=True,
        )
