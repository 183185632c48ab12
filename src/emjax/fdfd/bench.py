"""The FDFD benchmark behind ``emjax bench fdfd``: solve time of plane-wave scattering on
N x N (2-D) or N x N x N (3-D) grids, PML included, through the same path as ``emjax fdfd``
(config -> :func:`~emjax.fdfd.solve_rcs`).

2-D follows Zainud-Deen et al.'s Table 2 (N = 160 ... 1210, N^2 unknowns): a layer of
cylinders spaced one wavelength, here dielectric (eps = 4, radius 0.2 wavelength), TM, phi_inc =
90 deg, 20 cells per wavelength, a 20-cell PML. 3-D: a dielectric sphere (eps = 4, radius
0.25 wavelength), 10 cells per wavelength, an 8-cell PML, 3 N^3 unknowns, QMR (rtol 1e-6)
unless another solver is asked for.
"""

from __future__ import annotations

import datetime
import resource
import sys
import time

import numpy as np

from ..backend import device_description
from ..bench import git_commit
from ..errors import ConfigError

__all__ = ["bench_config", "fdfd_benchmark"]


def bench_config(n: int, dims: int = 2, solver: str = "auto", precision: str = "double") -> dict:
    """The TOML-equivalent config of the benchmark case on ``n`` nodes per axis."""
    if dims == 2:
        res, pml = 20, 20
        side = (n - 1 - 2 * pml) / res
        if side < 1.5:
            raise ConfigError(
                f"--size: 2-D benchmark grids need N >= {int(1.5 * res + 1 + 2 * pml)}, got {n}"
            )
        reach = side / 2 - 0.2 - 5 / res  # cylinder centres keep 5 cells off the region's edges
        centres = np.arange(-np.floor(reach), np.floor(reach) + 1)
        objects = [
            {"shape": "cylinder", "center": [float(x), float(y)], "radius": 0.2, "eps": 4.0}
            for x in centres
            for y in centres
        ]
        cfg = {"dims": 2, "polarization": "TM", "direction": [0.0, 1.0, 0.0], "size": [side, side]}
    else:
        res, pml = 10, 8
        side = (n - 1 - 2 * pml) / res
        if side < 1.0:
            raise ConfigError(
                f"--size: 3-D benchmark grids need N >= {int(1.0 * res + 1 + 2 * pml)}, got {n}"
            )
        objects = [{"shape": "sphere", "center": [0.0, 0.0, 0.0], "radius": 0.25, "eps": 4.0}]
        cfg = {"dims": 3, "polarization": [0.0, 0.0, 1.0], "direction": [1.0, 0.0, 0.0], "size": [side] * 3}
        cfg["precision"] = precision
    cfg.update(wavelength=1.0, resolution=res, pml_cells=pml, objects=objects, rcs={"angles": 361})
    if dims == 3 and solver == "auto":
        solver = "qmr"  # SuperLU's fill-in makes 3-D direct solves impractical beyond ~30^3
    if solver != "auto":
        cfg["solver"] = {"type": solver}
    return cfg


def _peak_device_bytes() -> int | None:
    import jax

    stats = jax.devices()[0].memory_stats() or {}
    return stats.get("peak_bytes_in_use")


def fdfd_benchmark(
    n: int, dims: int = 2, solver: str = "auto", precision: str = "double", repeats: int = 1
) -> dict:
    """One benchmark case (see the module docstring): the first run (3-D iterative: JAX
    compilation included) and the best of ``repeats`` more in 3-D (one more for a 2-D
    device solve: ``seconds`` is then the warm call, ``first_call_s`` the first); set-up, factor and solve
    times as the solver reports them; peak resident memory of this process (Linux's
    ru_maxrss: the peak so far, so run one size per process for a clean number) and the
    device's peak where JAX reports it."""
    from .config import build_fdfd
    from .rcs import solve_rcs

    problem = build_fdfd(bench_config(n, dims, solver, precision))
    t0 = time.perf_counter()
    result = solve_rcs(problem, progress=False)
    first = time.perf_counter() - t0
    best = result
    device_2d = dims == 2 and "block Thomas" in result.stats["solver"]
    if dims == 3 or device_2d:  # warm calls (a host 2-D solve has nothing to compile)
        for _ in range(repeats if dims == 3 else 1):
            r = solve_rcs(problem, progress=False)
            if r.stats["seconds"] < best.stats["seconds"]:
                best = r
    st = best.stats
    host = dims == 2 and "block Thomas" not in st["solver"]
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    out = {
        "case": f"fdfd_{dims}d_{'cylinder_layer' if dims == 2 else 'sphere'}",
        "dims": dims,
        "grid": "x".join([str(n)] * dims),
        "unknowns": st["unknowns"],
        "objects": len(problem.objects),
        "solver": st["solver"],
        "precision": precision if dims == 3 else "double",
        "seconds": st["seconds"],
        "first_call_s": first,
        "iterations": st["iterations"],
        "converged": st["converged"],
        "residual": st["residual"],
        "peak_rss_bytes": int(rss),
        "peak_device_bytes": None if host else _peak_device_bytes(),
        "device": f"host CPU ({st['solver']})" if host else device_description(),
        "date": datetime.date.today().isoformat(),
        "commit": git_commit(),
    }
    for key in ("assemble_s", "setup_s", "preconditioner_s", "factor_s", "solve_s", "nnz"):
        if key in st:
            out[key] = st[key]
    return out
