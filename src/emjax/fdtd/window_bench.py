"""The calculation window's benchmark: cell updates/s vs steps per pass (th)
against the in-memory run and the rate model of :mod:`emjax.fdtd.window`; used by ``emjax
bench fdtd --out-of-core`` and benchmarks/fdtd_window.py (whose docstring explains the
columns)."""

from __future__ import annotations

import time

import jax
import numpy as np

from .. import fdtd
from ..bench import git_commit
from . import window


def link_bandwidth(nbytes: int = 256 << 20, repeats: int = 3, host_memory: str = "numpy") -> tuple:
    """(host -> device, device -> host) bytes/s between the default device and host memory
    as the window's ``host_memory`` path holds it: ``"numpy"`` (a NumPy array, pageable;
    back by ``np.asarray``) or ``"pinned"`` (a JAX array in the device's ``pinned_host``
    memory; back by ``device_put`` to it). Best of ``repeats``."""
    dev = jax.devices()[0]
    if host_memory == "pinned":
        pinned = jax.sharding.SingleDeviceSharding(dev, memory_kind="pinned_host")
        on_dev = jax.sharding.SingleDeviceSharding(dev, memory_kind=dev.default_memory().kind)
        x = jax.device_put(np.ones(nbytes // 4, np.float32), pinned)
        jax.device_put(x, on_dev).block_until_ready()
        up = down = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            y = jax.device_put(x, on_dev)
            y.block_until_ready()
            up = min(up, time.perf_counter() - t0)
            z = (y + 1).block_until_ready()  # a fresh device buffer
            t0 = time.perf_counter()
            jax.device_put(z, pinned).block_until_ready()
            down = min(down, time.perf_counter() - t0)
        return nbytes / up, nbytes / down
    x = np.ones(nbytes // 4, np.float32)
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


def fdtd_window_sweep(
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
    host_memory: str | None = None,
    kernel: str = "auto",
):
    """Rows (dicts): the in-memory run (unless ``in_memory=False``), then one per th.
    ``host_memory``: the window's host path (None: pinned where the device has it; see
    :func:`emjax.fdtd.window.host_memory_path`); every window row says which one ran
    (``host_memory``), the link rates measured for both paths (``link``: GB/s up and down)
    and the model's prediction with the directions added (``model``) or overlapped
    (``model_duplex``: a GPU's two copy engines) at the rates of the path that ran.
    ``kernel``: the step of the in-memory run and of the window's slabs ("auto", "xla" or
    "blocked", :func:`emjax.fdtd.run`); every row says which ran (``kernel``) and the window
    rows their rate over the in-memory one (``of_in_memory``)."""
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
    if in_memory:  # four chunks (the first compiles), each a multiple of the blocked kernel's TH
        chunk = 12 * max(2, min(4, 500_000_000 // sim.grid.n_cells))
        steps = 4 * chunk
        res = fdtd.run(sim, steps, chunk=chunk, progress=False, kernel=kernel)
        r_dev = res.cells_per_second
        yield {**base, "mode": "in_memory", "steps": steps, "rate": r_dev, "kernel": res.kernel}
        del res
    window.host_memory_path(host_memory, dev)  # refuses a bad value before any run
    link = {"numpy": link_bandwidth()}
    if window.host_memory_kind(dev) is not None:
        link["pinned"] = link_bandwidth(host_memory="pinned")
    b_in, b_out = window.bytes_per_cell(sim)
    plane = sim.grid.n_cells // n
    for th in ths:
        s = slab
        if s is None:
            s = window.slab_for_budget(sim, th, device_gb * 1e9) if device_gb else n
        steps = th * passes
        t0 = time.perf_counter()
        stats = {}
        res = window.run_window(
            sim, steps, th=th, slab=s, host_memory=host_memory, stats=stats, kernel=kernel
        )
        wall = time.perf_counter() - t0
        up, down = link[stats["host_memory"]]  # the path that ran (pinned may fall back)
        b_link = 2 / (1 / up + 1 / down)
        row = {
            **base,
            "mode": "window",
            "host_memory": stats["host_memory"],
            "fallback": stats.get("fallback"),
            "th": th,
            "slab": s,
            "ghost": window.ghost(order, th),
            "steps": steps,
            "rate": res.cells_per_second,
            "kernel": res.kernel,
            "wall_s": round(wall, 2),
            "compile_s": round(res.compile_seconds, 2),
            "link": {k: [round(a / 1e9, 2), round(b / 1e9, 2)] for k, (a, b) in link.items()},
            "pinned_pool_gib": (window.pinned_pool_limit(dev) or 0) / 2**30 or None,
        }
        if "bytes_up" in stats:  # the pinned path: bytes moved per pass, host waits for the device
            row.update(
                bytes_up_pass=stats["bytes_up"],
                bytes_down_pass=stats["bytes_down"],
                chunks=stats["chunks"],
                wait_s=round(stats["wait_s"], 3),
                upload_issue_s=round(stats["upload_issue_s"], 3),
                dispatch_s=round(stats["dispatch_s"], 3),
            )
        # measured seconds per slab and pass (the timed passes), against the model's parts
        row["t_slab_s"] = res.seconds / (res.steps / th) / -(-n // s)
        del res  # its E and H (host memory the size of the grid's fields) before the next run
        if r_dev:
            kw = dict(nx=n, bytes_in=b_in, bytes_out=b_out, plane=plane)
            t_c, t_t = window.model_times(r_dev, b_link, th, s, order, **kw)
            row["t_compute_s"], row["t_transfer_s"] = t_c, t_t
            row["model"] = window.model_rate(r_dev, b_link, th, s, order, overlap=True, **kw)
            row["model_serial"] = window.model_rate(r_dev, b_link, th, s, order, overlap=False, **kw)
            row["model_duplex"] = window.model_rate(r_dev, up, th, s, order, b_down=down, **kw)
            # what the model leaves out, per slab and pass: the fixed host cost T_0 (dispatch,
            # one transfer per array) and noise; window.model_rate(overhead=) takes it
            serial = dev.platform == "cpu"
            row["t_residual_s"] = row["t_slab_s"] - ((t_c + t_t) if serial else max(t_c, t_t))
        if r_dev:
            row["of_in_memory"] = row["rate"] / r_dev
        row.update(r_dev=r_dev, b_link=b_link, b_up=up, b_down=down, bytes_in=b_in, bytes_out=b_out)
        stats = jax.devices()[0].memory_stats() or {}
        if "peak_bytes_in_use" in stats:  # the process's peak so far (the device budget's check)
            row["device_peak_gb"] = round(stats["peak_bytes_in_use"] / 1e9, 2)
            row["device_limit_gb"] = round(stats.get("bytes_limit", 0) / 1e9, 2)
        yield row
