"""The DDA benchmark behind ``emjax bench dda``: matvec, iteration and solve times with the
fraction of the device's copy bandwidth."""

from __future__ import annotations

import datetime
import math
import time
import warnings

import jax
import numpy as np

from .. import __version__, backend, krylov
from ..backend import device_description, precision_scope
from ..bench import copy_bandwidth, git_commit, time_call


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
    from ..geometry import Box, Sphere
    from . import FCD, DDAProblem, observables
    from . import interaction as inter
    from .matvec import DDAOperator, apply, sqrt_alpha_grid

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
        "commit": git_commit(),
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
        first, best, med = time_call(apply, op, b, repeats=repeats)
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


def device_counts(n: int) -> list[int]:
    """1, 2, 4, ... up to ``n``, and ``n`` itself: the strong-scaling steps."""
    out, c = [], 1
    while c < n:
        out.append(c)
        c *= 2
    return out + [n]


def scaling_benchmark(
    grid: int,
    devices: int,
    mode: str = "slabs",
    precision: str = "double",
    repeats: int = 5,
    iterations: int = 20,
    batch: int = 8,
):
    """Strong scaling over 1 .. ``devices`` devices (emjax.layout): yields one dict per device
    count as it is measured.

    ``mode="slabs"``: one N^3 sphere lattice (as :func:`dda_benchmark`'s sphere) split in
    slabs along x (distributed FFT); matvec time and QMR time per iteration. ``"orientations"``:
    ``batch`` right-hand sides (incidence directions) of the same lattice dealt out whole over
    the devices (each its own batch and solver loop; the interaction tensor copied to each
    within the timed call); time per batched iteration. One device runs the plain single-device code.
    """
    from ..geometry import Sphere
    from ..layout import Layout
    from . import DDAProblem, distributed, observables
    from . import interaction as inter
    from .matvec import DDAOperator, apply, sqrt_alpha_grid

    if mode not in ("slabs", "orientations"):
        raise ValueError(f"mode must be 'slabs' or 'orientations', got {mode!r}")
    prec = backend.precision(precision)
    m = 1.5 + 0.01j
    prob = DDAProblem(
        Sphere(), (m,), wavelength=1.0, size_x=grid / (10 * abs(m)), grid=grid, precision=prec.name
    )
    with precision_scope():
        lat = prob.lattice()
        g, d, k = lat.shape, lat.d, 2 * math.pi
        alpha = np.array([prob.polarizability(m, d, k, (0, 0, 1), (1, 0, 0))])
        s = sqrt_alpha_grid(lat.domains, alpha, np.complex128)
        E = observables.incident_field(g, d, k, (0, 0, 1), (1, 0, 0), np.complex128)
        D1 = inter.interaction_fft(g, d, k, prec.complex, kind=prob.polarizability.interaction)
        t_one = None
        for n in device_counts(devices):
            lay = Layout.of(n)
            row = {"case": f"dda_scaling_{mode}", "grid": grid, "devices": n, "layout": lay.describe()}
            row["precision"] = prec.name
            if mode == "slabs":
                if n == 1:
                    op, b = DDAOperator(D1, s), s * E
                else:
                    sl = distributed.Slabs(g, lay)
                    op = sl.operator(
                        sl.interaction_fft(d, k, prec.complex, prob.polarizability.interaction), s
                    )
                    b = sl.put(s * E)
                first, best, _ = time_call(apply if n == 1 else _apply_any, op, b, repeats=repeats)
                row.update(matvec_compile_s=first, matvec_s=best)
                solver = krylov.QMR(rtol=1e-30, maxiter=iterations, chunk=iterations)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    krylov.solve(op, b, solver)
                    r = krylov.solve(op, b, solver)
                row["iteration_s"] = r.seconds / max(r.iterations, 1)
            else:
                dirs = np.array([[np.sin(a), 0.0, np.cos(a)] for a in np.linspace(0, np.pi, batch)])
                pols = np.array([[np.cos(a), 0.0, -np.sin(a)] for a in np.linspace(0, np.pi, batch)])
                from .orientation_batch import _incident_many

                Eb = _incident_many(g, d, k, dirs, pols.astype(complex))
                sb = np.broadcast_to(np.asarray(s), (batch,) + s.shape)
                solver = krylov.QMR(rtol=1e-30, maxiter=iterations, chunk=iterations)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    for _ in range(2):
                        t0 = time.perf_counter()
                        if n == 1:
                            res = krylov.solve_batched(
                                DDAOperator(D1, sb), sb[:, None] * Eb, solver, in_axes=DDAOperator(None, 0)
                            )
                        elif lay.local:  # dealt out whole: each device its own systems and loop
                            res = _dealt_solve(D1, sb, sb[:, None] * Eb, solver, lay)
                        else:
                            res = distributed.solve_batched(D1, sb, sb[:, None] * Eb, solver, "pruned", lay)
                        res[-1].x.block_until_ready()
                        dt = time.perf_counter() - t0
                row.update(batch=batch, iteration_s=dt / max(res[0].iterations, 1))
            t_one = t_one or row["iteration_s"]
            row.update(
                speedup=t_one / row["iteration_s"],
                efficiency=t_one / row["iteration_s"] / n,
                device=device_description(),
                jax=jax.__version__,
                commit=git_commit(),
                date=datetime.date.today().isoformat(),
            )
            yield row


def _dealt_solve(Dhat, s, b, solver, lay):
    """The systems dealt out whole: one contiguous run per device, each solved there as its
    own batch (emjax.layout.on_each), side by side."""
    from ..layout import on_each
    from .matvec import DDAOperator

    s, b = np.asarray(s), np.asarray(b)
    runs = [r for r in lay.deal(len(b)) if len(r)]

    def one(dev, r):
        op = DDAOperator(jax.device_put(Dhat, dev), jax.device_put(s[r.start : r.stop], dev))
        rhs = jax.device_put(b[r.start : r.stop], dev)
        return krylov.solve_batched(op, rhs, solver, in_axes=DDAOperator(None, 0))

    return sum(on_each(lay.devices[: len(runs)], one, runs), ())


@jax.jit
def _apply_any(op, x):
    return op(x)
