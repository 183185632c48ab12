"""The FDTD benchmark behind ``emjax bench fdtd``: cell updates per second and the fraction of
the device's stream bandwidth."""

from __future__ import annotations

import datetime
import time

import jax
import numpy as np

from .. import backend
from ..backend import device_description
from ..bench import copy_bandwidth, git_commit, stream_bandwidth
from ..errors import ConfigError


def fdtd_benchmark(
    size: int,
    steps: int = 200,
    precision: str = "single",
    boundary: str = "cpml",
    order: int = 2,
    material: str = "vacuum",
    pml_thickness: int = 10,
    bandwidth: float | None = None,
    copy: float | None = None,
    devices: int | None = None,
    shape: tuple | None = None,
    kernel: str = "auto",
    dx: float = 1.0,
) -> dict:
    """Cell updates per second of the FDTD step on an N^3 grid with a z-dipole at the centre.

    ``material``: "vacuum" (scalar coefficients), "dielectric" (per-cell eps array),
    "drude" (a Drude cube, one pole, per-cell pole coefficients and currents J), or an eps =
    2.25 sphere of radius N/4 from an emjax.scene (one per N^3 cube along x: a weak-scaling
    grid (k N, N, N) holds k), "sphere" (staircased per node) or
    "sphere-subpixel" (Kottke tensors at the interface nodes; both in the sparse box),
    "sphere-diagonal" (the tensors' diagonal per E node: eps of shape (3, N, N, N), no box,
    which the blocked kernel runs), or "sphere-drude" (a Drude sphere, subpixel: its
    interface nodes are two-pole media in the box).
    ``devices``: run on that many devices (``fdtd.run(layout=devices)``, slabs along x);
    ``shape``: a grid other than N^3 (the scaling runs' (k N, N, N)); ``dx``: the cell size
    (lengths in units of it: the same cells, sources and media at any ``dx``).
    ``kernel``: the step (:func:`emjax.fdtd.run`'s ``kernel``); the row's ``kernel`` says which
    ran (the bytes model is the XLA step's whichever ran). ``steps``: per device call; the
    run makes one call that compiles, then three timed (``timed_steps`` in the row).
    Bytes per cell update: the model of two passes (H then E), each reading six field
    components and writing three (18 accesses), plus the per-cell coefficient arrays read
    (lossless: cb, 1, or 3 per component for sphere-diagonal; lossy/Drude: ca too) and for
    Drude the currents read and written and their two coefficients (8). The sphere's box
    correction is not in the model (its cost shows as the rate against "dielectric").
    ``bandwidth_fraction`` is against the measured two-reads-per-write stream bandwidth
    (``stream_bandwidth``), the step's own read:write ratio; the copy's is reported too.
    """
    from .. import fdtd

    prec = backend.precision(precision)
    sim, raster_s = benchmark_simulation(size, precision, boundary, order, material, pml_thickness, shape, dx)
    grid, sub = sim.grid, sim.subpixel
    t0 = time.perf_counter()
    fdtd.run(
        sim, 2, chunk=2, layout=devices, progress=False, kernel=kernel
    )  # set-up and a compile of the 2-step scan (not reused)
    setup = time.perf_counter() - t0
    # a warm-up chunk (compiles) and three timed chunks of ``steps``: the stepping rate of a
    # long run, whose chunks after the second are dispatched while the one before runs
    # (emjax.fdtd.chunks; each boundary's NaN check and probe records cost ~0.5 ms)
    r = fdtd.run(sim, 4 * steps, chunk=steps, layout=devices, progress=False, kernel=kernel)
    item = np.dtype(prec.real).itemsize
    coef = {"vacuum": 0, "dielectric": 1, "drude": 10, "sphere-diagonal": 3, "sphere-drude": 10}.get(
        material, 1
    )
    per_cell = (18 + coef) * item
    bw = bandwidth or stream_bandwidth()
    return {
        "case": "fdtd_dipole",
        "size": size,
        "shape": list(grid.shape),
        "devices": devices or 1,
        "cells": grid.n_cells,
        "steps": steps,  # per chunk (device call)
        "timed_steps": r.steps,
        "precision": prec.name,
        "boundary": boundary,
        "order": order,
        "material": material,
        "dx": dx,
        "cells_per_s": r.cells_per_second,
        "kernel": r.kernel,
        "seconds": r.seconds,
        "compile_s": r.compile_seconds,
        "setup_s": setup,
        "bytes_per_cell": per_cell,
        "stream_bandwidth_Bps": bw,
        "copy_bandwidth_Bps": copy if copy is not None else copy_bandwidth(),
        "bandwidth_fraction": r.cells_per_second * per_cell / bw,
        "memory_bytes_per_cell": sim.memory_bytes() / grid.n_cells,
        "box_cells": int(np.prod(sub.shape)) if sub is not None else 0,
        "box_active_nodes": int(sub.active_mask.sum()) if sub is not None else 0,
        "raster_s": raster_s,
        "device": device_description(),
        "date": datetime.date.today().isoformat(),
        "commit": git_commit(),
        "jax": jax.__version__,
    }


