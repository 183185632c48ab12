"""Permittivity of a 2-D scene on the FDFD grid: eps at the TM E_z nodes (the arithmetic
subpixel mean) and Kottke's in-plane inverse tensor at the TE E_x, E_y edges (the rules are
described in :mod:`emjax.fdfd.tm`)."""

from __future__ import annotations

import math

import numpy as np

from ..errors import ConfigError


def _permittivity(material, omega: float, component: int = 2) -> complex:
    """eps of ``material`` at ``omega`` seen by the E component ``component`` (0, 1, 2: x,
    y, z; it matters for :class:`emjax.materials.DiagonalAnisotropic` only)."""
    from ..materials import DiagonalAnisotropic
    from ..scene import PEC

    if material is PEC:  # the limit; the solvers treat it as a boundary condition
        return complex(math.inf, 0.0)
    if isinstance(material, DiagonalAnisotropic):
        return complex(material.components(omega)[component])
    if hasattr(material, "permittivity"):
        return complex(material.permittivity(omega))
    return complex(material)


def traced_scene(scene) -> bool:
    """Whether a parameter of ``scene`` holds a JAX tracer (``jax.grad`` over a material's
    eps, n or pole parameters, or an object's size, center, rotation or a polygon's
    vertices): then the permittivity arrays are JAX functions of them."""
    from ..materials import has_tracer

    return scene is not None and (traced_geometry(scene) or any(has_tracer(m) for m in scene.materials))


def traced_geometry(scene) -> bool:
    """Whether an object's size, center, rotation or vertices are JAX tracers."""
    return scene is not None and any(o.traced for o in scene.objects)


def interface_fill(scene, r, c: int):
    """``(fill, normal)`` at the raster ``r``'s interface nodes of E_``c``: the host's
    (NumPy) or, where an object's geometry is traced, JAX functions of it
    (:func:`emjax.scene.traced.interface_values`: the fill fractions the FDTD uses too)."""
    it = r.interface[c]
    if not traced_geometry(scene):
        return it["fill"], it["normal"]
    from ..scene.traced import interface_values

    return interface_values(scene, r, c, base=r.scene)


def _lut(scene, omega, component: int):
    """The materials' eps seen by E component ``component``: NumPy complex, or a JAX array
    when a material is traced (then a conductor has no entry that matters: its nodes are
    refused by the traced solvers). Also the conductors' flags (concrete)."""
    from ..scene import PEC

    pec = np.array([m is PEC for m in scene.materials])
    if not traced_scene(scene):
        return np.array([_permittivity(m, omega, component) for m in scene.materials]), pec
    import jax.numpy as jnp

    from ..materials import DiagonalAnisotropic

    vals = []
    for m in scene.materials:
        if m is PEC:
            vals.append(jnp.asarray(1.0 + 0j))
        elif isinstance(m, DiagonalAnisotropic):
            raise ConfigError(
                "FDFD: a traced DiagonalAnisotropic material is not differentiable (this version); "
                "trace an isotropic material's eps (materials.Constant.from_permittivity) instead"
            )
        elif hasattr(m, "permittivity"):
            vals.append(jnp.reshape(m.permittivity(omega), ()) + 0j)
        else:
            vals.append(jnp.asarray(m) + 0j)
    return jnp.stack(vals), pec


def _jnp():
    import jax.numpy as jnp

    return jnp


def _set(a, index, values):
    """``a[index] = values`` for a NumPy array (in place) or a JAX array (a new one)."""
    if isinstance(a, np.ndarray):
        a[index] = values
        return a
    return a.at[index].set(values)


def raster2d(scene, shape, dx, origin, averaging, components):
    """The scene's raster on a 2-D grid (``shape = (nx, ny)``, node (0, 0) at ``origin``): one
    cell thick in z, centred on the plane, for the E components ``components``. A traced
    scene: the raster of its values (the structure), interface lists padded
    (:func:`emjax.scene.traced.padded`)."""
    from ..scene import rasterize

    r = rasterize(
        scene.primal(structure_only=True) if scene.traced else scene,
        (shape[0], shape[1], 1),
        dx,
        (origin[0], origin[1], -dx / 2),
        averaging=averaging,
        components=components,
    )
    if not traced_scene(scene):
        return r
    from ..scene.traced import padded

    return padded(r)


