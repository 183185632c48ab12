"""Full vs mirror-symmetric 2-D FDFD solve time on the CPU (host SuperLU): a line current at
the centre of a centred eps = 4 disk (TM, compact stencil), on a square region of N x N
cells (N + 1 + 2 x 12 PML nodes a side), then with symmetry=(1, 0) (half the unknowns) and
(1, 1) (a quarter). Prints the whole call's time, the factorization + solve time (the best
of ``--repeat`` calls) and the largest field difference outside the PML against the full
solve (relative to the largest field; what the PML's outer wall lets back, ~1e-10).
``--three N``: also 3-D with the direct solver, a z dipole at the centre of an eps = 4 sphere
on N^3 cells (+ 2 x 6 PML), full and with symmetry=(1, 1, -1) (an eighth).

    PYTHONPATH=src python benchmarks/fdfd_symmetry_cpu.py --sizes 200 400 --three 10
"""

import argparse
import time

import numpy as np

from emjax import fdfd, geometry, scene

RES = 20  # cells per wavelength at f = 1


def solve(n, symmetry):
    sc = scene.Scene([scene.Object(geometry.Disk(), 4.0, size=0.3 * n / RES)])
    t = time.perf_counter()
    r = fdfd.solve_tm(
        (n / RES, n / RES),
        RES,
        1.0,
        fdfd.LineSource((0, 0)),
        scene=sc,
        symmetry=symmetry,
        solver="superlu",
        progress=False,
    )
    return r, time.perf_counter() - t


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[200, 400])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--three", type=int, default=0, help="3-D cells per side (0: no 3-D run)")
    args = ap.parse_args()
    for n in args.sizes:
        ref = None
        for sym in ((0, 0), (1, 0), (1, 1)):
            best = None
            for _ in range(args.repeat):
                r, wall = solve(n, sym)
                fs = r.stats["factor_s"] + r.stats["solve_s"]
                if best is None or wall < best[1]:
                    best = (r, wall, fs)
            r, wall, fs = best
            if ref is None:
                ref, d = r, 0.0
            L = r.pml_cells
            d = np.abs(r.Ez - ref.Ez)[L:-L, L:-L].max() / np.abs(ref.Ez).max()
            solved = r.stats.get("unknowns_solved", r.stats["unknowns"])
            print(
                f"N {n:5d}  symmetry {str(sym):7s} unknowns {solved:8d}  "
                f"call {wall:7.3f} s  factor+solve {fs:7.3f} s  field diff {d:.1e}",
                flush=True,
            )
    if args.three:
        n = args.three
        sc = scene.Scene([scene.Object(geometry.Sphere(), 4.0, size=0.3 * n / 8)])
        ref = None
        for sym in ((0, 0, 0), (1, 1, -1)):
            t = time.perf_counter()
            r = fdfd.solve_3d(
                (n / 8,) * 3,
                8,
                1.0,
                fdfd.PointDipole3D((0, 0, 0), (0, 0, 1)),
                scene=sc,
                pml=fdfd.SCPML(6),
                solver=fdfd.Direct(),
                symmetry=sym,
                progress=False,
            )
            wall = time.perf_counter() - t
            ref = r if ref is None else ref
            L = r.pml_cells
            d = np.abs(r.E - ref.E)[:, L:-L, L:-L, L:-L].max() / np.abs(ref.E).max()
            solved = r.stats.get("unknowns_solved", r.stats["unknowns"])
            print(
                f"3-D N {n:3d}  symmetry {str(sym):10s} unknowns {solved:7d}  "
                f"call {wall:7.2f} s  factor {r.stats['factor_s']:7.2f} s  field diff {d:.1e}",
                flush=True,
            )
