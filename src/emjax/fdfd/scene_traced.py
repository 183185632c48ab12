"""The scene solves with traced parameters: :func:`emjax.fdfd.solve_tm`, ``solve_te`` and
``solve_3d`` when a material of the scene holds a JAX tracer (``jax.grad`` over a
permittivity, an index or a Drude-Lorentz parameter) or an object's geometry does (its size,
center, rotation; a 2-D Polygon's vertices).

The rasterization of the scene's values (which node sees which material, which nodes an
interface crosses) stays NumPy; the permittivity arrays built from it are JAX functions of
the materials' values and, at the interface nodes, of the geometry: the fill fractions and
normals there come from :mod:`emjax.scene.traced` (the FDTD's traced raster), the same
subpixel rules as the concrete path (permittivity2d.py, maxwell3d.permittivity_3d). The
solve is the differentiable array-level one (:func:`~emjax.fdfd.tm_field`,
:func:`~emjax.fdfd.te_field`, :func:`~emjax.fdfd.field_3d`: an adjoint solve per gradient).
The result records hold JAX arrays; :func:`~emjax.fdfd.scattering_width`,
:func:`~emjax.fdfd.rcs_3d` and :func:`~emjax.fdfd.cross_sections_3d` compute on them in JAX.
What the scene's geometry decides (the scene must stay off the PML and off the far-field
contour) is checked on the rasterization: ``stats["scene_nodes"]`` marks the nodes that are
not vacuum.

Not covered (one ConfigError line each): perfect conductors in a traced scene, a traced
diagonal-anisotropic material, TE with Kottke's off-diagonal term (subpixel averaging at an
oblique interface: use ``averaging="staircase"`` for materials, ``solve_tm`` for geometry; a
traced rotation or polygon vertices in TE, whose derivative turns an interface), traced
geometry with ``averaging="staircase"`` (no derivative) or inside ``jax.jit``/``jax.vmap``
(the host raster needs its values), traced geometry where two objects' cells meet or of a
shape without a smooth fill fraction (scene.traced names them), the 3-D direct solver.
"""

from __future__ import annotations

import numpy as np

from ..errors import ConfigError
from .grid2d import _bad_source, _incident_waves, _inner, _plane_waves, _source_node
from .modes2d import ModeSource2D
from .permittivity2d import (
    _inplane_inverse,
    _lut,
    interface_fill,
    node_permittivity,
    raster2d,
    scene_nodes,
)
from .specs2d import LineSource, TMResult

_WHY = "jax.grad through the scene"


def _check_geometry(scene, averaging: str, who: str) -> None:
    """Traced geometry needs the subpixel raster (a staircase has no derivative)."""
    names = [f"{name}" for o in scene.objects for name in o.traced]
    if names and averaging != "subpixel":
        raise ConfigError(
            f'{who}: averaging="staircase" has no derivative with respect to an object\'s {names[0]} '
            '(a staircased boundary jumps from cell to cell): use averaging="subpixel"'
        )


def _refuse_pec(scene, who: str) -> None:
    from ..scene import PEC

    if any(m is PEC for m in scene.materials):
        raise ConfigError(
            f"{who}: {_WHY} does not cover scene.PEC objects (this version); differentiate a scene "
            "without conductors, or give the conductor a large imaginary eps"
        )


def _check_solver(solver, who: str) -> None:
    if solver not in ("auto", "superlu"):
        raise ConfigError(
            f"{who}: {_WHY} solves with SuperLU on the host (the adjoint reuses its factorization); "
            f"solver={solver!r} is not differentiable: leave solver='auto'"
        )


def _stats(g, at=None) -> dict:
    return {"solver": "superlu (differentiable)", "unknowns": int(np.prod(g.shape)), "source_node": at}


def _out(g, fields, source, eps, incident, stats) -> object:
    """TMResult(s) of total fields (JAX) with their incident waves (None: a line source)."""
    import jax.numpy as jnp

    args = (g.x, g.y, g.frequency)
    if incident is None:
        return TMResult(*args, fields[0], None, eps, stats, g.pml.thickness)
    out = [
        TMResult(*args, f, f - jnp.asarray(inc, f.dtype), eps, stats, g.pml.thickness)
        for f, inc in zip(fields, incident)
    ]
    return out if isinstance(source, (list, tuple)) else out[0]


