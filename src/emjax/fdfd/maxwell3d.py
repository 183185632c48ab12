"""3-D FDFD: plane-wave scattering on the Yee grid, scattered-field formulation.

Natural units (eps0 = mu0 = c = 1, fields ~ exp(-i omega t), ``frequency`` = 1 / vacuum
wavelength, lengths in the user's unit). The region ``size`` (centred at ``center``) is
surrounded by an SC-PML of ``pml.thickness`` cells; E_c sits at ``origin + (node + e_c/2) dx``.

The incident wave is the grid's own plane wave: wavenumber ``k~`` from the Yee dispersion
relation ``sum_a (2/dx sin(k~ d_a dx / 2))^2 = omega^2`` along the direction ``d`` and the
polarization made transverse to the discrete wave vector (an O(dx^2) change), so that it
solves the vacuum equations exactly and an empty scene scatters nothing. With ``E = E_s +
E_inc``, the scattered field solves ``A E_s = omega^2 (eps - 1) E_inc`` off the PEC and
``E_s = -E_inc`` on PEC edges; the right side lives on the scatterer only, which must stay
out of the PML.

Materials (:mod:`emjax.scene`): numbers (complex eps), :mod:`emjax.materials` materials
evaluated at the frequency, :data:`emjax.scene.PEC` (edges whose node lies inside: staircased,
first order). Subpixel averaging puts Kottke's diagonal ``n_c^2 <1/eps> + (1 - n_c^2) /
<eps>`` (inverted) at dielectric interface edges; the off-diagonal coupling is left out.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from .. import progress as progress_bars
from ..backend import precision, precision_scope
from ..errors import ConfigError, ResourceError, require_finite, require_positive
from ..layout import as_layout
from .operator3d import Scaled, build_operator, probe_diagonal, probe_matrix
from .operators import SCPML
from .pec3d import pec_fractions
from .permittivity2d import traced_scene
from .scene_traced import solve_3d_traced
from .solvers import Direct, Iterative, check_solver

__all__ = ["PlaneWave3D", "PointDipole3D", "Result3D", "field_at", "solve_3d", "permittivity_3d"]


@dataclass(frozen=True)
class PlaneWave3D:
    """A unit plane wave ``E = polarization exp(i k direction . r)`` (vectors normalized;
    the polarization must be orthogonal to the direction)."""

    direction: tuple = (1.0, 0.0, 0.0)
    polarization: tuple = (0.0, 0.0, 1.0)

    def __post_init__(self):
        d = _unit("PlaneWave3D.direction", self.direction)
        p = np.asarray(self.polarization, complex)
        if p.shape != (3,) or not np.all(np.isfinite(p)) or np.linalg.norm(p) == 0:
            raise ConfigError(
                f"PlaneWave3D.polarization must be a non-zero 3-vector, got {self.polarization!r}"
            )
        p = p / np.linalg.norm(p)
        if abs(np.dot(d, p)) > 1e-6:
            raise ConfigError(
                f"PlaneWave3D.polarization {self.polarization!r} must be orthogonal to the direction "
                f"{self.direction!r} (|d.e| = {abs(np.dot(d, p)):.2g})"
            )
        object.__setattr__(self, "direction", tuple(float(v) for v in d))
        object.__setattr__(self, "polarization", tuple(complex(v) if v.imag else float(v.real) for v in p))


@dataclass(frozen=True)
class PointDipole3D:
    """An electric point dipole of moment ``moment`` (3-vector, complex allowed) at
    ``position``: the current ``J = -i omega p delta(r - r0)``, each component spread over
    the eight E_c nodes around it (trilinear weights). The result's ``E`` and ``Es`` are the
    total field (no incident wave); in vacuum ``E = k^2 / (4 pi) [(rhat x p) x rhat / r +
    (3 rhat (rhat.p) - p)(1/(k^2 r^3) - i/(k r^2))] exp(ikr)``."""

    position: tuple = (0.0, 0.0, 0.0)
    moment: tuple = (0.0, 0.0, 1.0)

    def __post_init__(self):
        try:
            pos = tuple(float(v) for v in self.position)
            p = np.asarray(self.moment, complex)
        except (TypeError, ValueError):
            raise ConfigError(f"PointDipole3D: position and moment must be 3-vectors, got {self!r}") from None
        if len(pos) != 3 or p.shape != (3,) or not np.all(np.isfinite(p)) or not np.all(np.isfinite(pos)):
            raise ConfigError(f"PointDipole3D: position and moment must be finite 3-vectors, got {self!r}")
        if not np.any(p):
            raise ConfigError("PointDipole3D.moment must be non-zero")
        object.__setattr__(self, "position", pos)


def _unit(name, v) -> np.ndarray:
    try:
        a = np.asarray(v, float)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be three numbers, got {v!r}") from None
    if a.shape != (3,) or not np.all(np.isfinite(a)) or np.linalg.norm(a) == 0:
        raise ConfigError(f"{name} must be a non-zero finite 3-vector, got {v!r}")
    return a / np.linalg.norm(a)


@dataclass(frozen=True, eq=False)
class Result3D:
    """One plane wave's solution: ``E`` total and ``Es`` scattered fields (3, nx, ny, nz) at
    the Yee E nodes (E_c at ``(x, y, z)`` shifted by dx/2 along c), ``x, y, z`` the node
    coordinates, ``eps`` (3, nx, ny, nz) at the E nodes (inf on PEC edges), ``wave`` the
    incident :class:`PlaneWave3D`, ``stats`` the solve's statistics."""

    x: np.ndarray
    y: np.ndarray
    z: np.ndarray
    frequency: float
    wave: PlaneWave3D
    E: np.ndarray
    Es: np.ndarray
    eps: np.ndarray
    pml_cells: int
    stats: dict = field(default_factory=dict)

    @property
    def dx(self) -> float:
        return float(self.x[1] - self.x[0])

    def __repr__(self) -> str:
        s = self.stats
        return (
            f"Result3D(grid {len(self.x)} x {len(self.y)} x {len(self.z)}, frequency {self.frequency:g}, "
            f"{s.get('solver')}, converged {s.get('converged')}, iterations {s.get('iterations')}, "
            f"residual {s.get('residual', 0):.2e}, {s.get('seconds', 0):.2f} s)"
        )


