"""FDTD: what the CUDA compiler makes of each kernel of one blocked pass, on any machine (no
GPU): NVRTC, ``ptxas`` and ``nvdisasm`` from the CUDA wheels compile the kernels of a pass for
a GPU architecture (default sm_90, the H100's) and report, per kernel, its registers, the
bytes it spills, its threads and shared memory, the size of its march's loop and the
instructions between barriers (a level of the march: two cells a thread at two rows a
thread).

    pip install nvidia-cuda-nvrtc-cu12 nvidia-cuda-nvcc-cu12 nvidia-cuda-nvdisasm
    PYTHONPATH=src python3 benchmarks/fdtd_kernel_sass.py --n 512 --precision single --th 4 --tile 24 --rows 2
    PYTHONPATH=src python3 benchmarks/fdtd_kernel_sass.py --pml 0 --source   # PEC walls, a dipole and a probe
"""

from __future__ import annotations

import argparse
import collections
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import replace

from emjax.fdtd.blocked import cuda, split
from emjax.fdtd.blocked.cuda import Spec
from emjax.fdtd.blocked.nvrtc import compile_ptx


def _tool(name):
    found = shutil.which(name)
    if found:
        return found
    for root in sys.path:
        hits = sorted(glob.glob(os.path.join(root or ".", "nvidia", "*", "bin", name)))
        if hits:
            return hits[-1]
    raise SystemExit(f"{name} not found: pip install nvidia-cuda-nvcc-cu12 nvidia-cuda-nvdisasm")


def compile_kernel(spec, arch):
    """(ptxas's line of registers and spills, the SASS text) of ``spec``'s kernel."""
    ptx = compile_ptx(cuda.source(spec), arch)
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "k.ptx"), "w") as f:
            f.write(ptx)
        cubin = os.path.join(d, "k.cubin")
        res = subprocess.run(
            [_tool("ptxas"), f"-arch=sm_{arch}", "-v", os.path.join(d, "k.ptx"), "-o", cubin],
            capture_output=True,
            text=True,
            check=True,
        )
        sass = subprocess.run([_tool("nvdisasm"), cubin], capture_output=True, text=True, check=True).stdout
    info = " ".join(
        ln.split(":", 1)[-1].strip() for ln in res.stderr.splitlines() if "registers" in ln or "spill" in ln
    )
    return info, sass


def loop_and_levels(sass):
    """The march's loop (the longest backward branch: instructions) and the instructions
    between consecutive barriers inside it."""
    ins, labels, pending = [], {}, []
    for ln in sass.splitlines():
        lab = re.match(r"^(\.L_x_\d+):", ln)
        if lab:
            pending.append(lab.group(1))
            continue
        m = re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z0-9_.]+)(.*?);", ln)
        if m:
            addr = int(m.group(1), 16)
            labels.update((name, addr) for name in pending)
            pending = []
            ins.append((addr, m.group(3), m.group(4)))
    loop = (0, 0)
    for addr, op, rest in ins:
        target = re.search(r"\((\.L_x_\d+)\)", rest) if op == "BRA" else None
        if target and labels.get(target.group(1), addr) < addr:
            start = labels[target.group(1)]
            if addr - start > loop[1] - loop[0]:
                loop = (start, addr)
    body = [(a, op) for a, op, _ in ins if loop[0] <= a <= loop[1]]
    bars = [i for i, (_, op) in enumerate(body) if op.startswith("BAR")]
    levels = [b - a for a, b in zip(bars, bars[1:])]
    ops = collections.Counter(op.split(".")[0] for _, op in body)
    return len(body), levels, ops


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--precision", choices=["single", "double"], default="single")
    ap.add_argument("--th", type=int, default=4)
    ap.add_argument("--tile", type=int, default=24)
    ap.add_argument("--rows", type=int, default=2, help="window rows per thread")
    ap.add_argument("--pml", type=int, default=10, help="CPML cells on every face (0: PEC walls)")
    ap.add_argument("--source", action="store_true", help="a point dipole and a probe in the middle")
    ap.add_argument("--arch", type=int, default=90)
    a = ap.parse_args(argv)
    dtype = "float32" if a.precision == "single" else "float64"
    n, walls, kappa = a.n, (True,) * 3, (False,) * 3
    spec = Spec(
        dtype, (n,) * 3, a.th, (a.tile, a.tile), 1.0, 0.5, 1.0, 0.5, None, walls, (a.pml,) * 3, kappa, (), ()
    )
    spec = replace(spec, ry=a.rows, stage=bool(cuda.STAGE_NEXT))
    if a.source:
        c = n // 2
        spec = replace(spec, sources=(((c, c, c), 2),), probes=(("E", 2, (c + 3, c, c)),))
    parts = split.split(spec)
    ks = [("whole", spec)] if parts is None else [("bulk", parts[0])] + [("tail", parts[1])] * bool(parts[1])
    if parts is not None:
        ks += [
            (f"cpml {''.join(x for x, L in zip('xyz', sp.pml) if L)} wall {sp.wall}", sp)
            for sp, _ in parts[2]
        ]
    for name, sp in ks:
        info, sass = compile_kernel(sp, a.arch)
        size, levels, ops = loop_and_levels(sass)
        top = ", ".join(f"{k} {v}" for k, v in ops.most_common(8))
        print(f"{name}: {sp.threads} threads, {sp.smem_bytes // 1024} KB shared; {info}")
        print(f"    loop {size} instructions; between barriers {levels}; {top}")


if __name__ == "__main__":
    main()
