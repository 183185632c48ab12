"""Time the block-tridiagonal direct solver (emjax.fdfd.blocksolve) on 2-D TM/TE FDFD matrices
against SuperLU, on the default JAX device.

    PYTHONPATH=src python3 benchmarks/fdfd_blocksolve.py --n 400 --n 1210
    PYTHONPATH=src python3 benchmarks/fdfd_blocksolve.py --n 400 --method cr --method thomas \\
        --chunk 4 --chunk 16 --lu augmented --lu square --superlu

The matrix and right sides are the ones :func:`emjax.fdfd.solve_tm` (``--te``: solve_te)
builds for an n x n grid (PML 12 cells, 40 cells per wavelength, region (n - 25) / 40
wavelengths wide): an eps = 4 cylinder of radius 1 wavelength at the centre (``--scene
pec``: a PEC one; ``--scene none``: a line source in vacuum), plane waves at ``--angles``
(default 0 and 90 degrees: two right sides). They are taken from the solver by standing in
for its SuperLU step (tm._solve), so they are exactly the matrices the solver factors.

Each case prints one JSON line: the first call (``compile_s``: XLA compilation, ``first_s``:
the run after it) and the best of ``--repeats`` warm calls (``warm_s``: blocks to the device,
elimination, solution back to the host; ``total_warm_s`` adds the host-side block
extraction, or with solve_tm's stencil arrays (the default for TM) their transposition), the
relative residual max_k ||A x_k - b_k|| / ||b_k||, the iterative
refinement steps taken, the memory estimate and, where JAX reports it, the device's peak.
With ``--superlu`` also SciPy's SuperLU with tm.py's options (factor + solve).
Set XLA_PYTHON_CLIENT_MEM_FRACTION=0.95 for the largest grids on a GPU (JAX preallocates
75% of the memory by default and the check refuses what does not fit in it).
"""

from __future__ import annotations

import argparse
import json
import time
from unittest import mock

import numpy as np


def fdfd_matrix(n: int, te: bool = False, scene: str = "eps4", angles=(0.0, 90.0), stencil: str = "compact"):
    """(A, B, shape) of solve_tm / solve_te on an n x n grid (see the module docstring)."""
    from emjax import fdfd, geometry
    from emjax import scene as sc
    from emjax.fdfd import tm

    res, pml = 40, 12
    side = (n - 1 - 2 * pml) / res
    if side <= 0:
        raise SystemExit(f"--n must be at least {2 * pml + 2}")
    objects = {
        "eps4": [sc.Object(geometry.Disk(), 4.0, size=2.0)],
        "pec": [sc.Object(geometry.Disk(), sc.PEC, size=2.0)],
        "none": [],
    }[scene]
    if objects and side < 2.2:
        objects = [sc.Object(geometry.Disk(), objects[0].material, size=0.8 * side)]
    got = {}

    def capture(A, b, g, *args, **kw):
        got.update(A=A.tocsr(), B=b.reshape(g.shape[0] * g.shape[1], -1), shape=g.shape, C=kw.get("stencil"))
        raise StopIteration

    source = fdfd.LineSource((0.0, 0.0)) if scene == "none" else [fdfd.PlaneWave2D(a) for a in angles]
    solve = fdfd.solve_te if te else fdfd.solve_tm
    with mock.patch.object(tm, "_solve", capture):
        try:
            solve(
                (side, side), res, 1.0, source, scene=sc.Scene(objects) if objects else None, stencil=stencil
            )
        except StopIteration:
            pass
    assert got["shape"] == (n, n), got["shape"]
    return got["A"], got["B"], got["shape"], got["C"]


