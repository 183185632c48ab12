"""``modes.solve_scene``: the modes of a plane through an :class:`emjax.scene.Scene`.

The plane is a :class:`Plane` (a centre and a size with one zero entry: the normal, the
propagation axis). Its transverse axes ``(u, v)`` follow the normal cyclically (normal x:
(y, z); y: (z, x); z: (x, y)), so ``u x v`` is the propagation direction; the modes' x, y
are u, v. The scene is rasterized on the section's Yee nodes by :func:`emjax.scene.rasterize`
(one cell thick, at the plane); at the nodes an interface crosses, each component's
permittivity is the diagonal entry of Kottke's averaged tensor for that component, ``1 / eps
= n_c^2 <1/eps> + (1 - n_c^2) / <eps>`` (``n_c`` the normal's component along it), which is
the arithmetic mean for a component tangential to the interface and the harmonic mean for
one normal to it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError, require_finite, require_length, require_positive
from ..materials import DiagonalAnisotropic
from ..scene import PEC, Scene, rasterize
from .grid import PML
from .results import ModeResult
from .solve import check_memory, check_options, run

__all__ = ["Plane", "solve_scene"]

#: transverse axes (u, v) of each normal
_TRANSVERSE = {0: (1, 2), 1: (2, 0), 2: (0, 1)}


@dataclass(frozen=True)
class Plane:
    """A rectangle of the scene: ``center`` (x, y, z) and ``size`` (three lengths, exactly one
    of them 0: the normal, along which the modes propagate)."""

    center: tuple = (0.0, 0.0, 0.0)
    size: tuple = (1.0, 1.0, 0.0)

    def normal(self) -> int:
        c = require_length("Plane.center", self.center, 3, "three numbers (x, y, z)")
        for i, v in enumerate(c):
            require_finite(f"Plane.center[{i}]", v)
        s = require_length("Plane.size", self.size, 3, "three lengths with exactly one 0 (the normal)")
        vals = [require_finite(f"Plane.size[{i}]", v) for i, v in enumerate(s)]
        zeros = [i for i, v in enumerate(vals) if v == 0]
        if len(zeros) != 1 or any(v < 0 for v in vals):
            raise ConfigError(
                f"Plane.size must be three lengths >= 0 with exactly one 0 (the normal), got {self.size!r}"
            )
        return zeros[0]


def _material_eps(m, omega: float, lab_axis: int) -> complex:
    if m is PEC:
        raise ConfigError(
            "scene: a PEC object crosses the mode plane; give the metal a permittivity "
            "(emjax.materials.Drude or a number) or use boundary='pec' for metal walls"
        )
    if isinstance(m, DiagonalAnisotropic):
        return complex(m.components(omega)[lab_axis])
    if hasattr(m, "permittivity"):
        return complex(np.asarray(m.permittivity(omega)))
    return complex(m)


def _node_eps(r, scene: Scene, c: int, lab_axis: int, keep: tuple, transpose: bool, averaging: str):
    """A function of omega: eps at the nodes of raster component ``c`` (2-D, (u, v) order)."""
    label = r.label[c][tuple(keep)]
    label = label.T if transpose else label
    it = r.interface[c]
    idx = it["index"]
    if averaging == "subpixel" and len(idx):
        sel = np.ones(len(idx), bool)
        pos = []
        for ax in range(3):
            k = keep[ax]
            if isinstance(k, int):
                sel &= idx[:, ax] == k
            else:
                sel &= idx[:, ax] < k.stop
            pos.append(idx[:, ax])
        u_ax, v_ax = [ax for ax in range(3) if not isinstance(keep[ax], int)]
        iu, iv = pos[u_ax][sel], pos[v_ax][sel]
        if transpose:
            iu, iv = iv, iu
        own, other, fill = it["own"][sel], it["other"][sel], it["fill"][sel]
        n2 = it["normal"][sel, lab_axis] ** 2

    def at(omega):
        lut = np.array([_material_eps(m, omega, lab_axis) for m in scene.materials])
        eps = lut[label]
        if averaging == "subpixel" and len(idx) and len(own):
            e1, e2 = lut[own], lut[other]
            inv = n2 * (fill / e1 + (1 - fill) / e2) + (1 - n2) / (fill * e1 + (1 - fill) * e2)
            eps[iu, iv] = 1.0 / inv
        return eps

    return at


def solve_scene(
    scene: Scene,
    plane: Plane,
    resolution: float,
    frequency: float,
    num_modes: int = 1,
    *,
    boundary="pec",
    pml: PML | None = None,
    bend_radius: float | None = None,
    bend_axis: int = 0,
    n_guess: float | None = None,
    group_index: bool = True,
    averaging: str = "subpixel",
) -> ModeResult:
    """The modes of ``plane`` through ``scene`` (see the module docstring for the axes).

    ``resolution`` cells per unit length; the plane's two extents are rounded to whole cells
    (the section stays centred on ``plane.center``). The permittivities are the materials' at
    ``omega = 2 pi frequency`` (re-evaluated for the group index, so a dispersive material's
    dispersion enters it); ``averaging``: 'subpixel' (Kottke's tensor's diagonal) or
    'staircase'. The other options and the result are those of :func:`emjax.modes.solve`,
    with x, y the plane's u, v coordinates in the scene's frame.
    """
    if not isinstance(scene, Scene):
        raise ConfigError(f"scene must be an emjax.scene.Scene, got {scene!r}")
    if not isinstance(plane, Plane):
        raise ConfigError(f"plane must be an emjax.modes.Plane, got {plane!r}")
    if scene.traced:
        raise ConfigError(
            f"scene: the mode solver needs concrete scene parameters; {', '.join(scene.traced_names)} "
            "is traced (JAX): pass scene.primal()"
        )
    if averaging not in ("subpixel", "staircase"):
        raise ConfigError(f"averaging must be 'subpixel' or 'staircase', got {averaging!r}")
    normal = plane.normal()
    res = require_positive("resolution", resolution)
    d = 1.0 / res
    u_ax, v_ax = _TRANSVERSE[normal]
    n_u = int(round(float(plane.size[u_ax]) * res))
    n_v = int(round(float(plane.size[v_ax]) * res))
    if min(n_u, n_v) < 3:
        raise ConfigError(
            f"Plane.size: at resolution {res:g} the plane has {n_u} x {n_v} cells; "
            "it needs >= 3 along each axis"
        )
    num_modes, walls, sides, reflection, bend_radius, n_guess = check_options(
        (n_u, n_v), res, frequency, num_modes, boundary, pml, bend_radius, bend_axis, n_guess
    )
    check_memory((n_u, n_v), num_modes)  # before the raster
    c = [float(v) for v in plane.center]
    lo_u, lo_v = c[u_ax] - n_u * d / 2, c[v_ax] - n_v * d / 2
    shape = [0, 0, 0]
    shape[u_ax], shape[v_ax], shape[normal] = n_u + 1, n_v + 1, 1
    origin = [0.0, 0.0, 0.0]
    origin[u_ax], origin[v_ax], origin[normal] = lo_u, lo_v, c[normal]
    transpose = u_ax > v_ax
    r_t = rasterize(scene, tuple(shape), d, tuple(origin), averaging=averaging, components=(u_ax, v_ax))
    origin[normal] = c[normal] - d / 2  # the normal component's nodes on the plane too
    r_n = rasterize(scene, tuple(shape), d, tuple(origin), averaging=averaging, components=(normal,))

    def keep(nu, nv):
        k = [0, 0, 0]
        k[u_ax], k[v_ax], k[normal] = slice(0, nu), slice(0, nv), 0
        return k

    at_x = _node_eps(r_t, scene, u_ax, u_ax, keep(n_u, n_v + 1), transpose, averaging)
    at_y = _node_eps(r_t, scene, v_ax, v_ax, keep(n_u + 1, n_v), transpose, averaging)
    at_z = _node_eps(r_n, scene, normal, normal, keep(n_u + 1, n_v + 1), transpose, averaging)
    omega = 2 * math.pi * frequency
    for name, at in (("x", at_x), ("y", at_y), ("z", at_z)):
        e = at(omega)
        if not np.all(np.isfinite(e)) or np.any(e == 0):
            raise ConfigError(
                f"scene: the permittivity on the plane ({name} nodes) must be finite and nonzero"
            )
    return run(
        (n_u, n_v),
        res,
        float(frequency),
        lambda omega: (at_x(omega), at_y(omega), at_z(omega)),
        num_modes,
        walls,
        sides,
        reflection,
        bend_radius,
        bend_axis,
        n_guess,
        bool(group_index),
        origin=(lo_u, lo_v),
    )
