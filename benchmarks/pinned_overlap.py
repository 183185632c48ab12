"""Do copies between device and pinned host memory overlap the device's compute?

One fresh process: a memory-bound loop on the device (``compute``), a device -> pinned copy
(``down``) and a pinned -> device copy (``up``) of ``--gb`` GB each, timed alone and then
dispatched together in several ways:

* ``put``: ``jax.device_put`` issued after the compute was dispatched (the window's way);
* ``jit``: one program that computes, takes the next input from pinned memory (an argument
  in ``pinned_host``) and hands the previous output to pinned memory (a result in
  ``pinned_host``): XLA's own host copies inside the program;
* ``thread``: the copies from another Python thread.

Overlap shows as a total near max(parts) instead of their sum.

    PYTHONPATH=src python3 benchmarks/pinned_overlap.py --gb 2 --json
"""

from __future__ import annotations

import argparse
import json
import threading
import time

import jax
import jax.numpy as jnp
from jax.sharding import SingleDeviceSharding


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gb", type=float, default=2.0)
    ap.add_argument("--loops", type=int, default=60)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--profile", default=None, help="write a JAX profile of the put-after case here")
    a = ap.parse_args()
    dev = jax.devices()[0]
    D = SingleDeviceSharding(dev, memory_kind="device")
    P = SingleDeviceSharding(dev, memory_kind="pinned_host")
    n = int(a.gb * 1e9 / 4)
    x = jax.device_put(jnp.ones(n, jnp.float32), D)
    y = jax.device_put(jnp.full(n, 2.0, jnp.float32), D)  # to go down
    zp = jax.device_put(jnp.full(n, 3.0, jnp.float32), P)  # to go up
    jax.block_until_ready((x, y, zp))

    @jax.jit
    def compute(x):
        return jax.lax.fori_loop(0, a.loops, lambda i, v: v * 1.0001 + 1e-4, x)

    @jax.jit
    def fused_body(x, zp, y):
        z = jax.device_put(zp, D)
        yd = jax.device_put(y, P)
        return compute(x), z, yd

    fused = jax.jit(
        fused_body.__wrapped__ if hasattr(fused_body, "__wrapped__") else fused_body, out_shardings=(D, D, P)
    )

    def timed(f, reps=3):
        f()
        best = 1e9
        for _ in range(reps):
            t = time.perf_counter()
            f()
            best = min(best, time.perf_counter() - t)
        return best

    r = {"device": str(dev.device_kind), "gb": a.gb}
    r["compute_s"] = timed(lambda: compute(x).block_until_ready())
    r["down_s"] = timed(lambda: jax.device_put(y, P).block_until_ready())
    r["up_s"] = timed(lambda: jax.device_put(zp, D).block_until_ready())

    def put_after():
        c = compute(x)
        d = jax.device_put(y, P)
        u = jax.device_put(zp, D)
        jax.block_until_ready((c, d, u))

    def put_before():
        u = jax.device_put(zp, D)
        d = jax.device_put(y, P)
        c = compute(x)
        jax.block_until_ready((c, d, u))

    def up_only_after():
        c = compute(x)
        u = jax.device_put(zp, D)
        jax.block_until_ready((c, u))

    def down_only_after():
        c = compute(x)
        d = jax.device_put(y, P)
        jax.block_until_ready((c, d))

    def threaded():
        out = {}
        th = threading.Thread(target=lambda: out.update(d=jax.device_put(y, P), u=jax.device_put(zp, D)))
        c = compute(x)
        th.start()
        th.join()
        jax.block_until_ready((c, out["d"], out["u"]))

    r["put_after_s"] = timed(put_after)
    r["put_before_s"] = timed(put_before)
    r["up_with_compute_s"] = timed(up_only_after)
    r["down_with_compute_s"] = timed(down_only_after)
    r["thread_s"] = timed(threaded)
    try:
        r["jit_s"] = timed(lambda: jax.block_until_ready(fused(x, zp, y)))
        out = fused(x, zp, y)
        r["jit_out_kinds"] = [o.sharding.memory_kind for o in out]
    except Exception as e:  # noqa: BLE001
        r["jit_error"] = f"{type(e).__name__}: {str(e)[:300]}"
    # a window-like pipeline of 6 slabs: each uploads an input, computes, downloads its output
    ins = [jax.device_put(jnp.full(n, float(k), jnp.float32), P) for k in range(6)]
    jax.block_until_ready(ins)

    def pipe_after():  # upload k + 1 issued after compute k (the window of commits cfa7ac4..b97c256)
        u, outs = jax.device_put(ins[0], D), []
        for k in range(6):
            c = compute(u)
            u = jax.device_put(ins[k + 1], D) if k + 1 < 6 else None
            outs.append(jax.device_put(c, P))
        jax.block_until_ready(outs)

    def pipe_before():  # upload k + 1 issued before compute k
        nxt, outs = jax.device_put(ins[0], D), []
        for k in range(6):
            u = nxt
            nxt = jax.device_put(ins[k + 1], D) if k + 1 < 6 else None
            c = compute(u)
            outs.append(jax.device_put(c, P))
        jax.block_until_ready(outs)

    r["pipe6_after_s"] = timed(pipe_after, reps=2)
    r["pipe6_before_s"] = timed(pipe_before, reps=2)
    r["pipe6_model_overlap_s"] = 6 * r["compute_s"] + r["up_s"] + r["down_s"]
    r["pipe6_model_serial_s"] = 6 * (r["compute_s"] + r["up_s"] + r["down_s"])
    if a.profile:
        with jax.profiler.trace(a.profile):
            put_after()
            pipe_before()
            jax.block_until_ready(fused(x, zp, y))
    r["serial_sum_s"] = r["compute_s"] + r["down_s"] + r["up_s"]
    r["max_s"] = max(r["compute_s"], r["down_s"], r["up_s"])
    print(json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()}))


if __name__ == "__main__":
    main()
