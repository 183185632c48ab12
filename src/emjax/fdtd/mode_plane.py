"""Waveguide modes on a plane of a physical FDTD :class:`~emjax.fdtd.Simulation`'s grid.

The modes are solved by :func:`emjax.modes.solve_scene` on the plane's own cells (the
section's nodes are the FDTD's: the tangential E and H nodes of the plane coincide with the
mode solver's Yee nodes), at the frequency the FDTD's discrete time derivative sees,
``f~ = sin(pi f dt) / (pi dt)``: the semi-discrete FDTD's eigenmode along the normal is
then the solver's mode with the solver's ``beta`` as ``(2 / dx) sin(beta_d dx / 2)``, so
the FDTD's own propagation constant is ``beta_d = (2 / dx) asin(beta dx / 2)``.

Each mode is returned on the plane's samples as a :class:`~emjax.fdtd.monitors.DFTPlane`
stores them: the two tangential components ``(t1, t2) = TANGENTIAL[axis]`` of E and H, each
``(n1 + 1, n2 + 1)`` over nodes ``lo .. hi`` of the plane's two tangential axes in
increasing axis order. It is normalized so that its flux through the plane as the FDTD's
flux monitors measure it (H averaged over the two H planes around the E plane, which
multiplies a mode's H by ``cos(beta_d dx / 2)``) is 1: ``cos(beta_d dx / 2) (1/2) Re sum w
(e_t1 h_t2* - e_t2 h_t1*) dA = 1`` (weights :func:`emjax.fdtd.monitors.weights`).

Under ``jax.grad`` over scene parameters (a traced scene) the modes are solved on the
scene's values (:meth:`emjax.scene.Scene.primal`) and held fixed: they carry no derivative.
That is exact where the design does not reach the plane (a port's plane on a waveguide
outside the design region), and :func:`solve` refuses, naming the object, a plane that a
traced object (its geometry or its material) comes within a cell of, or a traced background.

On a 2-D grid (a one-cell periodic axis) the section is three cells thick along that axis,
solved twice: with PMC walls there (the modes with E across that axis, uniform along it)
and with PEC walls (E along it); the modes uniform along the axis from both, by decreasing
``Re n_eff``. The FDTD plane's two samples along the axis are the same value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError
from ..tracing import is_traced
from .grid import Bloch, Periodic
from .monitors import TANGENTIAL, weights


@dataclass(frozen=True)
class PlaneModes:
    """Modes on an FDTD plane (see the module docstring): ``e``, ``h`` (M, 2, n1 + 1, n2 + 1)
    complex; ``n_eff`` (M,) the solver's at ``f~``; ``beta_d`` (M,) the FDTD's propagation
    constant; ``cos_half`` (M,) ``cos(beta_d dx / 2)``."""

    e: np.ndarray
    h: np.ndarray
    n_eff: np.ndarray
    beta_d: np.ndarray
    cos_half: np.ndarray
    frequency: float


def plane_cells(sim, center, size, what: str) -> tuple:
    """``(axis, index, lo, hi)`` of the rectangle ``center, size`` (one size 0): the E plane
    nearest the centre along the normal, the cell ranges ``[lo, hi)`` across it (inside the
    region, CPML excluded)."""
    ax = list(size).index(0.0)
    box = list(size)
    box[ax] = 4 * sim.dx  # for the checks only
    lo, hi = sim._box_cells(center, box, what)
    index = sim._cell(center[ax], ax)
    lo, hi = list(lo), list(hi)
    lo[ax], hi[ax] = index, index + 1
    return ax, index, tuple(lo), tuple(hi)


def _trivial(sim, ax: int) -> bool:
    b = sim.grid.boundary[ax]
    return sim.grid.shape[ax] == 1 and (isinstance(b, Periodic) or (isinstance(b, Bloch) and b.k == 0))


def _uniform(a, pos: int, scale: float) -> bool:
    """Whether the Yee array ``a`` (nu or nu + 1, nv or nv + 1) is constant along axis
    ``pos`` to ``1e-6 scale`` (3 cells: its interior samples; the wall samples of a node
    axis left out)."""
    a = np.moveaxis(a, pos, 0)
    inner = a[1:-1] if a.shape[0] == 4 else a
    return float(np.abs(inner - inner[:1]).max()) <= 1e-6 * scale


def _fixed_scene(scene, center, size, axis: int, dx: float):
    """The scene the plane's modes are solved on: ``scene`` itself, or where it holds JAX
    tracers its values (the modes held fixed), after checking that no traced object comes
    within a cell of the plane's rectangle ``center, size`` (module docstring)."""
    if not scene.traced:
        return scene
    where = f"the mode plane at {'xyz'[axis]} = {center[axis]:.6g}"
    if is_traced(scene.background):
        raise ConfigError(
            f"{where}: the scene's background permittivity is traced (jax.grad), but a mode "
            "monitor's or source's mode profile is held fixed: keep the background concrete"
        )
    lo = np.asarray(center) - np.asarray(size) / 2 - dx
    hi = np.asarray(center) + np.asarray(size) / 2 + dx
    for i, o in enumerate(scene.objects):
        if not (o.traced or any(is_traced(m) for m in o.material)):
            continue
        a, b = o.bounds()
        if np.all(a <= hi) and np.all(b >= lo):
            raise ConfigError(
                f"{where}: Scene.objects[{i}] has traced parameters (jax.grad) and reaches the "
                "plane (within a cell), but a mode monitor's or source's mode profile is held "
                "fixed (no derivative): keep the design region away from the mode planes"
            )
    return scene.primal()


