"""FDTD on several GPUs: strong and weak scaling of the blocked kernel's x slabs (512^3 per
run, 10-cell CPML, float32) for each way the halos travel between passes
(``emjax.fdtd.blocked.shards.GROUPS``), one JSON row per run.

NCCL_NVLS_ENABLE=0 PYTHONPATH=src python3 benchmarks/fdtd_halo_groups.py --groups each psi kinds all
"""

from __future__ import annotations

import argparse
import json
import time

from emjax.fdtd import bench
from emjax.fdtd.blocked import shards


def main(argv=None):
    ap = argparse.ArgumentParser()
    groups = ["each", "psi", "kinds", "all"]
    ap.add_argument("--groups", nargs="+", default=groups, choices=groups)
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--devices", type=int, default=2)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--kernel", default="blocked", choices=["blocked", "xla"])
    ap.add_argument("--commit", default=None)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    for g in a.groups:
        shards.GROUPS = g
        for r in bench.fdtd_scaling(a.size, a.devices, steps=a.steps, boundary="cpml", kernel=a.kernel):
            r.update(halo_groups=g, commit=a.commit, date=time.strftime("%Y-%m-%d"))
            print(json.dumps(r), flush=True)
            if a.out:
                with open(a.out, "a") as f:
                    f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