@dataclass(frozen=True)
class _Grid3:
    pml: SCPML
    frequency: float
    omega: float
    dx: float
    shape: tuple
    origin: tuple
    axes: tuple


def _grid3(size, resolution, frequency, pml, center) -> _Grid3:
    pml = SCPML() if pml is None else pml
    if not isinstance(pml, SCPML):
        raise ConfigError(f"pml must be an emjax.fdfd.SCPML or UPML, got {pml!r}")
    res = require_positive("resolution", resolution)
    f = require_positive("frequency", frequency)
    try:
        size = tuple(float(v) for v in size)
        center = tuple(float(v) for v in center)
    except (TypeError, ValueError):
        raise ConfigError(f"size and center must be three numbers, got {size!r}, {center!r}") from None
    if len(size) != 3 or len(center) != 3:
        raise ConfigError(f"size and center must be three numbers each, got {size!r}, {center!r}")
    for k, v in enumerate(size):
        require_positive(f"size[{k}]", v)
    for k, v in enumerate(center):
        require_finite(f"center[{k}]", v)
    if res / f < 5:
        raise ConfigError(
            f"resolution {res:g} per unit length is {res / f:.2f} cells per wavelength; at least 5 are needed"
        )
    dx = 1.0 / res
    L = pml.thickness
    shape = tuple(int(round(s * res)) + 1 + 2 * L for s in size)
    origin = tuple(c - (n - 1) / 2 * dx for c, n in zip(center, shape))
    axes = tuple(o + np.arange(n) * dx for o, n in zip(origin, shape))
    return _Grid3(pml, f, 2 * math.pi * f, dx, shape, origin, axes)


