"""FDTD calculation window (issue 19): cell updates/s vs steps per pass (th), against the
in-memory run of the same grid and the rate model of emjax.fdtd.window (the paper's Fig. 6).

PYTHONPATH=src python3 benchmarks/fdtd_window.py --n 64 --slab 16
PYTHONPATH=src python3 benchmarks/fdtd_window.py --n 512 --slab 128 --th 1 4 16 64 --out w.jsonl
PYTHONPATH=src python3 benchmarks/fdtd_window.py --n 1500 --device-gb 30 --no-in-memory --r-dev 3.2e10

(1500^3 float32 with a CPML: E and H are 81 GB of host memory; 1800^3 needs 140 GB.)
One JSON line per th (stdout, and appended to --out): the measured rate (passes after the
first of each length, compiles excluded) and seconds per slab and pass (``t_slab_s``), the
model's compute and transfer seconds per slab and pass and its predictions with transfers
overlapped (``model``, the GPU) or not (``model_serial``, the CPU; nothing fitted), and
``t_residual_s``: the measured seconds per slab and pass less the model's (the fixed host
cost T_0 and noise); the in-memory rate (``r_dev``) and the measured host link bandwidth
(``b_link``: a 256 MB device_put copy and copy back, harmonic mean of both ways).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from emjax.fdtd.window_bench import fdtd_window_sweep as sweep
from emjax.fdtd.window_bench import link_bandwidth, simulation  # noqa: F401  (re-exported)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=64, help="grid n^3")
    ap.add_argument("--slab", type=int, default=None, help="planes per slab (default: from --device-gb)")
    ap.add_argument("--device-gb", type=float, default=None, help="device budget that sets the slab")
    ap.add_argument("--th", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32, 64])
    ap.add_argument("--passes", type=int, default=3, help="passes per th (the first one compiles)")
    ap.add_argument("--precision", default="single")
    ap.add_argument("--order", type=int, default=2)
    ap.add_argument("--cpml", type=int, default=10)
    ap.add_argument("--no-in-memory", action="store_true", help="skip the in-memory run (grid too big)")
    ap.add_argument("--r-dev", type=float, default=None, help="in-memory cells/s for the model")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    rows = sweep(
        args.n,
        args.th,
        slab=args.slab,
        device_gb=args.device_gb,
        passes=args.passes,
        precision=args.precision,
        order=args.order,
        cpml=args.cpml,
        in_memory=not args.no_in_memory,
        r_dev=args.r_dev,
    )
    for row in rows:
        emit(args.out, row)


def emit(out, row):
    line = json.dumps(row)
    print(line, flush=True)
    if out is not None:
        with open(out, "a") as f:
            f.write(line + "\n")


if __name__ == "__main__":
    main()
