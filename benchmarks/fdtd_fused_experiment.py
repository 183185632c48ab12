"""Experiment: one memory pass per time step instead of two (H and E fused by recomputing H).

The E update at cell i needs the new H at i and at i - 1 along each axis. Computing those
shifted H values from the old fields (rolled inputs) instead of reading them back makes the
H and E updates two siblings that read the same arrays, which XLA can fuse into one kernel:
6 arrays read + 6 written per cell (48 B float32) instead of 2 x (6 + 3) (72 B).

PYTHONPATH=src python3 benchmarks/fdtd_fused_experiment.py --sizes 256 --precisions single double
"""

from __future__ import annotations

import argparse
import json
import time
from functools import partial

import jax
import jax.numpy as jnp


def roll(f, s, ax):
    return jnp.roll(f, s, ax) if s else f


def h_update(E, H, dt, inv):
    Ex, Ey, Ez = E
    Hx, Hy, Hz = H

    def df(f, ax):
        return (jnp.roll(f, -1, ax) - f) * inv

    return (
        Hx - dt * (df(Ez, 1) - df(Ey, 2)),
        Hy - dt * (df(Ex, 2) - df(Ez, 0)),
        Hz - dt * (df(Ey, 0) - df(Ex, 1)),
    )


def e_update(E, Hn, Hs, ca, cb, inv):
    """Hs[ax][c]: Hn[c] at i - 1 along ax."""
    Ex, Ey, Ez = E

    def db(c, ax):
        return (Hn[c] - Hs[ax][c]) * inv

    return (
        ca * Ex + cb * (db(2, 1) - db(1, 2)),
        ca * Ey + cb * (db(0, 2) - db(2, 0)),
        ca * Ez + cb * (db(1, 0) - db(0, 1)),
    )


def step_two_pass(E, H, dt, inv, ca, cb):
    Hn = h_update(E, H, dt, inv)
    Hs = [tuple(jnp.roll(h, 1, ax) for h in Hn) for ax in range(3)]
    return e_update(E, Hn, Hs, ca, cb, inv), Hn


def step_fused(E, H, dt, inv, ca, cb):
    Hn = h_update(E, H, dt, inv)
    Hs = []
    for ax in range(3):
        Er = tuple(jnp.roll(e, 1, ax) for e in E)
        Hr = tuple(jnp.roll(h, 1, ax) for h in H)
        Hs.append(h_update(Er, Hr, dt, inv))
    return e_update(E, Hn, Hs, ca, cb, inv), Hn


@partial(jax.jit, static_argnames=("variant", "steps"), donate_argnums=(0, 1))
def advance(E, H, variant, steps, dt, inv, ca, cb):
    f = step_fused if variant == "fused" else step_two_pass

    def body(_, s):
        return f(s[0], s[1], dt, inv, ca, cb)

    return jax.lax.fori_loop(0, steps, body, (E, H))


def fields(n, dtype, seed):
    k = jax.random.split(jax.random.PRNGKey(seed), 6)
    f = [jax.random.normal(k[i], (n, n, n), dtype) for i in range(6)]
    return tuple(f[:3]), tuple(f[3:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[64])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--precisions", nargs="+", default=["single"])
    ap.add_argument("--out", default=None)
    ap.add_argument("--hlo-dir", default=None)
    ap.add_argument("--emjax", action="store_true")
    ap.add_argument("--variants", nargs="+", default=["two", "fused"])
    args = ap.parse_args()
    if args.emjax:
        from emjax.bench import copy_bandwidth

        print("copy bandwidth", copy_bandwidth())
        for n in args.sizes:
            emjax_cases(n, args.precisions, args.hlo_dir)
        return
    rows = []
    for p in args.precisions:
        if p == "double":
            jax.config.update("jax_enable_x64", True)
        dtype = jnp.float64 if p == "double" else jnp.float32
        for n in args.sizes:
            dt, inv, ca, cb = 0.5, 1.0, 1.0, 0.5
            # correctness: 20 steps of each from the same random fields
            a = advance(*fields(n if n <= 128 else 64, dtype, 1), "two", 20, dt, inv, ca, cb)
            b = advance(*fields(n if n <= 128 else 64, dtype, 1), "fused", 20, dt, inv, ca, cb)
            err = max(
                float(jnp.max(jnp.abs(x - y)) / jnp.max(jnp.abs(x))) for x, y in zip(a[0] + a[1], b[0] + b[1])
            )
            for variant in args.variants:
                E, H = fields(n, dtype, 2)
                t0 = time.perf_counter()
                E, H = advance(E, H, variant, args.steps, dt, inv, ca, cb)
                jax.block_until_ready(E)
                compile_s = time.perf_counter() - t0
                best = 1e9
                for _ in range(3):
                    t0 = time.perf_counter()
                    E, H = advance(E, H, variant, args.steps, dt, inv, ca, cb)
                    jax.block_until_ready(E)
                    best = min(best, time.perf_counter() - t0)
                hlo = advance.lower(E, H, variant, args.steps, dt, inv, ca, cb).compile().as_text()
                if args.hlo_dir:
                    with open(f"{args.hlo_dir}/{variant}-{p}-{n}.hlo.txt", "w") as fh:
                        fh.write(hlo)
                nf = hlo.count(" fusion(") + hlo.count(" fusion.")
                row = {
                    "size": n,
                    "precision": p,
                    "variant": variant,
                    "gcells_per_s": n**3 * args.steps / best / 1e9,
                    "seconds": best,
                    "compile_s": compile_s,
                    "max_rel_diff_vs_two_pass": err,
                    "fusion_mentions": nf,
                    "device": str(jax.devices()[0]),
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
    if args.out:
        with open(args.out, "w") as fh:
            for r in rows:
                fh.write(json.dumps(r) + "\n")


def emjax_cases(n, precisions, hlo_dir):
    """emjax's own step (bench fdtd) beside the minimal loops, and its compiled HLO."""
    from emjax import fdtd
    from emjax.fdtd import step as S
    from emjax.fdtd.bench import fdtd_benchmark

    for p in precisions:
        for boundary in ("periodic", "cpml", "pec"):
            r = fdtd_benchmark(n, 200, p, boundary, 2, "vacuum")
            print(json.dumps({k: r[k] for k in ("size", "precision", "boundary", "cells_per_s", "seconds")}))
            if hlo_dir:
                bd = {"cpml": fdtd.CPML(10), "periodic": fdtd.Periodic(), "pec": fdtd.PEC()}[boundary]
                g = fdtd.Grid((n,) * 3, dx=1.0, boundary=bd, precision=p)
                c = n // 2
                src = fdtd.PointDipole((c, c, c), 2, fdtd.GaussianPulse(frequency=0.05, bandwidth=0.05))
                sim = fdtd.GridSimulation(g, sources=(src,), probes=(fdtd.Probe((c, c + 3, c), 2),))
                orig = S.advance
                captured: dict = {}

                def spy(plan, arrays, state, steps, _o=orig, captured=captured):
                    captured["txt"] = _o.lower(plan, arrays, state, steps).compile().as_text()
                    return _o(plan, arrays, state, steps)

                S.advance = spy
                try:
                    fdtd.run(sim, 2, chunk=2)
                finally:
                    S.advance = orig
                with open(f"{hlo_dir}/emjax-{boundary}-{p}-{n}.hlo.txt", "w") as fh:
                    fh.write(captured["txt"])


if __name__ == "__main__":
    main()
