"""Differentiable 2-D TM FDFD: the field as a JAX function of the permittivity.

:func:`tm_field` solves the TM problem of :func:`emjax.fdfd.solve_tm` for a permittivity
*array* at the E_z nodes (the PML included, as ceviche's ``eps_r``), with ``jax.grad``,
``jax.vjp`` and ``jax.jacrev`` through it:

* forward: the sparse matrix is assembled on the host and factored by SuperLU (a
  ``jax.pure_callback``; the factorization is kept, keyed by the permittivity's bytes);
* reverse: the adjoint of ``A(eps) E = b(eps)`` by the implicit-function theorem: with
  ``r(eps, E) = A(eps) E - b(eps)``, ``lambda = A^-T Ebar`` (the same factorization, solved
  transposed: SuperLU's ``trans="T"``) and ``epsbar = -(dr/deps)^T lambda``, where
  ``(dr/deps)^T`` comes from ``jax.vjp`` of the eps-dependent part of ``r`` written in JAX
  (the mass term and, for a plane wave, the scattered-field right side). One extra solve per
  gradient, memory independent of anything iterative (there is nothing iterative).

JAX's complex convention holds: the cotangents are transposes, not adjoints, so a real
objective ``L(E)`` gives ``jax.grad`` with respect to a real ``eps`` as the real derivative,
and with respect to a complex ``eps`` the conjugate of dL/d(eps*)... i.e. whatever
``jax.grad`` of the same function written with dense JAX linear algebra would give (tested
against central differences of the real and imaginary parts).

:func:`disk_permittivity` rasterizes a disk with subpixel averaging in JAX (the same
tangent-plane fill fractions as :func:`emjax.scene.rasterize`, equal to rounding), so its
radius and centre are differentiable: the gradient of a scattered field with respect to a
cylinder's radius is smooth, not the staircase's zero.
"""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse.linalg as spla

from ..backend import precision_scope
from ..errors import ConfigError, require_positive
from .operators import SCPML
from .specs2d import PlaneWave2D
from .stencil2d import _check_stencil, stencil_csc, tm_stencil

__all__ = ["disk_permittivity", "tm_field"]

_CACHE: OrderedDict = OrderedDict()  # (key) -> SuperLU factorization; a few kept
_CACHE_SIZE = 4


def _mass_apply(e, u, omega, stencil):
    """omega^2 times the mass term of the node values ``e`` applied to ``u`` (both (nx, ny)),
    in JAX: the compact stencil's (M diag(e) + diag(e) M) / 2 with M = 2/3 + 1/12 x (the
    four axis neighbours, zero beyond the grid), or diag(e) for "yee"."""
    if stencil == "yee":
        return omega**2 * e * u

    def M(v):
        p = jnp.pad(v, 1)
        return (2 / 3) * v + (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:]) / 12

    return omega**2 * 0.5 * (M(e * u) + e * M(u))


def _matrix(eps, shape, dx, omega, pml, stencil):
    """The TM matrix of ``eps`` (CSC), assembled as solve_tm does (stencil2d.tm_stencil: the same
    matrix as the sparse ``lap + (M E + E M) / 2``, bit for bit)."""
    return stencil_csc(tm_stencil(np.asarray(eps, complex), shape, dx, omega, pml, stencil))


def _cached_factor(arrays, key, factor):
    """``factor()`` (a SuperLU factorization), kept in a small LRU cache keyed by the bytes
    of ``arrays`` (with their dtypes and shapes: equal bytes of another dtype are another
    matrix) and ``key`` (shared by the TM and TE adjoints)."""
    arrays = [np.ascontiguousarray(a) for a in arrays]
    digest = hashlib.sha256(b"".join(a.tobytes() for a in arrays)).hexdigest()
    k = (digest, tuple((a.dtype.str, a.shape) for a in arrays), *key)
    if k in _CACHE:
        _CACHE.move_to_end(k)
        return _CACHE[k]
    lu = _CACHE[k] = factor()
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return lu


def _factor(eps, shape, dx, omega, pml, stencil):
    return _cached_factor(
        (eps,),
        ("tm", shape, dx, omega, pml, stencil),
        lambda: spla.splu(
            _matrix(eps, shape, dx, omega, pml, stencil),
            permc_spec="MMD_AT_PLUS_A",
            diag_pivot_thresh=0.0,
            options=dict(SymmetricMode=True),
        ),
    )


def _incident(wave, shape, dx, omega, origin):
    x = origin[0] + np.arange(shape[0]) * dx
    y = origin[1] + np.arange(shape[1]) * dx
    X, Y = np.meshgrid(x, y, indexing="ij")
    phi = math.radians(wave.angle)
    return np.exp(1j * omega * (X * math.cos(phi) + Y * math.sin(phi)))


