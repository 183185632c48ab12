"""DDA benchmark sweep: matvec / iteration / solve times for spheres on N^3 lattices, and the
cross-code cube case (arXiv:2603.02871). Writes benchmarks/results/<device>.json.

    PYTHONPATH=src python3 benchmarks/dda_benchmarks.py --grids 32 64 128 256 --out results.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from emjax.bench import copy_bandwidth, record
from emjax.dda.bench import dda_benchmark


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--grids", type=int, nargs="*", default=[32, 64])
    ap.add_argument("--precisions", nargs="+", default=["single", "double"])
    ap.add_argument("--variants", nargs="+", default=["pruned", "full"])
    ap.add_argument("--cube", type=int, nargs="*", default=[], help="cube_kd30 lattices, e.g. 150 250")
    ap.add_argument("--solve-max-grid", type=int, default=256)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    bw = copy_bandwidth()
    print(json.dumps({"copy_bandwidth_Bps": bw}), flush=True)
    rows = []
    for n in args.grids:
        for p in args.precisions:
            for v in args.variants:
                labels = {"case": "dda_sphere", "grid": n, "precision": p, "variant": v}
                solve = n <= args.solve_max_grid and v == args.variants[0]
                record(
                    rows,
                    args.out,
                    labels,
                    dda_benchmark,
                    n,
                    p,
                    repeats=10,
                    solve=solve,
                    variant=v,
                    bandwidth=bw,
                )
    for n in args.cube:
        labels = {"case": "dda_cube_kd30", "grid": n}
        record(
            rows,
            args.out,
            labels,
            dda_benchmark,
            n,
            "double",
            repeats=5,
            solve=True,
            variant=args.variants[0],
            bandwidth=bw,
            case="cube_kd30",
        )


if __name__ == "__main__":
    main()
