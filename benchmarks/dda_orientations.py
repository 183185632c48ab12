"""Orientations per second: batched right-hand sides vs one orientation after another.

For each particle, the same fixed orientation rule (beta level 2, gamma level 3: 26 distinct
(beta, gamma) orientations, each two polarizations, 32 alpha) is solved three ways:

* ``serial``: dda.solve per orientation, X then Y (what ADDA does);
* ``batch1``: dda.average with batch=1 (the two polarizations of one orientation together);
* ``batched``: dda.average with every orientation in one batch (up to memory).

Each way runs once untimed (compilation) and once timed. Writes JSON lines to --out.

    PYTHONPATH=src python3 benchmarks/dda_orientations.py --cases sphere32 rosette76 --out gpu.jsonl
    PYTHONPATH=src python3 benchmarks/dda_orientations.py --cases sphere16 rosette32 --out cpu.jsonl

``--sphere128`` also times the paper's 1.1M-dipole sphere (128^3 lattice) to 1e-5.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from emjax import dda, geometry
from emjax.backend import device_description

RULE = dict(eps=0, beta_levels=(2, 2), gamma_levels=(3, 3), n_alpha=32)


def case(name: str) -> dda.DDAProblem:
    theta = tuple(np.arange(0.0, 181.0, 1.0))
    if name.startswith("sphere"):
        n = int(name[6:])
        # sphere filling the N^3 box at 15 dipoles per wavelength, m = 1.5 + 0.01i
        return dda.DDAProblem(
            geometry.Sphere(), m=(1.5 + 0.01j,), wavelength=1.0, size_x=n / 15, grid=n, theta=theta
        )
    if name.startswith("rosette"):
        n = int(name[7:])
        # the paper's rosette: size = wavelength, m = 1.778 + 0.002i
        return dda.DDAProblem(
            geometry.BulletRosette(), m=(1.778 + 0.002j,), wavelength=1.0, size_x=1.0, grid=n, theta=theta
        )
    raise SystemExit(f"unknown case {name!r}")


def timed(fn):
    fn()  # compile
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def run_case(name: str, ways) -> list[dict]:
    prob = case(name)
    rule = dda.OrientationAverage(**RULE)
    ref = dda.average(prob, rule, batch=1)  # the orientations, and a warm-up
    rows = []
    base = {
        "case": name,
        "device": device_description(),
        "grid": list(ref.lattice.shape),
        "n_dipoles": ref.lattice.n_dipoles,
        "n_orientations": ref.n_orientations,
        "n_alpha": RULE["n_alpha"],
        "date": time.strftime("%Y-%m-%d"),
    }
    for way in ways:
        if way == "serial":

            def fn():
                out = []
                for b, g in zip(ref.beta, ref.gamma):
                    p = dda.DDAProblem(
                        prob.shape,
                        prob.m,
                        wavelength=prob.wavelength,
                        size_x=prob.size_x,
                        grid=prob.grid,
                        orientation=(0.0, float(b), float(g)),
                        phi=tuple(90.0 - 360.0 * np.arange(RULE["n_alpha"]) / RULE["n_alpha"]),
                    )
                    out.append(dda.solve(p))
                return out

            res, sec = timed(fn)
            iters = int(sum(sum(r.iterations) for r in res))
            cext = float(np.sum(ref.weights * np.array([r.Cext for r in res])))
            extra = {"Cext": cext, "matvecs": iters}
        else:
            batch = 1 if way == "batch1" else None
            res, sec = timed(lambda b=batch: dda.average(prob, rule, batch=b))
            extra = {
                "Cext": res.Cext,
                "batch": res.batch_size,
                "iterations_max": int(res.iterations.max()),
                "solve_s": res.timings["solve_s"],
                "far_field_s": res.timings["far_field_s"],
            }
        row = {**base, "way": way, "seconds": sec, "orientations_per_s": ref.n_orientations / sec, **extra}
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def sphere128(precision: str) -> dict:
    prob = dda.DDAProblem(
        geometry.Sphere(),
        m=(1.5 + 0.01j,),
        wavelength=1.0,
        size_x=128 / 15,
        grid=128,
        precision=precision,
        theta=(0.0, 90.0, 180.0),
        integrate=False,
    )
    t0 = time.perf_counter()
    res = dda.solve(prob, dda.QMR(rtol=1e-5))
    sec = time.perf_counter() - t0
    row = {
        "case": "sphere128",
        "device": device_description(),
        "precision": precision,
        "n_dipoles": res.lattice.n_dipoles,
        "x": prob.k * res.a_eq,
        "iterations": list(res.iterations),
        "converged": res.all_converged,
        "seconds_total": sec,
        "solve_s": res.timings["solve_s"],
        "seconds_per_iteration": res.timings["solve_s"] / sum(res.iterations),
        "Qext": res.Qext,
        "date": time.strftime("%Y-%m-%d"),
    }
    print(json.dumps(row), flush=True)
    return row


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", nargs="*", default=["sphere16"])
    ap.add_argument("--ways", nargs="+", default=["serial", "batch1", "batched"])
    ap.add_argument("--sphere128", nargs="*", default=[], help="precisions for the 128^3 sphere")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    rows = []
    for name in args.cases:
        rows += run_case(name, args.ways)
        args.out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for p in args.sphere128:
        rows.append(sphere128(p))
        args.out.write_text("".join(json.dumps(r) + "\n" for r in rows))


if __name__ == "__main__":
    main()
