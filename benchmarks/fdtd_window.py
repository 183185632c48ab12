"""FDTD calculation window (issue 19): cell updates/s vs steps per pass (th), against the
in-memory run of the same grid and the rate model of emjax.fdtd.window (the paper's Fig. 6).

PYTHONPATH=src python3 benchmarks/fdtd_window.py --n 64 --slab 16
PYTHONPATH=src python3 benchmarks/fdtd_window.py --n 512 --slab 128 --th 1 4 16 64 --out w.jsonl
PYTHONPATH=src python3 benchmarks/fdtd_window.py --n 1500 --device-gb 30 --no-in-memory --r-dev 3.2e10

(1500^3 float32 with a CPML: E and H are 81 GB of host memory; 1800^3 needs 140 GB.)
One JSON line per th (stdout, and appended to --out): the measured rate (passes after the
first of each length, compiles excluded) and seconds per slab and pass (``t_slab_s``), the
model's compute and transfer seconds per slab and pass and its predictions with transfers
overlapped (``model``, the GPU) or not (``model_serial``, the CPU; nothing fitted), and
``t_residual_s``: the measured seconds per slab and pass less the model's (the fixed host
cost T_0 and noise); the in-memory rate (``r_dev``) and the measured host link bandwidth
(``b_link``: a 256 MB device_put copy and copy back, harmonic mean of both ways).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import jax
import numpy as np

from emjax import fdtd
from emjax.bench import git_commit
from emjax.fdtd import window


def link_bandwidth(nbytes: int = 256 << 20, repeats: int = 3) -> tuple:
    """(host -> device, device -> host) bytes/s of a NumPy array to the default device."""
    x = np.ones(nbytes // 4, np.float32)
    dev = jax.devices()[0]
    jax.device_put(x, dev).block_until_ready()
    up = down = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        y = jax.device_put(np.array(x) if dev.platform == "cpu" else x, dev)  # a copy, as run_window's
        y.block_until_ready()
        up = min(up, time.perf_counter() - t0)
        z = y + 1  # a fresh device buffer (the CPU may alias x)
        z.block_until_ready()
        t0 = time.perf_counter()
        np.array(z) if dev.platform == "cpu" else np.asarray(z)  # the CPU's asarray is a view
        down = min(down, time.perf_counter() - t0)
    return nbytes / up, nbytes / down


def simulation(n: int, precision: str, order: int, cpml: int):
    g = fdtd.Grid((n, n, n), dx=0.05, order=order, boundary=fdtd.CPML(cpml), precision=precision)
    c = n // 2
    src = fdtd.PointDipole((c, c, c), 2, fdtd.Ricker(frequency=1.0))
    return fdtd.GridSimulation(g, sources=(src,), probes=(fdtd.Probe((c, c, c + 2), 2),))


def sweep(
    n: int,
    ths=(1, 2, 4, 8, 16, 32, 64),
    *,
    slab: int | None = None,
    device_gb: float | None = None,
    passes: int = 3,
    precision: str = "single",
    order: int = 2,
    cpml: int = 10,
    in_memory: bool = True,
    r_dev: float | None = None,
):
    """Rows (dicts): the in-memory run (unless ``in_memory=False``), then one per th."""
    sim = simulation(n, precision, order, cpml)
    dev = jax.devices()[0]
    base = {
        "device": dev.device_kind,
        "platform": dev.platform,
        "n": n,
        "precision": precision,
        "order": order,
        "cpml": cpml,
        "commit": git_commit(),
        "date": time.strftime("%Y-%m-%d"),
    }
    if in_memory:
        steps = 4 * max(10, min(50, 2_000_000_000 // sim.grid.n_cells // 4))
        res = fdtd.run(sim, steps, chunk=steps // 4)
        r_dev = res.cells_per_second
        yield {**base, "mode": "in_memory", "steps": steps, "rate": r_dev}
    up, down = link_bandwidth()
    b_link = 2 / (1 / up + 1 / down)
    b_in, b_out = window.bytes_per_cell(sim)
    plane = sim.grid.n_cells // n
    for th in ths:
        s = slab
        if s is None:
            s = window.slab_for_budget(sim, th, device_gb * 1e9) if device_gb else n
        steps = th * passes
        t0 = time.perf_counter()
        res = window.run_window(sim, steps, th=th, slab=s)
        wall = time.perf_counter() - t0
        row = {
            **base,
            "mode": "window",
            "th": th,
            "slab": s,
            "ghost": window.ghost(order, th),
            "steps": steps,
            "rate": res.cells_per_second,
            "wall_s": round(wall, 2),
            "compile_s": round(res.compile_seconds, 2),
        }
        # measured seconds per slab and pass (the timed passes), against the model's parts
        row["t_slab_s"] = res.seconds / (res.steps / th) / -(-n // s)
        if r_dev:
            kw = dict(nx=n, bytes_in=b_in, bytes_out=b_out, plane=plane)
            t_c, t_t = window.model_times(r_dev, b_link, th, s, order, **kw)
            row["t_compute_s"], row["t_transfer_s"] = t_c, t_t
            row["model"] = window.model_rate(r_dev, b_link, th, s, order, overlap=True, **kw)
            row["model_serial"] = window.model_rate(r_dev, b_link, th, s, order, overlap=False, **kw)
            # what the model leaves out, per slab and pass: the fixed host cost T_0 (dispatch,
            # one transfer per array) and noise; window.model_rate(overhead=) takes it
            serial = dev.platform == "cpu"
            row["t_residual_s"] = row["t_slab_s"] - ((t_c + t_t) if serial else max(t_c, t_t))
        row.update(r_dev=r_dev, b_link=b_link, b_up=up, b_down=down, bytes_in=b_in, bytes_out=b_out)
        yield row


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=64, help="grid n^3")
    ap.add_argument("--slab", type=int, default=None, help="planes per slab (default: from --device-gb)")
    ap.add_argument("--device-gb", type=float, default=None, help="device budget that sets the slab")
    ap.add_argument("--th", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32, 64])
    ap.add_argument("--passes", type=int, default=3, help="passes per th (the first one compiles)")
    ap.add_argument("--precision", default="single")
    ap.add_argument("--order", type=int, default=2)
    ap.add_argument("--cpml", type=int, default=10)
    ap.add_argument("--no-in-memory", action="store_true", help="skip the in-memory run (grid too big)")
    ap.add_argument("--r-dev", type=float, default=None, help="in-memory cells/s for the model")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    rows = sweep(
        args.n,
        args.th,
        slab=args.slab,
        device_gb=args.device_gb,
        passes=args.passes,
        precision=args.precision,
        order=args.order,
        cpml=args.cpml,
        in_memory=not args.no_in_memory,
        r_dev=args.r_dev,
    )
    for row in rows:
        emit(args.out, row)


def emit(out, row):
    line = json.dumps(row)
    print(line, flush=True)
    if out is not None:
        with open(out, "a") as f:
            f.write(line + "\n")


if __name__ == "__main__":
    main()