#: Grid-sized arrays on the device per benchmark material (six fields; per-cell coefficients;
#: a Drude medium's currents and pole coefficients) and host bytes per cell while the case is
#: set up (the block mask, a float32 eps, the scene's rasterization: see scene_raster).
BENCH_ARRAYS = {
    "vacuum": 6,
    "dielectric": 8,
    "drude": 14,
    "sphere": 12,
    "sphere-subpixel": 12,
    "sphere-diagonal": 12,
    "sphere-drude": 18,
}
BENCH_HOST_BYTES = {
    "vacuum": 1,
    "dielectric": 5,
    "drude": 1,
    "sphere": 65,
    "sphere-subpixel": 65,
    "sphere-diagonal": 100,  # measured 99 at 64^3 (tracemalloc), the step's coefficients included
    "sphere-drude": 97,
}
#: The smallest N of an N^3 benchmark grid: the dipole, its probe 3 cells away, and with a
#: CPML both of its 10-cell layers and two interior cells; a sphere's box of interface nodes
#: (diameter N/2) must also keep two cells from a PEC wall or the CPML.
MIN_SIZE = {"cpml": 22, "pec": 8, "periodic": 8}
MIN_SIZE_SPHERE = {"cpml": 52, "pec": 12, "periodic": 8}


def min_size(boundary: str, material: str) -> int:
    """The smallest N :func:`fdtd_benchmark` takes for this boundary and material."""
    return (MIN_SIZE_SPHERE if material.startswith("sphere") else MIN_SIZE)[boundary]


def max_size(
    precision: str, boundary: str, order: int, material: str, copies: int = 1, out_of_core: bool = False
) -> tuple:
    """(largest N, text): the largest N^3 :func:`fdtd_benchmark` grid whose estimated memory
    fits (the device's state and the host's set-up; one sum on a CPU, where they share the
    host's memory, and for the ``out_of_core`` window, whose state lives on the host),
    ``copies`` such grids at once (virtual CPU devices share the host)."""
    from .. import fdtd
    from ..backend import default_device, device_memory_bytes, host_available_bytes, largest_fitting
    from .spec import state_bytes

    bd = {"cpml": fdtd.CPML(10), "pec": fdtd.PEC(), "periodic": fdtd.Periodic()}[boundary]
    lo = min_size(boundary, material)

    def device(n):
        return copies * state_bytes(
            fdtd.Grid((n,) * 3, 1.0, order=order, boundary=bd, precision=precision), BENCH_ARRAYS[material]
        )

    def host(n):
        return copies * BENCH_HOST_BYTES[material] * n**3

    dev = default_device()
    if dev.platform == "cpu" or out_of_core:
        avail = host_available_bytes()
        n = largest_fitting(lambda n: device(n) + host(n), avail, lo, 1 << 16)
        return n, f"the largest grid that fits the {avail / 1e9:.1f} GB of host memory available"
    avail = device_memory_bytes(dev)
    n_dev = largest_fitting(device, avail, lo, 1 << 16)
    n_host = largest_fitting(host, host_available_bytes(), lo, 1 << 16)
    if n_host < n_dev:
        return (
            n_host,
            f"the largest grid whose set-up fits the {host_available_bytes() / 1e9:.1f} GB of host memory",
        )
    return n_dev, f"the largest grid that fits the {avail / 1e9:.1f} GB free on {dev.device_kind}"


def device_counts(n: int) -> list:
    """1, 2, 4, ... below ``n``, then ``n``."""
    out, k = [], 1
    while k < n:
        out.append(k)
        k *= 2
    return out + [n]


