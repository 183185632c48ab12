"""The end of a layered map on the devices: the Green tensors from the Sommerfeld
integrals (the azimuthal factors of each integral), the direct term of the source's medium,
and the fields of a dipole moment; per chunk of points right after its integration
(:func:`finish_chunk`, one or several devices of this process) or for the whole map
(:func:`_finish_on`, devices of several processes)."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ..layout import Layout, on_each
from . import sommerfeld as som


@partial(jax.jit, static_argnames=("sel", "want_h"))
def _assemble(I, phi, sel, want_h: bool):
    """Tensors G and G_H (N, 3, 3) from the integrals I (N, nsel) (the others are zero),
    on the device."""
    return _assemble_cs(I, jnp.cos(phi), jnp.sin(phi), jnp.cos(2 * phi), jnp.sin(2 * phi), sel, want_h)


@partial(jax.jit, static_argnames=("sel", "want_h", "want_e", "total", "contract"))
def _finish(I, phi, R, in_s, ks, k0, pm, sel, want_h: bool, want_e: bool, total: bool, contract: bool):
    """One device program for the end of a map: the tensors from the integrals, the direct
    term added at the points ``in_s`` (the source's medium) for ``total``, and with
    ``contract`` the fields ``E, H = G pm, G_H pm`` (N, 3) instead of G, G_H (N, 3, 3)."""
    G, GH = _assemble(I, phi, sel, want_h)
    if total:
        safe = jnp.where(in_s[:, None], R, 1.0)  # the other points' R may be anything
        G0, GH0 = _free_space(ks, k0, safe)
        G = G + jnp.where(in_s[:, None, None], G0.astype(G.dtype), 0)
        if want_h:
            GH = GH + jnp.where(in_s[:, None, None], GH0.astype(G.dtype), 0)
    if not contract:
        return G, GH
    hi = jax.lax.Precision.HIGHEST  # no TF32 on the GPU in single precision
    E = jnp.matmul(G, pm, precision=hi) if want_e else None
    H = jnp.matmul(GH, pm, precision=hi) if want_h else None
    return E, H


def _finish_args(I, phi, R, in_s, ks, k0, pm, p):
    """The arguments of :func:`_finish` on the device (``R``, ``in_s``, ``ks``, ``k0``:
    None unless the total field is asked for)."""
    put = jax.device_put
    return (
        put(np.asarray(I, p.complex)),
        put(np.asarray(phi, p.real)),
        None if R is None else put(np.asarray(R, p.real)),
        None if in_s is None else put(np.asarray(in_s, bool)),
        None if ks is None else put(np.asarray(ks, p.complex)),
        k0,
        None if pm is None else put(pm),
    )


def _finish_on(devices, arrays, pm, p, fin):
    """:func:`_finish` of the map's points dealt out whole over ``devices`` (one contiguous
    run each, padded to the first run's length with copies of its last point: one compiled
    size), side by side; the results (A, B) as host arrays (None where not asked for).
    ``arrays``: (I, phi, R, in_s, ks, k0), the last four None unless the total field is."""
    N = len(arrays[0])
    runs = Layout(tuple(devices)).deal(N)
    size = len(runs[0])

    def one(dev, run):
        def cut(a):
            if not isinstance(a, np.ndarray) or a.ndim == 0:
                return a  # ks, k0 and the absent ones
            widths = [(0, size - len(run))] + [(0, 0)] * (a.ndim - 1)
            return np.pad(a[run.start : run.stop], widths, mode="edge")

        A, B = som.call(_finish, *_finish_args(*map(cut, arrays), pm, p), **fin)
        return tuple(None if x is None else np.asarray(x)[: len(run)] for x in (A, B))

    busy = [(d, r) for d, r in zip(devices, runs) if len(r)]
    outs = on_each([d for d, _ in busy], one, [r for _, r in busy])
    return tuple(None if outs[0][j] is None else np.concatenate([o[j] for o in outs]) for j in (0, 1))


def _finish_spec(N: int, nsel: int, total: bool, contract: bool, p):
    """The shapes of :func:`_finish_args` for :func:`sommerfeld.warm`."""
    sd = jax.ShapeDtypeStruct
    cdt, rdt = np.dtype(p.complex), np.dtype(p.real)
    tot = (sd((N, 3), rdt), sd((N,), bool), sd((), cdt), sd((), np.float64, weak_type=True))
    return (
        (sd((N, nsel), cdt), sd((N,), rdt))
        + (tot if total else (None,) * 4)
        + (sd((3,), cdt) if contract else None,)
    )


def _assemble_cs(I, c, s, c2, s2, sel, want_h: bool):
    """The assembly with the azimuthal factors given: (cos, sin) of phi and of 2 phi, or
    (dx, dy, dx^2 - dy^2, 2 dx dy) for integrals whose J_n carry 1 / rho^n (traced path)."""
    N = I.shape[0]
    zero = jnp.zeros((N,), I.dtype)
    cols = [zero] * 9
    for j, i in enumerate(sel):
        cols[i] = I[:, j]
    I = cols
    a = 1j / (8 * np.pi)
    b = -1 / (4 * np.pi)
    G = [
        [a * (I[0] + I[1] * c2), a * I[1] * s2, b * I[2] * c],
        [a * I[1] * s2, a * (I[0] - I[1] * c2), b * I[2] * s],
        [b * I[3] * c, b * I[3] * s, 2 * a * I[4]],
    ]
    G = jnp.stack([jnp.stack(r, -1) for r in G], -2)
    if not want_h:
        return G, None
    GH = [
        [a * I[5] * s2, a * (I[6] - I[5] * c2), -b * I[8] * s],
        [a * (-I[6] - I[5] * c2), -a * I[5] * s2, b * I[8] * c],
        [-b * I[7] * s, b * I[7] * c, zero],
    ]
    return G, jnp.stack([jnp.stack(r, -1) for r in GH], -2)


@jax.jit
def _free_space(k, k0, R):
    r = jnp.linalg.norm(R, axis=1)
    u = R / r[:, None]
    kr = k * r
    g = jnp.exp(1j * kr) / (4 * np.pi * r)
    A = (1 + 1j / kr - 1 / kr**2) * g
    B = (-1 - 3j / kr + 3 / kr**2) * g
    G = A[:, None, None] * jnp.eye(3)[None] + B[:, None, None] * u[:, :, None] * u[:, None, :]
    z = jnp.zeros_like(r)
    cross = jnp.stack(
        [
            jnp.stack([z, -u[:, 2], u[:, 1]], -1),
            jnp.stack([u[:, 2], z, -u[:, 0]], -1),
            jnp.stack([-u[:, 1], u[:, 0], z], -1),
        ],
        -2,
    )
    GH = ((k + 1j / r) * g / k0)[:, None, None] * cross
    return G, GH


@partial(jax.jit, static_argnames=("sel", "want_h", "want_e", "total", "contract"))
def finish_chunk(acc, h, w_last, rtol, phi, R, ks, k0, pm, sel, want_h, want_e, total, contract):
    """The end of one chunk of a group's points, on the device that integrated it: from the
    accumulators ``acc = (K, err, last)`` of :func:`emjax.layered.sommerfeld.integrate`,
    the relative error estimate per point (the Gauss-Kronrod differences plus the truncated
    tail beyond k_max, estimated from the last panel as for an exp(-h k_rho) decay:
    ``2 |K_last| q / (1 - q)``, ``q = exp(-h w_last)``; in float64) and whether it is above
    ``rtol``, then :func:`_finish` of the chunk (``total``: the direct term added to every
    point: the group lies in the source's medium; ``R`` then the points' r - r').
    Returns (A, B, relative error, above rtol)."""
    K, err, last = acc
    f64 = jnp.float64
    q = jnp.exp(-h.astype(f64) * w_last)
    e = (err.astype(f64) + 2 * jnp.abs(last).astype(f64) * (q / (1 - q))[:, None]).sum(1)
    scale = jnp.maximum(jnp.linalg.norm(K, axis=1).astype(f64), 1e-300)
    in_s = jnp.ones(h.shape, bool) if total else None
    A, B = _finish(K, phi, R, in_s, ks, k0, pm, sel, want_h, want_e, total, contract)
    return A, B, e / scale, e > rtol * scale
