"""FDTD throughput sweep (cell updates per second), JSON lines to stdout and --out.

PYTHONPATH=src python3 benchmarks/fdtd_benchmarks.py --sizes 128 256 512 --out fdtd.json
"""

from __future__ import annotations

import argparse
from pathlib import Path

from emjax.bench import copy_bandwidth, record, stream_bandwidth
from emjax.fdtd.bench import fdtd_benchmark

CASES = [
    ("periodic", 2, "vacuum"),
    ("cpml", 2, "vacuum"),
    ("pec", 2, "vacuum"),
    ("cpml", 2, "dielectric"),
    ("cpml", 2, "drude"),
    ("periodic", 4, "vacuum"),
    ("cpml", 4, "vacuum"),
]


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[64])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--precisions", nargs="+", default=["single", "double"])
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    bw, copy = stream_bandwidth(), copy_bandwidth()  # once per sweep, not once per case
    rows = []
    for n in args.sizes:
        for p in args.precisions:
            for boundary, order, material in CASES:
                labels = {
                    "size": n,
                    "precision": p,
                    "boundary": boundary,
                    "order": order,
                    "material": material,
                }
                record(
                    rows,
                    args.out,
                    labels,
                    fdtd_benchmark,
                    n,
                    args.steps,
                    p,
                    boundary,
                    order,
                    material,
                    bandwidth=bw,
                    copy=copy,
                )


if __name__ == "__main__":
    main()
