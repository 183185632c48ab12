"""Where an FDTD run's GPU time goes: one chunk of ``fdtd.run`` traced with JAX's profiler,
each GPU's kernels summed by name, and the time the GPU sat idle between them.

    NCCL_NVLS_ENABLE=0 PYTHONPATH=src python3 benchmarks/fdtd_trace.py --size 512 --devices 2 \\
        --steps 40 --kernel blocked --out trace.json

N^3 cells per device (weak scaling: (k N, N, N) on k devices; ``--scaling strong``: N^3 in
all), a 10-cell CPML, float32, a z dipole. The run is compiled and run once untraced, then
traced. The JSON written has, per GPU plane: its lines (streams) with their busy times, the
busy time of its streams (the union of their kernels' intervals), the span from the first
kernel's start to the last one's end, and the kernels by total time (name, calls, seconds).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import tempfile
from collections import defaultdict

import jax
from jax.profiler import ProfileData

from emjax import fdtd
from emjax.fdtd.bench import benchmark_simulation


def _union(intervals):
    """Total length of the union of (start, end) intervals."""
    total, end = 0, None
    for s, e in sorted(intervals):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def summarize(xspace_path: str, top: int = 25, sequence: int = 80, window_ns: int = 12_000_000) -> list[dict]:
    """Per GPU plane of the trace: busy and span seconds, its kernels summed by name, and
    ``sequence`` events of its busiest stream in order from the top kernel's first call, and
    up to ``sequence`` events before that call and after the top kernel's last one (the work
    of a call outside its passes); ``streams``: every stream's events in the first
    ``window_ns`` from that call, in time order."""
    data = ProfileData.from_file(xspace_path)
    out = []
    for plane in data.planes:
        if not plane.name.startswith("/device:GPU"):
            continue
        by_name, spans, lines = defaultdict(lambda: [0, 0.0]), [], []
        stream_lines = [ln for ln in plane.lines if ln.name.startswith("Stream")] or list(plane.lines)
        for line in plane.lines:
            evs = [(ev.start_ns, ev.start_ns + ev.duration_ns) for ev in line.events]
            if evs:
                lines.append({"line": line.name, "events": len(evs), "busy_s": _union(evs) * 1e-9})
        for line in stream_lines:
            for ev in line.events:
                t0 = ev.start_ns
                t1 = t0 + ev.duration_ns
                spans.append((t0, t1))
                by_name[ev.name][0] += 1
                by_name[ev.name][1] += ev.duration_ns * 1e-9
        if not spans:
            continue
        ranked = sorted(by_name.items(), key=lambda kv: -kv[1][1])[:top]
        # the busiest stream's events in order from the top kernel's first call (copies left
        # aside: a scene's coefficients are copied in before the steps): a pass's shape
        main = max(stream_lines, key=lambda ln: sum(1 for _ in ln.events))
        evs = sorted(main.events, key=lambda ev: ev.start_ns)
        top_k = next((k for k, _ in ranked if not k.startswith("Memcpy")), ranked[0][0])
        first = next((i for i, ev in enumerate(evs) if ev.name == top_k), 0)
        t0 = evs[first].start_ns if evs else 0

        def rows(events, t0=t0):
            return [
                {
                    "name": ev.name[:60],
                    "t_ms": (ev.start_ns - t0) * 1e-6,
                    "us": ev.duration_ns * 1e-3,
                    "stats": {str(k): str(v)[:60] for k, v in ev.stats},
                }
                for ev in events
            ]

        seq = rows(evs[first : first + sequence])
        # the call's work outside its passes: before the first and after the last top kernel
        last = max((i for i, ev in enumerate(evs) if ev.name == top_k), default=len(evs) - 1)
        around = {"before": rows(evs[:first][-sequence:]), "after": rows(evs[last + 1 :][:sequence])}
        # every stream's events after the last pass (copies between devices run on their own)
        t_end = evs[last].start_ns + evs[last].duration_ns if evs else 0
        tail = sorted(
            ((ev, line.name) for line in stream_lines for ev in line.events if ev.start_ns >= t_end),
            key=lambda e: e[0].start_ns,
        )
        around["after_all"] = [dict(r, line=ln[:30]) for r, (_, ln) in zip(rows([e for e, _ in tail]), tail)][
            : 3 * sequence
        ]
        # every stream's events of the first passes in time order (a collective's kernel
        # beside the compute stream's: whether it overlaps)
        merged = sorted(
            (
                (ev, line.name)
                for line in stream_lines
                for ev in line.events
                if t0 <= ev.start_ns < t0 + window_ns
            ),
            key=lambda e: e[0].start_ns,
        )
        streams = [dict(r, line=ln[:30]) for r, (_, ln) in zip(rows([e for e, _ in merged]), merged)]
        out.append(
            {
                "plane": plane.name,
                "streams": streams,
                "busy_s": _union(spans) * 1e-9,
                "span_s": (max(e for _, e in spans) - min(s for s, _ in spans)) * 1e-9,
                "lines": lines,
                "sequence": seq,
                "around": around,
                "kernels": [{"name": k[:120], "calls": c, "seconds": t} for k, (c, t) in ranked],
            }
        )
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=512, help="N: N^3 cells per device")
    ap.add_argument("--devices", type=int, default=2)
    ap.add_argument("--steps", type=int, default=40, help="steps in the traced chunk")
    ap.add_argument("--kernel", default="blocked", choices=["blocked", "xla", "auto"])
    ap.add_argument("--material", default="vacuum", help="as emjax bench fdtd --material")
    ap.add_argument(
        "--group-by-axes",
        action="store_true",
        help="the CPML rows in one kernel per set of CPML axes they reach (split.GROUP_BY_AXES): "
        "each group's launch shows apart in the sequence",
    )
    ap.add_argument("--scaling", default="weak", choices=["weak", "strong"])
    ap.add_argument("--nx", type=int, default=None, help="planes along x (default: from --scaling)")
    ap.add_argument(
        "--cpml-block",
        default=None,
        help="the CPML kernel's own cells per window, 'YxZ' or 'bulk' (split.CPML_BLOCK; default: "
        "by precision)",
    )
    ap.add_argument("--out", default=None, help="JSON file to write (default: print)")
    a = ap.parse_args(argv)
    k = a.devices
    from emjax.fdtd.blocked import split

    # read while the pass is traced: set before the first run
    split.GROUP_BY_AXES = a.group_by_axes or split.GROUP_BY_AXES
    if a.cpml_block:
        cb = a.cpml_block
        split.CPML_BLOCK = "bulk" if cb == "bulk" else tuple(int(v) for v in cb.split("x"))
    nx = a.nx or (k * a.size if a.scaling == "weak" else a.size)
    sim = benchmark_simulation(a.size, shape=(nx, a.size, a.size), boundary="cpml", material=a.material)[0]
    layout = k if k > 1 else None
    fdtd.run(sim, a.steps, chunk=a.steps, layout=layout, progress=False, kernel=a.kernel)
    with tempfile.TemporaryDirectory() as d:
        with jax.profiler.trace(d):
            r = fdtd.run(sim, a.steps, chunk=a.steps, layout=layout, progress=False, kernel=a.kernel)
        paths = glob.glob(os.path.join(d, "**", "*.xplane.pb"), recursive=True)
        planes = summarize(paths[0]) if paths else []
    res = {
        "size": a.size,
        "devices": k,
        "scaling": a.scaling,
        "layout": layout,
        "steps": a.steps,
        "group_by_axes": a.group_by_axes,
        "cpml_block": a.cpml_block,
    }
    res.update(kernel=r.kernel, seconds=r.seconds)
    res["planes"] = planes
    text = json.dumps(res, indent=1)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    print(text if not a.out else json.dumps({kk: v for kk, v in res.items() if kk != "planes"}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
