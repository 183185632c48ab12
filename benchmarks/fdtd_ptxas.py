"""Registers, spills and shared memory of the blocked FDTD kernels for a tiling, from the
CUDA compiler: no GPU needed. With the CUDA toolkit, ``nvcc -cubin -Xptxas -v``; without it,
NVRTC and ``ptxas`` from the CUDA wheels (``pip install nvidia-cuda-nvrtc-cu12
nvidia-cuda-nvcc-cu12``). ``--sass`` (``pip install nvidia-cuda-nvdisasm``) also reads the
machine code: the size of each kernel's march loop and the instructions between its
barriers (a level of the march: two cells a thread at two rows a thread) with the most
frequent ones.

Spills (local memory) were what held float64 back: TH = 2 with tiles of 24 spilled at the
72 registers 800 threads leave, TH = 3 with tiles of 16 (one cell per thread) spills
nothing and runs 1.4-1.5x faster on an H100.

    python benchmarks/fdtd_ptxas.py --precision double --boundary cpml --configs 2,24,1 3,16,1
    python benchmarks/fdtd_ptxas.py --configs 4,24,2 --cpml-block 16x16
    python benchmarks/fdtd_ptxas.py --configs 4,24,2 --sass
    python benchmarks/fdtd_ptxas.py --configs 4,24,2 --sass --set "cuda.STEADY_LOOP=True"

Each row: the kernel (bulk, tail or a CPML kernel with its axes), threads per CTA, registers,
stack and spill bytes, shared memory.
"""

from __future__ import annotations

import argparse
import collections
import glob
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if importlib.util.find_spec("emjax") is None:  # the checkout's, unless one is on the path (PYTHONPATH)
    sys.path.insert(0, str(ROOT / "src"))


def _tool(name: str) -> str | None:
    """``name`` on the PATH, in the CUDA toolkit or in a CUDA wheel's ``bin``; None if absent."""
    home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    found = shutil.which(name) or os.path.join(home, "bin", name)
    if os.path.exists(found):
        return found
    for root in sys.path:
        hits = sorted(glob.glob(os.path.join(root or ".", "nvidia", "*", "bin", name)))
        if hits:
            return hits[-1]
    return None


def compile_kernel(source: str, arch: str, sass: bool = False) -> tuple:
    """(ptxas's report, the machine code or None) of the kernel in ``source`` for ``arch``
    (sm_XY): nvcc where the toolkit is there, else NVRTC and ptxas."""
    unroll = re.search(r"#define GENERAL_UNROLL (\d+)", source)
    if unroll:  # nvcc's pragma takes a literal
        source = source.replace("#pragma unroll GENERAL_UNROLL", "#pragma unroll " + unroll.group(1))
    with tempfile.TemporaryDirectory() as tmp:
        cubin = str(Path(tmp) / "k.cubin")
        if _tool("nvcc"):
            cu = Path(tmp) / "k.cu"
            cu.write_text(source)
            cmd = [_tool("nvcc"), f"-arch={arch}", "-cubin", "-Xptxas", "-v", "-o", cubin, str(cu)]
        else:
            from emjax.fdtd.blocked.nvrtc import compile_ptx

            if _tool("ptxas") is None:
                raise SystemExit("neither nvcc nor ptxas found: pip install nvidia-cuda-nvcc-cu12")
            ptx = Path(tmp) / "k.ptx"
            ptx.write_text(compile_ptx(source, int(arch.split("_")[1])))
            cmd = [_tool("ptxas"), f"-arch={arch}", "-v", str(ptx), "-o", cubin]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            raise SystemExit(r.stderr[-2000:])
        code = None
        if sass:
            if _tool("nvdisasm") is None:
                raise SystemExit("nvdisasm not found: pip install nvidia-cuda-nvdisasm")
            code = subprocess.run(
                [_tool("nvdisasm"), cubin], capture_output=True, text=True, check=True
            ).stdout
    return r.stderr, code


def ptxas_info(report: str) -> dict:
    """{registers, stack, spill_stores, spill_loads} from ptxas's report."""
    st = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", report)
    rg = re.search(r"Used (\d+) registers", report)
    return {
        "registers": int(rg.group(1)),
        "stack": int(st.group(1)),
        "spill_stores": int(st.group(2)),
        "spill_loads": int(st.group(3)),
    }


