"""Where the FDTD slab run loses against one device: for one device and for ``--devices``
(weak scaling, N^3 cells per device, a 10-cell CPML, float32), each chunk length of
``--steps`` is timed (a chunk is one call of the jitted slab loop: the halos set up, the
passes, the own planes sliced out), and ``seconds = per_call + per_pass * passes`` is fitted,
so the per-call copies and the per-pass cost come apart. With ``--exchange none`` too, the
slab loop runs once more with its halo exchange left out (wrong fields, the cost of the
rest), compiled afresh.

    NCCL_NVLS_ENABLE=0 PYTHONPATH=src python3 benchmarks/fdtd_slab_profile.py --size 512 \\
        --devices 4 --steps 40 120 400 --exchange on none
    XLA_FLAGS=--xla_force_host_platform_device_count=2 PYTHONPATH=src \\
        python3 benchmarks/fdtd_slab_profile.py --size 24 --devices 2 --steps 4 8 --kernel xla

One JSON line per (devices, exchange) with the timings and the fit; the per-pass time of k
devices over one device's is the slab loop's per-pass efficiency.
"""

from __future__ import annotations

import argparse
import json
import time

import jax
import numpy as np

from emjax import fdtd
from emjax.bench import git_commit
from emjax.fdtd.bench import benchmark_simulation

NO_EXCHANGE = {  # emjax.fdtd.blocked.halos without the exchange (the halos keep stale planes)
    "exchange": lambda a, th, n, axis=0: a,
    "exchange_group": lambda arrays, th, n: list(arrays),
    "send_interior": lambda fields, rect, th: (None, fields),
    "finish_interior": lambda fields, psis, got, rect, th: (fields, psis),
}


def timings(sim, steps_list, devices, kernel):
    """{steps: seconds of one chunk of that many steps} after a warm-up of each length."""
    out = {}
    for steps in steps_list:
        fdtd.run(sim, steps, chunk=steps, layout=devices, progress=False, kernel=kernel)  # compiles
        t0 = time.perf_counter()
        r = fdtd.run(sim, steps, chunk=steps, layout=devices, progress=False, kernel=kernel)
        out[steps] = {"wall_s": time.perf_counter() - t0, "seconds": r.seconds, "kernel": r.kernel}
    return out


def fit(steps_list, seconds, th):
    """(per call, per pass) of a least-squares line through (passes, seconds)."""
    passes = np.array([s / th for s in steps_list], float)
    A = np.stack([np.ones_like(passes), passes], 1)
    (a, b), *_ = np.linalg.lstsq(A, np.asarray(seconds, float), rcond=None)
    return float(a), float(b)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=512, help="N: N^3 cells per device")
    ap.add_argument("--devices", type=int, default=2)
    ap.add_argument("--steps", type=int, nargs="+", default=[40, 120, 400], help="chunk lengths")
    ap.add_argument("--th", type=int, default=4, help="steps per pass (the kernel's TH) for the fit")
    ap.add_argument("--exchange", nargs="+", default=["on"], choices=["on", "none"])
    ap.add_argument("--kernel", default="blocked", choices=["blocked", "xla"])
    a = ap.parse_args(argv)
    from emjax.fdtd.blocked import halos

    base = None
    for k in (1, a.devices):
        sim = benchmark_simulation(a.size, shape=(k * a.size, a.size, a.size))[0]
        for ex in a.exchange if k > 1 else ["on"]:
            saved = {k: getattr(halos, k) for k in NO_EXCHANGE}
            if ex == "none":
                for k, f in NO_EXCHANGE.items():
                    setattr(halos, k, f)
            jax.clear_caches()  # the slab loop is traced again with this exchange
            try:
                t = timings(sim, a.steps, k if k > 1 else None, a.kernel)
            finally:
                for k, f in saved.items():
                    setattr(halos, k, f)
                jax.clear_caches()
            secs = [t[s]["seconds"] for s in a.steps]
            per_call, per_pass = fit(a.steps, secs, a.th)
            cells = k * a.size**3
            row = {
                "devices": k,
                "exchange": ex,
                "size": a.size,
                "kernel": t[a.steps[-1]]["kernel"],
                "chunks": t,
                "per_call_s": per_call,
                "per_pass_s": per_pass,
                "pass_rate_cells_per_s": cells * a.th / per_pass if per_pass > 0 else None,
                "commit": git_commit(),
                "device": str(jax.devices()[0].device_kind),
            }
            if k == 1:
                base = per_pass
            elif base:
                row["per_pass_efficiency"] = base / per_pass
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
