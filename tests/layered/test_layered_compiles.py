"""Compile once: a layered map compiles a fixed, small set of programs,
whatever its groups' point counts and its quadratures' node counts; a second map of the
same kind whose groups fall in the same point buckets compiles nothing, nor the same map.

Counted in a fresh interpreter (no program cached in memory, the persistent cache off):
every XLA compilation JAX reports (``/jax/core/compile/backend_compile_duration``)."""

import json
import os
import subprocess
import sys

from emjax.layered.groups import GPU_MIN_POINTS, point_chunk

CODE = r"""
import collections, json
import numpy as np
from jax import monitoring
seen = collections.Counter()
def listen(event, seconds, **kw):
    if event == "/jax/core/compile/backend_compile_duration":
        seen[kw.get("fun_name")] += 1
monitoring.register_event_duration_secs_listener(listen)
from emjax.layered import Stack, dipole_fields
st = Stack(eps=[2.25, 1.0])
rng = np.random.default_rng(0)
def pts(n, spread):
    p = rng.uniform(-spread, spread, (n, 3))
    p[:, 2] = np.where(np.arange(n) % 2, 1, -1) * (np.abs(p[:, 2]) + 2.0)  # both media, 17-32 each
    return p
kw = dict(p=(0, 0, 1), part="scattered", fields="E", precision="single", rtol=1e-5)
counts, nodes = [], []
for n, spread in ((40, 30.0), (40, 30.0), (57, 200.0)):
    before = dict(seen)
    r = dipole_fields(st, 600.0, (0.0, 0.0, 10.0), pts(n, spread), **kw)
    counts.append({k: v - before.get(k, 0) for k, v in seen.items() if v - before.get(k, 0)})
    nodes.append(sorted(s["nodes"] for s in r.stats))
print("RESULT", json.dumps(dict(counts=counts, nodes=nodes)))
"""


def test_a_map_compiles_each_kernel_once():
    env = dict(os.environ, EMJAX_COMPILATION_CACHE="0", JAX_PLATFORMS="cpu", OPENBLAS_NUM_THREADS="1")
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    out = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads(out.stdout.split("RESULT", 1)[1])
    first, again, other = res["counts"]
    # the refinement's and the integration's kernels, complex (ellipse) and real (tail)
    # nodes, both media with one kernel; each chunk's end: nothing else (no per-shape helpers)
    assert first == {"jit(refine_sums)": 2, "jit(integrate)": 2, "jit(finish_chunk)": 1}, first
    assert again == {}, again
    # other points (a wider map: other node counts in both media) in the same point
    # bucket: nothing (each chunk's end is compiled per bucket, not per map)
    assert res["nodes"][2] != res["nodes"][0], res["nodes"]
    assert other == {}, other


def test_point_chunks_are_few_buckets():
    assert point_chunk(5000, 2048, "cpu") == 2048
    assert [point_chunk(n, 2048, "cpu") for n in (1, 16, 17, 64, 65, 300, 1500)] == [
        16,
        16,
        64,
        64,
        256,
        1024,
        2048,
    ]
    # on a GPU every group below the floor shares one size
    assert {point_chunk(n, 65536, "gpu") for n in (1, 1408, 2432, 4480, 8064)} == {GPU_MIN_POINTS}
    assert point_chunk(20000, 65536, "gpu") == 4 * GPU_MIN_POINTS
    sizes = {point_chunk(n, 65536, "gpu") for n in range(1, 65537, 97)}
    assert len(sizes) <= 3 and max(sizes) == 65536
