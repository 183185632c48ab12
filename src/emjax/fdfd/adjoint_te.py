"""Differentiable 2-D TE FDFD: H_z as a JAX function of the in-plane permittivity.

:func:`te_field` solves the TE problem of :func:`emjax.fdfd.solve_te` for permittivity
*arrays* on the E_x and E_y edges (the PML included), diagonal in-plane (no Kottke
off-diagonal term: a pixel design's permittivity, or a scene rasterized with
``averaging="staircase"``), with ``jax.grad``/``jax.vjp`` through it, as
:func:`emjax.fdfd.tm_field` does for TM:

* forward: the sparse matrix ``A(eps) = Ay D_xf diag(1/eps_y) D_xb + Ax D_yf diag(1/eps_x)
  D_yb + omega^2 M`` (compact stencil; ``"yee"``: without the averages, ``M = I``) assembled
  on the host and factored by SuperLU (a ``jax.pure_callback``, the factorization kept);
* reverse: ``lambda = A^-T ubar`` with the same factorization (``trans="T"``) and the
  inverse permittivities' cotangent ``-(dr/d inv_eps)^T lambda``, sparse products on the
  host too (see ``_make_solve``); JAX adds the chain rule through ``1/eps``. One transposed
  solve per gradient, nothing iterative. (A first version wrote the residual's products in
  JAX with BCOO matrices: under ``jax.jit``, XLA:CPU constant-folded the plane wave's
  products and the gradient lost ~1e-8 relative; on the host it is exact to rounding.)
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ..errors import ConfigError, require_positive
from .adjoint import _array, _cached_factor, _from_bytes, _incident, _to_bytes, caller_scope
from .operators import SCPML, derivatives
from .specs2d import PlaneWave2D
from .stencil2d import _check_stencil, _compact_parts

__all__ = ["te_field"]


class _Parts:
    """The eps-independent sparse pieces of the TE matrix on one grid (host and JAX copies)."""

    def __init__(self, shape, dx, omega, pml, stencil):
        D = derivatives(shape, dx, omega, pml)
        n = shape[0] * shape[1]
        if stencil == "compact":
            Ax, Ay, M = _compact_parts(shape)
        else:
            Ax = Ay = M = sp.identity(n, format="csr")
        self.host = dict(D, Ax=Ax.tocsr(), Ay=Ay.tocsr(), M=M.tocsr())
        self.omega = omega

    def matrix(self, inv_x, inv_y):
        h = self.host
        Kx = h["xf"] @ sp.diags(inv_y.ravel()) @ h["xb"]
        Ky = h["yf"] @ sp.diags(inv_x.ravel()) @ h["yb"]
        return (h["Ay"] @ Kx + h["Ax"] @ Ky + self.omega**2 * h["M"]).tocsc()


def _factor(parts, inv_x, inv_y, key):
    return _cached_factor(
        (inv_x, inv_y), ("te", *key), lambda: spla.splu(parts.matrix(inv_x, inv_y), permc_spec="COLAMD")
    )


def te_field(
    eps,
    resolution: float,
    frequency: float,
    source,
    pml: SCPML | None = None,
    *,
    stencil: str = "compact",
    origin=None,
):
    """H_z (total field, complex (nx, ny), at the cell centres) of the 2-D TE problem.

    ``eps``: the relative permittivity on the E_x edges and on the E_y edges, a pair
    ``(eps_x, eps_y)`` of (nx, ny) arrays (edge ``(i, j)`` of E_x lies half a cell below the
    centre node ``(i, j)`` in y, of E_y half a cell below in x, as in
    :func:`emjax.fdfd.solve_te`), or one (nx, ny)
    array used for both; real or complex, JAX arrays or tracers, PML cells included.
    ``resolution`` cells per unit length, ``frequency`` = 1 / wavelength. ``source``: a
    :class:`PlaneWave2D` H_z = exp(i k.r) (scattered-field formulation: eps must be 1 in the
    PML; the result is the total field) or an (nx, ny) magnetic current density M_z (right
    side ``-i omega M``, spread by the compact mass like ``solve_te``'s line source).
    ``origin``: the centre node (0, 0)'s position (default: the grid centred on 0).
    Differentiable with respect to ``eps`` and ``M`` (module docstring). Solved in double
    precision; complex128 with 64-bit JAX on, complex64 otherwise
    (:func:`emjax.fdfd.adjoint.caller_scope`)."""
    _check_stencil(stencil)
    pml = SCPML() if pml is None else pml
    if not isinstance(pml, SCPML):
        raise ConfigError(f"pml must be an emjax.fdfd.SCPML, got {pml!r}")
    res = require_positive("resolution", resolution)
    f = require_positive("frequency", frequency)
    eps_x, eps_y = eps if isinstance(eps, (tuple, list)) else (eps, eps)
    shape = tuple(int(n) for n in np.shape(eps_x))
    if np.shape(eps_y) != shape:
        raise ConfigError(f"eps_x and eps_y must have one shape, got {shape} and {np.shape(eps_y)}")
    if len(shape) != 2 or min(shape) <= 2 * pml.thickness + 1:
        raise ConfigError(f"eps must be 2-D arrays larger than the PML on each side, got shape {shape}")
    dx, omega = 1.0 / res, 2 * math.pi * f
    if origin is None:
        origin = (-(shape[0] - 1) / 2 * dx, -(shape[1] - 1) / 2 * dx)
    L = pml.thickness
    inner = np.zeros(shape, bool)
    inner[L : -L or None, L : -L or None] = True
    for name, e in (("eps_x", eps_x), ("eps_y", eps_y)):
        if isinstance(e, jax.core.Tracer):
            continue
        e = np.asarray(e, complex)
        if not np.all(np.isfinite(e)) or np.any(e.imag < 0) or np.any(e == 0):
            raise ConfigError(f"{name} must be finite and nonzero with Im eps >= 0 (absorption)")
        if isinstance(source, PlaneWave2D) and np.any(e[~inner] != 1):
            raise ConfigError(f"{name} must be 1 in the PML for a plane wave (scattered field)")
    parts = _Parts(shape, dx, omega, pml, stencil)
    if isinstance(source, PlaneWave2D):
        hinc, M = _incident(source, shape, dx, omega, origin), np.zeros(shape, complex)
    else:
        hinc, M = None, source
        if np.shape(M) != shape:
            raise ConfigError(
                f"the source must be a PlaneWave2D or a current array of shape {shape}, got {np.shape(M)}"
            )
    solve = _make_solve(parts, shape, hinc, (shape, dx, omega, pml, stencil))

    def field(ex, ey, m):
        ex, ey = jnp.asarray(ex, jnp.complex128), jnp.asarray(ey, jnp.complex128)
        return solve(1.0 / ex, 1.0 / ey, jnp.asarray(m, jnp.complex128))

    return caller_scope(field, _array(eps_x), _array(eps_y), _array(M), forward=True)


def _make_solve(parts, shape, hinc, key):
    """``(inv_x, inv_y, M) -> H_z`` (total field) with a custom JVP (its tangent one more
    solve, transposed to the adjoint below: forward and reverse mode), everything sparse on the
    host: forward ``A u = b`` (``b = -K(inv - 1) H_inc`` for a plane wave, the mass-spread
    ``-i omega M`` for a current), reverse ``lambda = A^-T Hbar`` and the cotangents of the
    residual ``r = K(inv) w - ...`` (``w = u + H_inc``: the total field):
    ``inv_x: -(D_yb w) * (D_yf^T A_x^T lambda)``, ``inv_y: -(D_xb w) * (D_xf^T A_y^T lambda)``,
    ``M: -i omega M^T lambda`` (transposes, JAX's complex convention)."""
    out_type = jax.ShapeDtypeStruct((*shape, 16), jnp.uint8)
    grads_type = jax.ShapeDtypeStruct((3, *shape, 16), jnp.uint8)
    h, omega = parts.host, parts.omega
    inc = None if hinc is None else hinc.ravel()

    def k_apply(ix, iy, v):
        return h["Ay"] @ (h["xf"] @ (iy.ravel() * (h["xb"] @ v))) + h["Ax"] @ (
            h["yf"] @ (ix.ravel() * (h["yb"] @ v))
        )

    def fwd_host(ix, iy, m):
        ix, iy = np.asarray(ix), np.asarray(iy)
        if inc is not None:
            b = -k_apply(ix - 1.0, iy - 1.0, inc)
        else:
            b = h["M"] @ (-1j * omega * np.asarray(m).ravel())
        u = _factor(parts, ix, iy, key).solve(b)
        return _to_bytes((u if inc is None else u + inc).reshape(shape))

    def bwd_host(ix, iy, total, hbar):
        ix, iy = np.asarray(ix), np.asarray(iy)
        lam = _factor(parts, ix, iy, key).solve(np.asarray(hbar).ravel(), trans="T")
        w = np.asarray(total).ravel()
        gx = -(h["yb"] @ w) * (h["yf"].T @ (h["Ax"].T @ lam))
        gy = -(h["xb"] @ w) * (h["xf"].T @ (h["Ay"].T @ lam))
        gm = -1j * omega * (h["M"].T @ lam)
        return _to_bytes(np.stack([gx, gy, gm]).reshape(3, *shape))

    def tan_host(ix, iy, total, dix, diy, dm):
        # A du = -K(d inv) w - i omega M dm (w the total field; module docstring)
        ix, iy = np.asarray(ix), np.asarray(iy)
        w = np.asarray(total).ravel()
        r = -k_apply(np.asarray(dix), np.asarray(diy), w) + h["M"] @ (-1j * omega * np.asarray(dm).ravel())
        return _to_bytes(_factor(parts, ix, iy, key).solve(r).reshape(shape))

    def call(fn, kind, *a):
        return _from_bytes(jax.pure_callback(fn, kind, *a, vmap_method="sequential"))

    @jax.custom_jvp
    def solve(ix, iy, m):
        return call(fwd_host, out_type, ix, iy, m)

    def solve_jvp(primals, tangents):
        from jax.custom_derivatives import SymbolicZero

        from .adjoint import scoped_linear

        ix, iy, m = primals
        total = solve(ix, iy, m)
        live = [i for i, t in enumerate(tangents) if not isinstance(t, SymbolicZero)]
        if not live:
            return total, SymbolicZero(jax.core.get_aval(total).to_tangent_aval())

        def push(*t):  # the tangent: one more solve with the same factorization
            full = [jnp.zeros_like(p) for p in primals]
            for i, ti in zip(live, t):
                full[i] = jnp.asarray(ti, primals[i].dtype)
            return call(tan_host, out_type, ix, iy, total, *full)

        def pull(ct):  # its transpose: the adjoint solve and the residual's products
            g = call(bwd_host, grads_type, ix, iy, total, ct)
            return tuple(g[i] for i in live)

        return total, scoped_linear(push, pull, [tangents[i] for i in live], total)

    solve.defjvp(solve_jvp, symbolic_zeros=True)
    return solve
