"""The 2-D FDFD operators as 3 x 3 stencils: the 1-D second differences and compact averages,
the TM matrix's coefficients (nx, ny, 3, 3) built with NumPy, CSR / CSC straight from them
and back, the scattered-field right sides, and the row helpers the solves share (the
"compact" and "yee" stencils are described in :mod:`emjax.fdfd.tm`)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..errors import ConfigError

STENCILS = ("compact", "yee")
_W = 1.0 / 12.0  # the compact stencil's neighbour weight (module docstring)


def _second_difference_1d(n: int, dx: float, omega: float, pml) -> sp.csr_matrix:
    """``(1/s) D_b (1/s) D_f`` along one axis of ``n`` nodes (the 1-D factor of D_xb D_xf)."""
    from .operators import _diff_1d

    inv_node = sp.diags(1 / pml.stretch(n, dx, omega, half=False))
    inv_half = sp.diags(1 / pml.stretch(n, dx, omega, half=True))
    return (inv_node @ _diff_1d(n, dx, False) @ inv_half @ _diff_1d(n, dx, True)).tocsr()


def _average_1d(n: int) -> sp.csr_matrix:
    return sp.diags(
        [np.full(n - 1, _W), np.full(n, 1 - 2 * _W), np.full(n - 1, _W)], [-1, 0, 1], format="csr"
    )


def _compact_parts(shape) -> tuple:
    """``(Ax, Ay, M)``: the averages over neighbouring nodes along x and along y (weights 1/12,
    5/6, 1/12) and the mass spreading ``Ax + Ay - I`` (2/3 at the node, 1/12 at each axis
    neighbour) of the compact stencil."""
    nx, ny = shape
    Ax = sp.kron(_average_1d(nx), sp.identity(ny), format="csr")
    Ay = sp.kron(sp.identity(nx), _average_1d(ny), format="csr")
    return Ax, Ay, (Ax + Ay - sp.identity(nx * ny)).tocsr()


# the 3 x 3 footprint of a node, in the column order of its matrix row (x offset major)
OFFSETS = tuple((a, b) for a in (-1, 0, 1) for b in (-1, 0, 1))


def _bands(T: sp.spmatrix) -> np.ndarray:
    """(3, n): the sub-, main and super-diagonal of a tridiagonal (n, n) matrix by row (row i:
    ``T[i, i - 1], T[i, i], T[i, i + 1]``; zero where the column lies outside)."""
    n = T.shape[0]
    out = np.zeros((3, n), complex)
    out[0, 1:] = T.diagonal(-1)
    out[1] = T.diagonal(0)
    out[2, :-1] = T.diagonal(1)
    return out


def _average_bands(n: int) -> np.ndarray:
    """The bands (3, n) of :func:`_average_1d`."""
    out = np.zeros((3, n))
    out[0, 1:] = out[2, :-1] = _W
    out[1] = 1 - 2 * _W
    return out


def _mass_center() -> float:
    """The compact mass spreading's weight at the node, evaluated as ``Ax + Ay - I`` is."""
    return (1 - 2 * _W) + (1 - 2 * _W) - 1.0


def tm_stencil(eps_rows, shape, dx, omega, pml, stencil, yee_rows=None) -> np.ndarray:
    """The TM matrix ``lap + mass(eps_rows)`` of :func:`solve_tm` (no conductor rows) as
    stencil coefficients ``C`` (nx, ny, 3, 3): ``C[i, j, a + 1, b + 1]`` multiplies the node
    (i + a, j + b) in the row of node (i, j) (zero where that node lies outside the grid);
    ``C.reshape(nx * ny, 9)`` holds the matrix rows' entries in their column order.

    Built from the 1-D second differences and averages with NumPy: the same floating-point
    operations, in the same order, as the sparse Kronecker-product assembly it replaces
    (tests/fdfd/test_assembly.py checks the two equal bit for bit). ``yee_rows`` (nx, ny):
    the rows that keep the five-point operator with the compact stencil."""
    nx, ny = shape
    lx, ly = (_bands(_second_difference_1d(n, dx, omega, pml)) for n in shape)
    mixed = stencil == "compact" and yee_rows is not None and bool(np.any(yee_rows))
    C = np.zeros((nx, ny, 3, 3), complex)
    if stencil == "compact":
        tx, ty = _average_bands(nx), _average_bands(ny)
        for a in range(3):
            for b in range(3):
                C[:, :, a, b] = lx[a][:, None] * ty[b][None, :] + tx[a][:, None] * ly[b][None, :]
    if stencil == "yee" or mixed:  # the five-point laplacian (all rows, or the Yee rows)
        five = np.zeros((nx, ny, 3, 3), complex)
        five[:, :, 0, 1] = lx[0][:, None]
        five[:, :, 2, 1] = lx[2][:, None]
        five[:, :, 1, 0] = ly[0][None, :]
        five[:, :, 1, 2] = ly[2][None, :]
        five[:, :, 1, 1] = lx[1][:, None] + ly[1][None, :]
        C = np.where(yee_rows[:, :, None, None], five, C) if mixed else five
    return _add_mass(C, eps_rows, omega, stencil, yee_rows if mixed else None)


