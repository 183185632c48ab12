"""Differentiable 3-D FDFD: E as a JAX function of the permittivity array.

:func:`field_3d` solves the problem of :func:`emjax.fdfd.solve_3d` (the same matrix-free
operator, Jacobi + Shin-Fan grad-div term, QMR on the device) for a permittivity *array*
``eps`` (3, nx, ny, nz) at the E nodes, with ``jax.grad`` / ``jax.vjp`` through it.

Adjoint. ``A(eps) E = b`` with ``A = curl curl - omega^2 eps`` (stretched differences) is
not symmetric, ``S A`` is (``S = s_x s_y s_z`` at each E node, see
:mod:`emjax.fdfd.operator3d`), so ``A^-T = S (S A)^-1`` and the adjoint field
``mu = A^-T Ebar = S x`` where ``x`` solves ``A x = Ebar / S``: the *forward* solver, its
Jacobi scaling and its grad-div term, on the right side ``Ebar / S`` (the grad-div term's
known part is formed from that right side, exactly as for a physical source, so it stays
exact for the adjoint system). Then ``eps_bar = omega^2 E * mu`` (componentwise; JAX's
transposes, no conjugates) and ``b_bar = mu``. One extra solve per gradient, memory
independent of the iterations; a plane wave's right side ``b = omega^2 (eps - 1) E_inc`` is
differentiated by JAX outside the solve.

The Krylov loop is driven from the host (progress, convergence status), so ``field_3d`` runs
eagerly: ``jax.grad`` of it works, ``jax.jit`` around it is refused with that message.
Dielectrics only (no PEC: give its cells a large imaginary eps, or use ``solve_3d``).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from .. import progress as progress_bars
from ..backend import precision, precision_scope
from ..errors import ConfigError, ConvergenceError, require_positive
from ..krylov import QMR
from .adjoint import _array, caller_scope
from .grid3d import PlaneWave3D, _Grid3, incident_3d
from .operator3d import build_operator
from .operators import SCPML, UPML
from .solvers import Iterative

__all__ = ["field_3d"]


def field_3d(
    eps,
    resolution: float,
    frequency: float,
    source,
    pml: SCPML | None = None,
    *,
    solver: Iterative | None = None,
    origin=None,
    precision_name: str = "double",
    progress: bool = True,
):
    """E (complex (3, nx, ny, nz), at the E nodes) of the 3-D problem for ``eps``.

    ``eps``: (3, nx, ny, nz) relative permittivity at the E_x, E_y, E_z nodes, PML cells
    included (1 there for a plane wave), real or complex, a JAX array or a tracer (not under
    ``jax.jit``: module docstring). ``source``: a :class:`PlaneWave3D` (scattered-field
    formulation; the result is the total field) or a right-side array ``b`` (3, nx, ny, nz)
    of ``A E = b`` (e.g. ``i omega J`` of a current density; differentiable too).
    ``origin``: the position of node (0, 0, 0) (default: the grid centred on 0).
    ``solver``: :class:`emjax.fdfd.Iterative` (default QMR to rtol 1e-8). Raises
    ConvergenceError if a solve (forward or adjoint) does not converge. Computed in double
    precision; complex128 with 64-bit JAX on, complex64 otherwise
    (:func:`emjax.fdfd.adjoint.caller_scope`). ``progress``: True (default) a bar per solve,
    forward and adjoint (:mod:`emjax.progress`), False none, a callable is called as
    ``progress(iterations, relative residual)`` between chunks."""
    pml = SCPML() if pml is None else pml
    if not isinstance(pml, SCPML) or isinstance(pml, UPML):
        raise ConfigError(f"pml must be an emjax.fdfd.SCPML, got {pml!r}")
    res = require_positive("resolution", resolution)
    f = require_positive("frequency", frequency)
    solver = Iterative(QMR(rtol=1e-8, maxiter=20_000, chunk=100)) if solver is None else solver
    if not isinstance(solver, Iterative):
        raise ConfigError(f"solver must be emjax.fdfd.Iterative(...), got {solver!r}")
    shape = tuple(int(n) for n in np.shape(eps))
    if len(shape) != 4 or shape[0] != 3 or min(shape[1:]) <= 2 * pml.thickness + 1:
        raise ConfigError(f"eps must be (3, nx, ny, nz) and larger than the PML on each side, got {shape}")
    grid = shape[1:]
    dx, omega = 1.0 / res, 2 * math.pi * f
    if origin is None:
        origin = tuple(-(n - 1) / 2 * dx for n in grid)
    dtype = precision(precision_name).complex
    if isinstance(eps, jax.core.Tracer) and not _differentiating_only(eps):
        raise ConfigError(_JIT_MESSAGE)
    progress_bars.check(progress)
    forward = _forward_mode((eps, source))
    solve = (_make_solve_jvp if forward else _make_solve)(pml, dx, omega, solver, dtype, progress)
    scope = _eager_jvp_scope if forward else caller_scope
    if isinstance(source, PlaneWave3D):
        axes = tuple(o + np.arange(n) * dx for o, n in zip(origin, grid))
        with precision_scope():
            einc = np.asarray(incident_3d(source, _Grid3(pml, f, omega, dx, grid, tuple(origin), axes)))

        def field(e):  # scattered-field right side; the total field
            e = jnp.asarray(e, jnp.complex128)
            return solve(e, omega**2 * (e - 1.0) * einc) + einc

        return scope(field, _array(eps))
    if np.shape(source) != shape:
        raise ConfigError(
            f"source must be a PlaneWave3D or a right-side array of shape {shape}, got {np.shape(source)}"
        )

    def field(e, b):
        return solve(jnp.asarray(e, jnp.complex128), jnp.asarray(b, jnp.complex128))

    return scope(field, _array(eps), _array(source))


_JIT_MESSAGE = (
    "fdfd.field_3d drives its Krylov loop from the host and cannot run inside jax.jit or "
    "jax.vmap (jax.jacfwd is a vmap); call jax.grad / jax.value_and_grad (or jax.jvp) of it "
    "without jit"
)


def _forward_mode(tree) -> bool:
    return any(type(x).__name__ == "JVPTracer" for x in jax.tree_util.tree_leaves(tree))


def _eager_jvp_scope(fn, *args):
    """:func:`~emjax.fdfd.adjoint.caller_scope` for forward mode (``jax.jvp`` run eagerly):
    ``fn`` and its JVP in double precision, the results in the caller's dtypes; the solves'
    JVP rules (:func:`_make_solve_jvp`) then see concrete values and drive the Krylov loop
    from the host as the forward solve does."""
    out = jax.dtypes.canonicalize_dtype(jnp.complex128)

    @jax.custom_jvp
    def f(*a):
        with precision_scope():
            return fn(*a).astype(out)

    @f.defjvp
    def f_jvp(primals, tangents):
        with precision_scope():
            y, ydot = jax.jvp(fn, primals, tangents)
        return y.astype(out), ydot.astype(out)

    with precision_scope():
        return f(*args)


def _make_solve_jvp(pml, dx, omega, solver, dtype, progress):
    """``(eps, b) -> A(eps)^-1 b`` for forward mode: the tangent ``A dx = db + omega^2 deps
    x`` is one more solve with the same solver (concrete values: ``jax.jvp`` run eagerly)."""

    @jax.custom_jvp
    def solve(eps, b):
        return _solve_concrete(eps, b, pml, dx, omega, solver, dtype, "forward", progress)[0]

    @solve.defjvp
    def solve_jvp(primals, tangents):
        (eps, b), (de, db) = primals, tangents
        x = _solve_concrete(eps, b, pml, dx, omega, solver, dtype, "forward", progress)[0]
        r = jnp.asarray(db, jnp.complex128) + omega**2 * jnp.asarray(de, jnp.complex128) * x
        dx_, _ = _solve_concrete(eps, r, pml, dx, omega, solver, dtype, "tangent", progress)
        return x, dx_

    return solve


def _differentiating_only(x) -> bool:
    """True if ``x`` is traced only by autodiff (JVP/linearize), not by jit or vmap."""
    t = x
    while isinstance(t, jax.core.Tracer):
        name = type(t).__name__
        if name not in ("JVPTracer", "LinearizeTracer"):
            return False
        t = getattr(t, "primal", None)
    return True


def _solve_concrete(eps, b, pml, dx, omega, solver, dtype, what, progress=False):
    from .linear3d import _iterative

    if isinstance(eps, jax.core.Tracer) or isinstance(b, jax.core.Tracer):
        raise ConfigError(_JIT_MESSAGE)
    e = np.asarray(eps)
    if not np.all(np.isfinite(e)) or np.any(e.imag < 0):
        raise ConfigError("eps must be finite with Im eps >= 0 (exp(-i omega t): absorption)")
    op = build_operator(e, pml, dx, omega, dtype, None, solver.graddiv)
    make = lambda: progress_bars.ResidualBar(f"fdfd {what}", solver.method.rtol)  # noqa: E731
    with progress_bars.shown(progress, make) as bar:
        xs, stats = _iterative(op, [op.rhs(jnp.asarray(b, dtype))], solver, dtype, bar)
    st = stats["per_wave"][0]
    if not st["converged"]:
        raise ConvergenceError(f"fdfd.field_3d: the {what} solve did not converge: {st['message']}")
    return jnp.asarray(xs[0], jnp.complex128), op


def _make_solve(pml, dx, omega, solver, dtype, progress):
    @jax.custom_vjp
    def solve(eps, b):
        return _solve_concrete(eps, b, pml, dx, omega, solver, dtype, "forward", progress)[0]

    def fwd(eps, b):
        x, op = _solve_concrete(eps, b, pml, dx, omega, solver, dtype, "forward", progress)
        return x, (eps, x, op.S)

    def bwd(res_, ebar):
        eps, x, S = res_
        S = jnp.asarray(S, jnp.complex128)
        y, _ = _solve_concrete(eps, ebar / S, pml, dx, omega, solver, dtype, "adjoint", progress)
        mu = S * y  # A^-T ebar
        return (omega**2 * x * mu, mu)

    solve.defvjp(fwd, bwd)
    return solve