def _check_pml(g, on) -> None:
    if np.any(on & ~_inner(g.shape, g.pml.thickness)):
        raise ConfigError("FDFD: the scene reaches the PML; enlarge size or move the objects")


def solve_tm_traced(g, source, scene, averaging, stencil, solver):
    """:func:`emjax.fdfd.solve_tm` on the grid ``g`` for a scene with traced materials."""
    from .adjoint import tm_field

    _refuse_pec(scene, "solve_tm")
    _check_solver(solver, "solve_tm")
    _check_geometry(scene, averaging, "solve_tm")
    r = raster2d(scene, g.shape, g.dx, g.origin, averaging, (2,))
    eps = node_permittivity(scene, g.shape, g.dx, g.origin, g.omega, averaging, raster=r)
    on = scene_nodes(scene, g.shape, g.dx, g.origin, averaging, raster=r)
    stats = _stats(g)
    stats["scene_nodes"] = on
    res = 1.0 / g.dx
    if isinstance(source, LineSource):
        i, j = _source_node(source, g)
        J = np.zeros(g.shape, complex)
        J[i, j] = complex(source.current) / g.dx**2
        stats["source_node"] = (float(g.x[i]), float(g.y[j]))
        Ez = tm_field(eps, res, g.frequency, J, g.pml, stencil=stencil, origin=g.origin)
        return _out(g, [Ez], source, eps, None, stats)
    if isinstance(source, ModeSource2D):
        return _mode_solve(g, source, scene, eps, averaging, stencil, stats)
    waves = _plane_waves(source)
    if not waves:
        raise _bad_source(source)
    _check_pml(g, on)
    fields = [tm_field(eps, res, g.frequency, w, g.pml, stencil=stencil, origin=g.origin) for w in waves]
    return _out(g, fields, source, eps, _incident_waves(source, g), stats)


def _mode_solve(g, source, scene, eps, averaging, stencil, stats):
    """The traced TM solve driven by a :class:`ModeSource2D`: the source's right side and
    the operator rows kept for :func:`~emjax.fdfd.mode_amplitudes` are the scene's values'
    (the mode profiles held fixed: no derivative), which is exact where no traced object
    comes within two nodes of the source's line (checked) or of a monitor's line
    (:func:`~emjax.fdfd.mode_amplitudes` checks ``stats["traced_nodes"]``). Inside
    ``jax.jit`` (traced permittivities only) the kept rows at the traced nodes hold a
    placeholder: only the lines' rows, away from them, are read."""
    import dataclasses

    import jax.numpy as jnp

    from .adjoint import _make_solve, caller_scope
    from .modes2d import mode_rhs
    from .stencil2d import tm_stencil

    # inside jax.jit the traced values are abstract: the rows the mode lines read hold none
    # of them (checked), so a placeholder value serves there
    try:
        base = scene.primal()
    except ConfigError:
        base = scene.primal(structure_only=True)
    eps0 = node_permittivity(base, g.shape, g.dx, g.origin, g.omega, averaging)
    C = tm_stencil(eps0, g.shape, g.dx, g.omega, g.pml, stencil, None)
    stats["traced_nodes"] = traced_nodes(scene, g)
    b = mode_rhs(C, g, source, stats["traced_nodes"])
    solve = _make_solve(g.shape, g.dx, g.omega, g.pml, stencil)

    def field(e, rhs):
        return solve(jnp.asarray(e, jnp.complex128), jnp.asarray(rhs, jnp.complex128))

    Ez = caller_scope(field, eps, b, forward=True)
    return dataclasses.replace(_out(g, [Ez], source, eps, None, stats), stencil=C)