def loops(code: str) -> list:
    """The loops with barriers in ``nvdisasm``'s text (backward branches over at least one
    ``BAR``), innermost first: per loop its size in instructions, the instructions between
    consecutive barriers, its register moves and its most frequent instructions. A march
    whose steady iterations run in a loop of their own (``cuda.STEADY_LOOP``, by kind of
    kernel) shows that loop first, then the march's."""
    ins, labels, pending = [], {}, []
    for ln in code.splitlines():
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
    found = set()
    for addr, op, rest in ins:
        target = re.search(r"\((\.L_x_\d+)\)", rest) if op == "BRA" else None
        if target and labels.get(target.group(1), addr) < addr:
            found.add((labels[target.group(1)], addr))
    out = []
    for lo, hi in sorted(found, key=lambda r: r[1] - r[0]):
        body = [op for a, op, _ in ins if lo <= a <= hi]
        bars = [i for i, op in enumerate(body) if op.startswith("BAR")]
        if not bars:
            continue
        ops = collections.Counter(op.split(".")[0] for op in body)
        moves = sum(1 for op in body if op == "MOV" or op.startswith("IMAD.MOV"))
        out.append((len(body), [b - a for a, b in zip(bars, bars[1:])], moves, ops.most_common(8)))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=128, help="the grid's N (N^3; the code hardly depends on it)")
    ap.add_argument("--precision", default="single", choices=["single", "double"])
    ap.add_argument("--boundary", default="cpml", choices=["cpml", "pec"])
    ap.add_argument(
        "--configs", nargs="+", default=["4,24,2"], help="TH,tile,rows per thread (tile: N or YxZ)"
    )
    ap.add_argument("--cpml-block", default="auto", help="the CPML kernels' windows' own cells, YxZ")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--sass", action="store_true", help="also the march's loops and levels (nvdisasm)")
    ap.add_argument("--set", action="append", default=[], help="module.NAME=VALUE settings (repeatable)")
    ap.add_argument(
        "--material",
        default="vacuum",
        choices=["vacuum", "sphere-diagonal"],
        help="what fills the box, as emjax bench fdtd's (sphere-diagonal: the box's kernels too)",
    )
    args = ap.parse_args(argv)

    import jax

    if args.precision == "double":
        jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from fdtd_kernels import parse_config
    from fdtd_settings import apply  # (this script's folder)

    from emjax.fdtd import step as engine
    from emjax.fdtd.bench import benchmark_simulation
    from emjax.fdtd.blocked import coef_box, cuda, cuda_advance, split

    for setting in args.set:
        apply(setting)
    dtype = jnp.float64 if args.precision == "double" else jnp.float32
    if args.cpml_block != "auto":
        split.CPML_BLOCK = tuple(int(v) for v in args.cpml_block.split("x"))
    sim, _ = benchmark_simulation(args.n, args.precision, args.boundary, 2, args.material, 10, None)
    arrays, pml = engine.coefficients(sim, dtype)
    plan = engine.make_plan(sim, 8, dtype, arrays, pml)
    for cfg in args.configs:
        th, tile, ry = parse_config(cfg)
        cbox = coef_box.find(plan, arrays) if args.material != "vacuum" else None
        spec = replace(cuda_advance.make_spec(plan, arrays, dtype, th, tile, cbox=cbox), ry=ry)
        parts = split.split(spec) if any(spec.pml) else None
        kernels = [("bulk", spec)] if parts is None else [("bulk", parts[0])]
        if parts is not None and parts[1] is not None:
            kernels.append(("tail", parts[1]))
        if parts is not None:
            for f, _ in parts[2]:
                axes = "".join("xyz"[a] for a, L in enumerate(f.pml) if L)
                kernels.append(("cpml " + axes if axes else "box", f))
        for name, sp in kernels:
            report, code = compile_kernel(cuda.source(sp), args.arch, args.sass)
            info = ptxas_info(report)
            smem_chains = "".join(a for a, c in zip("xyz", sp.smem_chains) if c) or "-"
            print(
                f"{cfg:>8} {name:<9} threads {sp.threads:>4}  registers {info['registers']:>3}  "
                f"stack {info['stack']:>4} B  spills {info['spill_stores']:>4} / {info['spill_loads']:>4} B  "
                f"shared {sp.smem_bytes // 1024:>3} KB  chains in shared memory: {smem_chains}",
                flush=True,
            )
            for size, levels, moves, top in loops(code) if code is not None else ():
                line = f"loop {size} instructions, {moves} moves; between barriers {levels}; {top}"
                print(f"{'':>8} {line}", flush=True)


if __name__ == "__main__":
    main()