def node_permittivity(scene, shape, dx, origin, omega, averaging="subpixel", raster=None):
    """eps at the E_z nodes of a 2-D grid (``shape = (nx, ny)``, node (0, 0) at ``origin``):
    NumPy, or a JAX array of the traced parameters (:func:`traced_scene`). ``raster``: the
    scene's :func:`raster2d` (E_z) where it is known already."""

    if scene is None:
        return np.ones(shape, complex)
    r = raster2d(scene, shape, dx, origin, averaging, (2,)) if raster is None else raster
    lut, pec = _lut(scene, omega, 2)  # E_z sees eps_zz
    eps = lut[r.label[2][:, :, 0]]
    it = r.interface[2]
    if averaging == "subpixel" and len(it["fill"]):
        # no mean with a conductor: its nodes stay inf, their neighbours keep their own eps
        ok = ~pec[it["own"]] & ~pec[it["other"]]
        fill = interface_fill(scene, r, 2)[0]
        i, j, f = it["index"][ok, 0], it["index"][ok, 1], fill[ok]
        eps = _set(eps, (i, j), f * lut[it["own"][ok]] + (1 - f) * lut[it["other"][ok]])
    return eps


def scene_nodes(scene, shape, dx, origin, averaging="subpixel", raster=None) -> np.ndarray:
    """The E_z nodes (bool (nx, ny)) where the scene is not its background (or an interface
    node touches an object): what ``eps != 1`` marks for a vacuum background, known without
    the (possibly traced) permittivities."""

    if scene is None:
        return np.zeros(shape, bool)
    r = raster2d(scene, shape, dx, origin, averaging, (2,)) if raster is None else raster
    on = r.label[2][:, :, 0] != 0
    it = r.interface[2]
    if averaging == "subpixel" and len(it["fill"]):
        on[it["index"][:, 0], it["index"][:, 1]] = True
    return on


def _inplane_inverse(scene, shape, dx, origin, omega, averaging, raster=None) -> tuple:
    """Kottke's inverse permittivity at the E_x and E_y nodes of a 2-D grid (node (i, j) of
    E_x at origin + (i + 1/2, j) dx, of E_y at (i, j + 1/2) dx): ``(inv_x, inv_y, off_x,
    off_y)``, the diagonal entries ``n_c^2 <1/eps> + (1 - n_c^2) / <eps>`` and the
    off-diagonal ``n_x n_y (<1/eps> - 1 / <eps>)`` at interface nodes (zero elsewhere and
    with ``averaging="staircase"``). A diagonal-anisotropic medium enters with eps_xx at
    the E_x nodes and eps_yy at the E_y nodes (each node's rule applied to its own entry:
    exact for interfaces along the axes, an approximation at oblique ones). 1/eps = 0 at
    nodes inside a conductor; where a conductor meets another material, that material's
    1/eps and no off-diagonal (the open fraction comes on top)."""

    if scene is None:
        one, zero = np.ones(shape, complex), np.zeros(shape, complex)
        return one, one, zero, zero
    r = raster2d(scene, shape, dx, origin, averaging, (0, 1)) if raster is None else raster
    diag, off = [], []
    for c in (0, 1):
        lut, is_pec = _lut(scene, omega, c)
        xp = np if isinstance(lut, np.ndarray) else _jnp()
        inv = 1.0 / lut[r.label[c][:, :, 0]]
        cross = xp.zeros(shape, complex)
        it = r.interface[c]
        if averaging == "subpixel" and len(it["fill"]):
            f, nrm = interface_fill(scene, r, c)
            e1, e2 = lut[it["own"]], lut[it["other"]]
            i, j = it["index"][:, 0], it["index"][:, 1]
            p1, p2 = is_pec[it["own"]], is_pec[it["other"]]
            if xp is not np:  # conductors are refused with traced materials: no inf here
                e1, e2 = xp.where(p1, 1.0, e1), xp.where(p2, 1.0, e2)
            with np.errstate(invalid="ignore", divide="ignore"):
                harmonic, arithmetic = f / e1 + (1 - f) / e2, 1 / (f * e1 + (1 - f) * e2)
                kottke = nrm[:, c] ** 2 * harmonic + (1 - nrm[:, c] ** 2) * arithmetic
                coupling = nrm[:, 0] * nrm[:, 1] * (harmonic - arithmetic)
            inv = _set(inv, (i, j), xp.where(p1, 1 / e2, xp.where(p2, 1 / e1, kottke)))
            cross = _set(cross, (i, j), xp.where(p1 | p2, 0.0, coupling))
        diag.append(inv)
        off.append(cross)
    return diag[0], diag[1], off[0], off[1]
