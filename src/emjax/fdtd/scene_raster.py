"""The scene of a physical :class:`~emjax.fdtd.Simulation` as the cell-index spec's
materials (emjax.scene rasterizes; this module maps its result onto the FDTD update).

Rules at an interface node (fill fraction ``f`` of the node's own material, normal ``n``):

* two dielectrics (real eps >= 1): Farjadpour-Kottke's inverse tensor, off-diagonal terms
  included (second order; the :class:`~emjax.fdtd.SubpixelBox`);
* a one-pole Drude/Lorentz medium against a dielectric (averaging "subpixel"): the node
  becomes the anisotropic medium ``eps_t (I - n n) + eps_n n n`` of Kottke's two mixtures,
  each one pole again (subpixel.mixed_poles; Liu, Brio & Moloney, Opt. Lett. 37, 4802 (2012)),
  with its polarizations kept per node: second order (a Drude sphere at 10 cells
  per radius: peak +0.04% in frequency, -0.08% in height; an oblique TM Drude film vs Airy
  4e-4, tests/fdtd/test_physical.py);
* a medium of several poles, or any dispersive medium staircased: a node takes the medium
  when at least half its dual cell is in it (at each component's own node: first order; the
  Drude sphere's peak 15% low at 10 cells per radius);
* PEC: a node is perfectly conducting when at least half its dual cell is (staircase at each
  component's own node: first order; a conformal Dey-Mittra rule is not done).

With ``averaging="diagonal"`` each dielectric interface node takes ``1 / eps_inv[c, c]`` of
the same tensor as its E_c's own eps (per-node arrays, ``(3, nx, ny, nz)``, and no box: the
blocked kernel carries it); the off-diagonal terms are dropped, which is exact where the
interface is normal to an axis. Drude/Lorentz media are refused there (use "subpixel").

Without averaging every node takes the material at its own position (not the cell centre's).
"""

from __future__ import annotations

import numpy as np

from ..errors import ConfigError, ResourceError
from ..materials import Constant, Dispersive, DrudePole, LorentzPole
from .subpixel import interface_poles


def _one_pole(m):
    """``(eps_inf, strength, omega_0)`` of a one-pole Drude or Lorentz medium, else None."""
    if not isinstance(m, Dispersive) or len(m.poles) != 1:
        return None
    p = m.poles[0]
    if isinstance(p, DrudePole):
        return m.eps_inf, p.omega_p**2, 0.0
    return m.eps_inf, p.delta_eps * p.omega_0**2, p.omega_0


def pole_gamma(m) -> float:
    return float(m.poles[0].gamma)


def _kind(m) -> str:
    from ..scene import PEC

    if m is PEC:
        return "pec"
    if isinstance(m, (int, float)):
        if m < 1:
            raise ConfigError(f"FDTD: permittivity {m} < 1: give metals as materials.Drude(...) or scene.PEC")
        return "dielectric"
    if isinstance(m, Constant):
        e = complex(np.asarray(m.permittivity(1.0)))  # a 0-d array: as a number
        return _kind(e.real) if e.imag == 0 else "complex"
    if isinstance(m, Dispersive) and all(isinstance(p, (DrudePole, LorentzPole)) for p in m.poles):
        return "dispersive"
    if isinstance(m, complex):
        return "complex"
    raise ConfigError(
        f"FDTD cannot step material {m!r}: use real eps >= 1, materials.Drude/Lorentz, or scene.PEC"
    )


def _eps(m) -> float:
    return float(np.real(m.permittivity(1.0))) if isinstance(m, Constant) else float(m)


#: Host bytes per cell that rasterizing a scene peaks at: node labels (int32) and the stacked
#: node permittivities and PEC flags with their temporaries; a Drude/Lorentz medium adds its
#: fill masks and each further object the neighbourhood search over its box. Measured with
#: tracemalloc on 80^3-140^3 grids (peaks of 60, 89 and 121 bytes per cell for a dielectric
#: sphere, a Drude sphere, and a Drude sphere with a dielectric one).
RASTER_BYTES_PER_CELL = 64
RASTER_BYTES_DISPERSIVE = 32
RASTER_BYTES_PER_EXTRA_OBJECT = 32