def _material_eps(material, omega: float, component: int = 0):
    from ..materials import DiagonalAnisotropic
    from ..scene import PEC

    if material is PEC:
        return np.inf
    if isinstance(material, DiagonalAnisotropic):
        return complex(material.components(omega)[component])
    if hasattr(material, "permittivity"):
        return complex(material.permittivity(omega))
    return complex(material)


def permittivity_3d(scene, g: _Grid3, averaging: str, cache: dict | None = None) -> np.ndarray:
    """Diagonal eps (3, nx, ny, nz) at the E nodes of the scene's media (PEC objects left out).
    ``cache``: a dict that keeps the rasterization (geometry only) between frequencies."""
    from ..scene import PEC, Scene, rasterize

    if scene is None:
        return np.ones((3, *g.shape), complex)
    if not isinstance(scene, Scene):
        raise ConfigError(f"scene must be an emjax.scene.Scene, got {scene!r}")
    if _material_eps(scene.background, g.omega) != 1:
        raise ConfigError(f"FDFD 3-D: the background must be vacuum (eps = 1), got {scene.background!r}")
    # conductors enter through their open edge lengths and face areas (pec3d.py); here the
    # media around them (a PEC core in a dielectric sees the dielectric on its cut edges)
    scene = Scene([o for o in scene.objects if not any(m is PEC for m in o.material)], scene.background)
    cache = {} if cache is None else cache
    if "raster" not in cache:
        cache["raster"] = rasterize(scene, g.shape, g.dx, g.origin, averaging=averaging)
    r = cache["raster"]
    eps = np.empty((3, *g.shape), complex)
    for c in range(3):  # E_c sees eps_cc of a diagonal-anisotropic medium
        lut = np.array([_material_eps(m, g.omega, c) for m in scene.materials])
        eps[c] = lut[r.label[c]]
        it = r.interface[c]
        if averaging != "subpixel" or not len(it["fill"]):
            continue
        e1, e2 = lut[it["own"]], lut[it["other"]]
        ok = np.isfinite(e1) & np.isfinite(e2)  # PEC interfaces stay staircased
        f, n2 = it["fill"][ok], it["normal"][ok, c] ** 2
        e1, e2 = e1[ok], e2[ok]
        inv = n2 * (f / e1 + (1 - f) / e2) + (1 - n2) / (f * e1 + (1 - f) * e2)
        idx = it["index"][ok]
        eps[c][idx[:, 0], idx[:, 1], idx[:, 2]] = 1.0 / inv
    return eps


def discrete_wave(wave: PlaneWave3D, omega: float, dx: float) -> tuple:
    """The grid's plane wave along ``wave.direction``: (k~ d, e) with k~ from the Yee
    dispersion relation (Newton) and ``e`` transverse to the discrete wave vector."""
    d = np.asarray(wave.direction)
    k = omega
    for _ in range(50):
        s = np.sin(k * d * dx / 2)
        g = np.sum((2 / dx * s) ** 2) - omega**2
        dg = np.sum(2 * (2 / dx * s) * (2 / dx) * np.cos(k * d * dx / 2) * d * dx / 2)
        step = g / dg
        k -= step
        if abs(step) < 1e-15 * k:
            break
    kt = 2 / dx * np.sin(k * d * dx / 2)  # the discrete wave vector (differences see this)
    e = np.asarray(wave.polarization, complex)
    e = e - kt * np.dot(kt, e) / np.dot(kt, kt)
    return k * d, e / np.linalg.norm(e)


def incident_3d(wave: PlaneWave3D, g: _Grid3) -> np.ndarray:
    """The grid's incident E (3, nx, ny, nz) at the E nodes."""
    kvec, e = discrete_wave(wave, g.omega, g.dx)
    out = np.empty((3, *g.shape), complex)
    for c in range(3):
        ph = [np.exp(1j * kvec[a] * (g.axes[a] + (0.5 * g.dx if a == c else 0.0))) for a in range(3)]
        out[c] = e[c] * ph[0][:, None, None] * ph[1][None, :, None] * ph[2][None, None, :]
    return out


