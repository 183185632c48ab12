"""Sparse direct solves of the 2-D FDFD matrices on the host CPU: SuperLU (SciPy, always
there) or, when the optional package ``py-mkl-pardiso`` is installed (``pip install
emjax[pardiso]``), Intel oneMKL's PARDISO.

Why PARDISO: it is a supernodal left-right-looking LU whose dense kernels are MKL's BLAS 3,
where SciPy's SuperLU (4.x, sequential) spends most of its time in its own level-2 loops.
On the 2-D TM matrices (complex, non-Hermitian, structurally symmetric; 160,000 unknowns at
400^2) PARDISO factors in about half SuperLU's time on one core of the 2-core box here (see
BENCHMARKS.md and benchmarks/fdfd_vs_ceviche.py). The package's wheel links MKL statically
(no separate ``mkl`` wheel, so it does not switch other packages, e.g. ceviche through pyMKL,
to PARDISO as a side effect).

Options, as measured: SuperLU with the minimum-degree ordering on A^T + A and symmetric
pivoting (the matrices are structurally symmetric: 400^2 TM factor 1.02 s instead of 1.67 s
with SuperLU's default COLAMD); PARDISO as the complex non-symmetric type (13: the pattern of
the conductor rows and of TE's compact rows need not be symmetric, and the structurally
symmetric type 3 crashes on a matrix that is not), its minimum-degree ordering (iparm[1] =
0; METIS nested dissection, iparm[1] = 2, was not faster on these 2-D grids), pivot
perturbation 1e-13 (iparm[9]). Both report nothing wrong by themselves on a nearly singular
pivot, so the relative residual is always computed (one sparse matvec) and returned.

``backend``: "auto" (PARDISO when importable, else SuperLU; the environment variable
``EMJAX_DIRECT=superlu`` forces SuperLU), "superlu" or "pardiso".
"""

from __future__ import annotations

import os
import time

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ..errors import ConfigError

BACKENDS = ("auto", "superlu", "pardiso")

#: PARDISO's iparm entries set here (0-based as in the C interface): ordering, pivot
#: perturbation 10^-13, and scaling and matching off (not needed: residuals ~1e-14 without)
PARDISO_IPARM = {1: 0, 9: 13, 10: 0, 12: 0}
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


def _pardiso(A, B):
    import pymklpardiso

    A = sp.csr_matrix(A)
    if not A.has_sorted_indices:
        A = A.sorted_indices()
    solver = pymklpardiso.PardisoSolver(A.astype(complex), _MTYPE_COMPLEX_NONSYM, iparms=PARDISO_IPARM)
    t = time.perf_counter()
    try:
        X = solver.solve(np.asfortranarray(B, dtype=complex))
    finally:
        solver.release()
    return np.ascontiguousarray(X).reshape(B.shape), t


def factor_solve(A, B, backend: str = "auto"):
    """Solve ``A X = B`` (A sparse N x N, B (N, K)) on the host.

    Returns ``(X, residual, factor_s, solve_s, name)``: ``residual`` the largest relative
    residual ``||A x_k - b_k|| / ||b_k||`` over the right sides, ``factor_s`` the ordering
    and factorization, ``solve_s`` the triangular solves, ``name`` the solver's."""
    which = resolve(backend)
    B = np.asarray(B)
    t1 = time.perf_counter()
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
