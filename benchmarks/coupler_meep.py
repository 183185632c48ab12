"""The directional coupler of ``examples/waveguide_coupler.py``, emjax and Meep side by side.

Port 1 is excited; both codes report |S_i1|^2 (i = 1..4) over the example's nine
wavelengths, 1.45 .. 1.65 um: emjax through ``fdtd.s_matrix`` (staircase: the guides run
into the CPML), Meep 1.25 through MPB eigenmode sources and ``get_eigenmode_coefficients``
on the same port planes, from the same polygons, with and without its subpixel smoothing.
Meep runs in Debian's system Python (``apt-get install python3-meep``; ``--meep-python``),
``benchmarks/coupler_meep_run.py`` being its half. The coupled-mode estimate of the example
(supermodes of ``emjax.modes`` on emjax's grid) is written beside them.

    PYTHONPATH=src python benchmarks/coupler_meep.py --resolutions 20 --out coupler20.json

(``--meep-averaging smooth`` or ``staircase`` runs one of Meep's two; ``--no-emjax``,
``--no-meep`` one code.) The JSON holds each code's |S_i1|^2 per resolution, its seconds,
the estimate, the date, the commit and the machine; BENCHMARKS.md quotes the runs of
2026-11-26 (``benchmarks/results/cpu-2core-coupler-meep.jsonl``, one line per run).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _example():
    spec = importlib.util.spec_from_file_location(
        "waveguide_coupler", ROOT / "examples" / "waveguide_coupler.py"
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclass looks its module up
    spec.loader.exec_module(mod)
    return mod


def run_emjax(ex, resolution: int) -> dict:
    from emjax import fdtd

    device = ex.Coupler(resolution=resolution)
    sim = device.simulation()
    t = time.perf_counter()
    S = fdtd.s_matrix(sim, device.ports(), ex.FREQS, until=ex.UNTIL, excite=["1"])
    seconds = time.perf_counter() - t
    p = np.abs(S.s[:, :, 0]) ** 2
    return {
        "code": "emjax",
        "resolution": resolution,
        "averaging": "staircase",
        "frequencies": list(map(float, ex.FREQS)),
        "abs_s_squared": {f"S[{n},1]": p[:, i].tolist() for i, n in enumerate(S.labels)},
        "residual": float(S.residual[0]),
        "seconds": seconds,
        "grid": list(sim.grid.shape),
    }


def run_meep(ex, resolution: int, smooth: bool, python: str) -> dict:
    device = ex.Coupler(resolution=resolution)
    sim = device.simulation()
    ports = [
        {"name": p.name, "center": [p.center[0], p.center[1]], "width": p.size[1], "direction": p.sign}
        for p in device.ports()
    ]
    spec = {
        "resolution": resolution,
        "pml": device.pml / resolution,
        "size": [sim.size[0], sim.size[1]],
        "n_core": device.n_core,
        "n_clad": device.n_clad,
        "guides": [device.vertices(s, reach=sim.size[0]).tolist() for s in (1, -1)],
        "ports": ports,
        "frequencies": list(map(float, ex.FREQS)),
        "smooth": smooth,
    }
    with tempfile.TemporaryDirectory() as tmp:
        spec_path, out_path = Path(tmp) / "spec.json", Path(tmp) / "out.json"
        spec_path.write_text(json.dumps(spec))
        t = time.perf_counter()
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
        done = subprocess.run(
            [python, str(ROOT / "benchmarks" / "coupler_meep_run.py"), str(spec_path), str(out_path)],
            capture_output=True,
            text=True,
            env=env,
        )
        if done.returncode != 0:
            raise RuntimeError(f"Meep failed:\n{done.stderr[-3000:]}")
        out = json.loads(out_path.read_text())
    out["wall_seconds"] = time.perf_counter() - t
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--resolutions", type=int, nargs="+", default=[20])
    ap.add_argument("--meep-python", default="/usr/bin/python3")
    ap.add_argument("--no-meep", action="store_true")
    ap.add_argument(
        "--meep-averaging", nargs="+", default=["smooth", "staircase"], choices=["smooth", "staircase"]
    )
    ap.add_argument("--no-emjax", action="store_true")
    ap.add_argument("--out", type=Path, default=Path("coupler_meep.json"))
    args = ap.parse_args(argv)
    ex = _example()
    records = []
    for res in args.resolutions:
        if not args.no_emjax:
            records.append(run_emjax(ex, res))
            print(json.dumps({k: records[-1][k] for k in ("code", "resolution", "seconds")}), flush=True)
        if not args.no_meep:
            for smooth in (a == "smooth" for a in args.meep_averaging):
                records.append(run_meep(ex, res, smooth, args.meep_python))
                print(
                    json.dumps({k: records[-1][k] for k in ("code", "resolution", "smooth", "wall_seconds")}),
                    flush=True,
                )
    device = ex.Coupler(resolution=args.resolutions[0])
    sim = device.simulation()
    est_freqs = ex.FREQS[::2]
    p_cross, phi_s, phi_b = ex.coupled_mode_estimate(device, sim, est_freqs)
    estimate = {
        "resolution": args.resolutions[0],
        "frequencies": est_freqs.tolist(),
        "p_cross": p_cross.tolist(),
        "phi_straight": phi_s.tolist(),
        "phi_bends": phi_b.tolist(),
    }
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    doc = {
        "date": time.strftime("%Y-%m-%d"),
        "commit": commit.stdout.strip(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "records": records,
        "coupled_mode_estimate": estimate,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1))
    print_table(doc)


def print_table(doc):
    recs = doc["records"]
    freqs = np.array(recs[0]["frequencies"])
    for key in ("S[3,1]", "S[4,1]", "S[1,1]"):
        print(f"|{key}|^2 over wavelength " + " ".join(f"{1 / f:7.3f}" for f in freqs))
        for r in recs:
            name = f"{r['code']} res {r['resolution']}" + (
                "" if r["code"] == "emjax" else (" smooth" if r["smooth"] else " staircase")
            )
            print(f"  {name:28s}" + " ".join(f"{v:7.4f}" for v in r["abs_s_squared"][key]))


if __name__ == "__main__":
    sys.exit(main())