def fdtd_scaling(size: int, devices: int, steps: int = 200, modes=("strong", "weak"), **kw):
    """Strong and weak scaling of the sharded FDTD step (``fdtd.run(layout=k)``, slabs along
    x) over ``k`` = 1, 2, 4, ..., ``devices`` devices; yields one dict per run.

    Strong: the fixed grid N^3 on k devices; weak: (k N, N, N), N^3 cells per device. Each
    dict is :func:`fdtd_benchmark`'s with ``mode``, ``devices`` and ``efficiency``: the
    cell-update rate over ``k`` times the one-device rate of the same mode (the one-device
    runs are the plain single-device path). Sizes whose x length does not divide by k take
    the slower padded path (see :mod:`emjax.fdtd.sharded`); choose N divisible by
    ``devices``. Keyword arguments go to :func:`fdtd_benchmark` (boundary, order, ...).
    On virtual CPU devices (``XLA_FLAGS=--xla_force_host_platform_device_count``) the
    numbers check the machinery only: the devices share the same cores and memory.
    """
    import jax

    if devices > len(jax.devices()):
        raise ConfigError(
            f"--devices {devices}: JAX sees {len(jax.devices())} device(s) "
            "(CPU: XLA_FLAGS=--xla_force_host_platform_device_count=N)"
        )
    kw.setdefault("bandwidth", stream_bandwidth())
    kw.setdefault("copy", copy_bandwidth())
    for mode in modes:
        if mode not in ("strong", "weak"):
            raise ConfigError(f"scaling mode must be strong or weak, got {mode!r}")
        base = None
        for k in device_counts(devices):
            shape = (size, size, size) if mode == "strong" else (k * size, size, size)
            r = fdtd_benchmark(size, steps, devices=k if k > 1 else None, shape=shape, **kw)
            base = base if base is not None else r["cells_per_s"]
            r.update(mode=mode, devices=k, efficiency=r["cells_per_s"] / (k * base))
            yield r


MATERIALS = ("vacuum", "dielectric", "drude", "sphere", "sphere-subpixel", "sphere-diagonal", "sphere-drude")


def benchmark_simulation(
    size: int,
    precision: str = "single",
    boundary: str = "cpml",
    order: int = 2,
    material: str = "vacuum",
    pml_thickness: int = 10,
    shape: tuple | None = None,
    dx: float = 1.0,
) -> tuple:
    """(the GridSimulation :func:`fdtd_benchmark` times, seconds its scene took to rasterize
    or None). Lengths scale with ``dx`` and frequencies with 1 / ``dx``: the same cells,
    pulse and media at any cell size."""
    from .. import fdtd

    prec = backend.precision(precision)
    cpml = fdtd.CPML(pml_thickness, alpha_max=fdtd.CPML.alpha_max / dx)  # (a rate: 1 / length)
    bd = {"cpml": cpml, "pec": fdtd.PEC(), "periodic": fdtd.Periodic()}[boundary]
    grid = fdtd.Grid(
        tuple(shape) if shape is not None else (size,) * 3,
        dx=dx,
        order=order,
        boundary=bd,
        precision=prec.name,
    )
    if material not in MATERIALS:
        raise ConfigError(f"material must be one of {', '.join(MATERIALS)}, got {material!r}")
    eps, disp, sub, raster_s = 1.0, None, None, None
    c = size // 2
    block = np.zeros(grid.shape, bool)
    block[c // 2 : c + c // 2, c // 2 : c + c // 2, c // 2 : c + c // 2] = True
    if material == "dielectric":
        eps = np.where(block, 2.25, 1.0).astype(np.float32)
    elif material == "drude":
        from ..materials import Dispersive, DrudePole

        disp = (Dispersive(eps_inf=1.0, poles=(DrudePole(omega_p=1.0 / dx, gamma=0.05 / dx),)), block)
    elif material.startswith("sphere"):
        from .. import geometry, scene
        from ..materials import Drude

        mat = Drude(1.0, omega_p=0.3 / dx, gamma=0.01 / dx) if material == "sphere-drude" else 2.25
        # one sphere per N^3 cube along x (a weak-scaling grid (k N, N, N) holds k of them)
        sc = scene.Scene(
            [
                scene.Object(
                    geometry.Sphere(), mat, center=((c + j * size) * dx, c * dx, c * dx), size=size / 2 * dx
                )
                for j in range(max(grid.shape[0] // size, 1))
            ]
        )
        averaging = {"sphere": "staircase", "sphere-diagonal": "diagonal"}.get(material, "subpixel")
        phys = fdtd.Simulation(
            size=tuple(n * dx for n in grid.shape),
            resolution=1.0 / dx,
            scene=sc,
            boundary=fdtd.Periodic(),  # only to place the scene on this grid's cells
            center=tuple(n / 2 * dx for n in grid.shape),
            averaging=averaging,
        )
        t0 = time.perf_counter()
        spec, _ = phys.to_grid()
        raster_s = time.perf_counter() - t0
        eps, sub, disp = spec.eps, spec.subpixel, spec.dispersive
    src = fdtd.PointDipole((c, c, c), 2, fdtd.GaussianPulse(frequency=0.05 / dx, bandwidth=0.05 / dx))
    sim = fdtd.GridSimulation(
        grid, eps=eps, dispersive=disp, sources=(src,), probes=(fdtd.Probe((c, c + 3, c), 2),), subpixel=sub
    )
    return sim, raster_s
