"""Where the compiled several-device FDTD step places its collectives: for the chunk
``emjax bench fdtd --size N --devices K`` runs (vacuum, CPML 10, x split in K slabs), the
instructions of the scheduled loop body in order, each collective (``-start``/``-done`` on a
GPU) shown with the number of slab-sized fusions scheduled between its start and its done
(the bulk updates it overlaps; 0 everywhere: nothing overlapped). The CPU check that no
bulk update reads a collective's result is in ``tests/fdtd/test_fdtd_sharded.py``.
Compiles only; nothing is timed.

    python benchmarks/fdtd_overlap_schedule.py --size 512 --devices 2      # 2 GPUs
    XLA_FLAGS=--xla_force_host_platform_device_count=2 PYTHONPATH=src \\
        python benchmarks/fdtd_overlap_schedule.py --size 32 --devices 2   # CPU (no -start)

The flag ``--xla_gpu_enable_latency_hiding_scheduler=true`` is set here as the ``emjax``
command sets it (unless ``XLA_FLAGS`` is set); ``--no-lhs`` leaves XLA's default.
"""

from __future__ import annotations

import argparse
import os
import re
import sys


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--devices", type=int, default=2)
    ap.add_argument("--no-lhs", action="store_true")
    args = ap.parse_args()
    if not args.no_lhs:
        from emjax.backend import overlap_collectives

        overlap_collectives()
    from emjax import fdtd
    from emjax.fdtd import sharded

    n, k = args.size, args.devices
    g = fdtd.Grid((n,) * 3, dx=1.0, boundary=fdtd.CPML(10))
    sim = fdtd.GridSimulation(g, sources=(fdtd.PointDipole((n // 2,) * 3, 2, fdtd.Ricker(frequency=0.05)),))
    cap = {}
    orig = sharded.advance

    def spy(*a):
        cap["args"] = a
        return orig(*a)

    sharded.advance = spy
    fdtd.run(sim, 2, chunk=2, layout=k)
    txt = orig.lower(*cap["args"]).compile().as_text()
    slab = f"[{n // k},{n},{n}]"
    body = max(
        re.findall(r"^%\S+ \(.*?\) -> .*? \{\n(.*?)\n\}", txt, re.S | re.M), key=lambda b: b.count(slab)
    )
    rows = re.findall(r"^\s*(?:ROOT )?%(\S+) = (\(.*?\)|\S+) ([\w\-]+)\(%?([\w.\-]*)", body, re.M)
    open_at = {}
    flags = os.environ.get("XLA_FLAGS", "")
    print(f"{len(rows)} instructions in the loop body; slab {slab}; XLA_FLAGS={flags!r}")
    bulk = 0
    for name, shape, op, first in rows:
        if op.startswith(("collective-permute", "all-reduce")):
            if op.endswith("-done"):  # its operand is the -start
                print(f"  {op:28s} {name}: {bulk - open_at.pop(first, bulk)} slab fusions since its start")
            else:
                open_at[name] = bulk
                print(f"  {op:28s} {name} {shape[:60]}")
        elif op == "fusion" and slab in shape:
            bulk += 1
    print(f"{bulk} slab-sized fusions per step (bulk updates and in-place face updates)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
