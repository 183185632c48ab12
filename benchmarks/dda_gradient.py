"""DDA gradient cost: time of ``jax.grad`` through ``dda.efficiencies`` over the
time of the forward solve, warm (compile times reported apart), for spheres on N^3 lattices.

    PYTHONPATH=src python3 benchmarks/dda_gradient.py [--grid 32 64] [--precisions double single]

The sphere: m = 1.5 + 0.01i, 15 dipoles per wavelength (size_x = N / 15 wavelengths), LDR,
QMR to rtol 1e-5 (``dda.solve``'s default), one device loop per polarization.
Objectives: ``qext`` (Qext; gradient with respect to Re m and Im m), ``s11`` (a loss on
the phase function at 19 angles, same parameters) and ``solve`` (Qext plus the ``s11``
loss through the public ``dda.solve``, with respect to Re m, Im m and the size).
``--cpu-time`` times by the process's CPU time (steadier than wall time on a shared CPU).
The gradient is ``jax.value_and_grad``
(the forward solve plus one adjoint solve per polarization, the same QMR on the same
complex-symmetric operator), so the ideal ratio is about 2 plus the cost of the operator's
parameter derivatives. One JSON line per case on stdout; needs only jax, numpy, scipy.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

from emjax import dda, geometry, krylov
from emjax.backend import precision_scope

THETA = tuple(np.arange(0.0, 181.0, 10.0))


def _problem(n, k, grid, precision, scale=1.0):
    return dda.DDAProblem(
        geometry.Sphere(),
        m=n + 1j * k,
        size_x=scale * grid / 15.0,
        wavelength=1.0,
        grid=grid,
        theta=THETA,
        phi=(0.0, 90.0),
        precision=precision,
    )


def _objective(name, grid, precision, solver):
    def f(p):
        if name == "solve":  # the public call, also in the size (p[2] scales size_x)
            r = dda.solve(_problem(p[0], p[1], grid, precision, p[2]), solver, progress=False)
            return r.Qext + jnp.mean(jnp.log(jnp.mean(r.mueller[:, :, 0, 0], axis=0))), r.iterations
        r = dda.efficiencies(_problem(p[0], p[1], grid, precision), solver)
        if name == "qext":
            return r.Qext, r.iterations
        s11 = jnp.mean(r.mueller[:, :, 0, 0], axis=0)
        return jnp.mean(jnp.log(s11) ** 2), r.iterations

    return f


def _timed(fn, p, repeats, clock=time.perf_counter):
    t0 = clock()
    jax.block_until_ready(fn(p))
    first = clock() - t0
    times = []
    for _ in range(repeats):
        t0 = clock()
        out = jax.block_until_ready(fn(p))
        times.append(clock() - t0)
    warm = statistics.median(times)
    return out, warm, max(first - warm, 0.0), times


def _peak_bytes():
    stats = getattr(jax.devices()[0], "memory_stats", lambda: None)()
    return None if not stats else stats.get("peak_bytes_in_use")


def run_case(grid, precision, objective, repeats, rtol, cpu_time=False):
    solver = krylov.QMR(rtol=rtol)
    f = _objective(objective, grid, precision, solver)
    p = jnp.asarray([1.5, 0.01] + ([1.0] if objective == "solve" else []), dtype=jnp.float64)
    clock = time.process_time if cpu_time else time.perf_counter
    fwd = jax.jit(f)
    (value, its), t_fwd, c_fwd, _ = _timed(fwd, p, repeats, clock)
    peak_fwd = _peak_bytes()
    grad = jax.jit(jax.value_and_grad(f, has_aux=True))
    ((_, _), g), t_grad, c_grad, _ = _timed(grad, p, repeats, clock)
    peak_grad = _peak_bytes()
    return {
        "case": "dda_gradient",
        "device": jax.devices()[0].device_kind,
        "backend": jax.default_backend(),
        "grid": grid,
        "dipoles": int(
            dda.DDAProblem(geometry.Sphere(), m=1.5, size_x=grid / 15.0, grid=grid).lattice().n_dipoles
        ),
        "precision": precision,
        "objective": objective,
        "rtol": rtol,
        "iterations": [int(i) for i in np.asarray(its)],
        "value": float(value),
        "grad": [float(v) for v in np.asarray(g)],
        "forward_s": t_fwd,
        "gradient_s": t_grad,
        "ratio": t_grad / t_fwd,
        "forward_compile_s": c_fwd,
        "gradient_compile_s": c_grad,
        "peak_bytes_after_forward": peak_fwd,
        "peak_bytes_after_gradient": peak_grad,
        "repeats": repeats,
        "clock": "process CPU time" if cpu_time else "wall",
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", type=int, nargs="+", default=[32, 64])
    ap.add_argument("--precisions", nargs="+", default=["double", "single"])
    ap.add_argument("--objectives", nargs="+", default=["qext", "s11"], choices=["qext", "s11", "solve"])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rtol", type=float, default=1e-5)
    ap.add_argument("--cpu-time", action="store_true", help="time by process CPU time (a shared CPU)")
    args = ap.parse_args(argv)
    with precision_scope():
        for n in args.grid:
            for prec in args.precisions:
                for obj in args.objectives:
                    case = run_case(n, prec, obj, args.repeats, args.rtol, args.cpu_time)
                    print(json.dumps(case), flush=True)


if __name__ == "__main__":
    main()