def caller_scope(fn, *args, forward: bool = False):
    """``fn(*args)`` computed in double precision, returned in the caller's dtypes.

    ``fn`` (JAX arrays -> one complex array) runs inside ``precision_scope``; its result is
    cast to the caller's complex dtype (complex128 with 64-bit JAX on, complex64 without).
    Its reverse pass runs inside the scope too (a ``custom_vjp`` that keeps ``jax.vjp``'s
    pullback as residual): JAX would otherwise transpose the complex128 operations where the
    caller's ``jax.grad`` runs, outside the scope, and mix them with the caller's
    complex64. So the entry points work in JAX's default 32-bit mode and under
    ``jax.jit``, and with 64-bit JAX on they are unchanged.

    ``forward``: ``fn`` supports forward mode (its solves are ``custom_jvp``); then this is a
    ``custom_jvp`` too, whose tangent map (``jax.linearize`` of ``fn`` in the scope) carries
    its transpose (``jax.linear_transpose``, also in the scope) through
    :func:`scoped_linear`: ``jax.jvp``, ``jax.jacfwd``, ``jax.grad`` and ``jax.vmap`` of them
    all work. Otherwise forward mode is refused in one line naming reverse mode."""
    out = jax.dtypes.canonicalize_dtype(jnp.complex128)
    if forward:
        return _caller_scope_jvp(fn, out, args)
    if any(type(x).__name__ == "JVPTracer" for x in jax.tree_util.tree_leaves(args)):
        raise ConfigError(
            "FDFD: forward mode (jax.jvp, jax.jacfwd) through this solve is not available (its adjoint "
            "is a custom_vjp); use reverse mode: jax.grad, jax.vjp or jax.jacrev"
        )

    @jax.custom_vjp
    def f(*a):
        with precision_scope():
            return fn(*a).astype(out)

    def f_fwd(*a):
        with precision_scope():
            y, pullback = jax.vjp(fn, *a)
            return y.astype(out), pullback

    def f_bwd(pullback, ct):
        with precision_scope():
            return pullback(jnp.asarray(ct, jnp.complex128))

    f.defvjp(f_fwd, f_bwd)
    with precision_scope():  # NumPy complex128 arguments stay complex128
        return f(*args)


def scoped_linear(lin, lin_t, tangents, out_like):
    """``lin(*tangents)`` (a linear map) whose transpose is ``lin_t`` (cotangent -> tuple of
    the tangents' cotangents), both run as given (e.g. inside a precision scope), through
    ``lax.custom_linear_solve`` on the square map ``(t, o) -> (0, lin(t))``: JAX transposes
    it by calling ``lin_t``, batches and jits it like any linear solve. (The identity
    ``matvec`` is never evaluated for values: ``lin`` closes over no differentiated input;
    the ``o`` part is a zero made from a tangent, so every part of the right side is linear,
    as the transpose rule requires.)"""
    tangents = tuple(tangents)
    t0 = jnp.ravel(tangents[0])[0]
    zero_out = jnp.broadcast_to(0 * t0, out_like.shape).astype(out_like.dtype)

    def solve(_, v):
        t, _o = v
        return tuple(jnp.zeros_like(x) for x in t), lin(*t).astype(out_like.dtype)

    def transpose_solve(_, v):
        t, ct = v
        g = lin_t(ct)
        return tuple(jnp.asarray(gi, x.dtype) for gi, x in zip(g, t)), jnp.zeros_like(ct)

    return jax.lax.custom_linear_solve(lambda v: v, (tangents, zero_out), solve, transpose_solve)[1]


def _caller_scope_jvp(fn, out, args):
    from jax.custom_derivatives import SymbolicZero

    @jax.custom_jvp
    def f(*a):
        with precision_scope():
            return fn(*a).astype(out)

    def f_jvp(primals, tangents):
        live = [i for i, t in enumerate(tangents) if not isinstance(t, SymbolicZero)]
        with precision_scope():
            y, lin = jax.linearize(fn, *primals)
            lin_t = jax.linear_transpose(lin, *primals)
        y = y.astype(out)
        if not live:
            return y, SymbolicZero(jax.core.get_aval(y).to_tangent_aval())

        def push(*t):
            full = [jnp.zeros_like(p) for p in primals]
            for i, ti in zip(live, t):
                full[i] = jnp.asarray(ti, primals[i].dtype)
            with precision_scope():
                return lin(*full)

        def pull(ct):
            with precision_scope():
                g = lin_t(jnp.asarray(ct, jnp.complex128))
            return tuple(g[i] for i in live)

        return y, scoped_linear(push, pull, [tangents[i] for i in live], y)

    f.defjvp(f_jvp, symbolic_zeros=True)
    with precision_scope():  # NumPy complex128 arguments stay complex128
        return f(*args)


