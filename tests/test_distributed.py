"""Two processes on localhost through jax.distributed (gloo collectives on the CPU), started
the way a torchrun-style launcher would (MASTER_ADDR/MASTER_PORT, WORLD_SIZE, RANK): a
layout spans both processes' devices, a field split over them is differenced across the
process boundary and gathered back on every process. Each method on two processes:
test_distributed_methods.py."""

import os
import socket
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).parents[1] / "src"

CODE = """
import numpy as np, jax
from emjax.layout import Layout, initialize_distributed
assert initialize_distributed()
lay = Layout.all()
assert jax.process_count() == 2 and lay.n == 4, (jax.process_count(), lay.n)
assert lay.describe() == "4 x cpu on 2 processes", lay.describe()
g = np.random.default_rng(0).standard_normal((16, 5)).astype(np.float32)
x = lay.put(g, 0)
assert not x.is_fully_addressable  # half of it lives in the other process
d = jax.jit(lambda a: (a[1:] - a[:-1]) * 2.0)(x)
s = jax.jit(lambda a: (a * a).sum())(x)
out = lay.gather(d)
assert np.array_equal(out, (g[1:] - g[:-1]) * 2.0), abs(out - (g[1:] - g[:-1]) * 2.0).max()
assert abs(float(s) - float((g.astype(np.float64) ** 2).sum())) < 1e-3
# gathered in pieces along an axis that is not split (bounded device memory): 7 planes in
# pieces of 3 (the last one overlapping), and of 1
g3 = np.arange(8 * 7 * 3, dtype=np.float32).reshape(8, 7, 3)
x3 = lay.put(g3, 0)
for piece_bytes in (300, 100):
    assert np.array_equal(lay.gather(x3, piece_bytes=piece_bytes), g3), piece_bytes
print("rank", jax.process_index(), "ok")
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def test_two_processes_on_localhost():
    _launch(CODE)


def _launch(code):
    port = _free_port()
    procs = []
    for rank in range(2):
        env = dict(os.environ)
        env.update(
            XLA_FLAGS="--xla_force_host_platform_device_count=2",
            JAX_PLATFORMS="cpu",
            MASTER_ADDR="localhost",
            MASTER_PORT=str(port),
            WORLD_SIZE="2",
            RANK=str(rank),
            OPENBLAS_NUM_THREADS="1",
            EMJAX_COMPILATION_CACHE="0",
            PYTHONPATH=os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")]),
        )
        for k in ("EMJAX_COORDINATOR", "JAX_COORDINATOR_ADDRESS", "EMJAX_NUM_PROCESSES", "EMJAX_PROCESS_ID"):
            env.pop(k, None)
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", code],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    outs = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise
        outs.append((p.returncode, out, err))
    for rank, (rc, out, err) in enumerate(outs):
        assert rc == 0, f"rank {rank} failed:\n{out}\n{err[-4000:]}"
        assert f"rank {rank} ok" in out