def _add_mass(C, e, omega, stencil, yee_rows=None) -> np.ndarray:
    """``C += omega^2 mass(e)`` in place (the sparse ``(M E + E M) / 2`` of the compact
    stencil, ``E`` alone with "yee" and in the ``yee_rows``), the sums in the sparse
    assembly's order; returns C."""
    E = omega**2 * e
    if stencil == "yee":
        C[:, :, 1, 1] += E
        return C
    Mc = _mass_center()
    ctr = (Mc * E + E * Mc) / 2
    if yee_rows is not None:
        ctr = np.where(yee_rows, E, ctr)
    nx, ny = E.shape
    for a, b in ((-1, 0), (1, 0), (0, -1), (0, 1)):  # the four axis neighbours in the grid
        (xd, xs), (yd, ys) = _shift(a, nx), _shift(b, ny)
        v = (_W * E[xs, ys] + E[xd, yd] * _W) / 2
        if yee_rows is not None:
            v = np.where(yee_rows[xd, yd], 0.0, v)
        C[xd, yd, a + 1, b + 1] += v
    C[:, :, 1, 1] += ctr
    return C


def stencil_csr(C: np.ndarray) -> sp.csr_matrix:
    """The CSR matrix (N x N, N = nx ny, node (i, j) at i ny + j) of stencil coefficients
    ``C`` (nx, ny, 3, 3) (see :func:`tm_stencil`): canonical (sorted columns, no duplicates,
    no stored zeros), built directly from the arrays."""
    nx, ny = C.shape[:2]
    N = nx * ny
    # entries reaching past the grid's edge must be zero (they would wrap into another row)
    if np.any(C[0, :, 0]) or np.any(C[-1, :, 2]) or np.any(C[:, 0, :, 0]) or np.any(C[:, -1, :, 2]):
        raise ValueError("stencil coefficient beyond the grid's edge")
    V = C.reshape(N, 9)  # each row's entries in column order
    mask = V != 0
    idx = np.int32 if N * 9 < 2**31 else np.int64
    step = np.array([a * ny + b for a, b in OFFSETS], idx)
    cols = (np.arange(N, dtype=idx)[:, None] + step[None, :])[mask]
    indptr = np.zeros(N + 1, idx)
    np.cumsum(mask.sum(1), out=indptr[1:])
    A = sp.csr_matrix((V[mask], cols, indptr), shape=(N, N))
    A.has_sorted_indices = True
    A.has_canonical_format = True
    return A


def _shift(a: int, n: int) -> tuple:
    """(destination, source) slices along an axis of n nodes: node i reads node i + a."""
    if a == 1:
        return slice(0, n - 1), slice(1, n)
    if a == -1:
        return slice(1, n), slice(0, n - 1)
    return slice(0, n), slice(0, n)


def transpose_stencil(C: np.ndarray) -> np.ndarray:
    """The stencil of the transposed matrix: ``A^T``'s row of node (i, j) holds ``A[(i + a,
    j + b), (i, j)] = C[i + a, j + b, 1 - a, 1 - b]``."""
    nx, ny = C.shape[:2]
    T = np.zeros_like(C)
    for a, b in OFFSETS:
        (xd, xs), (yd, ys) = _shift(a, nx), _shift(b, ny)
        T[xd, yd, a + 1, b + 1] = C[xs, ys, 1 - a, 1 - b]
    return T


