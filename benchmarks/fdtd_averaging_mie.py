"""Staircase, diagonal and subpixel averaging against the Mie series: a dielectric sphere
(eps = 4, radius 1.5 / 2 pi: size parameter 1.35, 1.5, 1.65 at f = 0.9, 1.0, 1.1) under a
TF/SF plane wave along z polarized along x, Csca from the CrossSections boxes, at 5, 7 and
10 cells per radius (the quarter domain of the mirror planes x = 0, odd, and y = 0, even:
equal to the full domain's to rounding, four times cheaper). Prints the relative errors
against miepython and the convergence slope of the worst one, and appends one JSON line per
run to benchmarks/results/cpu-2core-fdtd-averaging-mie.jsonl.

    PYTHONPATH=src python benchmarks/fdtd_averaging_mie.py [eps] [cells per radius ...]
    SHIFT=0.37 PYTHONPATH=src python benchmarks/fdtd_averaging_mie.py 4 10   # off the plane
"""

import datetime
import json
import os
import sys
import time
from pathlib import Path

import miepython
import numpy as np

from emjax import fdtd, geometry, scene
from emjax.bench import git_commit

R = 1.5 / (2 * np.pi)
FREQS = (0.9, 1.0, 1.1)
OUT = Path(__file__).parent / "results" / "cpu-2core-fdtd-averaging-mie.jsonl"


def sphere(cells_per_radius: float, averaging: str, eps: float, shift: float = 0.0) -> fdtd.Simulation:
    """As tests/fdtd/test_physical.py's sphere: a TF/SF box 4 cells around the sphere, the
    flux boxes and 2 more cells to a 10-cell CPML; the sphere's centre ``shift`` cells
    along z from the grid's centre plane (the mirror planes keep it at x = y = 0)."""
    res = cells_per_radius / R
    b = 2 * int(np.ceil((2 * R * res + 8) / 2))  # even: the mirror plane x = 0 is an E plane
    n = (b + 12, b + 13, b + 12)  # odd along y: its plane y = 0 is an H plane
    sc = scene.Scene([scene.Object(geometry.Sphere(), eps, center=(0, 0, shift / res), size=2 * R)])
    return fdtd.Simulation(
        size=tuple(v / res for v in n),
        resolution=res,
        scene=sc,
        averaging=averaging,
        sources=[
            fdtd.PlaneWaveSource(
                (0, 0, 0), (b / res, (b + 1) / res, b / res), waveform=fdtd.GaussianPulse(1.0, 0.5)
            )
        ],
        monitors=[fdtd.CrossSections(list(FREQS))],
        symmetry=(-1, 1, 0),
    )


def main(eps: float = 4.0, resolutions=(5.0, 7.0, 10.0), shift: float = 0.0):
    mie = (
        np.array([miepython.efficiencies_mx(np.sqrt(eps), 2 * np.pi * f * R)[1] for f in FREQS])
        * np.pi
        * R**2
    )
    worst = {}
    for averaging in ("staircase", "diagonal", "subpixel"):
        for r in resolutions:
            t = time.time()
            cs = fdtd.run(sphere(r, averaging, eps, shift), until=120, progress=False).cross_sections()
            err = cs["Csca"] / mie - 1
            worst.setdefault(averaging, []).append(float(np.max(np.abs(err))))
            row = {
                "eps": eps,
                "averaging": averaging,
                "cells_per_radius": r,
                "shift_cells": shift,
                "frequencies": list(FREQS),
                "Csca": [float(v) for v in cs["Csca"]],
                "Csca_mie": [float(v) for v in mie],
                "relative_error": [float(v) for v in err],
                "Cabs_over_Csca": float(np.max(np.abs(cs["Cabs"] / cs["Csca"]))),
                "seconds": time.time() - t,
                "date": datetime.date.today().isoformat(),
                "commit": git_commit(),
            }
            with OUT.open("a") as f:
                f.write(json.dumps(row) + "\n")
            print(
                f"eps {eps:g} {averaging:9s} {r:4.1f} cells/radius, shift {shift:g}  Csca error "
                + "  ".join(f"{100 * e:+7.3f}%" for e in err)
                + f"   ({row['seconds']:.0f} s)",
                flush=True,
            )
    if len(resolutions) > 1:
        for averaging, w in worst.items():
            slope = -np.polyfit(np.log(resolutions), np.log(w), 1)[0]
            print(f"{averaging:9s} worst error {', '.join(f'{100 * v:.3f}%' for v in w)}: order {slope:.2f}")


if __name__ == "__main__":
    args = [float(a) for a in sys.argv[1:]]
    shift = float(os.environ.get("SHIFT", 0.0))
    main(args[0] if args else 4.0, tuple(args[1:]) or (5.0, 7.0, 10.0), shift)
