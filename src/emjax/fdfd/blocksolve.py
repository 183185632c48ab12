"""Direct solver on the JAX device for the block-tridiagonal 2-D FDFD matrices of tm.py.

The 2-D TM / TE matrix ``A`` (N x N, N = nx ny, node (i, j) at index i ny + j, i along x)
couples each node to the 3 x 3 nodes around it: with blocks of the ny nodes of one x-row, A
is block tridiagonal, ``L_i x_{i-1} + D_i x_i + U_i x_{i+1} = b_i``, and every block is
itself tridiagonal ("banded"). One exception: TE's compact rows at dielectric interfaces
(Kottke's off-diagonal terms, averaged over neighbouring rows) reach two x-rows (and two
nodes along y) away; :func:`block_layout` then groups pairs of x-rows into blocks of 2 ny
("dense" blocks: 4x the memory, 8x the flops). Complex, non-Hermitian, indefinite.

Methods (``method``):

* ``"cr"``, block cyclic reduction. Level 0 (tridiagonal blocks) eliminates the odd x-rows
  with batched tridiagonal solves (LAPACK gtsv / cuSPARSE gtsv2, O(nx ny^2)) and leaves the
  dense system of the even rows, (3, M, ny, ny) with M = ceil(nx / 2). Each dense level then
  eliminates every other remaining row: for each eliminated row P = D^-1 [L, U, b] (LU with
  partial pivoting inside the block, of the augmented [D | L U b]), for each kept row
  ``D' = D - L P_u(left) - U P_l(right)``, ``L' = -L P_l(left)``, ``U' = -U P_u(right)``,
  ``b' = b - L P_b(left) - U P_b(right)``: per pair of rows a getrf + trsm on n x (3n + K)
  and two n x n x (2n + K) matmuls, ``50.7 n^3`` real flops (n = ny). ceil(log2 M) levels;
  the back substitution is a matmul per eliminated row (and a tridiagonal solve at level 0).
  Everything happens in place in that one (3, M, n, n) buffer (P goes into the eliminated
  rows' L, U, b slots), in chunks of ``chunk`` pairs: the whole solve is one XLA program,
  two ``lax.fori_loop`` over a static schedule of (stride, rows, first pair) with one fixed
  chunk shape, so a single loop body serves every level and compiles once; the last levels
  pad their chunk (400^2: 234 pair slots for 199 pairs at chunk 6).
* ``"thomas"``, the block Thomas algorithm as a ``lax.scan``: ``D'_i = D_i - L_i W_{i-1}``,
  ``[W_i, y_i] = D'_i^-1 [U_i, b_i - L_i y_{i-1}]``, then ``x_i = y_i - W_i x_{i+1}``. 2.7x
  fewer flops (``10.7 n^3`` per row: L_i is tridiagonal) but nx sequential LUs.
* ``"auto"`` (default): Thomas, on the CPU and on the GPU (measured on the H100, below: the
  batched LUs of cyclic reduction run far below the device's rate, so its 2.7x more flops
  cost more than the sequential steps of Thomas).

Pivoting happens only inside the blocks (never across them), so the elimination can in
principle meet a nearly singular Schur complement of this indefinite matrix. The relative
residual ``max_k ||A x_k - b_k|| / ||b_k||`` (host matvec with the SciPy matrix) is therefore
always computed and returned; above ``tol`` (1e-10) the solver refines, ``x += solve(b - A
x)`` (a full solve again: no factors are kept, to keep the memory at one dense system), at
most ``refine`` (2) times. Measured, refinement never needed: residuals 1.6e-16 to 3.3e-13
with cyclic reduction and 1.2e-16 to 4.3e-14 with Thomas on all the combinations of TM / TE,
compact / Yee stencil, eps = 4 / PEC cylinder of radius 0.5 and 1 wavelength at 40 cells per
wavelength (89^2 and 129^2 grids, two plane waves; TE compact eps = 4 with grouped blocks
included), 5.5e-14 (CR) and 3.8e-14 (Thomas) on the 400^2 TM grid below (SuperLU 3.8e-13).

Memory, estimated before anything is allocated (:func:`estimate_bytes`; complex128):
cyclic reduction ``16 (3 M n^2 + 18 chunk n (n + K))`` bytes plus the blocks and vectors,
Thomas ``16 nx n (n + K)`` plus the same (XLA's own accounting of the compiled programs on
the CPU: 1-11% less); above 90% of the device's free memory (GPU: ``memory_stats``, i.e.
within JAX's preallocated pool; CPU: MemAvailable) a :class:`BlockMemoryError` (a
ResourceError and a ConfigError) names the grid. 400^2: 1.9 GB (CR, chunk 6), 1.1 GB
(Thomas); 1210^2: 51 GB (CR, chunk 18), 29 GB (Thomas).

Measured on the 2-core CPU here (JAX CPU backend, complex128; TM, compact stencil, eps = 4
cylinder of radius 1 wavelength, two plane waves; benchmarks/fdfd_blocksolve.py; seconds:
compile / warm solve incl. transfers; SuperLU: tm.py's options, factor + solve):

    grid    SuperLU   cyclic reduction        Thomas
    100^2   0.06      1.5 / 0.59 (chunk 4)    0.56 / 0.19
    200^2   0.34      1.5 / 3.5  (chunk 4)    0.73 / 0.93
    400^2   2.1       2.9 / 28   (chunk 6)    0.51 / 9.1

The host-side block extraction adds 0.02 / 0.07 / 0.17 s. The CPU runs at ~27-30 GFLOP/s
(Thomas 2.7e11 flops at 400^2, CR 7.6e11 counting the padded slots): SuperLU with a
fill-reducing ordering costs O(N^1.5) flops against O(nx ny^3) = O(N^2) here, so on the CPU
SuperLU stays the solver to use; this one is for the GPU. Expected on an H100 (FP64 67 TFLOP/s
with tensor cores, ZGEMM ~50): at 400^2 the CR levels carry 100, 50, 25, 12, 6, 3, 2, 1
pairs, each pair 3.25e9 flops (60% of it batched ZGEMM, 4.8e11 in all: ~10 ms; the rest
getrf + trsm, 2.8e11, which cuSOLVER runs far below peak at n = 400: 0.05-0.3 s), so 0.1-0.4 s
warm; Thomas' 400 sequential getrf of 400 x 802 (6.9e8 flops each, latency bound, ~0.3-1
ms) 0.15-0.4 s. At 1210^2: CR 6.6e13 flops (738 pair slots at chunk 18, 63% ZGEMM), ~2-4 s;
Thomas 2.3e13 flops in 1210 steps of 1.9e10, ~2-4 s. Compilation (one program) took
1.5-2.9 s on this CPU (small problems compile at LLVM -O0: 0.8 s for 31^2); on a GPU
expect a few seconds, paid once per grid shape, chunk and padded number of right sides
(``K`` is padded to 2, 4, 8, ...).

Measured on an H100 (2026-11-24, commit 9076268, benchmarks/fdfd_blocksolve.py, the same
problem; seconds, compile / warm solve, residual):

    grid     SuperLU (host)   cyclic reduction              Thomas
    400^2    1.53             1.2-1.5 / 1.7-2.0 (chunk 4-16)  0.27-0.47 / 0.50, 1.5e-13
    1210^2   -                1.8 / 22.0 (chunk 18)           0.37 / 6.3, 2.0e-13

(Thomas: ~1.25 ms per block row at n = 400, 5.2 ms at n = 1210, i.e. ~1-4 TFLOP/s: the
getrf of one n x 2n block is latency bound. The paper's 2009 GPU BiCG took 646 s at 1210^2.)
The host-side block extraction adds 0.13-0.2 s (400^2) and 2.2 s (1210^2). solve_tm hands
its stencil arrays over instead (``stencil=``; since 2026-11-25): the blocks are their
transpose, 0.015-0.02 s at 400^2 on the 2-core box (block_layout: 0.34-0.37 s there, busy).
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

from ..backend import default_device, device_memory_bytes, precision_scope
from ..errors import ConfigError, ResourceError

METHODS = ("cr", "thomas")


class BlockMemoryError(ResourceError, ConfigError):
    """The block solver would need more memory than the device has (a :class:`ResourceError`
    and, as the solver option's input check, a :class:`ConfigError`)."""


# ----------------------------------------------------------------------------- extraction


def block_layout(A, shape, max_group=2):
    """``(kind, blocks, group)`` of ``A`` on the grid ``shape = (nx, ny)`` (C order, index
    ``i * ny + j``): blocks of ``group * ny`` rows (``group`` consecutive x-rows when ``A``
    couples rows up to ``group`` apart; padded with identity rows to a whole number of
    blocks); ``kind`` "banded": each block tridiagonal, ``blocks`` (nb, 3, 3, nyb) =
    [block row][L, D, U][dl, d, du][r] (``dl[r] = block[r, r - 1]``, ``du[r] = block[r, r +
    1]``), else "dense": (3, nb, nyb, nyb) = [L, D, U][block row]."""
    nx, ny = (int(s) for s in shape)
    N = nx * ny
    if nx < 1 or ny < 1:
        raise ConfigError(f"block solver: the grid {nx} x {ny} is empty")
    if not sp.issparse(A) or A.shape != (N, N):
        raise ConfigError(
            f"block solver: A must be a scipy.sparse {N} x {N} matrix for the grid {nx} x {ny}, "
            f"got {type(A).__name__} {getattr(A, 'shape', None)}"
        )
    coo = sp.coo_matrix(A, copy=True)
    coo.sum_duplicates()
    keep = coo.data != 0
    r, c, v = coo.row[keep].astype(np.int64), coo.col[keep].astype(np.int64), coo.data[keep].astype(complex)
    reach = np.abs(c // ny - r // ny)
    group = max(int(reach.max(initial=0)), 1)
    if group > max_group:
        k = int(np.argmax(reach))
        raise ConfigError(
            f"block solver: A is not block tridiagonal on the grid {nx} x {ny} (C order, blocks of "
            f"{ny} rows): row {r[k]} (node {r[k] // ny}, {r[k] % ny}) couples to column {c[k]} (node "
            f"{c[k] // ny}, {c[k] % ny}), {group} x-rows away ({int((reach > max_group).sum())} entries "
            f"beyond {max_group}; rows are grouped up to max_group={max_group} into one block)"
        )
    nb = -(-nx // group)
    nyb = group * ny
    pad = nb * nyb - N
    if pad:  # identity rows for the padding nodes
        extra = np.arange(N, N + pad)
        r, c, v = np.concatenate([r, extra]), np.concatenate([c, extra]), np.concatenate([v, np.ones(pad)])
    bi, bj = r // nyb, c // nyb
    ri, cj = r % nyb, c % nyb
    db, off = bj - bi, cj - ri
    if np.all(np.abs(off) <= 1):
        blocks = np.zeros((nb, 3, 3, nyb), complex)
        blocks[bi, db + 1, off + 1, ri] = v
        return "banded", blocks, group
    blocks = np.zeros((3, nb, nyb, nyb), complex)
    blocks[db + 1, bi, ri, cj] = v
    return "dense", blocks, group


def stencil_blocks(stencil, shape):
    """The banded blocks (nx, 3, 3, ny) of :func:`block_layout` from stencil coefficients
    (nx, ny, 3, 3) (see :func:`solve_block_tridiagonal`); the same array, transposed."""
    nx, ny = (int(s) for s in shape)
    C = np.asarray(stencil)
    if C.shape != (nx, ny, 3, 3):
        raise ConfigError(f"block solver: stencil must have the shape ({nx}, {ny}, 3, 3), got {C.shape}")
    return np.ascontiguousarray(C.transpose(0, 2, 3, 1), dtype=complex)


# ----------------------------------------------------------------------------- kernels


def _tri_dense(b):
    """Dense (..., n, n) from bands b (..., 3, n)."""
    n = b.shape[-1]
    below, eye, above = (jnp.eye(n, k=k, dtype=b.dtype) for k in (-1, 0, 1))
    dl, d, du = b[..., 0, :, None], b[..., 1, :, None], b[..., 2, :, None]
    return dl * below + d * eye + du * above


def _tri_mul(b, X):
    """Tridiagonal (bands b (..., 3, n)) times X (..., n, w)."""
    dl, d, du = b[..., 0, :, None], b[..., 1, :, None], b[..., 2, :, None]
    zero = jnp.zeros_like(X[..., :1, :])
    down = jnp.concatenate([zero, X[..., :-1, :]], -2)  # row r holds X[r - 1]
    up = jnp.concatenate([X[..., 1:, :], zero], -2)  # row r holds X[r + 1]
    return dl * down + d * X + du * up


def _reduce(GL, GR, Dk, Bk, n):
    """The kept equations' new blocks from GL = L_k [P_l, P_u, P_b] (left neighbours) and
    GR = U_k [P_l, P_u, P_b] (right)."""
    Lp = -GL[..., :n]
    Up = -GR[..., n : 2 * n]
    Dp = Dk - GL[..., n : 2 * n] - GR[..., :n]
    Bp = Bk - GL[..., 2 * n :] - GR[..., 2 * n :]
    return Lp, Dp, Up, Bp


def _solve(D, R, lu="augmented"):
    """D^-1 R for a batch of dense D (..., n, n), R (..., n, w), partial pivoting within D.
    ``lu="augmented"``: getrf of the n x (n + w) matrix [D | R] (the row swaps and L^-1 reach
    R inside LAPACK / cuSOLVER: no permutation to apply), then one triangular solve with U;
    on a GPU a loop of cusolverDn getrf over the batch. ``"square"``: getrf of D (on a GPU
    cuBLAS's batched getrf when n / batch <= 128), the permutation applied to R, two
    triangular solves."""
    n = D.shape[-1]
    if lu == "augmented":
        f = jax.lax.linalg.lu(jnp.concatenate([D, R], -1))[0]
        return jax.lax.linalg.triangular_solve(f[..., :n], f[..., n:], left_side=True, lower=False)
    f, _, perm = jax.lax.linalg.lu(D)
    y = jnp.take_along_axis(R, perm[..., None], axis=-2)
    y = jax.lax.linalg.triangular_solve(f, y, left_side=True, lower=True, unit_diagonal=True)
    return jax.lax.linalg.triangular_solve(f, y, left_side=True, lower=False)


def _mask(valid, x, other=0.0):
    return jnp.where(valid.reshape(valid.shape + (1,) * (x.ndim - valid.ndim)), x, other)


def _schedule(M, c):
    """The steps (s, m, t0) of cyclic reduction on M block rows: at stride s, m active rows
    (j s, j < m), kept j = 2t and eliminated j = 2t + 1 for t in [t0, t0 + c)."""
    steps, m, s = [], M, 1
    while m > 1:
        n_k = (m + 1) // 2
        steps += [(s, m, t0) for t0 in range(0, n_k, c)]
        m, s = n_k, 2 * s
    return np.array(steps, np.int32).reshape(-1, 3)


def _level0(bands, B, c):
    """Level 0 on tridiagonal blocks (bands (nx, 3, 3, n), B (nx, n, K)): the dense level-1
    system T (3, M, n, n) = [L, D, U], B1 (M, n, K) of the even rows, in chunks of c."""
    nx, n, K = B.shape
    M = (nx + 1) // 2
    T = jnp.zeros((3, M, n, n), B.dtype)
    B1 = jnp.zeros((M, n, K), B.dtype)

    def step(q, carry):
        T, B1 = carry
        t0 = q * c
        u = t0 - 1 + jnp.arange(c + 1)  # eliminated rows 2u + 1
        ie = 2 * u + 1
        ve = (u >= 0) & (ie < nx)
        be = bands[jnp.clip(ie, 0, nx - 1)]  # (c + 1, 3, 3, n)
        De = _mask(ve, be[:, 1], jnp.array([0.0, 1.0, 0.0], B.dtype)[:, None])
        rhs = jnp.concatenate(
            [
                _tri_dense(_mask(ve, be[:, 0])),
                _tri_dense(_mask(ve, be[:, 2])),
                _mask(ve, B[jnp.clip(ie, 0, nx - 1)]),
            ],
            -1,
        )
        P = jax.lax.linalg.tridiagonal_solve(De[:, 0], De[:, 1], De[:, 2], rhs)
        t = t0 + jnp.arange(c)
        vk = 2 * t < nx
        ck = jnp.clip(2 * t, 0, nx - 1)
        bk = bands[ck]
        GL, GR = _tri_mul(bk[:, 0], P[:-1]), _tri_mul(bk[:, 2], P[1:])
        Lp, Dp, Up, Bp = _reduce(GL, GR, _tri_dense(bk[:, 1]), B[ck], n)
        wk = jnp.where(vk, t, M)
        T = T.at[:, wk].set(jnp.stack([Lp, Dp, Up]), mode="drop")
        return T, B1.at[wk].set(Bp, mode="drop")

    return jax.lax.fori_loop(0, -(-M // c), step, (T, B1))


def _back0(bands, B, X1):
    """Level 0's back substitution: the odd rows by tridiagonal solves from the even ones."""
    nx, n, K = B.shape
    M = X1.shape[0]
    if nx == 1:
        return X1
    u = jnp.arange(nx // 2)
    ie = 2 * u + 1
    be = bands[ie]
    xr = jnp.concatenate([X1[1:], jnp.zeros((1, n, K), X1.dtype)])[u]
    rhs = B[ie] - _tri_mul(be[:, 0], X1[u]) - _tri_mul(be[:, 2], xr)
    xe = jax.lax.linalg.tridiagonal_solve(be[:, 1, 0], be[:, 1, 1], be[:, 1, 2], rhs)
    both = jnp.stack([X1[: nx // 2], xe], 1).reshape(2 * (nx // 2), n, K)
    return both if M == nx // 2 else jnp.concatenate([both, X1[M - 1 :]])


def _reduce_dense(T, B1, steps, c, lu):
    """Cyclic reduction of the dense system in place: eliminated rows end up holding P =
    D^-1 [L, U, B] in their L, U, B slots; row 0 the last D and B."""
    M, n = T.shape[1], T.shape[2]
    eye = jnp.eye(n, dtype=T.dtype)

    def step(q, carry):
        T, B1 = carry
        s, m, t0 = steps[q, 0], steps[q, 1], steps[q, 2]
        t = t0 + jnp.arange(c)
        rk, re, rl = 2 * t * s, (2 * t + 1) * s, (2 * t0 - 1) * s
        vk, ve, vl = 2 * t < m, 2 * t + 1 < m, t0 >= 1
        ce, ck, cl = jnp.clip(re, 0, M - 1), jnp.clip(rk, 0, M - 1), jnp.clip(rl, 0, M - 1)
        Te = T[:, ce]
        De = _mask(ve, Te[1], eye)
        rhs = _mask(ve, jnp.concatenate([Te[0], Te[2], B1[ce]], -1))
        P = _solve(De, rhs, lu)
        prev = jnp.where(vl, jnp.concatenate([T[0, cl], T[2, cl], B1[cl]], -1), 0.0)
        left = jnp.concatenate([prev[None], P[:-1]], 0)
        Tk = T[:, ck]
        GL, GR = Tk[0] @ left, Tk[2] @ P
        Lp, Dp, Up, Bp = _reduce(GL, GR, Tk[1], B1[ck], n)
        wk, we = jnp.where(vk, rk, M), jnp.where(ve, re, M)
        T = T.at[:, wk].set(jnp.stack([Lp, Dp, Up]), mode="drop")
        B1 = B1.at[wk].set(Bp, mode="drop")
        T = T.at[0, we].set(P[..., :n], mode="drop").at[2, we].set(P[..., n : 2 * n], mode="drop")
        return T, B1.at[we].set(P[..., 2 * n :], mode="drop")

    return jax.lax.fori_loop(0, steps.shape[0], step, (T, B1))


def _back_dense(T, B1, steps, c, lu):
    """Back substitution of the dense levels: x_e = P_b - P_l x_left - P_u x_right."""
    M = T.shape[1]
    X1 = jnp.zeros_like(B1).at[0].set(_solve(T[1, 0], B1[0], lu))

    def step(q, X1):
        q = steps.shape[0] - 1 - q
        s, m, t0 = steps[q, 0], steps[q, 1], steps[q, 2]
        t = t0 + jnp.arange(c)
        re, rl, rr = (2 * t + 1) * s, 2 * t * s, (2 * t + 2) * s
        ve, vr = 2 * t + 1 < m, 2 * t + 2 < m
        ce = jnp.clip(re, 0, M - 1)
        xl = X1[jnp.clip(rl, 0, M - 1)]
        xr = _mask(vr, X1[jnp.clip(rr, 0, M - 1)])
        xe = B1[ce] - T[0, ce] @ xl - T[2, ce] @ xr
        return X1.at[jnp.where(ve, re, M)].set(xe, mode="drop")

    return jax.lax.fori_loop(0, steps.shape[0], step, X1)


def _cr_program(data, B, kind, c, lu):
    """X (nb, n, K) for the blocks ``data`` (see block_layout) and B (nb, n, K)."""
    if kind == "banded":
        T, B1 = _level0(data, B, c)
    else:
        T, B1 = data, B
    steps = jnp.asarray(_schedule(T.shape[1], c))
    if steps.shape[0]:
        T, B1 = _reduce_dense(T, B1, steps, c, lu)
        X1 = _back_dense(T, B1, steps, c, lu)
    else:  # one block row
        X1 = _solve(T[1], B1, lu)
    if kind == "banded":
        return _back0(data, B, X1), None
    return X1, T  # T: the donated blocks' buffer (an output of their shape lets XLA reuse it)


def _thomas_program(data, B, kind, lu):
    """The block Thomas algorithm (sequential over the block rows, a lax.scan)."""
    nb, n, K = B.shape
    if kind == "banded":
        dense, mul, xs = _tri_dense, _tri_mul, (data[:, 0], data[:, 1], data[:, 2], B)
    else:
        dense, mul, xs = (lambda a: a), jnp.matmul, (data[0], data[1], data[2], B)

    def fwd(carry, x):
        Wp, yp = carry
        L, D, U, b = x
        Wy = _solve(dense(D) - mul(L, Wp), jnp.concatenate([dense(U), b - mul(L, yp)], -1), lu)
        return (Wy[:, :n], Wy[:, n:]), Wy

    zero = jnp.zeros((n, n), B.dtype), jnp.zeros((n, K), B.dtype)
    _, Wy = jax.lax.scan(fwd, zero, xs)

    def bwd(xn, W):
        x = W[:, n:] - W[:, :n] @ xn
        return x, x

    return jax.lax.scan(bwd, zero[1], Wy, reverse=True)[1], None


# ----------------------------------------------------------------------------- driver

# cyclic reduction works in the dense blocks' buffer (donated: returned as the second output,
# which lets XLA alias it); the banded blocks are read again at the end
_PROGRAMS = {
    ("cr", "banded"): jax.jit(_cr_program, static_argnames=("kind", "c", "lu")),
    ("cr", "dense"): jax.jit(_cr_program, static_argnames=("kind", "c", "lu"), donate_argnums=(0,)),
    ("thomas", "banded"): jax.jit(_thomas_program, static_argnames=("kind", "lu")),
    ("thomas", "dense"): jax.jit(_thomas_program, static_argnames=("kind", "lu")),
}
_CACHE: dict = {}


def _executable(method, kind, data, B, c, lu):
    """The compiled program (cached per shapes, dtypes and device) and the seconds compiling
    it took."""
    key = (method, kind, data.shape, str(data.dtype), B.shape, str(B.dtype), c, lu, str(default_device()))
    if key in _CACHE:
        return _CACHE[key], 0.0
    t0 = time.perf_counter()
    kw = {"kind": kind, "lu": lu} | ({"c": c} if method == "cr" else {})
    lowered = _PROGRAMS[method, kind].lower(data, B, **kw)
    nb, n = B.shape[0], B.shape[1]
    if default_device().platform == "cpu" and nb * n**3 < 2e8:
        # small problems on the CPU: LLVM's optimizations take longer than they save (a 31^2
        # grid compiles in 0.8 s instead of 1.6 s and runs in a few milliseconds either way)
        try:
            exe = lowered.compile({"xla_backend_optimization_level": 0})
        except Exception:  # noqa: BLE001 - an XLA without the option: the default
            exe = lowered.compile()
    else:
        exe = lowered.compile()
    _CACHE[key] = exe
    return exe, time.perf_counter() - t0


def _rows(kind, nb):
    """Block rows of the dense system cyclic reduction works on."""
    return (nb + 1) // 2 if kind == "banded" else nb


def estimate_bytes(kind, nb, n, K, method="cr", chunk=8):
    """Device memory (bytes, complex128) of a solve with ``nb`` block rows of ``n`` unknowns
    and ``K`` right sides: the blocks, the dense system (cyclic reduction: the even block
    rows after level 0, in place in the blocks when they are dense; Thomas: D'^-1 [U, b] of
    every row), the chunk's workspace (18 n (n + K) per pair: 14-17 in XLA's accounting on
    the CPU), right sides and solution."""
    z = 16
    vec = nb * n * K * z
    blocks = 9 * nb * n * z if kind == "banded" else 3 * nb * n * n * z
    if method == "thomas":
        copies = 0 if kind == "banded" else blocks  # the scan's slices of dense blocks
        return blocks + copies + nb * n * (n + K) * z + 12 * n * (n + K) * z + 4 * vec
    dense = 3 * _rows(kind, nb) * n * n * z if kind == "banded" else 0
    return blocks + dense + 18 * chunk * n * (n + K) * z + 5 * vec


def _chunk(kind, nb, n, K, avail):
    """Default chunk: 1/32 of the first dense level's rows, 4 to 32 pairs, its workspace
    within 15% of the memory available."""
    budget = int(0.15 * avail / (18 * n * (n + K) * 16))
    return int(max(1, min(32, max(4, _rows(kind, nb) // 32), budget)))


def solve_block_tridiagonal(
    A,
    shape,
    B,
    *,
    method="auto",
    chunk=None,
    lu="augmented",
    refine=2,
    tol=1e-10,
    memory_limit=None,
    max_group=2,
    stencil=None,
):
    """Solve ``A X = B`` for a 2-D FDFD matrix on the JAX default device, in complex128.

    ``A``: scipy.sparse (N x N) on the grid ``shape = (nx, ny)`` (node (i, j) at i ny + j),
    block tridiagonal in x (rows coupled up to ``max_group`` x-rows apart are grouped into
    one block; farther is a ConfigError). ``B``: (N,) or (N, K), any number of right sides.
    ``method``: "auto", "cr" (block cyclic reduction) or "thomas" (see the module
    docstring); ``chunk``: pairs of rows eliminated per step of cyclic reduction (default:
    ~1/32 of the first dense level, 4 to 32, within 15% of the memory); ``lu``: how the
    diagonal blocks are factored, "augmented" (getrf of [D | right sides]) or "square"
    (getrf of D, permutation, two trsm; on a GPU cuBLAS' batched getrf when chunk >= n /
    128). ``refine``, ``tol``: refinement steps at most, taken while the relative residual
    exceeds ``tol``. ``memory_limit``: bytes available (default: the device's, queried).
    ``stencil``: A's coefficients as (nx, ny, 3, 3) (``stencil[i, j, a + 1, b + 1]`` multiplies
    the node (i + a, j + b) in the row of node (i, j): :func:`emjax.fdfd.stencil2d.tm_stencil`'s
    layout), which are the banded blocks themselves: no extraction from A (0.3 s at 400^2 on
    the H100's host). A is still used for the residual.

    Returns ``(X, info)``: X as B (NumPy), info ``residual`` (max over the right sides of
    ||A x - b|| / ||b||, NaN if a pivot block was singular: check it), ``residuals`` (after
    each solve), ``refinements``, ``seconds`` (device solves, transfers included),
    ``compile_s`` (0 when the program for these shapes was compiled before), ``extract_s``
    (the blocks from A, on the host), ``total_s``, ``levels`` (ceil(log2) of the block
    rows), ``method``, ``kind`` ("banded" / "dense" blocks), ``group``, ``block`` (unknowns
    per block), ``chunk``, ``steps`` (loop steps of the elimination), ``bytes`` (the
    estimate), ``device``."""
    if method == "auto":
        method = "thomas"
    if method not in METHODS:
        raise ConfigError(f"block solver: method must be one of auto, {', '.join(METHODS)}, got {method!r}")
    if lu not in ("augmented", "square"):
        raise ConfigError(f"block solver: lu must be augmented or square, got {lu!r}")
    nx, ny = (int(s) for s in shape)
    t0 = time.perf_counter()
    if stencil is None:
        kind, blocks, group = block_layout(A, shape, max_group)
    else:
        kind, blocks, group = "banded", stencil_blocks(stencil, shape), 1
    Bh = np.asarray(B)
    if Bh.shape[0] != nx * ny or Bh.ndim > 2:
        raise ConfigError(
            f"block solver: B must have {nx * ny} rows (one column per right side), got {Bh.shape}"
        )
    B2 = Bh.reshape(nx * ny, -1).astype(complex)
    K = B2.shape[1]
    nb, n = (blocks.shape[0], blocks.shape[-1]) if kind == "banded" else (blocks.shape[1], blocks.shape[-1])
    avail = device_memory_bytes() if memory_limit is None else int(memory_limit)
    c = _chunk(kind, nb, n, K, avail) if chunk is None else int(chunk)
    if c < 1:
        raise ConfigError(f"block solver: chunk must be a positive integer, got {chunk!r}")
    need = estimate_bytes(kind, nb, n, 1 << max(K - 1, 1).bit_length(), method, c)
    if need > 0.9 * avail:
        raise BlockMemoryError(
            f"block solver: the grid {nx} x {ny} ({K} right side(s); {nb} block rows of {n}, {kind}) "
            f"needs about {need / 1e9:.2f} GB on {default_device()} ({method}), but {avail / 1e9:.2f} GB "
            "are available (90% usable); use SuperLU (the default solver) or a smaller grid"
        )
    # right sides padded to 2, 4, 8, ...: fewer compilations, and never a single column (with
    # one, JAX's GPU tridiagonal solve takes cuSPARSE's gtsv2StridedBatch, without pivoting)
    Kp = 1 << max(K - 1, 1).bit_length()
    t1 = time.perf_counter()
    X = np.zeros_like(B2)
    R = B2
    bn = np.maximum(np.linalg.norm(B2, axis=0), 1e-300)
    compile_s = solve_s = 0.0
    history = []
    with precision_scope():
        for _ in range(refine + 1):
            Rp = np.zeros((nb * n, Kp), complex)
            Rp[: nx * ny, :K] = R
            data = jnp.asarray(blocks, jnp.complex128)
            dB = jnp.asarray(Rp.reshape(nb, n, Kp), jnp.complex128)
            exe, ct = _executable(method, kind, data, dB, c, lu)
            compile_s += ct
            ts = time.perf_counter()
            dX = np.asarray(exe(data, dB)[0]).reshape(nb * n, Kp)[: nx * ny, :K]
            solve_s += time.perf_counter() - ts
            del data
            X = X + dX
            R = B2 - A @ X
            history.append(float(np.max(np.linalg.norm(R, axis=0) / bn)))
            if not history[-1] > tol:
                break
    t2 = time.perf_counter()
    steps = _schedule(_rows(kind, nb), c)
    info = {
        "residual": history[-1],
        "residuals": history,
        "refinements": len(history) - 1,
        "seconds": solve_s,
        "compile_s": compile_s,
        "extract_s": t1 - t0,
        "total_s": t2 - t0,
        "levels": int(np.ceil(np.log2(nb))) if nb > 1 else 0,
        "method": method,
        "kind": kind,
        "group": group,
        "block": n,
        "chunk": c if method == "cr" else None,
        "steps": len(steps) if method == "cr" else nb,
        "bytes": need,
        "device": str(default_device()),
    }
    return X.reshape(Bh.shape), info
