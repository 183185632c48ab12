"""Where a window pass spends the GPU's time: one 1200^3-class pass profiled
with jax.profiler, summarized per GPU stream (busy seconds, span) and per kernel name, and
the idle gaps of the compute stream. Needs a GPU. At 1200^3 on the H100 (2026-11-25) the
traced pass crashed with CUDA_ERROR_LAUNCH_FAILED (the same run untraced completes): use it
on smaller grids.

    PYTHONPATH=src python3 benchmarks/fdtd_window_profile.py --n 1200 --device-gb 62 --th 32
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import tempfile

import jax

from emjax.fdtd import window
from emjax.fdtd.window_bench import simulation


def summarize(trace_dir: str) -> dict:
    from jax._src.lib import _profile_data

    f = glob.glob(trace_dir + "/**/*.xplane.pb", recursive=True)[0]
    pd = _profile_data.ProfileData.from_file(f)
    out = {}
    for plane in pd.planes:
        if "GPU" not in plane.name.upper():
            continue
        for line in plane.lines:
            ev = sorted(((e.start_ns, e.duration_ns, e.name) for e in line.events), key=lambda x: x[0])
            if not ev:
                continue
            t0, t1 = ev[0][0], max(a + d for a, d, _ in ev)
            names = collections.Counter()
            for _, d, name in ev:
                names[name[:48]] += d
            gaps, end = [], ev[0][0]
            for a, d, _ in ev:
                if a > end:
                    gaps.append(a - end)
                end = max(end, a + d)
            out[line.name] = {
                "events": len(ev),
                "span_s": (t1 - t0) / 1e9,
                "busy_s": sum(d for _, d, _ in ev) / 1e9,
                "gaps_over_1ms": sum(1 for g in gaps if g > 1e6),
                "gap_s": sum(gaps) / 1e9,
                "top": [(k, round(v / 1e9, 4)) for k, v in names.most_common(8)],
            }
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1200)
    ap.add_argument("--device-gb", type=float, default=62)
    ap.add_argument("--th", type=int, default=32)
    a = ap.parse_args()
    sim = simulation(a.n, "single", 2, 10)
    slab = window.slab_for_budget(sim, a.th, a.device_gb * 1e9)
    d = tempfile.mkdtemp()

    def progress(done, steps):  # the first pass compiles: trace the second one only
        if done == a.th:
            jax.profiler.start_trace(d)

    window.run_window(sim, 2 * a.th, th=a.th, slab=slab, progress=progress)
    jax.profiler.stop_trace()
    print(json.dumps({"n": a.n, "th": a.th, "slab": slab, "streams": summarize(d)}, indent=1))


if __name__ == "__main__":
    main()