def tm_field(
    eps,
    resolution: float,
    frequency: float,
    source,
    pml: SCPML | None = None,
    *,
    stencil: str = "compact",
    origin=None,
):
    """E_z (total field, complex (nx, ny)) of the 2-D TM problem on the nodes of ``eps``
    ((nx, ny) relative permittivity at the E_z nodes, PML cells included; real or complex,
    a JAX array or a tracer), ``resolution`` cells per unit length, ``frequency`` = 1 /
    wavelength. ``source``: a :class:`PlaneWave2D` (scattered-field formulation: eps must be
    1 in the PML; the result is the total field) or an (nx, ny) current density J_z (the
    right side i omega J, as ``solve_tm``'s line source spread over nodes; differentiable
    too). ``origin``: the node (0, 0)'s position (default: the grid centred on 0), which
    fixes the plane wave's phase. Differentiable with respect to ``eps`` and ``J`` (adjoint:
    one transposed solve with the forward factorization; module docstring). Solved in double
    precision; returned as complex128 with 64-bit JAX on, complex64 otherwise
    (:func:`caller_scope`)."""
    _check_stencil(stencil)
    pml = SCPML() if pml is None else pml
    if not isinstance(pml, SCPML):
        raise ConfigError(f"pml must be an emjax.fdfd.SCPML, got {pml!r}")
    res = require_positive("resolution", resolution)
    f = require_positive("frequency", frequency)
    shape = tuple(int(n) for n in np.shape(eps))
    if len(shape) != 2 or min(shape) <= 2 * pml.thickness + 1:
        raise ConfigError(f"eps must be a 2-D array larger than the PML on each side, got shape {shape}")
    dx, omega = 1.0 / res, 2 * math.pi * f
    if origin is None:
        origin = (-(shape[0] - 1) / 2 * dx, -(shape[1] - 1) / 2 * dx)
    L = pml.thickness
    if not isinstance(eps, jax.core.Tracer):
        e = np.asarray(eps, complex)
        if not np.all(np.isfinite(e)) or np.any(e.imag < 0):
            raise ConfigError("eps must be finite with Im eps >= 0 (exp(-i omega t): absorption)")
        inner = np.zeros(shape, bool)
        inner[L : -L or None, L : -L or None] = True
        if isinstance(source, PlaneWave2D) and np.any(e[~inner] != 1):
            raise ConfigError("eps must be 1 in the PML for a plane wave (the scattered-field formulation)")
    solve = _make_solve(shape, dx, omega, pml, stencil)
    if isinstance(source, PlaneWave2D):
        einc = _incident(source, shape, dx, omega, origin)

        def field(e):  # scattered-field right side -(mass(eps) - mass(1)) E_inc; total field
            e = jnp.asarray(e, jnp.complex128)
            return solve(e, -_mass_apply(e - 1.0, jnp.asarray(einc), omega, stencil)) + einc

        return caller_scope(field, _array(eps), forward=True)
    if np.shape(source) != shape:
        raise ConfigError(
            f"the source must be a PlaneWave2D or a current array of shape {shape}, got {np.shape(source)}"
        )

    def field(e, J):
        b = 1j * omega * jnp.asarray(J, jnp.complex128)
        if stencil == "compact":
            b = _mass_apply(jnp.ones(shape, jnp.complex128), b, 1.0, stencil)
        return solve(jnp.asarray(e, jnp.complex128), b)

    return caller_scope(field, _array(eps), _array(source), forward=True)


def _array(x):
    """``x`` as an array for :func:`caller_scope`: JAX arrays and tracers unchanged, anything
    else as NumPy (keeping complex128 whatever JAX's setting)."""
    return x if isinstance(x, (jax.Array, jax.core.Tracer)) else np.asarray(x)


def _to_bytes(a: np.ndarray) -> np.ndarray:
    """complex128 (shape) -> uint8 (shape + (16,)): the callbacks' results travel as bytes.
    Under ``jax.jit`` a callback runs on a runtime thread that does not see the caller's
    ``enable_x64`` scope, and JAX would canonicalize a complex128 result to complex64 there
    (an error); uint8 is never canonicalized."""
    return np.ascontiguousarray(a, np.complex128).view(np.uint8).reshape(*a.shape, 16)


def _from_bytes(u):
    """Inverse of :func:`_to_bytes`, in JAX: uint8 (shape + (16,)) -> complex128 (shape)."""
    parts = jax.lax.bitcast_convert_type(u.reshape(*u.shape[:-1], 2, 8), jnp.float64)
    return jax.lax.complex(parts[..., 0], parts[..., 1])


