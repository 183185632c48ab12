"""The window run stopped at a checkpoint and resumed on the GPU: bit for bit the
uninterrupted window run; the checkpoint size and times.

    PYTHONPATH=src python3 benchmarks/fdtd_window_checkpoint.py
"""

import json
import os
import time

import numpy as np

from emjax.fdtd import window
from emjax.fdtd.window_bench import simulation

sim = simulation(600, "single", 2, 10)
ck = "/tmp/w600.npz"


class Stop(Exception):
    pass


def stop(d, n):
    if d >= 32:
        raise Stop


t = time.perf_counter()
ref = window.run_window(sim, 64, th=16, device_bytes=20e9)
t_ref = time.perf_counter() - t
t = time.perf_counter()
try:
    window.run_window(sim, 64, th=16, device_bytes=20e9, checkpoint=ck, chunk=32, progress=stop)
except Stop:
    pass
t_a = time.perf_counter() - t
size = os.path.getsize(ck)
t = time.perf_counter()
b = window.run_window(sim, 64, th=16, device_bytes=20e9, checkpoint=ck, chunk=32)
t_b = time.perf_counter() - t
same = all(np.array_equal(x, y) for x, y in ((ref.E, b.E), (ref.H, b.H), (ref.probes, b.probes)))
print(
    json.dumps(
        dict(
            n=600,
            steps=64,
            th=16,
            bit_for_bit=bool(same),
            ckpt_gb=size / 1e9,
            t_uninterrupted=t_ref,
            t_to_stop=t_a,
            t_resume=t_b,
            emax=float(np.abs(ref.E).max()),
        )
    )
)