def _waves(source) -> list:
    waves = list(source) if isinstance(source, (list, tuple)) else [source]
    if not waves or not all(isinstance(w, (PlaneWave3D, PointDipole3D)) for w in waves):
        raise ConfigError(f"source must be a PlaneWave3D or PointDipole3D, or a list of them, got {source!r}")
    return waves


def _trilinear(position, axes, dx: float, c: int):
    """Nodes and weights of E_c's lattice around ``position``: [(index tuple, weight)]."""
    u = [(position[a] - axes[a][0]) / dx - (0.5 if a == c else 0.0) for a in range(3)]
    i0 = [int(np.floor(v)) for v in u]
    f = [v - i for v, i in zip(u, i0)]
    out = []
    for corner in np.ndindex(2, 2, 2):
        w = float(np.prod([f[a] if corner[a] else 1 - f[a] for a in range(3)]))
        out.append((tuple(i0[a] + corner[a] for a in range(3)), w))
    return out, i0


def field_at(result, points) -> np.ndarray:
    """E (P, 3) at ``points`` (P, 3) by trilinear interpolation of each component on its own
    lattice (the transpose of how :class:`PointDipole3D` spreads its current)."""
    if not hasattr(result, "z") or np.ndim(getattr(result, "E", None)) != 4:
        raise ConfigError(
            f"field_at needs a 3-D result of solve_3d, got {type(result).__name__} (a 2-D result holds "
            "its field on the grid: result.Ez at result.x, result.y)"
        )
    try:
        pts = np.atleast_2d(np.asarray(points, float))
    except (TypeError, ValueError):
        raise ConfigError(f"field_at: points must be (x, y, z) triples, got {points!r}") from None
    if pts.ndim != 2 or pts.shape[1] != 3 or not len(pts):
        raise ConfigError(f"field_at: points must be (x, y, z) triples, shape (P, 3); got shape {pts.shape}")
    if not np.all(np.isfinite(pts)):
        raise ConfigError("field_at: points must be finite (x, y, z) triples; got NaN or inf")
    axes = (np.asarray(result.x), np.asarray(result.y), np.asarray(result.z))
    E = np.asarray(result.E)
    out = np.zeros((len(pts), 3), complex)
    for p, pt in enumerate(pts):
        for c in range(3):
            nodes, i0 = _trilinear(pt, axes, result.dx, c)
            if not all(0 <= i and i + 1 < len(a) for i, a in zip(i0, axes)):
                box = ", ".join(f"[{a[0] + result.dx / 2:g}, {a[-1]:g})" for a in axes)
                raise ConfigError(f"field_at: point {pt.tolist()} lies outside the grid (x, y, z in {box})")
            out[p, c] = sum(w * E[c][idx] for idx, w in nodes)
    return out


def dipole_current(dip: PointDipole3D, g: _Grid3) -> np.ndarray:
    """``i omega J`` (3, nx, ny, nz): the dipole's right side of ``A E = i omega J``."""
    b = np.zeros((3, *g.shape), complex)
    L = g.pml.thickness
    for c in range(3):
        # trilinear weights on E_c's lattice: the dipole's position is kept to second order
        # (the nearest node alone would move it by up to half a cell)
        nodes, i0 = _trilinear(dip.position, g.axes, g.dx, c)
        if not all(L <= i and i + 1 < n - L for i, n in zip(i0, g.shape)):
            raise ConfigError(
                f"PointDipole3D.position {dip.position} lies outside the region (the PML excluded)"
            )
        for idx, w in nodes:
            b[c][idx] += w * g.omega**2 * complex(dip.moment[c]) / g.dx**3  # i omega (-i omega p) / dx^3
    return b


def estimate_bytes(shape, solver, dtype) -> int:
    """Memory of a solve: the operator's arrays and the Krylov vectors (iterative), or the
    matrix with a rough 3-D fill-in estimate (direct)."""
    n = 3 * int(np.prod(shape))
    item = np.dtype(dtype).itemsize
    if isinstance(solver, Direct):
        return int(n * (14 * (item + 8) + 60 * n ** (1 / 3) * (item + 4)))  # LU fill ~ N^(4/3)
    return int(n * item * 24)


