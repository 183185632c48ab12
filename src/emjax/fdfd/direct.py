"""Sparse direct solves of the 2-D FDFD matrices on the host CPU: SuperLU (SciPy, always
there) or, when the optional package ``py-mkl-pardiso`` is installed (``pip install
emjax[pardiso]``), Intel oneMKL's PARDISO.

Why PARDISO: a supernodal LU with MKL's dense kernels and METIS / minimum-degree orderings;
on the 2-D TM matrices (complex, non-Hermitian, structurally symmetric; 160,000 unknowns at
400^2) it factors the compact stencil's nine-point matrix faster than SciPy's SuperLU on one
core here (BENCHMARKS.md, benchmarks/fdfd_vs_ceviche.py; the five-point Yee matrix about
as fast). The package's wheel links MKL statically: it brings no separate ``mkl`` wheel, so
it does not switch other packages (ceviche through pyMKL) to PARDISO as a side effect.
Looked at and not used: pypardiso (real matrices only), python-mumps (its last wheel for
Python 3.11 is built against NumPy 1 and does not import with NumPy 2), UMFPACK through
kvxopt (no faster than SuperLU here), scikit-umfpack / pymumps / petsc4py (no wheels: they
build against system libraries).

Options, as measured: SuperLU with the minimum-degree ordering on A^T + A and symmetric
pivoting (the matrices are structurally symmetric: 400^2 TM factor 1.02 s instead of 1.67 s
with SuperLU's default COLAMD); PARDISO as the complex non-symmetric type (13: the rows next
to conductors and TE's compact rows need not have a symmetric pattern, and the structurally
symmetric type 3 crashed on a matrix whose pattern is not), the ordering by stencil
(:func:`pardiso_ordering`), pivot perturbation 1e-13 (iparm[9]). Neither reports a nearly
singular pivot by itself, so the relative residual is always computed (one sparse matvec).

``backend``: "auto" (PARDISO when importable, else SuperLU; the environment variable
``EMJAX_DIRECT=superlu`` forces SuperLU), "superlu" or "pardiso".
"""

from __future__ import annotations

import math
import os
import time

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ..errors import ConfigError, ResourceError
from ..progress import status

BACKENDS = ("auto", "superlu", "pardiso")

#: PARDISO's iparm entries set here (0-based as in the C interface): pivot perturbation
#: 10^-13, scaling and matching off (residuals ~1e-14 without them); the ordering (iparm[1])
#: is chosen per matrix, :func:`pardiso_ordering`
PARDISO_IPARM = {9: 13, 10: 0, 12: 0}
_MTYPE_COMPLEX_NONSYM = 13


def pardiso_available() -> bool:
    """Whether the optional PARDISO backend (``py-mkl-pardiso``) can be imported."""
    try:
        import pymklpardiso  # noqa: F401
    except ImportError:
        return False
    return True


