"""Time the 3-D FDFD operator (one matvec) and compare with the memory traffic it must make.

    PYTHONPATH=src python3 benchmarks/fdfd_matvec.py --size 128 --size 256 --precision double

The minimum traffic of a matvec without PEC is 10 arrays of the field's size (read E (3),
eps (3) and Z (1), write the result (3)); the rate reported is that traffic divided by the
measured time, and its fraction of the device's copy bandwidth (measured here with a
device-to-device copy of one field-sized array).
"""

from __future__ import annotations

import argparse
import json
import time

import jax
import jax.numpy as jnp
import numpy as np

from emjax.backend import precision_scope
from emjax.fdfd.operator3d import build_operator
from emjax.fdfd.operators import SCPML


def _best(fn, *args, repeats=10):
    out = fn(*args)
    jax.block_until_ready(out)
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn(*args)
        jax.block_until_ready(out)
        best = min(best, time.perf_counter() - t0)
    return best


def _use_shift(kind: str) -> None:
    """Replace the operator's one-cell shifts: ``concat`` (slice + zeros + concatenate) or
    ``pad`` (lax.pad with a negative edge: a slice and a zero edge in one op)."""
    from jax import lax

    import emjax.fdfd.operator3d as o

    def shift(f, axis, up):
        cfg = [(0, 0, 0)] * f.ndim
        cfg[axis] = (-1, 1, 0) if up else (1, -1, 0)
        return lax.pad(f, jnp.zeros((), f.dtype), cfg)

    def concat(f, axis, up):
        n = f.shape[axis]
        z = jnp.zeros_like(lax.slice_in_dim(f, 0, 1, axis=axis))
        if up:
            return jnp.concatenate([lax.slice_in_dim(f, 1, n, axis=axis), z], axis)
        return jnp.concatenate([z, lax.slice_in_dim(f, 0, n - 1, axis=axis)], axis)

    sh = shift if kind == "pad" else concat
    o._fwd = lambda f, axis: sh(f, axis, True) - f
    o._bwd = lambda f, axis: f - sh(f, axis, False)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, action="append", required=True)
    ap.add_argument("--precision", default="double", choices=["single", "double"])
    ap.add_argument(
        "--shift",
        default="default",
        choices=["default", "concat", "pad"],
        help="how the operator shifts arrays (A/B of the kernels' fusion)",
    )
    args = ap.parse_args(argv)
    if args.shift != "default":
        _use_shift(args.shift)
    with precision_scope():
        dtype = np.complex64 if args.precision == "single" else np.complex128
        for n in args.size:
            shape = (n, n, n)
            eps = np.ones((3, *shape), dtype)
            eps[:, n // 3 : 2 * n // 3, n // 3 : 2 * n // 3, n // 3 : 2 * n // 3] = 4.0
            op = build_operator(eps, SCPML(10), 0.1, 2 * np.pi, dtype)
            x = jnp.asarray(np.random.default_rng(0).standard_normal((3, *shape)), dtype)
            t_mv = _best(jax.jit(lambda o, v: o(v)), op, x)
            t_copy = _best(jax.jit(lambda v: v * 2), x)  # read + write 3 arrays
            item = np.dtype(dtype).itemsize
            field = n**3 * item
            rec = {
                "size": n,
                "precision": args.precision,
                "matvec_s": t_mv,
                "min_traffic_GB": 10 * field / 1e9,
                "effective_GB_s": 10 * field / t_mv / 1e9,
                "copy_GB_s": 6 * field / t_copy / 1e9,
                "fraction_of_copy_bandwidth": (10 * field / t_mv) / (6 * field / t_copy),
                "shift": args.shift,
                "device": str(jax.devices()[0]),
            }
            print(json.dumps(rec), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
