"""DDA on a substrate vs free space: time per iteration and the reflected table's set-up.

    PYTHONPATH=src python3 benchmarks/dda_substrate.py --grid 64 [--grid 32] [--precision double]

A sphere (m = 1.5 + 0.01i, size parameter 5 per 16 dipoles scaled with the grid: x = 5 grid /
16) lit from above (prop (0, 0, -1)): free, over glass (n = 1.5) at a height of one dipole
above it (1% of the radius; ADDA's -surf); each solved twice, the second (warm)
run's timings printed as JSON: seconds per QMR iteration, iterations, the reflected table's
points and set-up seconds, and the ratio substrate / free per iteration (the target is
<= 2 at 64^3 on the H100).
"""

from __future__ import annotations

import argparse
import json
import math


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--grid", type=int, action="append", required=True)
    ap.add_argument("--precision", default="double", choices=["single", "double"])
    args = ap.parse_args(argv)
    from emjax import dda, geometry
    from emjax.backend import device_description

    for grid in args.grid:
        x = 5.0 * grid / 16
        rows = {}
        for kind in ("free", "glass"):
            kw = dict(prop=(0.0, 0.0, -1.0))
            if kind == "glass":
                kw.update(substrate=1.5, height=x * 1.01)  # the sphere's bottom 1% of a radius above
            p = dda.DDAProblem(
                geometry.Sphere(), (1.5 + 0.01j,), eq_rad=x, grid=grid, precision=args.precision, **kw
            )
            for _ in range(2):
                r = dda.solve(p)
            t = r.timings
            its = int(sum(r.iterations))
            rows[kind] = {
                "timings": {k: v for k, v in t.items() if isinstance(v, (int, float))},
                "iterations": its,
            }
        per = {}
        for kind, row in rows.items():
            its = row["iterations"] or 1
            per[kind] = row["timings"].get("solve_s", math.nan) / its
        print(
            json.dumps(
                {
                    "grid": grid,
                    "precision": args.precision,
                    "device": device_description(),
                    "free": rows["free"],
                    "glass": rows["glass"],
                    "seconds_per_iteration": per,
                    "ratio_substrate_free": per["glass"] / per["free"],
                }
            ),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
