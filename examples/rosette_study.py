"""The ADDA-on-GPU paper's application (its section 7, Figs. 7 and 8): a 6-bullet ice rosette.

* Fig. 7: M11(theta) over theta in [0, 360) in the yz plane for the rosette in a 76^3 grid,
  m = 1.778 + 0.002i (ice at -20..-60 C, 30-300 GHz), size (tip to tip) = wavelength, for
  the orientations (alpha, beta, gamma) = (0, 0, 0), (0, 72, 40), (0, 72, 60).
* Fig. 8: the polarization P(theta) = -S12/S11 at size = 5 wavelengths (15 dipoles per
  wavelength in the same 76^3 grid), (a) for (0, 0, 0) and (b) averaged over random
  orientation, the orientations solved in batches on the device. The quick run keeps 15
  dipoles per wavelength in its 24^3 grid (size = 1.6 wavelengths).

The rosette (emjax.geometry.BulletRosette, defaults) has 4720 dipoles in 76^3 (the paper's:
4746; it does not give the bullet dimensions). Its lattice is unchanged by 180-degree
rotations about the axes, so the average uses n_fold=2 and c2_x.

    PYTHONPATH=src python3 examples/rosette_study.py          # quick: 24^3, coarse average (CPU, < 1 min)
    PYTHONPATH=src python3 examples/rosette_study.py --paper  # the paper's 76^3 (a GPU)

Writes examples/figures/rosette_m11.png, rosette_polarization.png (with --paper; else to
rosette-out/) and a JSON line of timings per part.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from emjax import dda, geometry
from emjax.backend import device_description

M = 1.778 + 0.002j
ORIENTATIONS = ((0, 0, 0), (0, 72, 40), (0, 72, 60))
ROOT = Path(__file__).resolve().parents[1]


def problem(grid, size_over_wavelength, orientation=(0.0, 0.0, 0.0), theta=None):
    return dda.DDAProblem(
        geometry.BulletRosette(),
        m=(M,),
        wavelength=1.0,
        size_x=float(size_over_wavelength),
        grid=grid,
        orientation=orientation,
        theta=theta,
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--paper", action="store_true", help="the paper's 76^3 grid and a converged average")
    ap.add_argument("--out", type=Path, help="folder for the figures (default: see above)")
    args = ap.parse_args(argv)
    grid = 76 if args.paper else 24
    size8 = 5.0 if args.paper else grid / 15  # Fig. 8 at 15 dipoles per wavelength
    out = args.out or (ROOT / "examples" / "figures" if args.paper else ROOT / "rosette-out")
    out.mkdir(parents=True, exist_ok=True)
    quad = (
        dda.OrientationAverage(n_fold=2, c2_x=True)
        if args.paper
        else dda.OrientationAverage(
            eps=0, beta_levels=(2, 2), gamma_levels=(2, 2), n_alpha=8, n_fold=2, c2_x=True
        )
    )
    timings = {"device": device_description(), "grid": grid}
    theta360 = tuple(np.arange(0.0, 360.0, 1.0))

    # Fig. 7: M11 over the full circle in the yz plane, three orientations, size = wavelength
    fig7 = []
    for o in ORIENTATIONS:
        t0 = time.perf_counter()
        res = dda.solve(problem(grid, 1.0, o, theta360))
        timings[f"fig7_{o}_s"] = time.perf_counter() - t0
        fig7.append((o, res))
        print(f"fig 7 {o}: {res.lattice.n_dipoles} dipoles, Qext {res.Qext:.5g}, iterations {res.iterations}")
    timings["n_dipoles"] = fig7[0][1].lattice.n_dipoles

    # Fig. 8: P(theta) at size = 5 wavelengths, (0,0,0) and the orientation average
    t0 = time.perf_counter()
    fixed = dda.solve(problem(grid, size8))
    timings["fig8a_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    avg = dda.average(problem(grid, size8), quad)
    timings["fig8b_s"] = time.perf_counter() - t0
    timings.update(
        n_orientations=avg.n_orientations,
        batch=avg.batch_size,
        levels=list(avg.levels),
        error_estimate=avg.error,
        Qext_avg=avg.Qext,
        Qabs_avg=avg.Qabs,
        iterations_max=int(avg.iterations.max()),
        solve_s=avg.timings["solve_s"],
        far_field_s=avg.timings["far_field_s"],
    )
    print(
        f"fig 8b: {avg.n_orientations} orientations in {timings['fig8b_s']:.1f} s "
        f"(levels {avg.levels}, error estimates {avg.error}), Qext {avg.Qext:.5g}"
    )
    try:
        avg.save(out / "rosette_average.nc")
    except ImportError as exc:  # h5netcdf missing (e.g. a bare GPU machine): figures only
        print(f"rosette_average.nc not written: {exc}")
    plot(fig7, fixed, avg, out, grid, size8)
    print(json.dumps(timings, default=float))
    return 0


def plot(fig7, fixed, avg, out, grid, size8):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4.5), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    for o, res in fig7:
        ax.plot(res.theta, res.mueller[0, :, 0, 0], label=f"alpha={o[0]}, beta={o[1]}, gamma={o[2]}")
    ax.set_xlabel("scattering angle theta (deg), yz plane")
    ax.set_ylabel("M11")
    ax.set_xlim(0, 360)
    ax.set_xticks(range(0, 361, 45))
    ax.grid(True, alpha=0.3)
    ax.legend()
    ax.set_title(f"Bullet rosette, size/wavelength 1, m = {M}, {grid}^3 grid (paper Fig. 7)")
    fig.savefig(out / "rosette_m11.png", dpi=120)

    fig = Figure(figsize=(10, 4), layout="constrained")
    FigureCanvasAgg(fig)
    a, b = fig.subplots(1, 2, sharey=True)
    M0 = fixed.mueller[0]
    a.plot(fixed.theta, -M0[:, 0, 1] / M0[:, 0, 0])
    a.set_title("(a) alpha = beta = gamma = 0")
    Ma = avg.mueller
    b.plot(avg.theta, -Ma[:, 0, 1] / Ma[:, 0, 0])
    b.set_title(
        f"(b) orientation average ({avg.n_orientations} orientations x {avg.quadrature.n_alpha} alpha)"
    )
    for ax in (a, b):
        ax.set_xlabel("scattering angle theta (deg)")
        ax.set_xlim(0, 180)
        ax.grid(True, alpha=0.3)
    a.set_ylabel("P = -S12/S11")
    fig.suptitle(f"Bullet rosette, size/wavelength {size8:.3g}, {grid}^3 grid (paper Fig. 8)")
    fig.savefig(out / "rosette_polarization.png", dpi=120)


if __name__ == "__main__":
    raise SystemExit(main())
