"""Step rate and the number of fused kernels per FDTD step (the optimized HLO of the scan),
for `emjax bench fdtd` materials at 256^3: how many kernels a scene's interface corrections
add between the H and the E pass (BENCHMARKS.md).

    PYTHONPATH=src python3 benchmarks/fdtd_kernel_count.py dielectric sphere sphere-subpixel
"""

import re
import sys

import emjax.fdtd.step as S
from emjax.fdtd.bench import fdtd_benchmark

captured = {}
orig = S.advance


def spy(plan, arrays, state, steps):
    if "txt" not in captured and steps > 2:
        captured["txt"] = orig.lower(plan, arrays, state, steps).compile().as_text()
    return orig(plan, arrays, state, steps)


S.advance = spy
for m in sys.argv[1:]:
    captured.clear()
    r = fdtd_benchmark(256, 200, material=m)
    txt = captured["txt"]
    # kernels: fusions and standalone gathers/scatters at the top level of computations
    n_fusion = len(re.findall(r"= \S+ fusion\(", txt))
    n_gather = len(re.findall(r" gather\(", txt))
    n_scatter = len(re.findall(r" scatter\(", txt))
    print(
        m,
        round(r["cells_per_s"] / 1e9, 2),
        "fusions",
        n_fusion,
        "gather",
        n_gather,
        "scatter",
        n_scatter,
        flush=True,
    )
