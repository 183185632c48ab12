"""Headline DDA example (`make demo`): a weakly absorbing sphere, emjax vs the Mie series.

A sphere of radius 0.5 um at 0.6283 um (size parameter x = 5), m = 1.5 + 0.01i, at 15 and
25 dipoles per wavelength. Prints Qext, Qabs, Qsca and g next to Mie's, writes the NetCDF
result, ADDA-style text files and a Mueller-matrix plot to demo-out/.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from emjax import dda, geometry
from emjax.backend import device_description
from emjax.dda.adda_files import write_adda_outputs
from emjax.dda.plot import plot_mueller

M = 1.5 + 0.01j
RADIUS, WAVELENGTH = 0.5, 0.6283185307
OUT = Path(__file__).resolve().parents[1] / "demo-out"


def mie(m, x):
    try:
        import miepython
    except ImportError:
        return None
    qext, qsca, _, g = miepython.efficiencies_mx(m, x)
    return {"Qext": qext, "Qabs": qext - qsca, "Qsca": qsca, "g": g}


def main() -> int:
    x = 2 * np.pi * RADIUS / WAVELENGTH
    print(f"emjax DDA demo on {device_description()}: sphere x = {x:.3f}, m = {M}")
    ref = mie(M, x)
    rows = []
    for dpl in (15, 25):
        prob = dda.DDAProblem(
            geometry.Sphere(), (M,), wavelength=WAVELENGTH, eq_rad=RADIUS, dipoles_per_wavelength=dpl
        )
        t0 = time.perf_counter()
        res = dda.solve(prob)
        dt = time.perf_counter() - t0
        rows.append((dpl, res, dt))
        if dpl == 15:
            OUT.mkdir(exist_ok=True)
            res.save(OUT / "result.nc")
            write_adda_outputs(res, OUT)
            plot_mueller(res, OUT / "mueller.png")
    print(f"\n{'':14s}{'Qext':>10s}{'Qabs':>10s}{'Qsca':>10s}{'g':>10s}  dipoles   iters   seconds")
    for dpl, r, dt in rows:
        print(
            f"DDA dpl={dpl:<6d}{r.Qext:10.5f}{r.Qabs:10.5f}{r.Qsca:10.5f}{r.g:10.5f}  "
            f"{r.lattice.n_dipoles:7d}  {r.iterations[0]:3d}/{r.iterations[1]:<3d} {dt:7.2f}"
        )
    if ref:
        print(f"{'Mie':14s}{ref['Qext']:10.5f}{ref['Qabs']:10.5f}{ref['Qsca']:10.5f}{ref['g']:10.5f}")
        for dpl, r, _ in rows:
            print(
                f"error dpl={dpl:<4d}"
                + "".join(f"{abs(getattr(r, k) / ref[k] - 1):10.2%}" for k in ("Qext", "Qabs", "Qsca", "g"))
            )
    print(f"\nwrote {OUT}/result.nc, CrossSec-X, CrossSec-Y, mueller, log and mueller.png")
    ok = all(r.all_converged for _, r, _ in rows)
    return 0 if ok else 2


if __name__ == "__main__":
    sys.exit(main())
