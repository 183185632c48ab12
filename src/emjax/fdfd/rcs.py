"""Radar cross sections of an :class:`~emjax.fdfd.config.FDFDProblem`: the solve (2-D
:func:`~emjax.fdfd.tm.solve_tm` / ``solve_te``, 3-D ``solve_3d``) and the far field, with one
factorization (or one batched Krylov loop) for the bistatic wave and every monostatic
incidence.

2-D: sigma (a length, the scattering width) at phi from +x in the xy plane; the monostatic
sweep turns the incidence angle phi_inc over the given angles and reports sigma at phi_inc +
180 deg. 3-D: sigma (an area) at theta from the incident direction in the E-plane (holding
the incident E vector) and the H-plane; the monostatic sweep turns direction and E vector
together about Re(E) (an H-plane sweep) and reports sigma at theta = 180 deg.
"""

from __future__ import annotations

import inspect
import math
import time

import numpy as np

from ..errors import ConfigError, ConvergenceError
from .config import FDFDProblem
from .results import RCSResult

__all__ = ["solve_rcs"]


def _rotate(v: np.ndarray, axis: np.ndarray, angle_deg: float) -> np.ndarray:
    """Rodrigues' rotation of ``v`` (complex allowed) about the unit ``axis``."""
    a = math.radians(angle_deg)
    return v * math.cos(a) + np.cross(axis, v) * math.sin(a) + axis * np.dot(axis, v) * (1 - math.cos(a))


def monostatic_waves_3d(problem: FDFDProblem) -> list[tuple]:
    """(direction, polarization) per monostatic angle (3-D): both turned about Re(E)."""
    e = np.asarray(problem.polarization, complex)
    axis = np.real(e) / np.linalg.norm(np.real(e))
    d = np.asarray(problem.direction, float)
    out = []
    for a in problem.monostatic_angles:
        dr = np.real(_rotate(d.astype(complex), axis, a))
        er = _rotate(e, axis, a)
        out.append((tuple(dr), tuple(complex(v) if abs(v.imag) > 0 else float(v.real) for v in er)))
    return out


def _stats(results, seconds: float) -> dict:
    """The solve's statistics over all right sides: worst residual, most iterations.

    ``iterations`` is 0 for the direct solver (no Krylov iterations); ``residual`` the
    relative residual ``||b - A x|| / ||b||`` where the solver reports it (None for the 2-D
    direct solve)."""
    st = [dict(r.stats) for r in results]
    first = st[0]
    res = [s.get("residual") for s in st if s.get("residual") is not None]
    out = {
        "unknowns": int(first["unknowns"]),
        "iterations": int(max(int(s.get("iterations", 0)) for s in st)),
        "converged": bool(all(s.get("converged", True) for s in st)),
        "residual": float(max(res)) if res else None,
        "solver": str(first.get("solver", "direct")),
        "seconds": seconds,
    }
    for key in ("assemble_s", "setup_s", "preconditioner_s", "factor_s", "solve_s", "nnz", "grid", "device"):
        if key in first:
            v = first[key]
            out[key] = v if isinstance(v, (int, float, str, list)) else str(v)
    messages = {s.get("message") for s in st if s.get("message") and not s.get("converged", True)}
    if messages:
        out["message"] = "; ".join(sorted(messages))
    return out


def _finite(results) -> None:
    for i, r in enumerate(results):
        field = r.Ez if hasattr(r, "Ez") else r.E
        if not np.all(np.isfinite(field)):
            raise ConvergenceError(f"FDFD: the field of incidence {i} holds NaN/Inf (a singular system?)")


def _solve_2d(problem: FDFDProblem, progress):
    from .operators import SCPML
    from .tm import PlaneWave2D, solve_te, solve_tm

    fn = solve_tm if problem.polarization == "TM" else solve_te
    kwargs = dict(
        scene=problem.scene,
        pml=SCPML(problem.pml_cells),
        center=problem.center,
        averaging=problem.averaging,
        stencil=problem.stencil,
    )
    params = inspect.signature(fn).parameters
    if problem.solver is not None and problem.solver_type != "direct":
        raise ConfigError(
            f"[solver].type = {problem.solver_type!r}: the 2-D solvers are direct only (SuperLU on the "
            'host, the block Thomas algorithm on a GPU); use type = "direct" (or dims = 3)'
        )
    if "progress" in params and progress is not None:
        kwargs["progress"] = progress
    angles = [problem.incidence_angle]
    if problem.monostatic_angles is not None:
        angles += [float(a) for a in problem.monostatic_angles]
    waves = [PlaneWave2D(a) for a in angles]
    return fn(problem.size, problem.cells_per_length, problem.frequency, waves, **kwargs)


def _solve_3d(problem: FDFDProblem, progress):
    from .maxwell3d import PlaneWave3D, solve_3d
    from .operators import SCPML

    waves = [PlaneWave3D(problem.direction, problem.polarization)]
    if problem.monostatic_angles is not None:
        waves += [PlaneWave3D(d, e) for d, e in monostatic_waves_3d(problem)]
    return solve_3d(
        problem.size,
        problem.cells_per_length,
        problem.frequency,
        waves,
        scene=problem.scene,
        pml=SCPML(problem.pml_cells),
        center=problem.center,
        averaging=problem.averaging,
        solver=problem.solver,
        precision=problem.precision,
        progress=progress,
    )


def solve_rcs(problem: FDFDProblem, progress=True) -> RCSResult:
    """Solve ``problem`` (one factorization or one batched Krylov loop for the bistatic
    incidence and every monostatic one) and evaluate its radar cross sections.

    ``progress``: as :func:`~emjax.fdfd.solve_3d`'s (True: a bar, and the 2-D direct
    solve says what it does; False: nothing; a callable: ``progress(iterations, relative
    residual)`` between Krylov chunks of a 3-D iterative solve). ``stats["seconds"]``: wall
    time of the whole solve, grid set-up, assembly and JAX compilation included (the
    far-field transform excluded)."""
    if not isinstance(problem, FDFDProblem):
        raise ConfigError(f"problem must be an emjax.fdfd.FDFDProblem, got {problem!r}")
    t0 = time.perf_counter()
    results = _solve_2d(problem, progress) if problem.dims == 2 else _solve_3d(problem, progress)
    seconds = time.perf_counter() - t0
    _finite(results)
    stats = _stats(results, seconds)
    first, rest = results[0], results[1:]
    if problem.dims == 2:
        from .farfield import scattering_width

        rcs = {"rcs": scattering_width(first, problem.rcs_angles)}
        inc = [] if problem.monostatic_angles is None else problem.monostatic_angles
        mono = [float(scattering_width(r, [a + 180.0])[0]) for r, a in zip(rest, inc)]
    else:
        from .farfield3d import rcs_3d

        rcs = {
            "rcs_E": np.asarray(rcs_3d(first, problem.rcs_angles, plane="E")),
            "rcs_H": np.asarray(rcs_3d(first, problem.rcs_angles, plane="H")),
        }
        mono = [float(np.asarray(rcs_3d(r, [180.0], plane="E"))[0]) for r in rest]
    return RCSResult(
        problem=problem,
        angles_deg=np.asarray(problem.rcs_angles, float),
        monostatic_rcs=np.asarray(mono) if problem.monostatic_angles is not None else None,
        field=first,
        stats=stats,
        rcs_seconds=time.perf_counter() - t0 - seconds,
        **rcs,
    )