def solve_3d(
    size,
    resolution: float,
    frequency: float,
    source,
    scene=None,
    pml: SCPML | None = None,
    center=(0.0, 0.0, 0.0),
    averaging: str = "subpixel",
    solver=None,
    precision: str = "double",
    progress=True,
    layout=None,
    symmetry=(0, 0, 0),
):
    """Scattering of a :class:`PlaneWave3D` (or a list: one operator, batched right sides)
    by ``scene`` in vacuum, or the field of a :class:`PointDipole3D` (total field), on the
    region ``size`` (three lengths) at ``resolution`` cells per unit length and
    ``frequency`` = 1 / wavelength (a list of frequencies: one result (or list) per
    frequency; the scene's rasterization and conductor fractions are computed once, the
    compiled solver loop is reused; dispersive materials are evaluated at each).

    ``solver``: :class:`Iterative` (Krylov on JAX's device, the default) or :class:`Direct`
    (SuperLU on the host: 3-D fill-in makes it slow beyond ~2e4 unknowns). ``precision``
    "single" or "double" (complex64 / complex128; iterative only). ``progress``: True (the
    default) a bar with the time left (:mod:`emjax.progress`; the residual's way to rtol,
    one bar for all frequencies; the direct solve says what it does), False none, a callable
    is called as ``progress(iterations, worst relative residual)`` between iteration chunks.
    ``layout``: devices to split the grid over in slabs along x for the iterative solve (an
    ``emjax.layout.Layout``, a count or a device list; None: one device; see
    :mod:`emjax.fdfd.distributed`). ``symmetry = (sx, sy, sz)``: mirror planes through
    ``center`` as the FDTD's (0 none, -1 odd: a PEC plane, +1 even: a PMC plane), with
    ``solver=Direct()``: the matrix folded onto the upper half per plane, the fields given on
    the whole grid (:mod:`emjax.fdfd.symmetry`). Returns
    a :class:`Result3D`, or a list for a list of waves."""
    progress_bars.check(progress)
    if any(np.atleast_1d(symmetry)) and traced_scene(scene):
        raise ConfigError("symmetry: not available with a traced scene (jax.grad); set symmetry = (0, 0, 0)")
    if traced_scene(scene):  # jax.grad over a material's value
        return solve_3d_traced(
            size, resolution, frequency, source, scene, pml, center, averaging, solver, precision, progress
        )
    freqs = [frequency] if np.ndim(frequency) == 0 else list(np.asarray(frequency, float).ravel())

    def make():  # the iterative solve's bar (Iterative()'s default rtol: 1e-6)
        rtol = getattr(getattr(solver, "method", None), "rtol", 1e-6)
        return None if isinstance(solver, Direct) else progress_bars.ResidualBar("fdfd", rtol, len(freqs))

    with precision_scope(), progress_bars.shown(progress, make) as report:
        bar = report if isinstance(report, progress_bars.ResidualBar) else None
        # the bar: frequency i fills its i-th part; a callable is called as it is
        calls = [report if bar is None else partial(bar.labelled, i) for i in range(len(freqs))]
        announce = bool(progress)  # the direct solve says what it does
        args = (size, resolution)
        rest = (source, scene, pml, center, averaging, solver, precision)
        if np.ndim(frequency) == 0:
            return _solve_3d(
                *args, frequency, *rest, calls[0], layout=layout, announce=announce, symmetry=symmetry
            )
        if not freqs:
            raise ConfigError("frequency: give a number or a non-empty list of numbers")
        for i, f in enumerate(freqs):
            _grid3(size, resolution, require_positive(f"frequency[{i}]", f), pml, center)  # check all first
        cache = {}  # the scene's rasterization and conductor fractions: geometry, shared
        return [
            _solve_3d(*args, f, *rest, cb, cache, layout=layout, announce=announce, symmetry=symmetry)
            for f, cb in zip(freqs, calls)
        ]