def _section(sim, axis: int, lo: tuple, hi: tuple, index: int) -> tuple:
    """The mode solver's section of the plane: ``center``, ``size`` (lists of 3) and the
    positions (0, 1) of the tangential axes that are a 2-D grid's invariant axis."""
    dx, o = sim.dx, sim.origin
    center, size, flat = [0.0] * 3, [0.0] * 3, []
    for pos, t in enumerate(TANGENTIAL[axis]):
        if _trivial(sim, t):
            center[t], size[t] = o[t] + 1.5 * dx, 3 * dx
            flat.append(pos)
        else:
            center[t] = o[t] + 0.5 * (lo[t] + hi[t]) * dx
            size[t] = (hi[t] - lo[t]) * dx
    center[axis] = o[axis] + index * dx
    return center, size, flat


def check_fixed(sim, axis: int, lo: tuple, hi: tuple, index: int) -> None:
    """Before a run: refuse a traced design within a cell of the plane (its modes are held
    fixed; :func:`_fixed_scene`)."""
    if sim.scene is not None and sim.scene.traced:
        center, size, _ = _section(sim, axis, lo, hi, index)
        _fixed_scene(sim.scene, center, size, axis, sim.dx)


def solve(sim, axis: int, lo: tuple, hi: tuple, index: int, frequency: float, num_modes: int) -> PlaneModes:
    """The ``num_modes`` best-guided modes (largest ``Re n_eff``) of the plane at
    ``frequency`` (the FDTD's frequency; solved at ``f~``)."""
    from ..modes import Plane, solve_scene

    if sim.scene is None:
        raise ConfigError("mode sources and monitors need a scene (a waveguide) in the Simulation")
    dx, dt = sim.dx, sim.grid.dt
    f_tilde = math.sin(math.pi * frequency * dt) / (math.pi * dt)
    u, v = TANGENTIAL[axis]
    center, size, flat = _section(sim, axis, lo, hi, index)
    scene = _fixed_scene(sim.scene, center, size, axis, dx)
    # a 2-D grid's invariant axis: PMC walls there keep the modes with E across it uniform,
    # PEC walls those with E along it; both families, the uniform modes only
    families = [("pec",)] if not flat else [("pmc",), ("pec",)]
    n_eff, fields = [], []
    for (wall,) in families:
        walls = []
        for pos in range(2):
            walls += [wall, wall] if pos in flat else ["pec", "pec"]
        try:
            r = solve_scene(
                scene,
                Plane(tuple(center), tuple(size)),
                sim.resolution,
                f_tilde,
                num_modes,
                boundary=tuple(walls),
                group_index=False,
                # the plane's solver takes Kottke's tensor's diagonal: "diagonal" is its subpixel
                averaging="subpixel" if sim.averaging == "diagonal" else sim.averaging,
            )
        except ConfigError as exc:
            raise ConfigError(f"the mode plane at {'xyz'[axis]} = {center[axis]:.6g}: {exc}") from None
        for m in range(len(r.n_eff)):
            f = [r.E_yee[0][m], r.E_yee[1][m], r.H_yee[0][m], r.H_yee[1][m]]
            scale = max(float(np.abs(a).max()) for a in f)
            if all(_uniform(a, pos, scale) for a in f for pos in flat):
                n_eff.append(r.n_eff[m])
                fields.append(f)
    order = np.argsort(-np.real(n_eff), kind="stable")[:num_modes]
    if len(order) < num_modes:
        raise ConfigError(
            f"the mode plane at {'xyz'[axis]} = {center[axis]:.6g}: fewer than {num_modes} modes "
            "uniform along the 2-D grid's invariant axis"
        )
    n_eff = np.array(n_eff)[order]
    nu, nv = int(round(size[u] / dx)), int(round(size[v] / dx))
    # (u, v) samples lo .. hi inclusive; the Yee arrays' nodes start at lo
    shapes = (nu + 1, nv + 1)

    def place(k):  # component k of the kept modes -> (M, nu + 1, nv + 1), zero beyond
        out = np.zeros((len(order), *shapes), complex)
        for row, m in enumerate(order):
            a = fields[m][k]
            out[row, : a.shape[0], : a.shape[1]] = a
        return out

    e = np.stack([place(0), place(1)], 1)  # (M, 2, nu + 1, nv + 1)
    h = np.stack([place(2), place(3)], 1)
    for pos in flat:  # a 2-D grid's invariant axis: two equal samples
        sl = [slice(None)] * 4
        sl[2 + pos] = slice(1, 2)  # an interior sample
        e = np.repeat(e[tuple(sl)], 2, axis=2 + pos)
        h = np.repeat(h[tuple(sl)], 2, axis=2 + pos)
    if u > v:  # the plane's arrays are in increasing axis order
        e, h = np.swapaxes(e, 2, 3), np.swapaxes(h, 2, 3)
    beta = 2 * math.pi * f_tilde * n_eff
    if np.any(beta.real * dx / 2 >= 1):  # beyond the grid's band edge: no propagating FDTD mode
        raise ConfigError(
            f"the mode plane at {'xyz'[axis]} = {center[axis]:.6g}: the mode's wavelength along the "
            f"guide, {1 / (f_tilde * float(np.max(n_eff.real))):.4g}, is under pi cells (the Yee grid "
            f"carries no such wave): raise resolution (now {sim.resolution:g})"
        )
    arg = np.clip(beta.real * dx / 2, -1.0, 1.0)
    beta_d = 2 / dx * np.arcsin(arg)
    cos_half = np.cos(beta_d * dx / 2)
    w1, w2 = weights(e.shape[2:], axis)
    p = 0.5 * np.real(np.sum(w1 * e[:, 0] * h[:, 1].conj() - w2 * e[:, 1] * h[:, 0].conj(), axis=(1, 2)))
    norm = np.sqrt(cos_half * p * dx * dx)
    if np.any(~np.isfinite(norm)) or np.any(norm <= 0):
        raise ConfigError(
            f"the mode plane at {'xyz'[axis]} = {center[axis]:.6g}: a mode carries no power "
            "forward on the grid (not guided: enlarge the plane or check the scene)"
        )
    e = e / norm[:, None, None, None]
    h = h / norm[:, None, None, None]
    return PlaneModes(e, h, n_eff, beta_d, cos_half, float(frequency))
