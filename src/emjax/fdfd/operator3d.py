"""The 3-D FDFD operator on the Yee grid, matrix-free in JAX, symmetric, with SC-PML.

Fields ~ exp(-i omega t), mu = 1, c = 1. E_c lives at ``origin + (node + e_c / 2) dx`` (the
FDTD's and :func:`emjax.scene.rasterize`'s convention), H_c at the faces. With stretched
differences (forward ones at half positions, backward ones at nodes, each divided by the
PML's ``s`` at its own position; zero beyond the grid: a PEC wall behind the PML):

    A E = curl_h curl_e E - omega^2 eps E = b.

Symmetric form. ``A`` is not symmetric, but ``S A`` is, with ``S = s_x s_y s_z`` evaluated
at each E node (the UPML form of the same discrete equations; checked in the tests): QMR
for complex-symmetric systems applies.

Gradient-divergence term (Shin & Fan, "Accelerated solution of the frequency-domain
Maxwell's equations by engineering the eigenvalue distribution of the operator", Opt.
Express 21, 22578 (2013)). The discrete divergence of a discrete curl is zero, so every
solution satisfies ``div_s(eps E) = -div_s(b) / omega^2`` at each node whose six edges carry
equations. Adding ``eps K^T Z K eps E`` (``K = N div_s``, ``N = s_x s_y s_z`` at the nodes)
to ``S A`` and the known value of it to the right side leaves the solution unchanged and
turns the curl-curl (a huge near-null space of gradients) into a vector Helmholtz operator
``-laplacian - omega^2 eps`` in homogeneous regions: Krylov iterations drop by an order of
magnitude. ``Z = 1 / (N eps_node^2)``, and 0 at nodes next to a PEC edge (whose rows are not
Maxwell's equations).

PEC: edges inside a perfect conductor are fixed (``E = E_fixed``, Dirichlet rows ``x = x_fixed``
kept symmetric by masking: ``P M P + (1 - P)``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["Operator3D", "build_operator", "probe_matrix"]


def _fwd(f, axis: int):
    """``f[i + 1] - f[i]`` (zero beyond the end), at ``i + 1/2``."""
    n = f.shape[axis]
    nxt = jnp.concatenate(
        [jax.lax.slice_in_dim(f, 1, n, axis=axis), jnp.zeros_like(jax.lax.slice_in_dim(f, 0, 1, axis=axis))],
        axis,
    )
    return nxt - f


def _bwd(f, axis: int):
    """``f[i] - f[i - 1]`` (zero before the start), at ``i``."""
    n = f.shape[axis]
    prv = jnp.concatenate(
        [
            jnp.zeros_like(jax.lax.slice_in_dim(f, 0, 1, axis=axis)),
            jax.lax.slice_in_dim(f, 0, n - 1, axis=axis),
        ],
        axis,
    )
    return f - prv


def _along(v, axis: int):
    """A 1-D array along ``axis`` of a 3-D grid, broadcastable."""
    shape = [1, 1, 1]
    shape[axis] = -1
    return v.reshape(shape)


def _curl(V, diff, inv):
    """The curl of V with the difference ``diff`` (_fwd or _bwd) along each axis scaled by
    ``inv`` (1/s per axis, broadcastable)."""
    return jnp.stack(
        [
            diff(V[2], 1) * inv[1] - diff(V[1], 2) * inv[2],
            diff(V[0], 2) * inv[2] - diff(V[2], 0) * inv[0],
            diff(V[1], 0) * inv[0] - diff(V[0], 1) * inv[1],
        ]
    )


@jax.tree_util.register_pytree_node_class
class Operator3D:
    """``x -> P M(P x) + (1 - P) x`` on E arrays (3, nx, ny, nz), ``M = l S A + grad-div``.

    Leaves: ``eps`` (3, nx, ny, nz) diagonal permittivity at the E nodes; ``s_int`` and
    ``s_half`` (3-tuples of (n_a,) arrays: the PML's ``s`` at the nodes and half nodes of
    each axis; ``S`` and K's weights ``w_c = S_c / s_c`` are their products, formed inside
    the fused kernels rather than stored); ``Z`` (nx, ny, nz); ``l`` open edge fractions,
    ``W`` inverse open face areas and ``free`` = (l > 0) (conformal PEC, see pec3d.py;
    scalars 1 without PEC); ``scale`` 1/dx^2; ``omega2``.
    """

    def __init__(self, eps, s_int, s_half, Z, l, W, free, scale, omega2):
        self.eps, self.s_int, self.s_half = eps, tuple(s_int), tuple(s_half)
        self.Z, self.l, self.W, self.free = Z, l, W, free
        self.scale, self.omega2 = scale, omega2

    def tree_flatten(self):
        leaves = (self.eps, self.s_int, self.s_half, self.Z, self.l, self.W, self.free)
        return leaves + (self.scale, self.omega2), None

    @classmethod
    def tree_unflatten(cls, aux, leaves):
        return cls(*leaves)

    def _s(self, c: int, a: int):
        """``s`` along axis ``a`` at E_c's nodes, broadcastable."""
        return _along(self.s_half[a] if a == c else self.s_int[a], a)

    @property
    def S(self):
        """``s_x s_y s_z`` at each E node (3, nx, ny, nz), the symmetrizing row scale."""
        return jnp.stack(
            [
                self._s(c, 0) * self._s(c, 1) * self._s(c, 2) * jnp.ones(self.eps.shape[1:], self.eps.dtype)
                for c in range(3)
            ]
        )

    def _w(self, c: int):
        a, b = [x for x in range(3) if x != c]
        return self._s(c, a) * self._s(c, b)

    def curl_e(self, E):
        """H-like differences of E (unscaled by 1/dx): (3, nx, ny, nz) at the faces."""
        return _curl(E, _fwd, [1 / _along(v, a) for a, v in enumerate(self.s_half)])

    def curl_h(self, H):
        return _curl(H, _bwd, [1 / _along(v, a) for a, v in enumerate(self.s_int)])

    def K(self, V):
        """``N div_s`` of a field at the E nodes: (nx, ny, nz) at the nodes (unscaled)."""
        return _bwd(self._w(0) * V[0], 0) + _bwd(self._w(1) * V[1], 1) + _bwd(self._w(2) * V[2], 2)

    def KT(self, q):
        return -jnp.stack([self._w(c) * _fwd(q, c) for c in range(3)])

    def graddiv(self, V):
        """``K^T Z K V`` (unscaled)."""
        return self.KT(self.Z * self.K(V))

    def maxwell(self, E):
        """``A E = curl_h W curl_e l E - omega^2 eps E`` (the rows of Maxwell's equations)."""
        return self.curl_h(self.W * self.curl_e(self.l * E)) * self.scale - self.omega2 * self.eps * E

    def full(self, E):
        """``M E`` without the PEC mask: ``l S maxwell(E) + eps graddiv(eps E) scale``."""
        return self.l * self.S * self.maxwell(E) + self.eps * self.graddiv(self.eps * E) * self.scale

    def full_percomponent(self, E):
        """:meth:`full` written per component (H and the divergence formed once from E's three
        components, each output component in one expression). Alone, XLA fuses it into fewer
        passes (H100, 256^3 complex128: 5.0 ms against 8.5 ms per matvec, equal to the last
        bit); inside the Jacobi-scaled QMR loop it was no faster at 128^3 (8.0 vs 8.1 s) and
        the 256^3 solve with it and QMRLean took 109 s against 83 s: not the default until
        that is understood (benchmarks/fdfd_qmr_ab.py)."""

        def part(a, c):  # a scalar or a (3, ...) array's component c
            return a[c] if jnp.ndim(a) == 4 else a

        Ec = [E[c] for c in range(3)]
        e = [self.eps[c] for c in range(3)]
        lE = [part(self.l, c) * Ec[c] for c in range(3)]
        ih = [1 / _along(v, a) for a, v in enumerate(self.s_half)]
        ii = [1 / _along(v, a) for a, v in enumerate(self.s_int)]
        H = [
            _fwd(lE[2], 1) * ih[1] - _fwd(lE[1], 2) * ih[2],
            _fwd(lE[0], 2) * ih[2] - _fwd(lE[2], 0) * ih[0],
            _fwd(lE[1], 0) * ih[0] - _fwd(lE[0], 1) * ih[1],
        ]
        H = [part(self.W, c) * H[c] for c in range(3)]
        w = [self._w(c) for c in range(3)]
        q = self.Z * (
            _bwd(w[0] * e[0] * Ec[0], 0) + _bwd(w[1] * e[1] * Ec[1], 1) + _bwd(w[2] * e[2] * Ec[2], 2)
        )
        curl = [
            _bwd(H[2], 1) * ii[1] - _bwd(H[1], 2) * ii[2],
            _bwd(H[0], 2) * ii[2] - _bwd(H[2], 0) * ii[0],
            _bwd(H[1], 0) * ii[0] - _bwd(H[0], 1) * ii[1],
        ]
        out = []
        for c in range(3):
            S = self._s(c, 0) * self._s(c, 1) * self._s(c, 2)
            maxwell = curl[c] * self.scale - self.omega2 * e[c] * Ec[c]
            out.append(part(self.l, c) * S * maxwell - e[c] * w[c] * _fwd(q, c) * self.scale)
        return jnp.stack(out)

    def rhs(self, b):
        """The symmetric system's right side for ``A E = b`` (the grad-div term's known part)."""
        return self.free * (self.l * self.S * b - self.eps * self.graddiv(b) * self.scale / self.omega2)

    def __call__(self, x):
        return self.free * self.full(self.free * x) + (1 - self.free) * x