def resolve(backend: str = "auto") -> str:
    """The backend that ``backend`` stands for here: "superlu" or "pardiso"."""
    if backend not in BACKENDS:
        raise ConfigError(f"direct solver backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if backend == "auto":
        if os.environ.get("EMJAX_DIRECT", "").lower() == "superlu":
            return "superlu"
        return "pardiso" if pardiso_available() else "superlu"
    if backend == "pardiso" and not pardiso_available():
        raise ConfigError(
            "direct solver backend 'pardiso' needs the package py-mkl-pardiso (pip install "
            "emjax[pardiso]); use 'superlu' or 'auto'"
        )
    return backend


def preferred_format(backend: str = "auto") -> str:
    """ "csc" (SuperLU) or "csr" (PARDISO): the sparse format the backend reads without a
    conversion."""
    return "csr" if resolve(backend) == "pardiso" else "csc"


def _superlu(A, B):
    lu = spla.splu(
        sp.csc_matrix(A), permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0, options=dict(SymmetricMode=True)
    )
    t = time.perf_counter()
    return lu.solve(B), t


def pardiso_ordering(A) -> int:
    """PARDISO's fill-reducing ordering for ``A`` (iparm[1]): minimum degree (0) for the
    nine-point rows of the compact stencil, METIS nested dissection (2) for five-point
    matrices. Measured on the 400^2 TM matrices of benchmarks/fdfd_vs_ceviche.py (one core,
    analysis + factorization, best of 3 on a busy box): compact 3.3 s with minimum degree
    against 4.6 s with METIS, Yee 3.0 s with METIS against 3.9 s with minimum degree
    (SuperLU: 5.0 and 3.4 s)."""
    return 0 if A.nnz > 7 * A.shape[0] else 2


def _pardiso(A, B):
    import pymklpardiso

    A = sp.csr_matrix(A)
    if not A.has_sorted_indices:
        A = A.sorted_indices()
    iparm = PARDISO_IPARM | {1: pardiso_ordering(A)}
    solver = pymklpardiso.PardisoSolver(A.astype(complex), _MTYPE_COMPLEX_NONSYM, iparms=iparm)
    t = time.perf_counter()
    try:
        X = solver.solve(np.asfortranarray(B, dtype=complex))
    finally:
        solver.release()
    return np.ascontiguousarray(X).reshape(B.shape), t


def factor_bytes(unknowns: int, right_sides: int = 1) -> int:
    """Host bytes of the 2-D direct solve of ``unknowns`` nodes: the LU factors' fill, measured
    with SuperLU (MMD on A^T + A) on the TM benchmark grids: 82 nonzeros per unknown at 241^2,
    97 at 481^2, i.e. about 5.5 log2(N) (nested-dissection growth), 16 bytes of complex value
    and 8 of index each; twice that for the factorization's work space, plus the matrix
    (9 nonzeros per row) and the right sides."""
    n = max(int(unknowns), 2)
    fill = 5.5 * math.log2(n) * n
    return int(2 * 24 * fill + 24 * 9 * n + 16 * n * (2 * max(int(right_sides), 1) + 8))


def check_host_memory(shape, right_sides: int = 1) -> None:
    """Refuse (:class:`ResourceError`, before anything is assembled) a 2-D grid whose host
    direct solve would not fit the available RAM (the GPU block solver checks its own)."""
    from ..hostinfo import host_available_bytes

    n = int(np.prod(shape))
    need, have = factor_bytes(n, right_sides), host_available_bytes()
    if need > 0.9 * have:
        raise ResourceError(
            f"FDFD 2-D grid {shape[0]}x{shape[1]} ({n} unknowns): the direct solve needs about "
            f"{need / 2**30:.1f} GiB of host memory; {have / 2**30:.1f} GiB available "
            "(a coarser resolution or a smaller size)"
        )


def factor_solve(A, B, backend: str = "auto", announce: bool = False):
    """Solve ``A X = B`` (A sparse N x N, B (N, K)) on the host.

    Returns ``(X, residual, factor_s, solve_s, name)``: ``residual`` the largest relative
    residual ``||A x_k - b_k|| / ||b_k||`` over the right sides, ``factor_s`` the ordering
    and factorization, ``solve_s`` the triangular solves, ``name`` the solver's.
    ``announce``: say on stderr what it does if it takes over a second (emjax.progress)."""
    which = resolve(backend)
    B = np.asarray(B)
    t1 = time.perf_counter()
    doing = (
        f"fdfd: factorizing {A.shape[0]} x {A.shape[1]} ({'PARDISO' if which == 'pardiso' else 'SuperLU'})..."
    )
    with status(doing, announce):
        if which == "pardiso":
            X, t2 = _pardiso(A, B)
            name = "PARDISO (oneMKL, py-mkl-pardiso)"
        else:
            X, t2 = _superlu(A, B)
            name = "SuperLU (scipy.sparse.linalg.splu)"
    t3 = time.perf_counter()
    bn = np.maximum(np.linalg.norm(B.reshape(B.shape[0], -1), axis=0), 1e-300)
    R = (A @ X - B).reshape(B.shape[0], -1)
    residual = float(np.max(np.linalg.norm(R, axis=0) / bn))
    return X, residual, t2 - t1, t3 - t2, name
