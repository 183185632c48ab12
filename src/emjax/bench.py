"""Benchmark harness behind ``emjax bench``: compile timed apart, ``block_until_ready``,
results as JSON-ready dicts with the device and the fraction of its copy bandwidth."""

from __future__ import annotations

import datetime
import math
import subprocess
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from . import __version__, backend, krylov
from .backend import device_description, precision_scope
from .errors import ConfigError


def _git_commit() -> str | None:
    import os

    if os.environ.get("EMJAX_COMMIT"):
        return os.environ["EMJAX_COMMIT"]
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            cwd=__file__.rsplit("/src/", 1)[0],
        )
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


def copy_bandwidth(nbytes: int | None = None, repeats: int = 10) -> float:
    """Measured device copy bandwidth (bytes read + written per second) of ``y = x + 1``
    on a 2 GiB (GPU) or 256 MiB (CPU) float32 array."""
    if nbytes is None:
        nbytes = 1 << 28 if jax.default_backend() == "cpu" else 1 << 31
    with precision_scope():
        x = jnp.zeros(nbytes // 4, jnp.float32)
        f = jax.jit(lambda a: a + 1)
        _, best, _ = _time(f, x, repeats=repeats)
    return 2 * x.nbytes / best


def stream_bandwidth(nbytes: int | None = None, repeats: int = 10) -> float:
    """Measured device bandwidth (bytes read + written per second) of ``z = x + y``: two
    reads per write, the read:write ratio of an FDTD half step (six fields read, three
    written). On an H100 it exceeds the copy's (1:1) by ~10%, which is why FDTD steps can
    run above 100% of ``copy_bandwidth``. Arrays of ``nbytes`` each (default as the copy's)."""
    if nbytes is None:
        nbytes = 1 << 28 if jax.default_backend() == "cpu" else 1 << 31
    with precision_scope():
        x = jnp.arange(nbytes // 4, dtype=jnp.float32)
        y = x * 0.5
        f = jax.jit(lambda a, b: a + b)
        _, best, _ = _time(f, x, y, repeats=repeats)
    return 3 * x.nbytes / best


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


def dda_benchmark(
    grid: int,
    precision: str = "double",
    repeats: int = 10,
    solve: bool = True,
    variant: str | None = None,
    m: complex = 1.5 + 0.01j,
    iterations: int = 20,
    bandwidth: float | None = None,
    case: str = "sphere",
) -> dict:
    """Matvec, per-iteration and full-solve times on an N^3 lattice (one polarization).

    ``case="sphere"``: a sphere spanning the N^3 box at 15 dipoles per wavelength (|m| = 1.5,
    ADDA's default density; its size parameter grows with N), LDR, QMR to 1e-5.
    ``case="cube_kd30"``: the cross-code benchmark of arXiv:2603.02871 - a cube of edge
    2387.3 nm at 500 nm (kD = 30), m = 1.313, FCD, BiCGStab to 10^-4.024.
    """
    from .dda import FCD, DDAProblem, observables
    from .dda import interaction as inter
    from .dda.matvec import DDAOperator, apply, sqrt_alpha_grid
    from .geometry import Box, Sphere

    variant = variant or "pruned"
    prec = backend.precision(precision) if isinstance(precision, str) else precision
    if case == "sphere":
        wavelength = 1.0
        size_x = grid * wavelength / (10 * abs(m))
        prob = DDAProblem(
            Sphere(),
            (m,),
            wavelength=wavelength,
            size_x=size_x,
            grid=grid,
            precision=prec.name,
            integrate=False,
            theta=(0.0,),
        )
        solver = krylov.QMR(rtol=1e-5, maxiter=20_000, chunk=100)
    elif case == "cube_kd30":
        m, wavelength = 1.313 + 0j, 0.5
        prob = DDAProblem(
            Box(),
            (m,),
            wavelength=wavelength,
            size_x=2.3873,
            grid=grid,
            precision=prec.name,
            integrate=False,
            theta=(0.0,),
            polarizability=FCD(),
        )
        solver = krylov.BiCGStab(rtol=10**-4.024, maxiter=20_000, chunk=50)
    else:
        raise ValueError(f"unknown benchmark case {case!r}")
    out = {
        "case": f"dda_{case}",
        "grid": grid,
        "precision": prec.name,
        "variant": variant,
        "device": device_description(),
        "date": datetime.date.today().isoformat(),
        "emjax": __version__,
        "commit": _git_commit(),
        "jax": jax.__version__,
    }
    with precision_scope():
        lat = prob.lattice()
        g = lat.shape
        k = 2 * math.pi / wavelength
        t0 = time.perf_counter()
        Dhat = inter.interaction_fft(
            g, lat.d, k, prec.complex, kind=prob.polarizability.interaction, layout=inter.LAYOUTS[variant]
        )
        Dhat.block_until_ready()
        out["setup_s"] = time.perf_counter() - t0
        alpha = np.array([prob.polarizability(m, lat.d, k, (0, 0, 1), (1, 0, 0))])
        # as dda.solve: FFTs in the chosen precision, Krylov vectors in complex128
        s = sqrt_alpha_grid(lat.domains, alpha, np.complex128)
        op = DDAOperator(Dhat, s, variant)
        E = observables.incident_field(g, lat.d, k, (0, 0, 1), (1, 0, 0), np.complex128)
        b = s * E
        first, best, med = _time(apply, op, b, repeats=repeats)
        out.update(
            n_dipoles=lat.n_dipoles,
            fft_grid=list(inter.fft_shape(g)),
            matvec_compile_s=first,
            matvec_s=best,
            matvec_median_s=med,
        )
        nbytes = matvec_bytes(g, inter.fft_shape(g), np.dtype(prec.complex).itemsize)
        bw = bandwidth or copy_bandwidth()
        out.update(
            matvec_bytes_model=nbytes, copy_bandwidth_Bps=bw, matvec_bandwidth_fraction=nbytes / best / bw
        )
        kind = type(solver)
        # warm-ups use the same maxiter (it fixes the history's shape, hence the compiled loop)
        krylov.solve(op, b, kind(rtol=0.999, maxiter=iterations, chunk=iterations))
        with warnings.catch_warnings():  # rtol below epsilon on purpose: exactly `iterations` steps
            warnings.simplefilter("ignore", RuntimeWarning)
            r = krylov.solve(op, b, kind(rtol=1e-30, maxiter=iterations, chunk=iterations))
        out["iteration_s"] = r.seconds / max(r.iterations, 1)
        out["solver"] = solver.name
        if solve:
            krylov.solve(op, b, kind(rtol=0.999, maxiter=solver.maxiter, chunk=solver.chunk))
            r = krylov.solve(op, b, solver)
            out.update(
                solve_s=r.seconds,
                solve_iterations=r.iterations,
                solve_converged=r.converged,
                solve_residual=r.residual,
            )
    return out


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
) -> dict:
    """Cell updates per second of the FDTD step on an N^3 grid with a z-dipole at the centre.

    ``material``: "vacuum" (scalar coefficients), "dielectric" (per-cell eps array) or
    "drude" (a Drude cube, one pole, per-cell pole coefficients and currents J).
    Bytes per cell update: the model of two passes (H then E), each reading six field
    components and writing three (18 accesses), plus the per-cell coefficient arrays read
    (ca, cb: 2) and for Drude the currents read and written and their two coefficients (8).
    ``bandwidth_fraction`` is against the measured two-reads-per-write stream bandwidth
    (``stream_bandwidth``), the step's own read:write ratio; the copy's is reported too.
    """
    from . import fdtd

    prec = backend.precision(precision)
    bd = {"cpml": fdtd.CPML(pml_thickness), "pec": fdtd.PEC(), "periodic": fdtd.Periodic()}[boundary]
    grid = fdtd.Grid((size,) * 3, dx=1.0, order=order, boundary=bd, precision=prec.name)
    if material not in ("vacuum", "dielectric", "drude"):
        raise ConfigError(f"material must be vacuum, dielectric or drude, got {material!r}")
    eps, disp = 1.0, None
    c = size // 2
    block = np.zeros(grid.shape, bool)
    block[c // 2 : c + c // 2, c // 2 : c + c // 2, c // 2 : c + c // 2] = True
    if material == "dielectric":
        eps = np.where(block, 2.25, 1.0).astype(np.float32)
    elif material == "drude":
        from .materials import Dispersive, DrudePole

        disp = (Dispersive(eps_inf=1.0, poles=(DrudePole(omega_p=1.0, gamma=0.05),)), block)
    src = fdtd.PointDipole((c, c, c), 2, fdtd.GaussianPulse(frequency=0.05, bandwidth=0.05))
    sim = fdtd.Simulation(
        grid, eps=eps, dispersive=disp, sources=(src,), probes=(fdtd.Probe((c, c + 3, c), 2),)
    )
    t0 = time.perf_counter()
    fdtd.run(sim, 2, chunk=2)  # set-up and a compile of the 2-step scan (not reused)
    setup = time.perf_counter() - t0
    # a warm-up chunk (compiles) and one timed chunk of ``steps``: the stepping rate of a
    # long run; each chunk boundary (NaN check, probe records, progress) costs ~0.5 ms
    r = fdtd.run(sim, 2 * steps, chunk=steps)
    item = np.dtype(prec.real).itemsize
    per_cell = (18 + {"vacuum": 0, "dielectric": 2, "drude": 10}[material]) * item
    bw = bandwidth or stream_bandwidth()
    return {
        "case": "fdtd_dipole",
        "size": size,
        "cells": grid.n_cells,
        "steps": r.steps,
        "precision": prec.name,
        "boundary": boundary,
        "order": order,
        "material": material,
        "cells_per_s": r.cells_per_second,
        "seconds": r.seconds,
        "compile_s": r.compile_seconds,
        "setup_s": setup,
        "bytes_per_cell": per_cell,
        "stream_bandwidth_Bps": bw,
        "copy_bandwidth_Bps": copy if copy is not None else copy_bandwidth(),
        "bandwidth_fraction": r.cells_per_second * per_cell / bw,
        "memory_bytes_per_cell": sim.memory_bytes() / grid.n_cells,
        "device": device_description(),
        "date": datetime.date.today().isoformat(),
        "commit": _git_commit(),
        "jax": jax.__version__,
    }


def record(rows: list, out, labels: dict, fn, *args, **kwargs) -> dict:
    """Run one benchmark case for a sweep: a failure (e.g. out of memory) is recorded with
    its labels instead of stopping the sweep; the row is printed as a JSON line and the
    whole list rewritten to ``out``."""
    import json
    import sys
    import traceback

    try:
        row = fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - keep the sweep going, say what failed
        row = {**labels, "error": f"{type(exc).__name__}: {exc}"[:300]}
        traceback.print_exc(file=sys.stderr)
    print(json.dumps(row), flush=True)
    rows.append(row)
    out.write_text(json.dumps(rows, indent=1))
    return row


def paper_case_points(n: int, spacing: float = 1.0) -> np.ndarray:
    """Quinto et al.'s map: n x n points spaced ``spacing`` (nm) in the XZ plane, centred at
    the origin (on the glass/air interface), C order (x slowest)."""
    c = (np.arange(n) - n // 2) * spacing
    X, Z = np.meshgrid(c, c, indexing="ij")
    return np.stack([X.ravel(), np.zeros(X.size), Z.ravel()], axis=1)


def paper_case_stack():
    """Glass (n = 1.5) above z = 0, air below; lengths in nm."""
    from .layered import Stack

    return Stack(eps=[2.25, 1.0])


def layered_benchmark(
    n: int,
    precision: str = "double",
    rtol: float = 1e-8,
    reference_rtol: float = 1e-12,
    repeats: int = 2,
    reference=None,
) -> dict:
    """Quinto et al.'s case: a vertical dipole in glass 10 nm above air, wavelength 600 nm,
    Ez of the reflected (glass) and transmitted (air) field on an n x n XZ map spaced 1 nm.

    Times the whole call (quadrature set-up, refinement and the integration; the first
    call, with compilation, is reported apart) and the error against a run at
    ``reference_rtol`` in double precision: max |Ez - Ez_ref| / max |Ez_ref| (normwise)
    and the median of the pointwise relative error.
    """
    from .layered import dipole_fields

    stack = paper_case_stack()
    pts = paper_case_points(n)
    src = (0.0, 0.0, 10.0)
    kw = dict(part="scattered", fields="E", p=(0, 0, 1))
    t0 = time.perf_counter()
    r = dipole_fields(stack, 600.0, src, pts, rtol=rtol, precision=precision, **kw)
    first = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        r = dipole_fields(stack, 600.0, src, pts, rtol=rtol, precision=precision, **kw)
        times.append(time.perf_counter() - t0)
    if reference is None:
        reference = dipole_fields(stack, 600.0, src, pts, rtol=reference_rtol, precision="double", **kw).E[
            :, 2
        ]
    ez = r.E[:, 2]
    d = np.abs(ez - reference)
    return {
        "case": "layered_quinto2011",
        "points": int(len(pts)),
        "map": f"{n}x{n}",
        "precision": precision,
        "rtol": rtol,
        "seconds": min(times) if times else first,
        "first_call_s": first,
        "points_per_s": len(pts) / (min(times) if times else first),
        "max_error_normwise": float(d.max() / np.abs(reference).max()),
        "median_error_pointwise": float(np.median(d / np.maximum(np.abs(reference), 1e-300))),
        "max_error_estimate": float(np.max(r.error)),
        "groups": [{k: (round(v, 4) if isinstance(v, float) else v) for k, v in g.items()} for g in r.stats],
        "device": device_description(),
        "date": datetime.date.today().isoformat(),
        "commit": _git_commit(),
        "jax": jax.__version__,
    }