def host_bytes(sim) -> int:
    """Estimated host memory that :func:`materials` peaks at for the physical ``sim``."""
    if sim.scene is None:
        return 0
    per_cell = RASTER_BYTES_PER_CELL
    if any(isinstance(m, Dispersive) for m in sim.scene.materials):
        per_cell += RASTER_BYTES_DISPERSIVE
    per_cell += RASTER_BYTES_PER_EXTRA_OBJECT * max(0, len(sim.scene.objects) - 1)
    return per_cell * sim.grid.n_cells


def check_memory(sim) -> None:
    """Refuse (:class:`ResourceError`, needed vs available) a physical ``sim`` whose scene
    rasterization, plus the run itself where the device is the host's memory (CPU), cannot
    fit in the available host memory: before any grid-sized array exists."""
    import jax

    from ..backend import host_available_bytes
    from .spec import state_bytes

    g = sim.grid
    raster = host_bytes(sim)
    on_host = jax.default_backend() == "cpu"
    run = state_bytes(g, 12 if sim.scene is not None else 6) if on_host else 0
    needed = raster + run
    available = host_available_bytes()
    if needed > 0.9 * available:
        shape = "x".join(map(str, g.shape))
        parts = [f"{raster / 1e9:.1f} GB to rasterize the scene"] if raster else []
        parts += [f"{run / 1e9:.1f} GB for the fields and coefficients"] if run else []
        hint = " or use single precision" if g.precision == "double" and run else ""
        raise ResourceError(
            f"FDTD grid {shape} ({g.n_cells:.3g} cells at resolution {sim.resolution:g}) needs "
            f"about {needed / 1e9:.1f} GB of host memory ({' + '.join(parts)}) but "
            f"{available / 1e9:.1f} GB are available (limit 90%); lower the resolution or the "
            f"size{hint}"
        )


