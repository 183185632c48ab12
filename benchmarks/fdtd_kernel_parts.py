"""FDTD: each kernel of one blocked pass timed alone (a GPU). The pass of a 512^3 grid with a
10-cell CPML (or PEC walls) is cut as the package cuts it (`emjax.fdtd.blocked.split`): the
bulk kernel, its tail, the CPML's face rows and x rows (the parts of a launch of several
kernels each alone, with its own threads: float32's y and z faces run as one launch in the
package, so there the sum is not the pass's); each runs ``--reps`` times on zeros
(its inputs and the buffers it writes, donated so that nothing is copied), and the row gives
its time, its CTAs and threads. The sum is the pass without what lies between the kernels;
compare it with `fdtd_kernels.py`'s rate for the whole pass. The coefficients are one value
each that the kernels read (``--coef array``, as a vacuum run passes them; the rows of
2026-11-28 had them compiled in, ``--coef literal``), a dipole and a probe optional.

PYTHONPATH=src python3 benchmarks/fdtd_kernel_parts.py --n 512 --precision single --th 4 --tile 24 --rows 2
PYTHONPATH=src python3 benchmarks/fdtd_kernel_parts.py --precision double --th 3 --tile 16 --rows 1

``--subsets`` also times, per kernel of a task table, the CTAs whose own cells reach the x-,
y- or z-CPML, and those that reach none, each group alone: where a kernel's CTAs fill one
wave, its time is its slowest CTA's (the y faces' rows over the z-CPML's corners took 0.95
ms where the others took 0.68, 2026-11-28). ``--set`` takes `fdtd_settings.py`'s settings.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np

from emjax.backend import device_description
from emjax.bench import git_commit
from emjax.fdtd.blocked import cuda, split
from emjax.fdtd.blocked.cuda import Spec


def kernels(n, dtype, th, tile, rows, pml, dipole=None, coef="array"):
    """(name, spec, task table or None) of each kernel of one pass (the parts of a launch
    of several kernels apart, :mod:`emjax.fdtd.blocked.launches`); ``dipole``: the plane
    of a z dipole and an Ez probe three cells off it, as in the benchmarks' runs (None:
    neither); ``coef``: "array", ca and cb one value each read by the kernel (a vacuum
    run's), or "literal", compiled in."""
    ring = cuda.ring_setting()
    walls, kappa = (True,) * 3, (False,) * 3
    c = n // 2
    src = (((dipole, c, c), 2),) if dipole is not None else ()
    prb = (("E", 2, (dipole, c + 3, c)),) if dipole is not None else ()
    spec = Spec(
        dtype, (n,) * 3, th, (tile, tile), 1.0, 0.5, 1.0, 0.5, None, walls, (pml,) * 3, kappa, src, prb
    )
    spec = replace(spec, ry=rows, coef_ring=ring[0], smem_limit=ring[1])
    if coef == "array":
        spec = replace(spec, ca="array", cb="array")
    parts = split.split(spec)
    if parts is None:
        return [("whole", spec, None)]
    bulk, tail, fixes, rows_ = parts
    table = np.array(rows_, np.int32).reshape(-1, 10)
    out = [("bulk", bulk, None)]
    if tail is not None:
        out.append(("tail", tail, table[len(rows_) - tail.ntask :]))
    for sp, idx in fixes:  # (a launch of several kernels: each of them, on its own rows)
        first = 0
        for part in sp.merged or (sp,):
            axes = "".join(a for a, L in zip("xyz", part.pml) if L)
            rows_of = np.asarray(idx)[first : first + part.ntask]
            out.append((f"cpml {axes} wall {part.wall}", part, table[rows_of]))
            first += part.ntask
    return out


def time_kernel(sp, tab, n, reps):
    ins = []
    for name, shape in cuda.inputs(sp):
        if name == "xr":
            ins.append(jnp.array([0, 0, n, 0, n], jnp.int32))
        elif name == "tasks":
            ins.append(jnp.asarray(tab))
        else:
            ins.append(jnp.zeros(shape, sp.dtype))
    dest = [jnp.zeros(shape, sp.dtype) for _, shape in cuda.aliased(sp)]
    k = len(dest)
    f = jax.jit(lambda a, d: cuda.gpu_pass(sp, a, d), donate_argnums=1)
    out = f(ins, dest)
    jax.block_until_ready(out)
    dest = list(out[:k])
    t0 = time.perf_counter()
    for _ in range(reps):
        out = f(ins, dest)
        dest = list(out[:k])
    jax.block_until_ready(out)
    return (time.perf_counter() - t0) / reps


def subsets(tab, n, pml) -> dict:
    """Masks of a task table's rows (y0, z0, oy0, oy1, oz0, oz1, x0, nxw, ox0, ox1) whose own
    cells reach the x-, y- or z-CPML of ``pml`` cells, and of those that reach none."""
    reach = {
        f"reach {a}": (tab[:, lo] < pml) | (tab[:, lo + 1] > n - pml)
        for a, lo in (("x", 8), ("y", 2), ("z", 4))
    }
    reach["reach none"] = ~(reach["reach x"] | reach["reach y"] | reach["reach z"])
    return {k: m for k, m in reach.items() if 0 < m.sum() < len(tab)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--precision", choices=["single", "double"], default="single")
    ap.add_argument("--th", type=int, default=4)
    ap.add_argument("--tile", type=int, default=24)
    ap.add_argument("--rows", type=int, default=2, help="window rows per thread")
    ap.add_argument("--pml", type=int, default=10, help="CPML cells on every face (0: PEC walls)")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument(
        "--coef",
        choices=["array", "literal"],
        default="array",
        help="ca and cb one value each read by the kernels (as in a vacuum run) or compiled in",
    )
    ap.add_argument(
        "--dipole", type=int, default=None, help="x plane of a z dipole and a probe by it (the runs': N / 2)"
    )
    ap.add_argument("--subsets", action="store_true", help="also each kernel's CTAs by the CPML they reach")
    ap.add_argument("--set", action="append", default=[], help="module.NAME=VALUE settings (repeatable)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    from fdtd_settings import apply  # (this script's folder)

    for setting in a.set:
        apply(setting)
    dtype = "float32" if a.precision == "single" else "float64"
    if dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    labels = {"device": device_description(), "date": time.strftime("%Y-%m-%d"), "commit": git_commit()}
    total = 0.0
    for name, sp, tab in kernels(a.n, dtype, a.th, a.tile, a.rows, a.pml, a.dipole, a.coef):
        s = time_kernel(sp, tab, a.n, a.reps)
        total += s
        row = {**labels, "n": a.n, "precision": a.precision, "dipole": a.dipole, "coef": a.coef}
        row["kernel"] = name
        row["ctas"] = sp.grid[0] * sp.grid[1]
        row.update(threads=sp.threads, smem=sp.smem_bytes, ms=round(s * 1e3, 4))
        rows = [row]
        for part, m in subsets(tab, a.n, a.pml).items() if a.subsets and tab is not None else ():
            t = time_kernel(replace(sp, ntask=int(m.sum())), tab[m], a.n, a.reps)
            rows.append({**row, "subset": part, "ctas": int(m.sum()), "ms": round(t * 1e3, 4)})
        for r in rows:
            print(json.dumps(r), flush=True)
            if a.out:
                with open(a.out, "a") as fh:
                    fh.write(json.dumps(r) + "\n")
    rate = a.n**3 * a.th / total
    summary = {**labels, "kernel": "sum", "ms": round(total * 1e3, 4), "cells_per_s": rate}
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
