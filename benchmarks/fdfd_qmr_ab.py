"""A/B of the 3-D FDFD Krylov loop: QMR vs QMRLean, per-component vs stacked operator.

    PYTHONPATH=src python3 benchmarks/fdfd_qmr_ab.py --size 128

The bench problem of ``emjax bench fdfd --dims 3`` (eps 4 sphere, 10 cells per wavelength);
each variant solved twice, the second (warm) run's QMR seconds and iterations printed.
"""

from __future__ import annotations

import argparse
import json

from emjax.fdfd.bench import bench_config
from emjax.fdfd.config import build_fdfd
from emjax.fdfd.operator3d import Operator3D
from emjax.fdfd.rcs import solve_rcs
from emjax.krylov import QMR, QMRLean


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=128)
    args = ap.parse_args(argv)
    full = Operator3D.full
    for op_kind in ("percomponent", "stacked"):
        Operator3D.full = Operator3D.full_percomponent if op_kind == "percomponent" else full
        for method in (QMR, QMRLean):
            p = build_fdfd(bench_config(args.size, dims=3))
            from dataclasses import replace

            p = replace(p, solver=replace(p.solver, method=method(rtol=1e-6, maxiter=20000, chunk=128)))
            for _ in range(2):
                r = solve_rcs(p)
            st = r.stats
            print(
                json.dumps(
                    {
                        "op": op_kind,
                        "method": method.__name__,
                        **{k: st.get(k) for k in ("solve_s", "iterations", "setup_s")},
                    }
                ),
                flush=True,
            )
    Operator3D.full = full
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
