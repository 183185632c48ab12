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

import time
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from .. import progress as progress_bars
from ..backend import precision, precision_scope
from ..errors import ConfigError, ResourceError, require_positive
from ..layout import as_layout
from .grid3d import (
    PlaneWave3D,
    PointDipole3D,
    Result3D,
    _Grid3,
    _grid3,
    _waves,
    dipole_current,
    field_at,
    incident_3d,
)
from .linear3d import _direct, _iterative
from .operator3d import build_operator
from .operators import SCPML
from .pec3d import pec_fractions
from .permittivity2d import traced_scene
from .scene_traced import solve_3d_traced
from .solvers import Direct, Iterative, check_solver

__all__ = ["PlaneWave3D", "PointDipole3D", "Result3D", "field_at", "solve_3d", "permittivity_3d"]


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
