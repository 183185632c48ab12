"""FDTD calculation window: cell updates/s vs steps per pass (th), against the
in-memory run of the same grid and the rate model of emjax.fdtd.window (the paper's Fig. 6).
The state lives in the device's pinned_host memory where it has one (--host-memory auto), or
in NumPy arrays (--host-memory numpy); every row says which ran (``host_memory``, and
``fallback``: why pinned was not used), the link rates measured for both (``link``: GB/s
host->device, device->host), and on the pinned path the bytes moved per pass and the seconds
the host waited for the device (``wait_s``: ~ the whole run when compute-bound).
XLA's pinned pool on a GPU is XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB (64 GiB unless set); this
script sets it to 90% of host RAM when unset (``pinned_pool_gib`` in the rows).

PYTHONPATH=src python3 benchmarks/fdtd_window.py --n 64 --slab 16
PYTHONPATH=src python3 benchmarks/fdtd_window.py --n 512 --slab 128 --th 1 4 16 64 --out w.jsonl
PYTHONPATH=src python3 benchmarks/fdtd_window.py --n 1200 --device-gb 40 --th 16 --no-in-memory --r-dev 3.2e10
PYTHONPATH=src python3 benchmarks/fdtd_window.py --n 1024 --device-gb 40 --th 16 32 64 --kernel blocked

``--kernel`` (auto, xla, blocked): the step of the in-memory run and of the window's slabs
(the blocked kernel runs interior slabs walled at their seams); each row names the step that
ran (``kernel``) and the window rows give their rate over the in-memory run's
(``of_in_memory``).

(1200^3 float32 with a CPML: E and H are 41 GB of host memory, ~50 GB of pinned chunks with
the coefficients and psi, ~95 GB for the in-memory run: more than an H100; the pinned pool
is kept to the end, so pinned chunks + the result's E and H must fit host RAM: 1400^3
(78 + 66 GB) does not on a 125 GiB host and falls back to NumPy.)
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
    ap.add_argument("--host-memory", choices=["auto", "pinned", "numpy"], default="auto")
    ap.add_argument("--kernel", choices=["auto", "xla", "blocked"], default="auto", help="the step")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    from emjax.backend import raise_pinned_host_limit

    raise_pinned_host_limit()  # 90% of host RAM when unset (read when the GPU backend starts)
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
        host_memory=None if args.host_memory == "auto" else args.host_memory,
        kernel=args.kernel,
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
