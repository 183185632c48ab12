"""Registers, spills and shared memory of the blocked FDTD kernels for a tiling, from the
CUDA toolkit's compiler (``nvcc -cubin -Xptxas -v``): no GPU needed.

Spills (local memory) were what held float64 back: TH = 2 with tiles of 24 spilled at the
72 registers 800 threads leave, TH = 3 with tiles of 16 (one cell per thread) spills
nothing and runs 1.4-1.5x faster on an H100.

    python benchmarks/fdtd_ptxas.py --precision double --boundary cpml --configs 2,24,1 3,16,1
    python benchmarks/fdtd_ptxas.py --configs 4,24,2 --cpml-block 16x16

Each row: the kernel (bulk, tail or a CPML kernel with its axes), threads per CTA, registers,
stack and spill bytes, shared memory.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def nvcc() -> str:
    home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    found = shutil.which("nvcc") or os.path.join(home, "bin", "nvcc")
    if not os.path.exists(found):
        raise SystemExit("nvcc not found: install the CUDA toolkit or set CUDA_HOME")
    return found


def ptxas_info(source: str, arch: str) -> dict:
    """{registers, stack, spill_stores, spill_loads} of the kernel in ``source``."""
    unroll = re.search(r"#define I_UNROLL (\d+)", source)
    if unroll:  # the pragma takes a literal
        source = source.replace("#pragma unroll I_UNROLL", "#pragma unroll " + unroll.group(1))
    with tempfile.TemporaryDirectory() as tmp:
        cu = Path(tmp) / "k.cu"
        cu.write_text(source)
        r = subprocess.run(
            [nvcc(), f"-arch={arch}", "-cubin", "-Xptxas", "-v", "-o", str(Path(tmp) / "k.cubin"), str(cu)],
            capture_output=True,
            text=True,
        )
    if r.returncode:
        raise SystemExit(r.stderr[-2000:])
    st = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", r.stderr)
    rg = re.search(r"Used (\d+) registers", r.stderr)
    return {
        "registers": int(rg.group(1)),
        "stack": int(st.group(1)),
        "spill_stores": int(st.group(2)),
        "spill_loads": int(st.group(3)),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=128, help="the grid's N (N^3; the code hardly depends on it)")
    ap.add_argument("--precision", default="single", choices=["single", "double"])
    ap.add_argument("--boundary", default="cpml", choices=["cpml", "pec"])
    ap.add_argument("--configs", nargs="+", default=["4,24,2"], help="TH,tile,rows per thread")
    ap.add_argument("--cpml-block", default="auto", help="the CPML kernels' windows' own cells, YxZ")
    ap.add_argument("--arch", default="sm_90")
    args = ap.parse_args(argv)

    import jax

    if args.precision == "double":
        jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    from emjax.fdtd import step as engine
    from emjax.fdtd.bench import benchmark_simulation
    from emjax.fdtd.blocked import cuda, cuda_advance, split

    dtype = jnp.float64 if args.precision == "double" else jnp.float32
    if args.cpml_block != "auto":
        split.CPML_BLOCK = tuple(int(v) for v in args.cpml_block.split("x"))
    sim, _ = benchmark_simulation(args.n, args.precision, args.boundary, 2, "vacuum", 10, None)
    arrays, pml = engine.coefficients(sim, dtype)
    plan = engine.make_plan(sim, 8, dtype, arrays, pml)
    for cfg in args.configs:
        th, tile, ry = (int(v) for v in cfg.split(","))
        spec = replace(cuda_advance.make_spec(plan, arrays, dtype, th, (tile, tile)), ry=ry)
        parts = split.split(spec) if any(spec.pml) else None
        kernels = [("bulk", spec)] if parts is None else [("bulk", parts[0])]
        if parts is not None and parts[1] is not None:
            kernels.append(("tail", parts[1]))
        if parts is not None:
            for f, _ in parts[2]:
                kernels.append(("cpml " + "".join("xyz"[a] for a, L in enumerate(f.pml) if L), f))
        for name, sp in kernels:
            info = ptxas_info(cuda.source(sp), args.arch)
            smem_chains = "".join(a for a, c in zip("xyz", sp.smem_chains) if c) or "-"
            print(
                f"{cfg:>8} {name:<9} threads {sp.threads:>4}  registers {info['registers']:>3}  "
                f"stack {info['stack']:>4} B  spills {info['spill_stores']:>4} / {info['spill_loads']:>4} B  "
                f"shared {sp.smem_bytes // 1024:>3} KB  chains in shared memory: {smem_chains}",
                flush=True,
            )


if __name__ == "__main__":
    main()
