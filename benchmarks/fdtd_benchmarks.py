"""FDTD throughput sweep (cell updates per second), JSON lines to stdout and --out.

PYTHONPATH=src python3 benchmarks/fdtd_benchmarks.py --sizes 128 256 512 --out fdtd.json
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from pathlib import Path

from emjax.bench import fdtd_benchmark


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[64])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--precisions", nargs="+", default=["single", "double"])
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    cases = [
        ("periodic", 2, "vacuum"),
        ("cpml", 2, "vacuum"),
        ("pec", 2, "vacuum"),
        ("cpml", 2, "dielectric"),
        ("periodic", 4, "vacuum"),
    ]
    rows = []
    for n in args.sizes:
        for p in args.precisions:
            for boundary, order, material in cases:
                try:
                    r = fdtd_benchmark(n, args.steps, p, boundary, order, material)
                except Exception as exc:  # noqa: BLE001 - record (e.g. out of memory) and go on
                    r = {
                        "size": n,
                        "precision": p,
                        "boundary": boundary,
                        "order": order,
                        "material": material,
                        "error": f"{type(exc).__name__}: {exc}"[:300],
                    }
                    traceback.print_exc(file=sys.stderr)
                print(json.dumps(r), flush=True)
                rows.append(r)
                args.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
