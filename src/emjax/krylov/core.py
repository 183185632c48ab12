"""Krylov methods as objects (QMR, BiCG, BiCGStab), their device recurrences and the chunked
device loop that :mod:`emjax.krylov.single` and :mod:`emjax.krylov.batched` share."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..errors import ConfigError, require_int


@dataclass(frozen=True)
class _Method:
    rtol: float = 1e-5
    atol: float = 0.0
    maxiter: int = 10_000
    chunk: int = 25

    def __post_init__(self):
        if isinstance(self.rtol, bool) or not isinstance(self.rtol, (int, float, np.floating, np.integer)):
            raise ConfigError(f"rtol must be a number in [0, 1), got {self.rtol!r}")
        if not (np.isfinite(self.rtol) and 0 <= self.rtol < 1):
            # rtol >= 1 is met by the zero initial guess: "converged" after no real work
            raise ConfigError(
                f"rtol must be in [0, 1) (a relative residual; 1e-5 is usual), got {self.rtol!r}"
            )
        if (
            isinstance(self.atol, bool)
            or not isinstance(self.atol, (int, float, np.floating, np.integer))
            or not (np.isfinite(self.atol) and self.atol >= 0)
        ):
            raise ConfigError(f"atol must be finite and >= 0, got {self.atol!r}")
        if self.rtol == 0 and self.atol == 0:
            raise ConfigError("rtol and atol cannot both be 0")
        object.__setattr__(self, "maxiter", require_int("maxiter", self.maxiter, 1, 10_000_000))
        object.__setattr__(self, "chunk", require_int("chunk", self.chunk, 1, 1_000_000))


@dataclass(frozen=True)
class QMR(_Method):
    """Quasi-minimal residual for complex-symmetric ``A = A.T`` (Freund 1992), ADDA's default.

    One matvec per iteration; the residual norm decreases almost monotonically.
    """

    name = "qmr"
    matvecs_per_iteration = 1


@dataclass(frozen=True)
class QMRLean(QMR):
    """QMR without the residual recurrences: the iterates are QMR's, but the residual vector
    and the ``A p`` directions are not carried; the true residual ``||b - A x||`` is computed
    every :data:`LEAN_CHECK` iterations (one extra matvec each time) and convergence is
    tested then. Three fewer vectors in memory and about a third fewer vector passes per
    iteration (for matrix-free operators whose matvec costs little more than a vector
    update, e.g. the 3-D FDFD); the residual history holds the last checked value between
    checks, and a solve stops up to LEAN_CHECK - 1 iterations after QMR would have."""

    name = "qmr-lean"
    matvecs_per_iteration = 1


@dataclass(frozen=True)
class BiCG(_Method):
    """Bi-conjugate gradients for complex-symmetric ``A`` (= COCG; ADDA's ``bicg``)."""

    name = "bicg"
    matvecs_per_iteration = 1


@dataclass(frozen=True)
class BiCGStab(_Method):
    """Stabilised BiCG (van der Vorst) for any non-singular ``A``; two matvecs per iteration."""

    name = "bicgstab"
    matvecs_per_iteration = 2


SOLVERS = {"qmr": QMR, "bicg": BiCG, "bicgstab": BiCGStab}
#: QMRLean checks the true residual every this many iterations
LEAN_CHECK = 32


@dataclass(frozen=True)
class KrylovResult:
    """Outcome of an iterative solve.

    ``residual_history[i]`` is ``||b - A x_i|| / ||b||`` after ``i`` iterations
    (index 0: the initial guess).
    """

    x: jax.Array
    converged: bool
    iterations: int
    matvecs: int
    residual: float
    residual_history: np.ndarray
    message: str
    seconds: float
    solver: str = ""
    extra: dict = field(default_factory=dict)


def _dot(a, b):
    """Bilinear form ``a^T b`` (no conjugation), summed over all axes."""
    return jnp.sum(a * b)


def _vdot(a, b):
    return jnp.sum(jnp.conj(a) * b)


def _norm(a):
    return jnp.sqrt(jnp.sum(jnp.real(a) ** 2 + jnp.imag(a) ** 2))


def _safe(den):
    return jnp.where(den == 0, jnp.ones_like(den), den)


# --- QMR for complex-symmetric systems ------------------------------------------------------


def _qmr_init(A, b, x):
    r = b - A(x)
    beta1 = jnp.sqrt(_dot(r, r))
    v = r / _safe(beta1)
    omega = _norm(v)
    z = jnp.zeros_like(b)
    rdt = jnp.real(b).dtype
    one = jnp.ones((), rdt)
    zero_c = jnp.zeros((), b.dtype)
    return dict(
        x=x,
        r=r,
        v=v,
        v_prev=z,
        beta=zero_c,
        omega=omega,
        omega_prev=jnp.zeros((), rdt),
        c1=one,
        s1=zero_c,
        c2=one,
        s2=zero_c,
        g=(omega * beta1).astype(b.dtype),
        p1=z,
        p2=z,
        ap1=z,
        ap2=z,
        rnorm=_norm(r),
        breakdown=(beta1 == 0) & (_norm(r) > 0),
    )


def _givens(a, b):
    """Complex Givens rotation (c real, s complex) zeroing ``b`` against ``a``."""
    abs_a = jnp.abs(a)
    rho = jnp.sqrt(abs_a**2 + jnp.abs(b) ** 2)
    phase = jnp.where(abs_a == 0, jnp.ones_like(a), a / _safe(abs_a).astype(a.dtype))
    c = jnp.where(abs_a == 0, 0.0, abs_a / _safe(rho)).astype(abs_a.dtype)
    s = jnp.where(abs_a == 0, jnp.ones_like(a), phase * jnp.conj(b) / _safe(rho).astype(a.dtype))
    r = jnp.where(abs_a == 0, b, phase * rho.astype(a.dtype))
    return c, s, r


def _qmr_step(A, s):
    v, av = s["v"], A(s["v"])
    alpha = _dot(v, av)
    vt = av - alpha * v - s["beta"] * s["v_prev"]
    beta_next = jnp.sqrt(_dot(vt, vt))
    vt_norm = _norm(vt)
    v_next = vt / _safe(beta_next)
    omega_next = _norm(v_next)
    t_prev = s["omega_prev"] * s["beta"]  # row n-1 of the weighted column
    t_diag = s["omega"] * alpha
    t_sub = omega_next * beta_next
    r_nm2 = s["s2"] * t_prev
    e_nm1 = s["c2"] * t_prev
    r_nm1 = s["c1"] * e_nm1 + s["s1"] * t_diag
    e_n = -jnp.conj(s["s1"]) * e_nm1 + s["c1"] * t_diag
    c, sn, r_nn = _givens(e_n, t_sub)
    tau = c * s["g"]
    g_next = -jnp.conj(sn) * s["g"]
    r_nn_safe = _safe(r_nn)
    p = (v - r_nm1 * s["p1"] - r_nm2 * s["p2"]) / r_nn_safe
    ap = (av - r_nm1 * s["ap1"] - r_nm2 * s["ap2"]) / r_nn_safe
    x = s["x"] + tau * p
    r = s["r"] - tau * ap
    rnorm = _norm(r)
    # Lanczos breakdown: v~ is quasi-null (v~^T v~ = 0 while v~ != 0), or R is singular
    tiny = jnp.finfo(rnorm.dtype).eps
    breakdown = ((jnp.abs(beta_next) <= tiny * vt_norm) & (vt_norm > 0)) | (r_nn == 0)
    return dict(
        x=x,
        r=r,
        v=v_next,
        v_prev=v,
        beta=beta_next,
        omega=omega_next,
        omega_prev=s["omega"],
        c1=c,
        s1=sn,
        c2=s["c1"],
        s2=s["s1"],
        g=g_next,
        p1=p,
        p2=s["p1"],
        ap1=ap,
        ap2=s["ap1"],
        rnorm=rnorm,
        breakdown=breakdown,
    )


def _qmr_lean_init(A, b, x):
    s = _qmr_init(A, b, x)
    for key in ("r", "ap1", "ap2"):
        del s[key]
    s["b"], s["k"] = b, jnp.zeros((), jnp.int32)
    return s


def _qmr_lean_step(A, s):
    """:func:`_qmr_step` without r and A p (see :class:`QMRLean`); omega_{n+1} = ||v~|| / |beta|
    saves the pass over v_{n+1}."""
    v, av = s["v"], A(s["v"])
    alpha = _dot(v, av)
    vt = av - alpha * v - s["beta"] * s["v_prev"]
    beta_next = jnp.sqrt(_dot(vt, vt))
    vt_norm = _norm(vt)
    v_next = vt / _safe(beta_next)
    omega_next = vt_norm / jnp.abs(_safe(beta_next))
    t_prev = s["omega_prev"] * s["beta"]
    t_diag = s["omega"] * alpha
    t_sub = omega_next * beta_next
    r_nm2 = s["s2"] * t_prev
    e_nm1 = s["c2"] * t_prev
    r_nm1 = s["c1"] * e_nm1 + s["s1"] * t_diag
    e_n = -jnp.conj(s["s1"]) * e_nm1 + s["c1"] * t_diag
    c, sn, r_nn = _givens(e_n, t_sub)
    tau = c * s["g"]
    g_next = -jnp.conj(sn) * s["g"]
    p = (v - r_nm1 * s["p1"] - r_nm2 * s["p2"]) / _safe(r_nn)
    x = s["x"] + tau * p
    k = s["k"] + 1
    rnorm = lax.cond(k % LEAN_CHECK == 0, lambda: _norm(s["b"] - A(x)), lambda: s["rnorm"])
    tiny = jnp.finfo(rnorm.dtype).eps
    breakdown = ((jnp.abs(beta_next) <= tiny * vt_norm) & (vt_norm > 0)) | (r_nn == 0)
    return dict(
        x=x,
        v=v_next,
        v_prev=v,
        beta=beta_next,
        omega=omega_next,
        omega_prev=s["omega"],
        c1=c,
        s1=sn,
        c2=s["c1"],
        s2=s["s1"],
        g=g_next,
        p1=p,
        p2=s["p1"],
        rnorm=rnorm,
        breakdown=breakdown,
        b=s["b"],
        k=k,
    )


# --- BiCG for complex-symmetric systems (COCG) ----------------------------------------------


def _bicg_init(A, b, x):
    r = b - A(x)
    rho = _dot(r, r)
    return dict(x=x, r=r, p=r, rho=rho, rnorm=_norm(r), breakdown=(rho == 0) & (_norm(r) > 0))


def _bicg_step(A, s):
    q = A(s["p"])
    pq = _dot(s["p"], q)
    alpha = s["rho"] / _safe(pq)
    x = s["x"] + alpha * s["p"]
    r = s["r"] - alpha * q
    rho = _dot(r, r)
    beta = rho / _safe(s["rho"])
    p = r + beta * s["p"]
    rnorm = _norm(r)
    return dict(x=x, r=r, p=p, rho=rho, rnorm=rnorm, breakdown=(pq == 0) | (rho == 0) & (rnorm > 0))


# --- BiCGStab -------------------------------------------------------------------------------


def _bicgstab_init(A, b, x):
    r = b - A(x)
    one = jnp.ones((), b.dtype)
    z = jnp.zeros_like(b)
    return dict(
        x=x,
        r=r,
        rhat=r,
        p=z,
        v=z,
        rho=one,
        alpha=one,
        omega=one,
        rnorm=_norm(r),
        breakdown=jnp.zeros((), bool),
    )


def _bicgstab_step(A, s):
    rho = _vdot(s["rhat"], s["r"])
    beta = (rho / _safe(s["rho"])) * (s["alpha"] / _safe(s["omega"]))
    p = s["r"] + beta * (s["p"] - s["omega"] * s["v"])
    v = A(p)
    rv = _vdot(s["rhat"], v)
    alpha = rho / _safe(rv)
    h = s["x"] + alpha * p
    sv = s["r"] - alpha * v
    t = A(sv)
    tt = _vdot(t, t)
    omega = _vdot(t, sv) / _safe(tt)
    # if s is already (numerically) zero, t = 0: take the half step
    omega = jnp.where(tt == 0, jnp.zeros_like(omega), omega)
    x = h + omega * sv
    r = sv - omega * t
    rnorm = _norm(r)
    breakdown = ((rho == 0) | (rv == 0) | ((omega == 0) & (_norm(sv) > 0))) & (rnorm > 0)
    return dict(
        x=x,
        r=r,
        rhat=s["rhat"],
        p=p,
        v=v,
        rho=rho,
        alpha=alpha,
        omega=omega,
        rnorm=rnorm,
        breakdown=breakdown,
    )


_METHODS = {
    "qmr": (_qmr_init, _qmr_step),
    "qmr-lean": (_qmr_lean_init, _qmr_lean_step),
    "bicg": (_bicg_init, _bicg_step),
    "bicgstab": (_bicgstab_init, _bicgstab_step),
}


class _Scaled:
    """``D A D`` for a diagonal ``D`` (split Jacobi preconditioning), as a pytree."""

    def __init__(self, A, d):
        self.A, self.d = A, d

    def __call__(self, x):
        return self.d * self.A(self.d * x)


jax.tree_util.register_pytree_node(_Scaled, lambda s: ((s.A, s.d), None), lambda _, c: _Scaled(*c))


def _as_pytree_operator(A):
    leaves = jax.tree_util.tree_leaves(A)
    if len(leaves) == 1 and leaves[0] is A:  # a plain function: make it a static Partial
        return jax.tree_util.Partial(A)
    return A


@partial(jax.jit, static_argnames=("method",))
def _init(method, A, b, x0, hist):
    s = _METHODS[method][0](A, b, x0)
    s["it"] = jnp.zeros((), jnp.int32)
    s["hist"] = hist.at[0].set(s["rnorm"])
    return s


@partial(jax.jit, static_argnames=("method",), donate_argnames=("state",))
def _chunk(method, A, state, it_stop, tol):
    step = _METHODS[method][1]

    def cond(s):
        return (s["it"] < it_stop) & (s["rnorm"] > tol) & ~s["breakdown"]

    def body(s):
        it, hist = s["it"], s["hist"]
        new = step(A, {k: v for k, v in s.items() if k not in ("it", "hist")})
        # a breakdown step divided by a (guarded) zero: keep the last good iterate
        for key in ("x", "r", "rnorm"):
            if key in new:
                new[key] = jnp.where(new["breakdown"], s[key], new[key])
        new["it"] = it + 1
        new["hist"] = hist.at[it + 1].set(new["rnorm"])
        return new

    return lax.while_loop(cond, body, state)


def _message(solver, converged, it, rnorm, bnorm, breakdown) -> str:
    rel = rnorm / bnorm
    if converged:
        return f"converged in {it} iterations to relative residual {rel:.3e}"
    if not np.isfinite(rnorm):
        return f"diverged: residual became {rnorm} after {it} iterations"
    if breakdown:
        return (
            f"{solver.name} broke down after {it} iterations at relative residual {rel:.3e}; "
            "try another solver"
        )
    return (
        f"did not converge: relative residual {rel:.3e} > rtol {solver.rtol:g} after "
        f"maxiter = {solver.maxiter} iterations"
    )
