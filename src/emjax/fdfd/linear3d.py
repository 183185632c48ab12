"""3-D FDFD's linear solves (:mod:`.maxwell3d` and the adjoint, :mod:`.adjoint3d`): the
direct one (SuperLU on the assembled matrix) and the iterative one (Krylov on the
matrix-free operator, one device or slabs over several)."""

from __future__ import annotations

import time

import jax.numpy as jnp
import numpy as np

from .. import progress as progress_bars
from ..errors import ConfigError
from .operator3d import Scaled, probe_diagonal, probe_matrix
from .solvers import Iterative


def _direct(op, rhs, dtype, announce=False, fd=None):
    import scipy.sparse.linalg as spla

    t0 = time.perf_counter()
    A = probe_matrix(op, dtype).tocsc()
    if fd is not None:  # mirror planes: the upper half's rows and unknowns
        A = fd.matrix(A)
    t1 = time.perf_counter()
    # minimum degree on A^T + A with symmetric pivoting: 8x faster than SuperLU's default
    # COLAMD on these matrices (20k unknowns: 19 s instead of 153 s on 2 cores)
    with progress_bars.status(f"fdfd: factorizing {A.shape[0]} x {A.shape[0]} (SuperLU)...", announce):
        lu = spla.splu(A, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0, options=dict(SymmetricMode=True))
    t2 = time.perf_counter()
    B = np.stack([np.asarray(r).ravel() for r in rhs], 1)
    B = B if fd is None else fd.S @ B
    X = lu.solve(B)
    t3 = time.perf_counter()
    res = [
        float(np.linalg.norm(A @ X[:, i] - B[:, i]) / max(np.linalg.norm(B[:, i]), 1e-300))
        for i in range(len(rhs))
    ]
    per = [dict(converged=True, iterations=0, residual=r, message="direct solve") for r in res]
    stats = dict(
        solver="direct (SuperLU)",
        assemble_s=t1 - t0,
        factor_s=t2 - t1,
        solve_s=t3 - t2,
        nnz=int(A.nnz),
        per_wave=per,
    )
    if fd is not None:
        X = fd.E @ X
        stats.update(symmetry=list(fd.symmetry), unknowns_solved=int(A.shape[0]))
    return [X[:, i].reshape(rhs[0].shape) for i in range(len(rhs))], stats


def _iterative(op, rhs, solver: Iterative, dtype, progress, layout=None):
    from ..krylov import solve, solve_batched

    t0 = time.perf_counter()
    slabs = None
    multigrid = solver.preconditioner == "multigrid"
    if layout is not None and multigrid:
        raise ConfigError(
            'layout: the multigrid preconditioner runs on one device; use preconditioner="jacobi"'
        )
    if layout is not None:  # the grid in slabs along x (padded planes: fixed zeros)
        from .distributed import XSlabs

        slabs = XSlabs(op.eps.shape[1:], layout)
        op = slabs.operator(op)
        rhs = [slabs.put(jnp.asarray(r, dtype)) for r in rhs]
    if multigrid:  # shifted-Laplacian V-cycle B ~ A^-1 (emjax.fdfd.multigrid)
        from ..krylov.preconditioned import Preconditioned, finish
        from .multigrid import build_vcycle

        A = Preconditioned(op, build_vcycle(op, solver.multigrid))
        d = None
    elif solver.jacobi:
        diag = probe_diagonal(op)
        d = 1.0 / jnp.sqrt(jnp.where(diag == 0, 1, diag))
    else:
        d = jnp.ones(op.eps.shape, dtype)
    if d is not None:
        A = Scaled(op, d)
    t1 = time.perf_counter()
    B = [jnp.asarray(r, dtype) if d is None else d * jnp.asarray(r, dtype) for r in rhs]
    if len(B) == 1:
        results = [solve(A, B[0], solver.method, progress=progress)]
    else:
        results = list(solve_batched(A, jnp.stack(B), solver.method, progress=progress))
    xs = [finish(A, solver.method, r.x) if d is None else d * r.x for r in results]
    if slabs is not None:
        xs = [slabs.crop(x) for x in xs]
    per = [
        dict(
            converged=bool(r.converged),
            iterations=int(r.iterations),
            residual=float(r.residual),
            message=r.message,
            residual_history=np.asarray(r.residual_history),
        )
        for r in results
    ]
    names = {"jacobi": "Jacobi", "multigrid": "shifted-Laplacian multigrid", None: "no preconditioner"}
    stats = dict(
        solver=f"iterative ({solver.method.name}, {names[solver.preconditioner]})",
        preconditioner_s=t1 - t0,
        solve_s=time.perf_counter() - t1,
        per_wave=per,
    )
    return xs, stats