def stretch_inverses(pml, shape, dx: float, omega: float) -> tuple:
    """``1/s`` at the nodes and half nodes of each axis: two 3-tuples of (n_a,) arrays."""
    inv_int = tuple(1.0 / pml.stretch(n, dx, omega, half=False) for n in shape)
    inv_half = tuple(1.0 / pml.stretch(n, dx, omega, half=True) for n in shape)
    return inv_int, inv_half


def build_operator(
    eps: np.ndarray, pml, dx: float, omega: float, dtype, pec=None, graddiv: bool = True
) -> Operator3D:
    """The operator for ``eps`` (3, nx, ny, nz) at the E nodes; ``pec``: None or the
    conformal fractions ``(l, inv_a)`` of :func:`emjax.fdfd.pec3d.pec_fractions`."""
    from .operators import UPML

    free = np.ones(eps.shape) if pec is None else (pec[0] > 0).astype(float)
    shape = eps.shape[1:]
    inv_int, inv_half = stretch_inverses(pml, shape, dx, omega)
    s_int = [1 / v for v in inv_int]
    s_half = [1 / v for v in inv_half]
    mu_inv = None
    if isinstance(pml, UPML):  # the stretching moves into eps_t and mu_t; differences unstretched
        eps = np.array(eps, complex)  # a copy; complex even for a real eps (s is complex)
        mu_inv = np.empty(eps.shape, complex)
        for c in range(3):
            a, b = [x for x in range(3) if x != c]
            # E_c: s_c at half nodes along c, s_a, s_b at nodes; H_c: the other way round
            eps[c] = eps[c] * _np_along(s_int[a], a) * _np_along(s_int[b], b) / _np_along(s_half[c], c)
            mu_inv[c] = _np_along(s_int[c], c) / (_np_along(s_half[a], a) * _np_along(s_half[b], b))
        s_int = [np.ones_like(v) for v in s_int]
        s_half = [np.ones_like(v) for v in s_half]
    N = s_int[0][:, None, None] * s_int[1][None, :, None] * s_int[2][None, None, :]
    if graddiv:
        eps_node = _node_average(np.where(free > 0, eps, 0), free)
        ok = _all_edges_free(free) & (eps_node != 0)
        Z = np.where(ok, 1.0 / (N * np.where(eps_node == 0, 1, eps_node) ** 2), 0)
    else:
        Z = np.zeros(shape)
    rd = np.zeros((), dtype).real.dtype
    cast = lambda a: jnp.asarray(a, dtype)  # noqa: E731
    one = jnp.ones((), rd)
    W = None if pec is None else pec[1]
    if mu_inv is not None:
        W = mu_inv if W is None else mu_inv * W
    return Operator3D(
        cast(eps),
        tuple(cast(v) for v in s_int),
        tuple(cast(v) for v in s_half),
        cast(Z),
        one if pec is None else jnp.asarray(pec[0], rd),
        one if W is None else jnp.asarray(W, dtype if mu_inv is not None else rd),
        one if pec is None else jnp.asarray(free, rd),
        jnp.asarray(1.0 / dx**2, rd),
        jnp.asarray(omega**2, rd),
    )


