import os, re, sys, time
import numpy as np
from emjax.fdtd.bench import fdtd_benchmark
import emjax.fdtd.simulation as S
captured = {}
orig = S._advance
def spy(plan, arrays, state, steps):
    if "txt" not in captured and steps > 2:
        captured["txt"] = orig.lower(plan, arrays, state, steps).compile().as_text()
    return orig(plan, arrays, state, steps)
S._advance = spy
for m in sys.argv[1:]:
    captured.clear()
    r = fdtd_benchmark(256, 200, material=m)
    txt = captured["txt"]
    # kernels: fusions and standalone gathers/scatters at the top level of computations
    n_fusion = len(re.findall(r"= \S+ fusion\(", txt))
    n_gather = len(re.findall(r" gather\(", txt)); n_scatter = len(re.findall(r" scatter\(", txt))
    print(m, round(r["cells_per_s"]/1e9, 2), "fusions", n_fusion, "gather", n_gather, "scatter", n_scatter, flush=True)
