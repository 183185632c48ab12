"""A complex-shifted-Laplacian preconditioner for the 3-D FDFD operator, applied by one
geometric multigrid V-cycle, matrix-free in JAX.

Why this operator. With Shin & Fan's gradient-divergence term (see :mod:`.operator3d`) the
symmetrized 3-D operator is, in homogeneous regions, the vector Helmholtz operator
``S (-laplacian_s - omega^2 eps)`` acting on each Cartesian component separately (``S = s_x
s_y s_z``, ``laplacian_s`` the SC-PML-stretched Laplacian). Erlangga, Oosterlee and Vuik
(SIAM J. Sci. Comput. 27, 1471 (2006)) precondition the scalar Helmholtz equation with the
same operator with a complex-shifted wavenumber, ``-laplacian - (1 + i beta) k^2`` (their
``beta_2 = 1/2`` the recommended compromise between a good preconditioner, small beta, and
an operator multigrid can invert, large beta), approximated by one multigrid cycle. Here,
per field component ``c`` on its own (nx, ny, nz) array,

    P_c f = S_c [ -laplacian_s f - (1 + i beta) omega^2 eps_c f ],

with the PML's ``s`` at E_c's positions. Fields go as exp(-i omega t) and ``s = 1 + i
sigma / omega``: a positive imaginary part of ``k^2`` is loss, so ``+ i beta`` damps (the
same sign as the PML's). Written this way ``P_c`` is complex symmetric (each axis's term is
``(prod_{b != a} s_b) D_a^T (1 / s_a,mid) D_a``), like the operator.

The V-cycle. Each component's array is coarsened as a cell-centred grid along every axis
(coarse point ``I`` halfway between fine points ``2I`` and ``2I + 1``, an odd size padded by
a zero cell), the operator rediscretized on every level: ``h -> 2h``, ``eps`` averaged over
the 2 x 2 x 2 children, the PML's ``s`` taken at the coarse points and midpoints (which are
fine midpoints: no interpolation). Transfers per axis: linear interpolation ``(3/4, 1/4)``
and its transpose ``(1, 3, 3, 1) / 8``. Zero (Dirichlet) values one cell beyond each end (in
the PML, where the fields have decayed). Smoother: ``nu`` damped-Jacobi sweeps before and
after the coarse correction, ``coarse_sweeps`` sweeps on the coarsest grid (from zero). With
equal pre- and post-smoothing, restriction proportional to the transpose of the
interpolation and symmetric level operators the cycle is a fixed, complex-symmetric linear
operator ``B ~ P^{-1}``: the same every call, so it can be used inside a Krylov method as a
preconditioner (right-preconditioned BiCGStab on ``A B``, or the preconditioned COCG of
:mod:`emjax.krylov.preconditioned`, which needs ``B`` symmetric).

Conductor edges (``Operator3D.free == 0``, fixed values) are identity rows of the operator;
the cycle is applied as ``F B F + (1 - F)`` with ``F`` the free mask (the coarse grids see the
medium around the conductor).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import ConfigError, require_int, require_positive

__all__ = ["Multigrid", "ShiftedLaplacian", "VCycle", "build_vcycle"]


@dataclass(frozen=True)
class Multigrid:
    """Settings of the shifted-Laplacian V-cycle (:func:`build_vcycle`).

    ``beta``: the shift, ``-laplacian - (1 + i beta) omega^2 eps`` (0 < beta <= 10);
    ``levels``: grids in the cycle, the fine one included (None: coarsen until the vacuum
    ``k h`` of the coarsest grid reaches ``coarse_kh``, or a side would drop below
    ``min_coarse`` points); ``nu``: damped-Jacobi sweeps before and after the coarse
    correction; ``omega``: the Jacobi damping; ``coarse_sweeps``: sweeps on the coarsest grid.

    Why ``coarse_kh``: Jacobi on the shifted operator converges for every mode only where
    ``(k h)^2 (1 + beta^2) > 12`` (the 7-point stencil's diagonal ``6 - (1 + i beta) (k h)^2``
    must exceed the off-diagonal sum 6 in modulus); between ``k h ~ 1`` and that bound it
    amplifies smooth modes, which is harmless on an intermediate level (the coarser grid
    corrects them) but not on the coarsest: a cycle ending at ``k h = 2.5`` diverged as an
    iteration (24^3, 10 cells per wavelength), one ending at ``k h = 5`` converges.
    ``pml_scale``: the preconditioner's PML stretch ``1 + pml_scale (s - 1)`` (1: the
    operator's).

    Measured on the 3-D benchmark sphere (benchmarks/fdfd_multigrid.py, this 2-core CPU,
    PCOCG to rtol 1e-6; Jacobi-QMR 716 iterations at 32^3): beta 1 with nu 2: 195 (32^3),
    269 (48^3), 310 (64^3); nu 1: 355 at 48^3; beta 1.5: 252 / 293 at 48^3 / 64^3; beta 0.7:
    2750 at 48^3; pml_scale 0 / 0.1: 2724 / 1331 at 32^3. Caveat: with the PML the cycle as
    a stationary iteration has growing modes (random right side over the whole 24^3 grid:
    residual 0.36, 0.54, 1.0, 2.1, ... per cycle): the PML's complex stretching, different
    along each axis, takes away the diagonal dominance that damped Jacobi needs (damped
    Jacobi alone diverges there too). Without the PML (pml_scale 0) the cycle converges at
    ~0.4 per cycle, but as a preconditioner it is 14x worse than with it: the Krylov method
    copes with the few bad modes, a cycle that ignores the PML misses the operator."""

    beta: float = 1.0
    levels: int | None = None
    nu: int = 2
    omega: float = 0.8
    coarse_sweeps: int = 8
    min_coarse: int = 2
    coarse_kh: float = 4.0
    pml_scale: float = 1.0

    def __post_init__(self):
        b = require_positive("Multigrid.beta", self.beta)
        if b > 10:
            raise ConfigError(f"Multigrid.beta must be in (0, 10], got {self.beta!r}")
        if self.levels is not None:
            require_int("Multigrid.levels", self.levels, 1, 20)
        require_int("Multigrid.nu", self.nu, 1, 20)
        require_int("Multigrid.coarse_sweeps", self.coarse_sweeps, 0, 1000)
        require_int("Multigrid.min_coarse", self.min_coarse, 2, 1000)
        require_positive("Multigrid.coarse_kh", self.coarse_kh)
        if not (isinstance(self.pml_scale, (int, float)) and 0 <= self.pml_scale <= 1):
            raise ConfigError(f"Multigrid.pml_scale must be in [0, 1], got {self.pml_scale!r}")
        w = require_positive("Multigrid.omega", self.omega)
        if w >= 2:
            raise ConfigError(f"Multigrid.omega (Jacobi damping) must be in (0, 2), got {self.omega!r}")


def _along(v, axis: int):
    """(3, n) per-component 1-D coefficients -> broadcastable against (3, nx, ny, nz)."""
    shape = [3, 1, 1, 1]
    shape[axis + 1] = -1
    return v.reshape(shape)


def _prev(f, axis: int):
    """``f[i - 1]`` along grid ``axis`` (0 before the start) of a (3, nx, ny, nz) array."""
    ax = axis + 1
    pad = [(0, 0)] * f.ndim
    pad[ax] = (1, 0)
    return jnp.pad(jax.lax.slice_in_dim(f, 0, f.shape[ax] - 1, axis=ax), pad)


def _next(f, axis: int):
    """``f[i + 1]`` (0 beyond the end)."""
    ax = axis + 1
    pad = [(0, 0)] * f.ndim
    pad[ax] = (0, 1)
    return jnp.pad(jax.lax.slice_in_dim(f, 1, f.shape[ax], axis=ax), pad)


@jax.tree_util.register_pytree_node_class
class ShiftedLaplacian:
    """One level's ``P f`` on (3, nx, ny, nz) arrays: ``sum_a w_a [(f - f_-)/m_lo + (f -
    f_+)/m_hi] / h^2 - shift S eps f`` with ``w_a = S / s_a``.

    Leaves: ``eps`` (3, nx, ny, nz); ``pos`` three (3, n_a) arrays (``s`` of axis a at each
    component's points); ``imid`` three (3, n_a + 1) arrays (``1/s`` at the midpoints: entry
    i between points i - 1 and i); ``h2inv`` 1/h^2; ``shift`` (1 + i beta) omega^2."""

    def __init__(self, eps, pos, imid, h2inv, shift):
        self.eps, self.pos, self.imid = eps, tuple(pos), tuple(imid)
        self.h2inv, self.shift = h2inv, shift

    def tree_flatten(self):
        return (self.eps, self.pos, self.imid, self.h2inv, self.shift), None

    @classmethod
    def tree_unflatten(cls, aux, leaves):
        return cls(*leaves)

    @property
    def shape(self):
        return self.eps.shape

    def _parts(self):
        p = [_along(self.pos[a], a) for a in range(3)]
        S = p[0] * p[1] * p[2]
        w = [p[1] * p[2], p[0] * p[2], p[0] * p[1]]
        lo = [_along(self.imid[a][:, :-1], a) for a in range(3)]
        hi = [_along(self.imid[a][:, 1:], a) for a in range(3)]
        return S, w, lo, hi

    def diagonal(self):
        S, w, lo, hi = self._parts()
        lap = sum(w[a] * (lo[a] + hi[a]) for a in range(3)) * self.h2inv
        return lap - self.shift * S * self.eps

    def __call__(self, f):
        S, w, lo, hi = self._parts()
        lap = sum(w[a] * ((f - _prev(f, a)) * lo[a] + (f - _next(f, a)) * hi[a]) for a in range(3))
        return lap * self.h2inv - self.shift * S * self.eps * f


def _restrict_axis(f, a: int):
    """``(1, 3, 3, 1) / 8`` along grid axis ``a`` (an odd size padded by a zero cell)."""
    ax = a + 1
    n = f.shape[ax]
    if n % 2:
        pad = [(0, 0)] * 4
        pad[ax] = (0, 1)
        f = jnp.pad(f, pad)
    shp = list(f.shape)
    shp[ax : ax + 1] = [(n + 1) // 2, 2]
    g = f.reshape(shp)
    even = jax.lax.index_in_dim(g, 0, ax + 1, keepdims=False)
    odd = jax.lax.index_in_dim(g, 1, ax + 1, keepdims=False)
    return (3 * (even + odd) + _prev(odd, a) + _next(even, a)) * 0.125


def _prolong_axis(u, a: int, n: int):
    """Linear interpolation ``(3/4, 1/4)`` along grid axis ``a`` onto ``n`` points."""
    ax = a + 1
    even = 0.75 * u + 0.25 * _prev(u, a)
    odd = 0.75 * u + 0.25 * _next(u, a)
    g = jnp.stack([even, odd], axis=ax + 1)
    shp = list(u.shape)
    shp[ax] = 2 * shp[ax]
    return jax.lax.slice_in_dim(g.reshape(shp), 0, n, axis=ax)


def _restrict(f):
    for a in range(3):
        f = _restrict_axis(f, a)
    return f


def _prolong(u, shape):
    for a in range(3):
        u = _prolong_axis(u, a, shape[a + 1])
    return u


@jax.tree_util.register_pytree_node_class
class VCycle:
    """``r -> B r``, one V-cycle for the shifted Laplacian from a zero initial guess (a fixed
    linear operator). ``levels``: :class:`ShiftedLaplacian` fine to coarse; ``dinv``: the
    damped inverse diagonals ``omega / diag`` of the levels; ``free``: the operator's
    free-edge mask (1 or (3, nx, ny, nz)); ``counts``: int32 [nu - 1, nu, coarse sweeps - 1, 1].

    Every stencil application runs inside a ``lax.fori_loop`` whose trip count is one of the
    ``counts`` (a traced value, so XLA cannot unroll the loop): XLA's fusion would otherwise
    inline a stencil into the next one's neighbour reads and recompute it (measured on the
    CPU at 32^3: two chained applications 41 ms instead of 4 ms, four 193 ms instead of 11;
    an optimization barrier did not help)."""

    def __init__(self, levels, dinv, free, counts):
        self.levels, self.dinv, self.free, self.counts = tuple(levels), tuple(dinv), free, counts

    def tree_flatten(self):
        return (self.levels, self.dinv, self.free, self.counts), None

    @classmethod
    def tree_unflatten(cls, aux, leaves):
        return cls(*leaves)

    def _sweeps(self, P, dinv, r, x, count):
        return jax.lax.fori_loop(0, count, lambda i, y: y + (r - P(y)) * dinv, x)

    def _once(self, f, x):
        """``f()`` in a loop of one (traced) trip: its own kernel."""
        return jax.lax.fori_loop(
            0, self.counts[3], lambda i, y: f(), jnp.zeros(jax.eval_shape(f).shape, x.dtype)
        )

    def _cycle(self, k, r):
        P, dinv = self.levels[k], self.dinv[k]
        x = r * dinv  # the first sweep from zero
        if k == len(self.levels) - 1:
            return self._sweeps(P, dinv, r, x, self.counts[2])
        x = self._sweeps(P, dinv, r, x, self.counts[0])
        res = self._once(lambda: r - P(x), r)
        for a in range(3):  # one axis at a time (fused, each would recompute its input 4 times)
            res = self._once(lambda res=res, a=a: _restrict_axis(res, a), r)
        xc = self._cycle(k + 1, res)
        for a in range(3):
            xc = self._once(lambda xc=xc, a=a: _prolong_axis(xc, a, r.shape[a + 1]), r)
        x = x + xc
        return self._sweeps(P, dinv, r, x, self.counts[1])

    def __call__(self, r):
        if jnp.ndim(self.free) == 0:
            return self._cycle(0, r)
        return self.free * self._cycle(0, self.free * r) + (1 - self.free) * r


def _coarsen_1d(pos, imid):
    """Coarse points and inverse midpoints of one axis from the fine ones (numpy, (3, n) and
    (3, n + 1)): coarse point I = fine midpoint 2I + 1, coarse midpoint J = fine midpoint 2J."""
    mid = 1.0 / imid
    n = pos.shape[1]
    nc = (n + 1) // 2
    ext = np.concatenate([mid, mid[:, -1:]], axis=1)  # an odd n reads one past the end
    return ext[:, 1 : 2 * nc : 2], 1.0 / ext[:, 0 : 2 * nc + 1 : 2]


def _average_children(eps):
    """The mean over the 2 x 2 x 2 children (an odd size: the last coarse cell averages the
    children that exist)."""
    for a in range(3):
        ax = a + 1
        n = eps.shape[ax]
        if n % 2:
            last = jax.lax.slice_in_dim(eps, n - 1, n, axis=ax)
            eps = jnp.concatenate([eps, last], axis=ax)
        shp = list(eps.shape)
        shp[ax : ax + 1] = [(n + 1) // 2, 2]
        eps = eps.reshape(shp).mean(axis=ax + 1)
    return eps


def fine_coefficients(op, pml_scale: float = 1.0):
    """``pos`` and ``imid`` (numpy, complex) of each axis for E_c on the fine grid: along its
    own axis E_c sits at half nodes (midpoints: the nodes), across it at the nodes
    (midpoints: the half nodes); the midpoint before the first point and after the last reuse
    the nearest value."""
    s_int = [1 + pml_scale * (np.asarray(v, complex) - 1) for v in op.s_int]
    s_half = [1 + pml_scale * (np.asarray(v, complex) - 1) for v in op.s_half]
    pos, imid = [], []
    for a in range(3):
        p = np.empty((3, len(s_int[a])), complex)
        m = np.empty((3, len(s_int[a]) + 1), complex)
        for c in range(3):
            if c == a:
                p[c] = s_half[a]
                m[c] = np.concatenate([s_int[a], s_int[a][-1:]])
            else:
                p[c] = s_int[a]
                m[c] = np.concatenate([s_half[a][:1], s_half[a]])
        pos.append(p)
        imid.append(1.0 / m)
    return pos, imid


def _level_count(shape, kh: float, settings: Multigrid) -> int:
    """``settings.levels``, or coarsen until ``k h >= coarse_kh`` or the grid gets too small."""
    if settings.levels is not None:
        return settings.levels
    n, levels = min(shape), 1
    while kh < settings.coarse_kh and (n + 1) // 2 >= settings.min_coarse:
        n, kh = (n + 1) // 2, 2 * kh
        levels += 1
    return levels


def build_vcycle(op, settings: Multigrid | None = None) -> VCycle:
    """The V-cycle for :class:`emjax.fdfd.operator3d.Operator3D` ``op`` (its eps, PML
    stretch, 1/dx^2, omega^2 and free mask)."""
    settings = Multigrid() if settings is None else settings
    if not isinstance(settings, Multigrid):
        raise ConfigError(f"multigrid settings must be an emjax.fdfd.multigrid.Multigrid, got {settings!r}")
    dtype = op.eps.dtype
    shape = op.eps.shape[1:]
    omega2 = float(op.omega2)
    n_levels = _level_count(shape, math.sqrt(omega2 / float(op.scale)), settings)
    shift = jnp.asarray(complex(1.0, settings.beta) * omega2, dtype)
    h2inv = float(op.scale)
    pos, imid = fine_coefficients(op, settings.pml_scale)
    eps = op.eps
    levels = []
    for k in range(n_levels):
        if k:
            eps = _average_children(eps)
            pairs = [_coarsen_1d(pos[a], imid[a]) for a in range(3)]
            pos = [p for p, _ in pairs]
            imid = [m for _, m in pairs]
            h2inv /= 4
            if min(eps.shape[1:]) < 2:
                raise ConfigError(f"Multigrid.levels = {n_levels} is too many for the grid {shape}")
        levels.append(
            ShiftedLaplacian(
                eps,
                [jnp.asarray(p, dtype) for p in pos],
                [jnp.asarray(m, dtype) for m in imid],
                jnp.asarray(h2inv, jnp.zeros((), dtype).real.dtype),
                shift,
            )
        )
    dinv = [settings.omega / P.diagonal() for P in levels]
    counts = jnp.asarray([settings.nu - 1, settings.nu, max(settings.coarse_sweeps, 1) - 1, 1], jnp.int32)
    return VCycle(levels, dinv, op.free, counts)


def work_estimate(cycle: VCycle) -> float:
    """Stencil applications of one cycle in units of the fine grid's (a rough count: each
    level's smoothing and residual sweeps weighted by its size)."""
    n0 = math.prod(cycle.levels[0].shape)
    nu1, nu, coarse, _ = (int(v) for v in cycle.counts)
    total = 0.0
    for k, P in enumerate(cycle.levels):
        apps = coarse if k == len(cycle.levels) - 1 else nu1 + 1 + nu
        total += apps * math.prod(P.shape) / n0
    return total