def traced_nodes(scene, g) -> np.ndarray:
    """(nx, ny) bool: the nodes within a cell of an object with traced parameters (its
    geometry or a material; every node where the background is traced)."""
    from ..tracing import is_traced

    if is_traced(scene.background):
        return np.ones(g.shape, bool)
    X, Y = np.meshgrid(g.x, g.y, indexing="ij")
    out = np.zeros(g.shape, bool)
    for o in scene.objects:
        if o.traced or any(is_traced(m) for m in o.material):
            a, b = o.bounds()
            out |= (X >= a[0] - g.dx) & (X <= b[0] + g.dx) & (Y >= a[1] - g.dx) & (Y <= b[1] + g.dx)
    return out


def solve_te_traced(g, source, scene, averaging, stencil, solver):
    """:func:`emjax.fdfd.solve_te` on the (cell-centre) grid ``g`` for a scene with traced
    materials: the in-plane permittivity diagonal (Kottke's diagonal entries at interface
    edges); an interface that needs the off-diagonal term is refused."""
    from .adjoint_te import te_field

    _refuse_pec(scene, "solve_te")
    _check_solver(solver, "solve_te")
    _check_geometry(scene, averaging, "solve_te")
    r = raster2d(scene, g.shape, g.dx, g.origin, averaging, (0, 1))
    if averaging == "subpixel":
        turning = [n for o in scene.objects for n in o.traced if n in ("rotation", "vertices")]
        if turning:
            raise ConfigError(
                f"solve_te: {_WHY} with respect to an object's {turning[0]} turns its interfaces, "
                "whose derivative needs Kottke's off-diagonal term (not in the differentiable TE solve); "
                f"use solve_tm, or keep the {turning[0]} concrete (size and center are differentiable)"
            )
        for c in (0, 1):
            nrm = r.interface[c]["normal"]
            if len(nrm) and np.any(np.abs(nrm[:, 0] * nrm[:, 1]) > 1e-12):
                raise ConfigError(
                    f"solve_te: {_WHY} leaves out Kottke's off-diagonal term, which this scene's oblique "
                    'interfaces need with subpixel averaging; use averaging="staircase" (or solve_tm)'
                )
    inv_x, inv_y, _, _ = _inplane_inverse(scene, g.shape, g.dx, g.origin, g.omega, averaging, raster=r)
    eps_x, eps_y = 1.0 / inv_x, 1.0 / inv_y
    centre = (float(g.x[0]), float(g.y[0]))  # te_field's origin: the H_z cell (0, 0)'s centre
    stats = _stats(g)
    stats["scene_nodes"] = _te_scene_nodes(r, g, averaging)
    res = 1.0 / g.dx
    if isinstance(source, LineSource):
        i, j = _source_node(source, g)
        M = np.zeros(g.shape, complex)
        M[i, j] = complex(source.current) / g.dx**2
        stats["source_node"] = (float(g.x[i]), float(g.y[j]))
        Hz = te_field((eps_x, eps_y), res, g.frequency, M, g.pml, stencil=stencil, origin=centre)
        return _out(g, [Hz], source, inv_x, None, stats)
    waves = _plane_waves(source)
    if not waves:
        raise _bad_source(source)
    _check_pml(g, stats["scene_nodes"])
    fields = [
        te_field((eps_x, eps_y), res, g.frequency, w, g.pml, stencil=stencil, origin=centre) for w in waves
    ]
    return _out(g, fields, source, inv_x, _incident_waves(source, g), stats)


def _te_scene_nodes(r, g, averaging) -> np.ndarray:
    """The H_z cells with a non-vacuum E_x or E_y edge (or an interface on one) in the
    scene's raster ``r`` (E_x, E_y)."""
    on = np.zeros(g.shape, bool)
    for c in (0, 1):
        on |= r.label[c][:, :, 0] != 0
        it = r.interface[c]
        if averaging == "subpixel" and len(it["fill"]):
            on[it["index"][:, 0], it["index"][:, 1]] = True
    return on


