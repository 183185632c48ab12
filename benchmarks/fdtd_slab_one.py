"""The blocked kernel's slab loop on one GPU against the plain path, in one process: N^3
float32 with a 10-cell CPML, 200 steps, best of 3 after a warm-up. Rows: "plain" (one
device, x bounds known at compile time), "plain-runtime-x" (the same grid with the slab
kernel's run-time x bounds, ``nxa = nx``), "slab1" (the several-device slab loop,
``emjax.fdtd.blocked.shards``, on a one-device layout: TH halo planes each side, no
neighbour), "plain" again.

    PYTHONPATH=src python3 benchmarks/fdtd_slab_one.py --size 512
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace

import jax
import jax.numpy as jnp

from emjax.fdtd import step as engine
from emjax.fdtd.bench import benchmark_simulation
from emjax.fdtd.blocked import cuda_advance, shards
from emjax.layout import Layout


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--steps", type=int, default=200)
    a = ap.parse_args(argv)
    n, steps, f32 = a.size, a.steps, jnp.float32
    sim = benchmark_simulation(n)[0]
    arrays, pml = engine.coefficients(sim, f32)
    make_spec = cuda_advance.make_spec

    def runtime_x(plan, arrays, dtype, th, block, ring=None, cbox=None):
        return replace(make_spec(plan, arrays, dtype, th, block, ring, cbox), nxa=n)

    for name in ("plain", "plain-runtime-x", "slab1", "plain"):
        jax.clear_caches()  # each row compiles its own program
        cuda_advance.make_spec = runtime_x if name == "plain-runtime-x" else make_spec
        plan = engine.make_plan(sim, steps, f32, arrays, pml)
        if name == "slab1":
            plan = replace(plan, layout=Layout.of(1))
        state = engine.initial_state(sim, plan, f32, None)

        def go(state, plan=plan, slab=name == "slab1"):
            if slab:
                return shards.advance(plan, arrays, state, steps, 4, (24, 24), True)
            return cuda_advance.advance_gpu(plan, arrays, state, steps, 4, (24, 24), True)

        state = jax.block_until_ready(go(state)[0])
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            state = jax.block_until_ready(go(state)[0])
            times.append(time.perf_counter() - t0)
        rate = n**3 * steps / min(times)
        print(json.dumps({"case": name, "size": n, "steps": steps, "cells_per_s": rate}), flush=True)
    cuda_advance.make_spec = make_spec
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