def _make_solve(shape, dx, omega, pml, stencil):
    """``(eps, b) -> A(eps)^-1 b`` with a custom JVP whose linear solve transposes to the
    adjoint (transposed) solve: forward and reverse mode, batching (solves one by one)."""
    out_type = jax.ShapeDtypeStruct((*shape, 16), jnp.uint8)

    def host_solve(e, b, transposed):
        e, b = np.asarray(e), np.asarray(b)
        lu = _factor(e, shape, dx, omega, pml, stencil)
        return _to_bytes(lu.solve(b.ravel(), trans="T" if transposed else "N").reshape(shape))

    def fwd_host(e, b):
        return host_solve(e, b, False)

    def adj_host(e, g):
        return host_solve(e, g, True)

    def host(fn, e, v):
        return _from_bytes(jax.pure_callback(fn, out_type, e, v, vmap_method="sequential"))

    @jax.custom_jvp
    def solve(e, b):
        return host(fwd_host, e, b)

    @solve.defjvp
    def solve_jvp(primals, tangents):
        # A(e) u = b: du = A^-1 (db - dA u), only the mass term depends on e (b's own
        # dependence on e is differentiated by JAX outside, through the right side)
        e, b = primals
        de, db = tangents
        u = solve(e, b)
        r = db - _mass_apply(de, u, omega, stencil)
        # the linear solve with the same factorization; its transpose (reverse mode) the
        # transposed solve (SuperLU's trans="T")
        du = jax.lax.custom_linear_solve(
            lambda v: v, r, lambda _, v: host(fwd_host, e, v), lambda _, v: host(adj_host, e, v)
        )
        return u, du

    return solve


def _square_line_fill(n, t):
    """The unit square ``[-1/2, 1/2]^2``'s share on the side ``n . x <= t`` of a line (``n``
    (..., 2) unit normals, ``t`` in cell units): the distribution function of ``a X + b Y``
    (X, Y uniform on [-1/2, 1/2], a >= b >= 0 the sorted |n_i|), a trapezoid's: quadratic,
    linear, quadratic. Exact, continuous with its first derivative in ``t`` and ``n``."""
    a = jnp.maximum(jnp.abs(n[..., 0]), jnp.abs(n[..., 1]))
    b = jnp.minimum(jnp.abs(n[..., 0]), jnp.abs(n[..., 1]))
    bs = jnp.maximum(b, 1e-300)  # the quadratic pieces are b wide (nothing at b = 0)
    lo, cap = -(a + b) / 2, b / (2 * a)  # the quadratic pieces' start and their share each

    def quad(s):  # rises from 0 at s = lo to cap at s = lo + b
        return cap * jnp.clip((s - lo) / bs, 0.0, 1.0) ** 2

    mid = (jnp.clip(t, -(a - b) / 2, (a - b) / 2) + (a - b) / 2) / a  # the plateau, 1 - b / a
    low, high = quad(t), cap - quad(-t)
    return jnp.clip(low + mid + high, 0.0, 1.0)


def disk_permittivity(shape, resolution: float, center, radius, eps_in, eps_out=1.0, origin=None):
    """eps at the E_z nodes ((nx, ny), node (0, 0) at ``origin``, default centred on 0) of a
    disk (``center``, ``radius``, permittivity ``eps_in``) in ``eps_out``, with the subpixel
    arithmetic mean ``f eps_in + (1 - f) eps_out`` of :func:`emjax.fdfd.solve_tm` (f the
    tangent-line cut of each node's cell, as :func:`emjax.scene.rasterize` computes it for a
    lone disk, but with the exact square-line area: the scene's cube formula tilts a
    face-parallel plane by 1e-4 and differs by up to ~2e-5 in f). ``center``, ``radius``,
    ``eps_in``, ``eps_out`` may be traced: differentiable. Computed in double precision;
    complex128 with 64-bit JAX on, complex64 otherwise (:func:`caller_scope`)."""
    nx, ny = (int(n) for n in shape)
    dx = 1.0 / require_positive("resolution", resolution)
    if origin is None:
        origin = (-(nx - 1) / 2 * dx, -(ny - 1) / 2 * dx)

    def disk(c, r, e_in, e_out):
        x = origin[0] + jnp.arange(nx) * dx
        y = origin[1] + jnp.arange(ny) * dx
        X, Y = jnp.meshgrid(x, y, indexing="ij")
        c = jnp.asarray(c, jnp.float64)
        rx, ry = X - c[0], Y - c[1]
        rho = jnp.sqrt(rx**2 + ry**2)
        safe = jnp.where(rho > 0, rho, 1.0)
        n = jnp.stack([rx / safe, ry / safe], -1)
        n = jnp.where((rho > 0)[..., None], n, jnp.array([1.0, 0.0]))
        d = (rho - r) / dx  # signed distance in cells, negative inside
        f = _square_line_fill(n, -d)
        return e_out + (jnp.asarray(e_in, jnp.complex128) - e_out) * f

    return caller_scope(disk, *(_array(a) for a in (center, radius, eps_in, eps_out)))
