"""Gradient time / forward time of the differentiable FDTD and 2-D FDFD, on the
default JAX device.

    PYTHONPATH=src python3 benchmarks/gradients.py                 # both, default sizes
    PYTHONPATH=src python3 benchmarks/gradients.py --fdtd 128 --steps 500 --fdfd 400

FDTD: an n^3 grid with CPML(10), a Ricker dipole, eps = 1 + 0.5 U(0, 1) per cell (the
permittivity array is the parameter), ``--steps`` steps; objective: a probe's energy
``sum E_z(t)^2``. Forward = ``jax.jit`` of the objective (the traced path: one ``lax.scan``);
gradient = ``jax.jit(jax.value_and_grad)`` with checkpointed segments of ``remat`` steps
(default sqrt(steps)) through emjax.fdtd.adjoint (``--adjoint custom``, the default) or JAX's
own reverse mode of the scan (``--adjoint autodiff``); both in float32 and float64
(``--precision``). The concrete ``fdtd.run`` (the chunked loop a user runs without
gradients) is timed too: the honest denominator for "what does a gradient cost over a plain run".

FDFD 2-D TM on a scene (``--fdfd-scene RES``): see :func:`bench_fdfd_scene` (a disk's traced
diameter through ``fdfd.solve_tm`` and ``fdfd.scattering_width``).

FDFD 2-D TM: ``fdfd.tm_field`` on an n x n grid (PML 20) with an eps = 1 + U(0, 1) design
region, a plane wave; objective: |E_z|^2 summed over a line of nodes. Forward = SuperLU
factor + solve on the host; gradient = the same plus one transposed solve with the kept
factorization (the second call of a given eps reuses the factorization, so the forward is
timed on fresh permittivities).

One JSON line per case: compile (first call minus warm), warm forward, warm gradient and
their ratio.
"""

from __future__ import annotations

import argparse
import json
import time

import jax
import jax.numpy as jnp
import numpy as np


def _timed(fn, *args, repeats=3):
    t0 = time.perf_counter()
    jax.block_until_ready(fn(*args))
    first = time.perf_counter() - t0
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        best = min(best, time.perf_counter() - t0)
    return first, best