def apply_stencil(C: np.ndarray, u: np.ndarray) -> np.ndarray:
    """``A u`` for the stencil ``C`` (nx, ny, 3, 3) and node values ``u`` (nx, ny), summed in
    the matrix rows' column order."""
    nx, ny = u.shape
    out = np.zeros(u.shape, np.result_type(C, u))
    for a, b in OFFSETS:
        (xd, xs), (yd, ys) = _shift(a, nx), _shift(b, ny)
        out[xd, yd] += C[xd, yd, a + 1, b + 1] * u[xs, ys]
    return out


def _scene_rhs(eps_rows, waves, omega, stencil, yee_rows) -> np.ndarray:
    """The scattered-field right sides ``-(mass(eps - 1)) E_inc`` (N, K), evaluated on the
    box around the nodes where eps differs from 1 (the rest is zero)."""
    shape = eps_rows.shape
    b = np.zeros((shape[0] * shape[1], len(waves)), complex)
    d = eps_rows - 1.0
    hit = np.nonzero(d)
    if not len(hit[0]):
        return b
    box = tuple(slice(max(h.min() - 2, 0), min(h.max() + 3, n)) for h, n in zip(hit, shape))
    sub = None if yee_rows is None else yee_rows[box]
    K = _add_mass(np.zeros(d[box].shape + (3, 3), complex), d[box], omega, stencil, sub)
    idx = np.arange(b.shape[0]).reshape(shape)[box].ravel()
    for k, e in enumerate(waves):
        b[idx, k] = -apply_stencil(K, e[box]).ravel()
    return b


def stencil_csc(C: np.ndarray) -> sp.csc_matrix:
    """The matrix of :func:`stencil_csr` in CSC (SuperLU's format), built as the CSR of its
    transpose (no conversion): the same arrays as ``stencil_csr(C).tocsc()``."""
    return stencil_csr(transpose_stencil(C)).T


def sparse_stencil(S: sp.spmatrix, shape) -> np.ndarray:
    """The inverse of :func:`stencil_csr` for a sparse matrix whose rows reach no farther than
    the 3 x 3 footprint (a ValueError otherwise); duplicates summed."""
    nx, ny = shape
    S = sp.csr_matrix(S)
    S.sum_duplicates()
    coo = S.tocoo()
    i, j = np.divmod(coo.row.astype(np.int64), ny)
    ci, cj = np.divmod(coo.col.astype(np.int64), ny)
    a, b = ci - i, cj - j
    if np.any(np.abs(a) > 1) or np.any(np.abs(b) > 1):
        raise ValueError("the matrix reaches beyond the 3 x 3 footprint of its nodes")
    C = np.zeros((nx, ny, 3, 3), complex)
    C[i, j, a + 1, b + 1] = coo.data
    return C


def _spread_point(b: np.ndarray, i: int, j: int) -> np.ndarray:
    """The compact mass spreading ``M b`` of a right side ``b`` (nx, ny) that is nonzero at
    the node (i, j) only: its weight at the node, 1/12 at the axis neighbours in the grid."""
    v, out = b[i, j], np.zeros_like(b)
    out[i, j] = _mass_center() * v
    for a, c in ((i - 1, j), (i, j - 1), (i, j + 1), (i + 1, j)):
        if 0 <= a < b.shape[0] and 0 <= c < b.shape[1]:
            out[a, c] = _W * v
    return out


def _near(mask: np.ndarray) -> np.ndarray:
    """The nodes whose 3 x 3 footprint meets ``mask`` (``mask`` included)."""
    p = np.pad(mask, 1)
    nx, ny = mask.shape
    return np.any([p[a : a + nx, b : b + ny] for a in range(3) for b in range(3)], axis=0)


def _rows(keep: np.ndarray, A_keep, A_other):
    """The rows of ``A_keep`` where ``keep`` (flattened), of ``A_other`` elsewhere."""
    k = keep.ravel().astype(float)
    return (sp.diags(k) @ A_keep + sp.diags(1 - k) @ A_other).tocsr()


def _check_stencil(stencil):
    if stencil not in STENCILS:
        raise ConfigError(f"stencil must be one of {', '.join(STENCILS)}, got {stencil!r}")
