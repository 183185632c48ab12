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


def _percomponent(op, E):
    """The same ``op(E)`` (no PEC) written per component: H and the divergence are formed
    once, from E's three components, and each output component in one expression (an A/B
    of XLA's fusion against the operator's stacked form)."""
    from emjax.fdfd.operator3d import _along, _bwd, _fwd

    ih = [1 / _along(v, a) for a, v in enumerate(op.s_half)]
    ii = [1 / _along(v, a) for a, v in enumerate(op.s_int)]
    e = [op.eps[c] for c in range(3)]
    E = [E[c] for c in range(3)]
    H = [
        _fwd(E[2], 1) * ih[1] - _fwd(E[1], 2) * ih[2],
        _fwd(E[0], 2) * ih[2] - _fwd(E[2], 0) * ih[0],
        _fwd(E[1], 0) * ih[0] - _fwd(E[0], 1) * ih[1],
    ]
    w = [op._w(c) for c in range(3)]
    q = op.Z * (_bwd(w[0] * e[0] * E[0], 0) + _bwd(w[1] * e[1] * E[1], 1) + _bwd(w[2] * e[2] * E[2], 2))
    curl = [
        _bwd(H[2], 1) * ii[1] - _bwd(H[1], 2) * ii[2],
        _bwd(H[0], 2) * ii[2] - _bwd(H[2], 0) * ii[0],
        _bwd(H[1], 0) * ii[0] - _bwd(H[0], 1) * ii[1],
    ]
    S = [op._s(c, 0) * op._s(c, 1) * op._s(c, 2) for c in range(3)]
    out = [
        S[c] * (curl[c] * op.scale - op.omega2 * e[c] * E[c]) - e[c] * w[c] * _fwd(q, c) * op.scale
        for c in range(3)
    ]
    return jnp.stack(out)


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
            t_pc = _best(jax.jit(_percomponent), op, x)
            diff = float(jnp.max(jnp.abs(jax.jit(_percomponent)(op, x) - jax.jit(lambda o, v: o(v))(op, x))))
            t_copy = _best(jax.jit(lambda v: v * 2), x)  # read + write 3 arrays
            item = np.dtype(dtype).itemsize
            field = n**3 * item
            rec = {
                "size": n,
                "precision": args.precision,
                "matvec_s": t_mv,
                "percomponent_s": t_pc,
                "percomponent_max_difference": diff,
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