def permittivity_3d_traced(scene, g, averaging: str):
    """maxwell3d.permittivity_3d as a JAX function of the scene's traced materials (the same
    rules: Kottke's diagonal entry, inverted, at interface nodes); also the nodes (bool
    (3, nx, ny, nz)) that are not vacuum."""
    import jax.numpy as jnp

    from ..scene import rasterize
    from ..scene.traced import padded

    _check_geometry(scene, averaging, "solve_3d")
    base = scene.primal(structure_only=True) if scene.traced else scene  # the values: structure
    r = padded(rasterize(base, g.shape, g.dx, g.origin, averaging=averaging))
    comps, on = [], np.zeros((3, *g.shape), bool)
    for c in range(3):
        lut, _ = _lut(scene, g.omega, c)
        eps = jnp.asarray(lut)[r.label[c]]
        on[c] = r.label[c] != 0
        it = r.interface[c]
        if averaging == "subpixel" and len(it["fill"]):
            f, nrm = interface_fill(scene, r, c)
            n2 = nrm[:, c] ** 2
            e1, e2 = lut[it["own"]], lut[it["other"]]
            inv = n2 * (f / e1 + (1 - f) / e2) + (1 - n2) / (f * e1 + (1 - f) * e2)
            idx = tuple(it["index"].T)
            eps = eps.at[idx].set(1.0 / inv)
            on[c][idx] = True
        comps.append(eps)
    return jnp.stack(comps), on


def solve_3d_traced(
    size, resolution, frequency, source, scene, pml, center, averaging, solver, prec, progress
):
    """:func:`emjax.fdfd.solve_3d` at one frequency for a scene with traced materials
    (:func:`emjax.fdfd.field_3d`: the iterative solver, an adjoint solve per gradient)."""
    import jax.numpy as jnp

    from ..backend import precision_scope
    from .adjoint3d import field_3d
    from .grid3d import PlaneWave3D, Result3D, _grid3, _waves, incident_3d
    from .solvers import Iterative

    if np.ndim(frequency) != 0:
        raise ConfigError(f"solve_3d: {_WHY} takes one frequency per call; call it per frequency")
    if averaging not in ("subpixel", "staircase"):
        raise ConfigError(f"averaging must be 'subpixel' or 'staircase', got {averaging!r}")
    g = _grid3(size, resolution, frequency, pml, center)

    _refuse_pec(scene, "solve_3d")
    if solver is not None and not isinstance(solver, Iterative):
        raise ConfigError(
            f"solve_3d: {_WHY} needs the iterative solver (its adjoint reuses it); solver={solver!r} "
            "is not differentiable: give solver=emjax.fdfd.Iterative(...) or leave it out"
        )
    solver = Iterative() if solver is None else solver  # solve_3d's default (rtol 1e-6)
    waves = _waves(source)
    if not all(isinstance(w, PlaneWave3D) for w in waves):
        raise ConfigError(f"solve_3d: {_WHY} covers plane waves (PlaneWave3D), got {source!r}")
    L = g.pml.thickness
    scene.check_inside([a[L] for a in g.axes], [a[-1 - L] for a in g.axes], "the region inside the PML")
    eps, on = permittivity_3d_traced(scene, g, averaging)
    stats = {"solver": "iterative (differentiable)", "unknowns": 3 * int(np.prod(g.shape)), "scene_nodes": on}
    out = []
    for w in waves:
        E = field_3d(
            eps,
            1.0 / g.dx,
            g.frequency,
            w,
            g.pml,
            solver=solver,
            origin=g.origin,
            precision_name=prec,
            progress=progress,
        )
        with precision_scope():
            inc = np.asarray(incident_3d(w, g))
        inc = jnp.asarray(inc, E.dtype)
        out.append(Result3D(*g.axes, g.frequency, w, E, E - inc, eps, L, dict(stats)))
    return out if isinstance(source, (list, tuple)) else out[0]


def scene_mask(result) -> np.ndarray:
    """Where ``result``'s medium is not vacuum: ``eps != 1`` for a concrete result, the
    rasterization's record for a traced one (its eps is a JAX array of unknown value)."""
    on = getattr(result, "stats", {}).get("scene_nodes")
    if on is not None:
        return on
    return np.asarray(result.eps) != 1


def xp_of(*arrays):
    """``jax.numpy`` when an array is a JAX array or tracer (a traced result), else NumPy."""
    import jax
    import jax.numpy as jnp

    return jnp if any(isinstance(a, (jax.Array, jax.core.Tracer)) for a in arrays) else np