def _np_along(v, axis):
    shape = [1, 1, 1]
    shape[axis] = -1
    return v.reshape(shape)


def _node_average(v: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Weighted mean over the (up to) six E edges meeting at each node."""
    tot = np.zeros(v.shape[1:], v.dtype)
    cnt = np.zeros(v.shape[1:])
    for c in range(3):
        for shift in (0, 1):  # E_c[i] (at i + 1/2) and E_c[i - 1] (at i - 1/2) touch node i
            a = v[c] if shift == 0 else np.roll(v[c], 1, axis=c)
            m = weight[c] if shift == 0 else np.roll(weight[c], 1, axis=c)
            if shift:
                idx = [slice(None)] * 3
                idx[c] = 0
                a = a.copy()
                m = m.copy()
                a[tuple(idx)] = 0
                m[tuple(idx)] = 0
            tot += a * m
            cnt += m
    return np.where(cnt > 0, tot / np.maximum(cnt, 1e-300), 0)


def _all_edges_free(free: np.ndarray) -> np.ndarray:
    ok = np.ones(free.shape[1:], bool)
    for c in range(3):
        ok &= free[c] > 0
        prev = np.roll(free[c], 1, axis=c) > 0
        idx = [slice(None)] * 3
        idx[c] = 0
        prev[tuple(idx)] = True
        ok &= prev
    return ok


def probe_matrix(op: Operator3D, dtype):
    """The operator as a SciPy CSR matrix, from 81 applications to colour probes: E_c at
    nodes congruent to (a, b, c) mod 3 (the stencil reaches one node per axis, so each
    output entry has exactly one source among a probe's nodes)."""
    import scipy.sparse as sp

    shape = op.eps.shape[1:]
    n = int(np.prod(shape))
    apply = jax.jit(op.__class__.__call__)
    grids = np.meshgrid(*[np.arange(s) for s in shape], indexing="ij")
    rows, cols, vals = [], [], []
    for c in range(3):
        for color in np.ndindex(3, 3, 3):
            probe = np.zeros((3, *shape), dtype)
            sel = (grids[0] % 3 == color[0]) & (grids[1] % 3 == color[1]) & (grids[2] % 3 == color[2])
            probe[c][sel] = 1
            out = np.asarray(apply(op, jnp.asarray(probe)))
            comp, i, j, k = np.nonzero(out)
            src = [
                idx + ((col - idx + 1) % 3) - 1 for idx, col in zip((i, j, k), color)
            ]  # the probe node within one step of each output entry
            rows.append(((comp * shape[0] + i) * shape[1] + j) * shape[2] + k)
            cols.append(((c * shape[0] + src[0]) * shape[1] + src[1]) * shape[2] + src[2])
            vals.append(out[comp, i, j, k])
    rows, cols, vals = (np.concatenate(v) for v in (rows, cols, vals))
    return sp.csr_matrix((vals, (rows, cols)), shape=(3 * n, 3 * n))


@jax.jit
def _probe_diagonal(op: Operator3D):
    shape = op.eps.shape
    comp = jax.lax.broadcasted_iota(jnp.int32, shape, 0)
    idx = [jax.lax.broadcasted_iota(jnp.int32, shape, a + 1) % 3 for a in range(3)]

    def body(k, diag):
        c, a, b, d = k // 27, (k // 9) % 3, (k // 3) % 3, k % 3
        sel = (comp == c) & (idx[0] == a) & (idx[1] == b) & (idx[2] == d)
        probe = sel.astype(op.eps.dtype)
        return diag + probe * op(probe)

    return jax.lax.fori_loop(0, 81, body, jnp.zeros(shape, op.eps.dtype))


def probe_diagonal(op: Operator3D) -> jax.Array:
    """The operator's diagonal (3, nx, ny, nz) from the 81 colour probes, on the device."""
    return _probe_diagonal(op)


@jax.tree_util.register_pytree_node_class
class Scaled:
    """``x -> d * op(d * x)``: split Jacobi preconditioning that keeps the symmetry."""

    def __init__(self, op, d):
        self.op, self.d = op, d

    def tree_flatten(self):
        return (self.op, self.d), None

    @classmethod
    def tree_unflatten(cls, aux, leaves):
        return cls(*leaves)

    def __call__(self, x):
        return self.d * self.op(self.d * x)
