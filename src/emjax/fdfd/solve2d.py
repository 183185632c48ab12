"""The solve of an assembled 2-D FDFD matrix: the solver named or picked (a direct solver on
the host, emjax.fdfd.direct, or the block Thomas algorithm on JAX's device,
emjax.fdfd.blocksolve), the memory check before assembly, and the result records with the
solve's statistics."""

from __future__ import annotations

import time

import numpy as np

from ..errors import ConfigError, ConvergenceError
from .specs2d import TMResult

SOLVERS = ("auto", "superlu", "pardiso", "device")


def _accelerator_plugin_installed() -> bool:
    """Whether a JAX accelerator plugin (CUDA, ROCm: the ``jax_plugins`` namespace or entry
    points) or libtpu is installed: without one, JAX's default device is the CPU."""
    import importlib.metadata
    import importlib.util
    import pkgutil

    spec = importlib.util.find_spec("jax_plugins")
    if spec is not None and any(pkgutil.iter_modules(spec.submodule_search_locations or [])):
        return True
    if importlib.util.find_spec("libtpu") is not None:
        return True
    return bool(importlib.metadata.entry_points(group="jax_plugins"))


def jax_default_platform() -> str:
    """JAX's default platform. "cpu" without starting JAX's runtime when JAX_PLATFORMS names
    the CPU first or no accelerator plugin is installed: creating the CPU client took 0.3-1.4
    s of a 400^2 solve here, for nothing when the host solver is used."""
    import os

    platforms = os.environ.get("JAX_PLATFORMS", "").strip()
    if platforms.split(",")[0].strip() == "cpu" or (not platforms and not _accelerator_plugin_installed()):
        return "cpu"
    from ..backend import default_device

    return default_device().platform


def _check_solver(solver):
    if solver not in SOLVERS:
        raise ConfigError(f"solver must be one of {', '.join(SOLVERS)} (2-D), got {solver!r}")
    if solver == "pardiso":
        from .direct import resolve

        resolve("pardiso")  # a ConfigError when the package is missing


def _host_format(solver) -> str:
    """The sparse format to assemble in: the host direct solver's own ("csc" for SuperLU,
    "csr" for PARDISO; the device solver only multiplies with it)."""
    from .direct import preferred_format

    if solver == "device":
        return "csr"
    return preferred_format(solver if solver in ("superlu", "pardiso") else "auto")


def _solve(
    A, b, g, t0, at, source, incident, field_eps, solver="auto", stencil=None, progress=True, fold=None
):
    """Solve ``A`` for the right sides ``b`` (N, K): a direct solver on the host
    (emjax.fdfd.direct: SuperLU, or PARDISO when installed), or the block
    Thomas algorithm on JAX's device (blocksolve.py; ``"auto"`` takes it when the default
    device is a GPU and the blocks fit its memory); the result(s) with the statistics.
    ``stencil``: A's coefficients (nx, ny, 3, 3) (:func:`tm_stencil`), handed to the device
    solver as its blocks (None: it reads them out of A). ``fold``: mirror planes
    (emjax.fdfd.symmetry.Fold): the folded system is solved, the field spread back."""
    from .direct import factor_solve

    t_assembled = time.perf_counter()
    B = b.reshape(g.shape[0] * g.shape[1], -1)
    shape = g.shape
    if fold is not None:  # the half (quarter) system; its field spread to the whole grid below
        A, B, shape, stencil = fold.matrix(A), fold.S @ B, fold.shape, None
    use_device = solver == "device" or (solver == "auto" and jax_default_platform() != "cpu")
    note = None
    if use_device:
        from .blocksolve import BlockMemoryError, solve_block_tridiagonal  # imports JAX (~1 s)

        try:
            sol, info = solve_block_tridiagonal(A, shape, B, method="thomas", stencil=stencil)
            residual, factor_s, solve_s = float(info["residual"]), info["extract_s"], info["seconds"]
            name = f"block Thomas on {info['device']} (emjax.fdfd.blocksolve)"
        except BlockMemoryError as exc:
            if solver == "device":
                raise
            use_device, note = False, f"device solver skipped: {exc}"
    if not use_device:
        backend = solver if solver in ("superlu", "pardiso") else "auto"
        sol, residual, factor_s, solve_s, name = factor_solve(A, B, backend, announce=bool(progress))
    if not residual < 1e-6:
        raise ConvergenceError(
            f"FDFD: the direct solve is inaccurate (relative residual {residual:.2e}); "
            "refine the grid or report this case"
        )
    stats = {
        "residual": residual,
        "unknowns": int(A.shape[0]),
        "nnz": int(A.nnz),
        "assemble_s": t_assembled - t0,
        "factor_s": factor_s,  # the device solver: the host-side block extraction
        "solve_s": solve_s,
        "solver": name,
        "source_node": at,  # a line source's position snapped to the node it drives
    }
    if note:
        stats["note"] = note
    if fold is not None:
        stats.update(
            symmetry=list(fold.symmetry), unknowns=g.shape[0] * g.shape[1], unknowns_solved=int(A.shape[0])
        )
        sol = fold.E @ np.asarray(sol).reshape(A.shape[0], -1)
    args = (g.x, g.y, g.frequency)
    if incident is None:
        return TMResult(*args, sol[:, 0].reshape(g.shape), None, field_eps, stats, g.pml.thickness)
    out = [
        TMResult(*args, s_.reshape(g.shape) + inc, s_.reshape(g.shape), field_eps, stats, g.pml.thickness)
        for s_, inc in zip(sol.T, incident)
    ]
    return out if isinstance(source, (list, tuple)) else out[0]


def _check_memory(shape, solver, source) -> None:
    """A grid too big for the host's direct solve refused before anything is assembled."""
    if solver == "device" or (solver == "auto" and jax_default_platform() != "cpu"):
        return  # the device solver checks its own memory (and falls back only when it fits)
    from .direct import check_host_memory

    check_host_memory(shape, len(source) if isinstance(source, (list, tuple)) else 1)