def superlu(A, B) -> dict:
    import scipy.sparse.linalg as spla

    t0 = time.perf_counter()
    lu = spla.splu(
        A.tocsc(), permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0, options=dict(SymmetricMode=True)
    )
    t1 = time.perf_counter()
    X = lu.solve(B)
    t2 = time.perf_counter()
    res = np.max(np.linalg.norm(A @ X - B, axis=0) / np.linalg.norm(B, axis=0))
    return {
        "solver": "superlu",
        "factor_s": t1 - t0,
        "solve_s": t2 - t1,
        "seconds": t2 - t0,
        "residual": float(res),
    }


def run_case(A, B, shape, method, chunk, lu, repeats, stencil=None) -> dict:
    import jax

    from emjax.fdfd.blocksolve import solve_block_tridiagonal

    t0 = time.perf_counter()
    X, info = solve_block_tridiagonal(A, shape, B, method=method, chunk=chunk, lu=lu, stencil=stencil)
    first_total = time.perf_counter() - t0
    out = {
        "solver": "blocksolve",
        "compile_s": info["compile_s"],
        "first_s": info["seconds"],
        "first_total_s": first_total,
        "residual": info["residual"],
        "refinements": info["refinements"],
    }
    warm = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        X, info = solve_block_tridiagonal(A, shape, B, method=method, chunk=chunk, lu=lu, stencil=stencil)
        warm.append((info["seconds"], time.perf_counter() - t0))
    if warm:
        out["warm_s"], out["total_warm_s"] = min(warm)
    for k in ("method", "kind", "group", "block", "chunk", "steps", "levels", "bytes", "extract_s"):
        out[k] = info[k]
    stats = jax.devices()[0].memory_stats() or {}
    if "peak_bytes_in_use" in stats:
        out["device_peak_bytes"] = int(stats["peak_bytes_in_use"])
    return out


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, action="append", help="grid side (repeatable; default 400)")
    p.add_argument("--method", action="append", choices=["auto", "cr", "thomas"], help="default: auto")
    p.add_argument("--chunk", type=int, action="append", help="cyclic-reduction chunk (default: automatic)")
    p.add_argument("--lu", action="append", choices=["augmented", "square"], help="default: augmented")
    p.add_argument("--te", action="store_true", help="TE (H_z) instead of TM")
    p.add_argument("--stencil", default="compact", choices=["compact", "yee"])
    p.add_argument("--scene", default="eps4", choices=["eps4", "pec", "none"])
    p.add_argument("--angles", type=float, nargs="+", default=[0.0, 90.0])
    p.add_argument("--repeats", type=int, default=2, help="warm calls (the best is reported)")
    p.add_argument("--superlu", action="store_true", help="time SciPy's SuperLU too")
    p.add_argument(
        "--extract",
        action="store_true",
        help="read the blocks out of the sparse matrix (block_layout) instead of taking solve_tm's "
        "stencil arrays (TE always extracts)",
    )
    a = p.parse_args(argv)
    import jax

    from emjax.backend import device_description

    for n in a.n or [400]:
        t0 = time.perf_counter()
        A, B, shape, C = fdfd_matrix(n, a.te, a.scene, tuple(a.angles), a.stencil)
        C = None if a.extract else C
        head = {
            "n": n,
            "pol": "TE" if a.te else "TM",
            "stencil": a.stencil,
            "scene": a.scene,
            "K": B.shape[1],
            "assemble_s": round(time.perf_counter() - t0, 3),
            "device": device_description(jax.devices()[0]),
        }
        if a.superlu:
            print(json.dumps(head | superlu(A, B)), flush=True)
        for method in a.method or ["auto"]:
            for chunk in [None] if method == "thomas" else a.chunk or [None]:
                for lu in a.lu or ["augmented"]:
                    try:
                        row = run_case(A, B, shape, method, chunk, lu, a.repeats, C)
                    except Exception as exc:  # noqa: BLE001 - report and go on with the next case
                        row = {"method": method, "chunk": chunk, "error": f"{type(exc).__name__}: {exc}"}
                    print(json.dumps(head | {"lu": lu} | row), flush=True)


if __name__ == "__main__":
    main()
