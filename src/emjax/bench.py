"""Benchmark harness behind ``emjax bench``: compile timed apart, ``block_until_ready``,
results as JSON-ready dicts with the device and the fraction of its copy bandwidth."""

from __future__ import annotations

import datetime
import math
import subprocess
import time

import jax
import jax.numpy as jnp
import numpy as np

from . import __version__, krylov
from .backend import device_description, precision, precision_scope


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=5, cwd=__file__.rsplit("/src/", 1)[0])
        return out.stdout.strip() or None
    except Exception:  # noqa: BLE001
        return None


def _time(fn, *args, repeats: int):
    """(first call incl. compile, best and median of ``repeats`` later calls) in seconds."""
    t0 = time.perf_counter()
    jax.block_until_ready(fn(*args))
    first = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t0)
    return first, min(times), float(np.median(times))


def copy_bandwidth(nbytes: int = 1 << 28, repeats: int = 10) -> float:
    """Measured device copy bandwidth (bytes read + written per second) of ``y = x + 1``."""
    with precision_scope():
        x = jnp.zeros(nbytes // 4, jnp.float32)
        f = jax.jit(lambda a: a + 1)
        _, best, _ = _time(f, x, repeats=repeats)
    return 2 * x.nbytes / best


def matvec_bytes(grid, fft_grid, itemsize: int) -> int:
    """Memory traffic model of one FFT matvec: every 1-D FFT pass reads and writes its array
    once at the size it has, the 6 tensor components are read once, plus the diagonal scaling."""
    nx, ny, nz = grid
    Mx, My, Mz = fft_grid
    passes = [nx * ny * nz + nx * ny * Mz, nx * ny * Mz + nx * My * Mz, nx * My * Mz + Mx * My * Mz]
    fwd = 3 * sum(passes)
    mult = (3 + 6 + 3) * Mx * My * Mz
    scale = 4 * 3 * nx * ny * nz  # s*x in, out; x - s*y
    return (2 * fwd + mult + scale) * itemsize


def dda_benchmark(grid: int, precision: str = "double", repeats: int = 10, solve: bool = True,
                  variant: str = "pruned", m: complex = 1.5 + 0.01j, iterations: int = 20,
                  bandwidth: float | None = None) -> dict:
    """Matvec, per-iteration and full-solve times of a sphere on an N^3 lattice.

    The sphere's diameter spans the N^3 box at 15 dipoles per wavelength (|m| = 1.5, ADDA's
    default density), so its size parameter grows with N.
    """
    from .dda import DDAProblem
    from .dda import interaction as inter
    from .dda import observables
    from .dda.matvec import DDAOperator, apply, sqrt_alpha_grid
    from .geometry import Sphere

    prec = globals()["precision"](precision) if isinstance(precision, str) else precision
    dpl = 10 * abs(m)
    wavelength = 1.0
    size_x = grid * wavelength / dpl
    prob = DDAProblem(Sphere(), (m,), wavelength=wavelength, size_x=size_x, grid=grid,
                      precision=prec.name, integrate=False, theta=(0.0,))
    out = {
        "case": "dda_sphere", "grid": grid, "precision": prec.name, "variant": variant,
        "device": device_description(), "date": datetime.date.today().isoformat(),
        "emjax": __version__, "commit": _git_commit(), "jax": jax.__version__,
    }
    with precision_scope():
        lat = prob.lattice()
        g = lat.shape
        k = 2 * math.pi / wavelength
        t0 = time.perf_counter()
        Dhat = inter.interaction_fft(g, lat.d, k, prec.complex, layout=inter.LAYOUTS[variant])
        Dhat.block_until_ready()
        out["setup_s"] = time.perf_counter() - t0
        alpha = np.array([prob.polarizability(m, lat.d, k, (0, 0, 1), (1, 0, 0))])
        s = sqrt_alpha_grid(lat.domains, alpha, prec.complex)
        op = DDAOperator(Dhat, s, variant)
        E = observables.incident_field(g, lat.d, k, (0, 0, 1), (1, 0, 0), prec.complex)
        b = s * E
        first, best, med = _time(apply, op, b, repeats=repeats)
        out.update(n_dipoles=lat.n_dipoles, fft_grid=list(inter.fft_shape(g)),
                   matvec_compile_s=first, matvec_s=best, matvec_median_s=med)
        nbytes = matvec_bytes(g, inter.fft_shape(g), np.dtype(prec.complex).itemsize)
        bw = bandwidth or copy_bandwidth()
        out.update(matvec_bytes_model=nbytes, copy_bandwidth_Bps=bw,
                   matvec_bandwidth_fraction=nbytes / best / bw)
        fixed = krylov.QMR(rtol=1e-30, maxiter=iterations, chunk=iterations)
        krylov.solve(op, b, krylov.QMR(rtol=1e-30, maxiter=2, chunk=2))  # compile
        r = krylov.solve(op, b, fixed)
        out["iteration_s"] = r.seconds / max(r.iterations, 1)
        if solve:
            r = krylov.solve(op, b, krylov.QMR(rtol=1e-5, maxiter=20_000, chunk=100))
            out.update(solve_s=r.seconds, solve_iterations=r.iterations, solve_converged=r.converged,
                       solve_residual=r.residual)
    return out
