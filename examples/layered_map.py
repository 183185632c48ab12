"""Field map of a dipole near an interface (Quinto, Boutami & Hazart, PIER 2011, Figs. 4-5).

A vertical dipole in glass (n = 1.5), 10 nm above the interface with air (z = 0), at 600 nm.
Computes the reflected (in glass) and transmitted (in air) field on an n x n map in the XZ
plane spaced 1 nm and centred at the origin, prints the time and the accuracy against a
tighter run, and writes layered_map.png and a NetCDF file to --out (default out/layered_map;
`--out examples/figures` regenerates the README's figure).

    python examples/layered_map.py [n]      (default n = 128)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from emjax.backend import device_description
from emjax.layered import dipole_fields
from emjax.layered.bench import paper_case_points, paper_case_stack

ROOT = Path(__file__).resolve().parents[1]


def main(n: int = 128, out: Path | None = None) -> int:
    stack = paper_case_stack()
    pts = paper_case_points(n)
    kw = dict(p=(0, 0, 1), part="scattered", fields="E")
    print(f"emjax layered example on {device_description()}: {n}x{n} points")
    t0 = time.perf_counter()
    res = dipole_fields(stack, 600.0, (0.0, 0.0, 10.0), pts, rtol=1e-8, **kw)
    t1 = time.perf_counter()
    ref = dipole_fields(stack, 600.0, (0.0, 0.0, 10.0), pts, rtol=1e-12, **kw)
    err = np.abs(res.E[:, 2] - ref.E[:, 2]).max() / np.abs(ref.E[:, 2]).max()
    print(
        f"rtol 1e-8: {t1 - t0:.2f} s (first call, with compilation); max |dEz| / max |Ez| = {err:.2e} "
        f"against rtol 1e-12; largest error estimate {res.error.max():.1e}"
    )

    from emjax.io import save_dataset
    from emjax.layered.plot import plot_layered_map
    from emjax.layered.results import layered_to_xarray

    out = ROOT / "out" / "layered_map" if out is None else Path(out)
    out.mkdir(parents=True, exist_ok=True)
    save_dataset(layered_to_xarray(res, (n, n), ("x", "z")), out / "layered_map.nc")
    fig = plot_layered_map(res, (n, n), ("x", "z"), out / "layered_map.png")
    print(f"wrote {out / 'layered_map.nc'} and {fig}")
    return 0


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("n", type=int, nargs="?", default=128, help="points per side (default 128)")
    ap.add_argument("--out", type=Path, help="output folder (default out/layered_map)")
    a = ap.parse_args()
    sys.exit(main(a.n, a.out))
