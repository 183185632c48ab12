"""FDTD resonances (``Result.resonances``: filter diagonalization of a probe's ring-down)
against the complex poles of the Mie series, over the grid resolution.

Cases (vacuum around, a 10-cell CPML, subpixel averaging, single precision, a Gaussian
dipole inside the scatterer, the probe's record from the pulse's end):

* ``cylinder``: an infinite cylinder (2-D grid, TM: Ez), n = 3.5, radius 0.5, in a 2 x 2
  region; modes TM m = 3 (whispering gallery, f = 0.455190, Q = 97.39), m = 0 (0.359207,
  6.377), m = 1 (0.495150, 10.306). Reference: zeros of ``n J_m'(n k a) H_m(k a) - J_m(n k
  a) H_m'(k a)``.
* ``sphere``: a sphere, n = 4, radius 0.5, in a 2 x 2 x 2 region; the magnetic dipole b_1
  (f = 0.239936, Q = 15.684) and quadrupole b_2 (0.348777, 80.09; split in two by the
  cubic grid, the stronger taken), the electric dipole a_1 (0.335096, 7.275). Reference:
  zeros of the denominators of b_l and a_l (Bohren & Huffman 4.53).

References: tests/fdtd/mie_poles.py (SciPy Bessel functions of complex argument, secant
iteration). Each row: resolution (cells per unit length), then per mode the relative
frequency error and the relative Q error.

Measured 2026-11-26 on a 2-core CPU shared with other jobs
(benchmarks/results/cpu-2core-fdtd-resonances.jsonl; relative frequency error, Q error)::

    case      res   mode  frequency    Q
    cylinder   20   TM3   -5.20e-3   +2.77%
    cylinder   40   TM3   -1.32e-3   +0.72%
    cylinder   80   TM3   -3.29e-4   +0.21%     (TM0, TM1 likewise: second order)
    sphere     16   b1    -4.24e-3   +0.89%
    sphere     24   b1    -2.23e-3   +0.42%
    sphere     32   b1    -1.61e-3   +0.24%     (double precision: -1.606e-3, +0.24%)
    sphere     40   b1    -1.11e-3   +0.15%

The sphere's frequencies converge about as dx^1.5 (a 3 x 3 x 3 region or a 20-cell CPML
changes b_1 by < 1e-5 at 16 cells); docs/fdtd.md ("Resonances") has every mode.

Run: ``PYTHONPATH=src python benchmarks/fdtd_resonances.py [cylinder|sphere]
[RESOLUTION ...]``; one JSON line per run on stdout.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "fdtd"))

import mie_poles as mp  # noqa: E402

from emjax import fdtd, geometry, scene  # noqa: E402


def cylinder_case(resolution: int):
    n, a = 3.5, 0.5
    ref = {
        "TM3": mp.pole(mp.cylinder_tm_denominator(3, n, a), 2 * np.pi * 0.455 * (1 - 0.5j / 97)),
        "TM0": mp.pole(mp.cylinder_tm_denominator(0, n, a), 2 * np.pi * 0.359 * (1 - 0.5j / 6.4)),
        "TM1": mp.pole(mp.cylinder_tm_denominator(1, n, a), 2 * np.pi * 0.495 * (1 - 0.5j / 10.3)),
    }
    sim = fdtd.Simulation(
        size=(2.0, 2.0, 1 / resolution),
        resolution=resolution,
        scene=scene.Scene([scene.Object(geometry.Disk(), n**2, size=2 * a)]),
        sources=[fdtd.Dipole((0.3, 0.1, 0.0), "z", fdtd.GaussianPulse(0.4, 0.15))],
        boundary=(fdtd.CPML(10), fdtd.CPML(10), fdtd.Periodic()),
        probes=(((-0.25, 0.2, 0.0), "z"),),
    )
    return sim, 60.0, ref, (0.3, 0.5)


def sphere_case(resolution: int):
    n, a = 4.0, 0.5
    ref = {
        "b1": mp.pole(mp.sphere_te_denominator(1, n, a), 2 * np.pi * 0.24 * (1 - 0.5j / 15.7)),
        "b2": mp.pole(mp.sphere_te_denominator(2, n, a), 2 * np.pi * 0.3488 * (1 - 0.5j / 80)),
        "a1": mp.pole(mp.sphere_te_denominator(1, n, a, True), 2 * np.pi * 0.3351 * (1 - 0.5j / 7.3)),
    }
    sim = fdtd.Simulation(
        size=(2.0, 2.0, 2.0),
        resolution=resolution,
        scene=scene.Scene([scene.Object(geometry.Sphere(), n**2, size=2 * a)]),
        sources=[fdtd.Dipole((0.05, 0.2, 0.1), "x", fdtd.GaussianPulse(0.3, 0.12))],
        probes=(((0.1, -0.2, -0.1), "x"),),
    )
    return sim, 80.0, ref, (0.2, 0.42)


def errors(found, ref) -> dict:
    """Per mode: the strongest resonance within 2% of the reference frequency, as (relative
    frequency error, relative Q error)."""
    out = {}
    for name, (f, q) in ref.items():
        near = [r for r in found if abs(r.frequency / f - 1) < 0.02]
        if not near:
            out[name] = None
            continue
        r = max(near, key=lambda r: abs(r.amplitude))
        out[name] = (r.frequency / f - 1, r.Q / q - 1)
    return out


def main(argv) -> None:
    case = argv[0] if argv else "cylinder"
    build = {"cylinder": cylinder_case, "sphere": sphere_case}[case]
    for resolution in [int(x) for x in argv[1:]] or ([20, 40, 80] if case == "cylinder" else [16, 24]):
        sim, until, ref, band = build(resolution)
        t0 = time.perf_counter()
        res = fdtd.run(sim, until=until)
        seconds = time.perf_counter() - t0
        row = {"case": case, "resolution": resolution, "grid": list(sim.grid.shape), "seconds": seconds}
        row["reference"] = {k: {"frequency": f, "Q": q} for k, (f, q) in ref.items()}
        row["errors"] = errors(res.resonances(0, *band), ref)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