def bench_fdtd(n: int, steps: int, precision: str, remat, adjoint: str = "custom", sigma: float = 0.0):
    from emjax import fdtd
    from emjax.backend import precision_scope
    from emjax.fdtd import simulation

    simulation.ADJOINT = adjoint

    shape = (n, n, n)
    c = n // 2

    def sim(eps):
        g = fdtd.Grid(shape, dx=0.05, boundary=fdtd.CPML(10), precision=precision)
        src = fdtd.PointDipole((c - n // 4, c, c), 2, fdtd.Ricker(frequency=0.8))
        probes = (fdtd.Probe((c + n // 4, c, c), 2),)
        return fdtd.GridSimulation(g, eps=eps, sigma=sigma, sources=(src,), probes=probes)

    def loss(eps):
        r = fdtd.run(sim(eps), steps, remat=remat)
        return jnp.sum(jnp.asarray(r.probes) ** 2)

    eps = 1.0 + 0.5 * np.random.default_rng(0).random(shape)
    dt = np.float32 if precision == "single" else np.float64
    with precision_scope():
        e = jnp.asarray(eps, dt)
        fwd = jax.jit(loss)
        grad = jax.jit(jax.value_and_grad(loss))
        f_first, f_warm = _timed(fwd, e)
        g_first, g_warm = _timed(grad, e)
        t0 = time.perf_counter()
        fdtd.run(sim(eps), steps)  # concrete: compiles its chunk kernel
        c_first = time.perf_counter() - t0
        t0 = time.perf_counter()
        fdtd.run(sim(eps), steps)
        c_warm = time.perf_counter() - t0
    cells = n**3 * steps
    return dict(
        solver="fdtd",
        n=n,
        steps=steps,
        precision=precision,
        remat=remat,
        adjoint=adjoint,
        sigma=sigma,
        forward_compile_s=f_first - f_warm,
        forward_s=f_warm,
        grad_compile_s=g_first - g_warm,
        grad_s=g_warm,
        grad_over_forward=g_warm / f_warm,
        concrete_run_s=c_warm,
        concrete_first_s=c_first,
        grad_over_concrete_run=g_warm / c_warm,
        forward_cells_per_s=cells / f_warm,
    )


def bench_fdfd(n: int, repeats: int = 3):
    from emjax import fdfd
    from emjax.backend import precision_scope

    pml = fdfd.SCPML(20)
    rng = np.random.default_rng(1)
    line = (slice(n - 40, n - 39), slice(30, n - 30))

    def loss(eps):
        E = fdfd.tm_field(eps, 40.0, 1.0, fdfd.PlaneWave2D(0.0), pml)
        return jnp.sum(jnp.abs(E[line]) ** 2)

    def design():
        e = np.ones((n, n))
        lo, hi = n // 3, 2 * n // 3
        e[lo:hi, lo:hi] += rng.random((hi - lo, hi - lo))
        return e

    with precision_scope():
        fwd = jax.jit(loss)
        grad = jax.jit(jax.value_and_grad(loss))
        t0 = time.perf_counter()
        jax.block_until_ready(fwd(jnp.asarray(design())))
        f_first = time.perf_counter() - t0
        t0 = time.perf_counter()
        jax.block_until_ready(grad(jnp.asarray(design())))
        g_first = time.perf_counter() - t0
        fw, gw = [], []
        for _ in range(repeats):  # fresh eps each time: no kept factorization
            e = jnp.asarray(design())
            t0 = time.perf_counter()
            jax.block_until_ready(fwd(e))
            fw.append(time.perf_counter() - t0)
            e = jnp.asarray(design())
            t0 = time.perf_counter()
            jax.block_until_ready(grad(e))
            gw.append(time.perf_counter() - t0)
    return dict(
        solver="fdfd-2d-tm",
        n=n,
        forward_first_s=f_first,
        grad_first_s=g_first,
        forward_s=min(fw),
        grad_s=min(gw),
        grad_over_forward=min(gw) / min(fw),
    )


def bench_fdfd_scene(resolution: float, repeats: int = 3):
    """The user's API: ``fdfd.solve_tm`` on a scene (a dielectric disk, eps 2.5, diameter 1.2
    in a 4 x 4 region, PML 20) and ``fdfd.scattering_width`` summed over three angles;
    gradient with respect to the disk's traced diameter (emjax.scene.traced's fill fractions,
    the adjoint solve). Forward: the concrete call (SuperLU, as the traced path). The
    diameter changes between calls (no kept factorization); the first gradient call (JAX
    compilations) is reported apart."""
    from emjax import fdfd, geometry, scene
    from emjax.backend import precision_scope

    def loss(size, solver="superlu"):
        o = scene.Object(geometry.Disk(), 2.5, center=(0.013, -0.021, 0.0), size=size)
        r = fdfd.solve_tm(
            (4.0, 4.0),
            resolution,
            1.0,
            fdfd.PlaneWave2D(30.0),
            scene.Scene([o]),
            pml=fdfd.SCPML(20),
            solver=solver,
            progress=False,
        )
        return jnp.sum(fdfd.scattering_width(r, [0.0, 100.0, 180.0]))

    with precision_scope():
        grad = jax.value_and_grad(loss)
        t0 = time.perf_counter()
        jax.block_until_ready(grad(1.2))
        g_first = time.perf_counter() - t0
        fw, tw, gw = [], [], []
        for k in range(repeats):
            t0 = time.perf_counter()
            jax.block_until_ready(loss(1.2 + 1e-3 * (k + 1)))
            fw.append(time.perf_counter() - t0)
            t0 = time.perf_counter()  # the differentiable path's forward alone (jax.vjp's)
            jax.block_until_ready(jax.vjp(loss, 1.2 + 2e-3 * (k + 1))[0])
            tw.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            jax.block_until_ready(grad(1.2 - 1e-3 * (k + 1)))
            gw.append(time.perf_counter() - t0)
    n = int(round(4.0 * resolution)) + 41
    return dict(
        solver="fdfd-2d-tm-scene",
        n=n,
        grad_first_s=g_first,
        forward_s=min(fw),
        traced_forward_s=min(tw),
        grad_s=min(gw),
        grad_over_forward=min(gw) / min(fw),
        grad_over_traced_forward=min(gw) / min(tw),
    )


def bench_fdfd3d(n: int, repeats: int = 2):
    """3-D FDFD (``fdfd.field_3d``): |E_x|^2 over a plane behind an eps 2.5+0.1i sphere,
    n^3 nodes at 10 per wavelength (PML 8), QMR rtol 1e-8; forward = the solve, gradient =
    the solve + the adjoint solve (the same device solver on the transposed system)."""
    from emjax import fdfd, geometry, krylov, scene
    from emjax.backend import precision_scope

    res, pml = 10.0, fdfd.SCPML(8)
    side = (n - 1 - 16) / res
    solver = fdfd.Iterative(krylov.QMR(rtol=1e-8, maxiter=50_000, chunk=100))
    wave = fdfd.PlaneWave3D((0, 0, 1), (1, 0, 0))
    sc = scene.Scene([scene.Object(geometry.Sphere(), 2.5 + 0.1j, size=side / 3)])
    r = fdfd.solve_3d((side,) * 3, res, 1.0, wave, sc, pml=pml, solver=solver)
    eps0, origin = np.asarray(r.eps), (r.x[0], r.y[0], r.z[0])

    def loss(eps):
        e = fdfd.field_3d(eps, res, 1.0, wave, pml, solver=solver, origin=origin)
        return jnp.sum(jnp.abs(e[0, :, :, -12]) ** 2)

    with precision_scope():
        e = jnp.asarray(eps0)
        f_first, f_warm = _timed(loss, e, repeats=repeats)
        g_first, g_warm = _timed(jax.value_and_grad(loss), e, repeats=repeats)
    return dict(
        solver="fdfd3d",
        n=n,
        forward_s=f_warm,
        grad_s=g_warm,
        grad_over_forward=g_warm / f_warm,
        forward_first_s=f_first,
        grad_first_s=g_first,
    )


def bench_layered(points: int, repeats: int = 2):
    """Layered Green's tensor on a line of ``points`` observers above a film (eps 4+0.1i,
    d = 0.2) on glass; objective sum |G|^2; gradient with respect to (Re eps, Im eps, d, z of
    the source). Forward = the same function at concrete values (the normal path)."""
    from emjax.backend import precision_scope
    from emjax.layered import Stack, green_tensor

    pts = np.stack([np.linspace(-2, 2, points), np.zeros(points), np.full(points, 0.7)], axis=1)

    def loss(q):
        st = Stack(eps=[1.0, q[0] + 1j * q[1], 2.25], thickness=[q[2]])
        G = green_tensor(st, 1.0, (0.0, 0.0, q[3]), pts)
        return jnp.sum(jnp.abs(jnp.asarray(G)) ** 2)

    with precision_scope():
        q = jnp.asarray([4.0, 0.1, 0.2, 0.3])
        f_first, f_warm = _timed(loss, np.asarray(q), repeats=repeats)
        g_first, g_warm = _timed(jax.value_and_grad(loss), q, repeats=repeats)
    return dict(
        solver="layered",
        points=points,
        forward_s=f_warm,
        grad_s=g_warm,
        grad_over_forward=g_warm / f_warm,
        forward_first_s=f_first,
        grad_first_s=g_first,
    )


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--fdtd", type=int, action="append", help="FDTD grid edge n (repeatable)")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--remat", type=int, default=None)
    p.add_argument(
        "--adjoint",
        action="append",
        choices=("custom", "autodiff"),
        help="FDTD reverse mode: emjax.fdtd.adjoint (default) or JAX's through the scan (repeatable)",
    )
    p.add_argument("--sigma", type=float, default=0.0, help="FDTD conductivity (lossy: ca traced too)")
    p.add_argument("--precision", action="append", choices=("single", "double"))
    p.add_argument("--fdfd", type=int, action="append", help="FDFD grid edge n (repeatable)")
    p.add_argument("--fdfd3d", type=int, action="append", help="3-D FDFD grid edge n (repeatable)")
    p.add_argument(
        "--fdfd-scene",
        type=float,
        action="append",
        help="2-D FDFD scene (a disk's traced diameter): resolution",
    )
    p.add_argument("--layered", type=int, action="append", help="layered map points (repeatable)")
    a = p.parse_args(argv)
    dev = jax.devices()[0]
    for n in a.fdfd3d or []:
        print(json.dumps({"device": dev.device_kind, **bench_fdfd3d(n)}), flush=True)
    for n in a.layered or []:
        print(json.dumps({"device": dev.device_kind, **bench_layered(n)}), flush=True)
    for res in a.fdfd_scene or []:
        print(json.dumps({"device": dev.device_kind, **bench_fdfd_scene(res)}), flush=True)
    if a.fdtd is None and a.fdfd is None and (a.fdfd3d or a.layered or a.fdfd_scene):
        return
    if a.fdtd is None and a.fdfd is None:
        a.fdtd, a.fdfd = [32], [200]
    for n in [k for k in a.fdtd or [] if k > 0]:
        for prec in a.precision or ["single", "double"]:
            for adj in a.adjoint or ["custom"]:
                r = bench_fdtd(n, a.steps, prec, a.remat, adj, a.sigma)
                print(json.dumps({"device": dev.device_kind, **r}), flush=True)
    for n in [k for k in a.fdfd or [] if k > 0]:
        print(json.dumps({"device": dev.device_kind, **bench_fdfd(n)}), flush=True)


if __name__ == "__main__":
    main()