def _solve_3d(
    size,
    resolution,
    frequency,
    source,
    scene,
    pml,
    center,
    averaging,
    solver,
    prec,
    progress,
    cache=None,
    layout=None,
    announce=False,
    symmetry=(0, 0, 0),
):
    from .symmetry import fold_3d

    cache = {} if cache is None else cache
    t0 = time.perf_counter()
    g = _grid3(size, resolution, frequency, pml, center)
    waves = _waves(source)
    fd = fold_3d(g, symmetry, scene)
    if fd is not None and not isinstance(solver, Direct):
        raise ConfigError("symmetry: the 3-D solve folds the assembled matrix; use solver=Direct()")
    if averaging not in ("subpixel", "staircase"):
        raise ConfigError(f"averaging must be 'subpixel' or 'staircase', got {averaging!r}")
    dtype = precision(prec).complex
    n_unknowns = 3 * int(np.prod(g.shape))
    solver = check_solver(solver if solver is not None else Iterative())
    layout = as_layout(layout)  # None: one device
    if layout is not None and isinstance(solver, Direct):
        raise ConfigError("layout: several devices need the iterative solver (Direct runs on the host)")
    from ..backend import device_memory_bytes, host_available_bytes

    need = estimate_bytes(g.shape, solver, dtype)
    have = host_available_bytes() if isinstance(solver, Direct) else device_memory_bytes()
    if need > 0.9 * have:
        raise ResourceError(
            f"FDFD 3-D grid {g.shape} ({n_unknowns} unknowns) needs about {need / 2**30:.1f} GiB with the "
            f"{solver.name} solver; {have / 2**30:.1f} GiB available"
        )
    if scene is not None:
        L = g.pml.thickness
        lo = [a[L] for a in g.axes]
        hi = [a[-1 - L] for a in g.axes]
        scene.check_inside(lo, hi, "the region inside the PML")
    eps = permittivity_3d(scene, g, averaging, cache)
    if "pec" not in cache:
        cache["pec"] = pec_fractions(scene, g.axes, g.dx, averaging)
    pec = cache["pec"]
    fixed = np.zeros(eps.shape, bool) if pec is None else pec[0] == 0
    op = build_operator(eps, g.pml, g.dx, g.omega, dtype, pec, getattr(solver, "graddiv", True))
    vac = build_operator(np.ones(eps.shape), g.pml, g.dx, g.omega, dtype, graddiv=False)  # for A_vac only
    incs = [
        incident_3d(w, g) if isinstance(w, PlaneWave3D) else np.zeros((3, *g.shape), complex) for w in waves
    ]
    rhs = []
    for w, inc in zip(waves, incs):
        if isinstance(w, PointDipole3D):
            rhs.append(op.rhs(jnp.asarray(dipole_current(w, g), dtype)))
            continue
        # A E_s = -A E_inc = (A_vacuum - A) E_inc: the scatterer's part only (A_vacuum E_inc = 0
        # off the PML; the PML's stretching cancels in the difference)
        e = jnp.asarray(inc, dtype)
        b = vac.maxwell(e) - op.maxwell(e)
        rhs.append(op.rhs(b) + jnp.where(jnp.asarray(fixed), -e, 0))  # stays on the device
    t_setup = time.perf_counter() - t0
    if fd is not None:  # the parity of every incident field and right side
        fd.check_sources([i.ravel() for i in incs], [np.asarray(r).ravel() for r in rhs])
    if isinstance(solver, Direct):
        xs, stats = _direct(op, rhs, dtype, announce, fd)
    else:
        xs, stats = _iterative(op, rhs, solver, dtype, progress, layout)
    stats.update(
        unknowns=n_unknowns,
        grid=list(g.shape),
        setup_s=t_setup,
        seconds=time.perf_counter() - t0,
        precision=prec,
        device=str(jax.devices()[0]) if isinstance(solver, Iterative) else "host CPU",
    )
    out = []
    for x, inc, w, st in zip(xs, incs, waves, stats.pop("per_wave")):
        Es = np.asarray(x)
        eps_out = np.where(fixed, np.inf, eps)
        out.append(Result3D(*g.axes, g.frequency, w, Es + inc, Es, eps_out, g.pml.thickness, {**stats, **st}))
    return out if isinstance(source, (list, tuple)) else out[0]


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