def materials(sim, tf=None) -> dict:
    """Keyword arguments ``eps``, ``subpixel``, ``dispersive``, ``pec`` for GridSimulation."""
    from ..scene import rasterize
    from .subpixel import SubpixelBox

    if sim.scene is None:
        return {}
    g = sim.grid
    origin = np.asarray(sim.origin)
    from .grid import CPML, Bloch, Periodic

    lo = origin + np.array([p[0] for p in sim.pml_cells]) * g.dx
    hi = origin + np.array([n - p[1] for n, p in zip(g.shape, sim.pml_cells)]) * g.dx
    periodic = np.array([isinstance(b, (Periodic, Bloch)) for b in g.boundary])
    for i, o in enumerate(sim.scene.objects):  # nothing wholly outside the region
        a, b = o.bounds()
        if np.any((b <= lo) | (a >= hi)):
            raise ConfigError(
                f"Scene.objects[{i}] ({o.shape.name}, bounds {np.round(a, 6).tolist()} .. "
                f"{np.round(b, 6).tolist()}) lies outside the simulated region "
                f"{np.round(lo, 6).tolist()} .. {np.round(hi, 6).tolist()}: it would not be simulated"
            )
    # objects may cross a periodic cell's faces, and run into a CPML (a waveguide through a
    # port: the CPML absorbs what it guides); a PEC wall's face they must not cross
    cpml = np.array([isinstance(b, CPML) for b in g.boundary])
    lo = np.where(periodic | cpml, -np.inf, lo)
    hi = np.where(periodic | cpml, np.inf, hi)
    sim.scene.check_inside(lo, hi, "the simulated region (the CPML excluded)")
    if tf is not None:
        tf_lo = origin + np.asarray(tf.lo) * g.dx
        tf_hi = origin + np.asarray(tf.hi) * g.dx
        sim.scene.check_inside(tf_lo + 2 * g.dx, tf_hi - 2 * g.dx, "the PlaneWaveSource box (less two cells)")
    from .scene_traced import materials_traced, traced_scene

    if traced_scene(sim.scene):  # jax.grad over a material's value: eps as a JAX array
        return materials_traced(sim, tf)
    mats = sim.scene.materials
    kinds = [_kind(m) for m in mats]
    if "complex" in kinds:
        raise ConfigError(
            "FDTD: a complex permittivity has no time-domain model; fit it with materials.Drude/Lorentz"
        )
    disp = [i for i, k in enumerate(kinds) if k == "dispersive"]
    if len(disp) > 1:
        raise ConfigError("FDTD: at most one Drude/Lorentz material per scene (this version)")
    diagonal = sim.averaging == "diagonal"
    if diagonal and disp:
        raise ConfigError(
            'averaging="diagonal" does not take Drude/Lorentz media (their interface nodes need '
            'the anisotropic pole update): use averaging="subpixel" for this scene'
        )
    r = rasterize(sim.scene, g.shape, g.dx, sim.origin, averaging="subpixel" if diagonal else sim.averaging)
    eps_lut = np.array([_eps(m) if k == "dielectric" else 1.0 for m, k in zip(mats, kinds)])
    if kinds[0] == "dispersive":
        eps_lut[0] = 1.0
    is_pec = np.array([k == "pec" for k in kinds])
    eps = np.stack([eps_lut[lab] for lab in r.label])
    pec = np.stack([is_pec[lab] for lab in r.label])
    w = np.stack([(lab == disp[0]).astype(float) for lab in r.label]) if disp else None
    tensors = []
    pole_nodes = [None, None, None]  # per component: [(index, normal, eps_inf tensor^-1, par, perp, c2)]
    for c in range(3):
        it = r.interface[c]
        if not len(it["fill"]):
            tensors.append(None)
            continue
        idx = tuple(it["index"].T)
        own, other, f = it["own"], it["other"], it["fill"]
        k_own, k_oth = np.array(kinds)[own], np.array(kinds)[other]
        pec_share = np.where(is_pec[own], f, 0.0) + np.where(is_pec[other], 1 - f, 0.0)
        pec[c][idx] = pec_share >= 0.5
        poles_here = None
        if disp:
            d_share = np.where(own == disp[0], f, 0.0) + np.where(other == disp[0], 1 - f, 0.0)
            w[c][idx] = np.where(pec[c][idx], 0.0, (d_share >= 0.5).astype(float))
            partner = np.where(own == disp[0], other, own)
            eps[c][idx] = np.where(d_share > 0, eps_lut[partner], eps[c][idx])
            pole = _one_pole(mats[disp[0]]) if sim.averaging == "subpixel" else None
            if pole is not None:
                sel = (d_share > 0) & (np.array(kinds)[partner] == "dielectric")
                for eps_b in np.unique(eps_lut[partner[sel]]):
                    on = sel & (eps_lut[partner] == eps_b)
                    t_inv, par, perp, c2 = interface_poles(
                        d_share[on], it["normal"][on], eps_b, *pole, gamma=pole_gamma(mats[disp[0]]), dt=g.dt
                    )
                    poles_here = poles_here or []
                    poles_here.append((it["index"][on], it["normal"][on], t_inv, par, perp, c2))
                    w[c][tuple(it["index"][on].T)] = 0.0
        both = (k_own == "dielectric") & (k_oth == "dielectric")
        if np.any(both):
            kt = r.kottke(c, lambda m: eps_lut[m])
            tensors.append((it["index"][both], kt["eps_inv"][both]))
        else:
            tensors.append(None)
        if poles_here:
            pole_nodes[c] = poles_here
    if diagonal:  # Kottke's tensor's diagonal at the interface nodes: per-node eps, no box
        for c, t in enumerate(tensors):
            if t is not None:
                eps[c][tuple(t[0].T)] = 1.0 / t[1][:, c, c]
        out = {"eps": eps if np.any(eps != 1) else 1.0, "subpixel": None}
        if np.any(pec):
            out["pec"] = pec
        return out
    # a one-pole medium whose interfaces are all in the box: the bulk takes it per cell (where
    # all three nodes are in it); its other nodes join the box as pure pole nodes (fill 1),
    # so the bulk reads one coefficient array per pole, not one per component
    pole = _one_pole(mats[disp[0]]) if disp and sim.averaging == "subpixel" else None
    per_cell_poles = pole is not None and not np.any(pec)
    if per_cell_poles:
        full = (w[0] == 1) & (w[1] == 1) & (w[2] == 1)
        for c in range(3):
            extra = np.argwhere((w[c] == 1) & ~full)
            if len(extra):
                up = np.tile([0.0, 0.0, 1.0], (len(extra), 1))
                t_inv, par, perp, c2 = interface_poles(
                    np.ones(len(extra)), up, 1.0, *pole, gamma=pole_gamma(mats[disp[0]]), dt=g.dt
                )
                pole_nodes[c] = (pole_nodes[c] or []) + [(extra, up, t_inv, par, perp, c2)]
        w = full.astype(float)
    # the bulk reads one coefficient array: the cell takes its E_x node's eps; E_y and E_z
    # nodes that differ from it, and the interface tensors, go into the sparse box
    cell = eps[0]
    differs = [np.zeros(g.shape, bool)] + [(eps[c] != cell) & ~pec[c] for c in (1, 2)]
    if disp and not per_cell_poles:  # then eps goes per node (the dispersive update is per node)
        differs = [np.zeros(g.shape, bool)] * 3
    pts = [np.argwhere(d) for d in differs] + [t[0] for t in tensors if t is not None]
    pts += [q[0] for nodes in pole_nodes if nodes for q in nodes]
    pts = [q for q in pts if len(q)]
    subpixel = None
    per_node = bool(disp) and not per_cell_poles
    if pts:
        allidx = np.concatenate(pts)
        blo, bhi = allidx.min(axis=0), allidx.max(axis=0) + 1
        for ax in range(3):
            if g.shape[ax] == 1:
                blo[ax], bhi[ax] = 0, 1
        pml = [max(p) for p in sim.pml_cells]  # as SubpixelBox.check
        for ax in range(3):  # near a periodic cell's face the box spans the axis (it wraps)
            if periodic[ax] and g.shape[ax] > 1 and (blo[ax] < 2 or bhi[ax] > g.shape[ax] - 2):
                blo[ax], bhi[ax] = 0, g.shape[ax]
        bare = [isinstance(b, CPML) and "lo" not in b.faces for b in g.boundary]  # a wall at i = 0
        reaches_edge = any(
            n > 1 and not (per and a == 0 and b == n) and (a < (0 if lo_bare else 2 + L) or b > n - 2 - L)
            for a, b, n, L, per, lo_bare in zip(blo, bhi, g.shape, pml, periodic, bare)
        )
        if reaches_edge and (any(tt is not None for tt in tensors) or any(pole_nodes)):
            raise ConfigError(
                "subpixel averaging at an interface within two cells of the CPML is not supported: "
                'keep the objects two cells away from it, or use averaging="diagonal" or "staircase"'
            )
        if reaches_edge:  # staircase only: per-node eps arrays instead of the box
            pts, per_node = [], True
    if pts:
        sl = tuple(slice(a, b) for a, b in zip(blo, bhi))
        shape = tuple(bhi - blo)
        inv = np.zeros((3, 3) + shape)
        active = np.zeros((3,) + shape, bool)
        for c in range(3):
            inv[c, c] = 1.0 / eps[c][sl]
            active[c] = differs[c][sl]
            if tensors[c] is None:
                continue
            i = tuple((tensors[c][0] - blo).T)
            inv[(c, slice(None)) + i] = tensors[c][1][:, c, :]  # (M, 3): row c at each node
            active[(c,) + i] = True
        poles = None
        if any(pole_nodes):
            poles = {"normal": np.zeros((3, 3) + shape), "par": np.zeros((2, 3) + shape)}
            poles["perp"] = np.zeros((2, 3) + shape)
            for c in range(3):
                for index, normal, t_inv, par, perp, c2 in pole_nodes[c] or ():
                    i = tuple((index - blo).T)
                    inv[(c, slice(None)) + i] = t_inv[:, c, :]
                    active[(c,) + i] = True
                    unit = normal / np.linalg.norm(normal, axis=-1, keepdims=True)
                    poles["normal"][(c, slice(None)) + i] = unit
                    poles["par"][(slice(None), c) + i] = par
                    poles["perp"][(slice(None), c) + i] = perp
                    poles["c2"] = c2
        subpixel = SubpixelBox(tuple(int(v) for v in blo), inv, active, poles)
    eps_out = eps if per_node else cell  # per node: dispersive nodes' partners, or no box
    out = {"eps": eps_out if np.any(eps_out != 1) else 1.0, "subpixel": subpixel}
    if np.any(pec):
        out["pec"] = pec
    if disp and np.any(w):
        out["dispersive"] = (mats[disp[0]], w)
    return out
