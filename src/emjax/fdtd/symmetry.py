"""Mirror symmetry planes for the physical-unit FDTD (:class:`~emjax.fdtd.Simulation`'s
``symmetry``).

``symmetry = (sx, sy, sz)``: per axis 0 (none), -1 or +1, a mirror plane normal to that
axis through the region's centre. The value is Meep's phase: the sign that the E components
*parallel to the plane* take under the reflection, ``E_t(mirror r) = s E_t(r)`` (the normal
component then has ``E_n(mirror r) = -s E_n(r)``; H, a pseudovector, the opposite signs:
``H_t(mirror r) = -s H_t(r)``, ``H_n(mirror r) = s H_n(r)``). -1 (odd): tangential E
vanishes on the plane, a perfect electric conductor (PEC). +1 (even): tangential H (and
normal E) vanish on it, a perfect magnetic conductor (PMC).

The run covers only the upper half along each symmetric axis, with the CPML on the high
face only. The Yee grid is symmetric about its E planes and about its H planes, so each
wall goes where its zero field lives: an odd plane is the E plane ``i = 0`` of the reduced
grid (the PEC wall every walled axis already has), an even one the H plane ``i = 1/2``
(:class:`~emjax.fdtd.grid.CPML` ``wall="pmc"``). So the region must span an even number of
cells along an odd axis and an odd number along an even one, and the half run reproduces
the full one's discrete fields to rounding. Results are given for the whole domain: a flux
monitor cut by a plane counts twice per plane (the plane itself carries no flux), its half
taken from the plane to its high face (a box snapped half a cell off the plane is taken
symmetric about it), a flux plane in the removed half is its mirror image's with the sign
flipped, and a probe in the removed half reads its mirror node times the component's
parity. The final fields (``Result.raw.E``, ``.H``) are the
half domain's, on the grid of ``Result.simulation`` (the reduced simulation that ran; the
one you gave is ``Result.symmetry.full``).

Sources must be symmetric: a dipole on a plane must have the plane's parity (along the
normal for odd, parallel to it for even: its nodes then lie half a cell off the plane, and
its current is split between the two either side, so it sits on the plane exactly; a
full-domain run snaps it to one of them); a dipole off a plane needs its mirror image (same
waveform, amplitude times the parity) among the sources; a plane wave must travel parallel
to every plane, polarized along the normal of each odd one and parallel to each even one,
its box centred on the planes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .. import mirror
from ..errors import ConfigError
from ..mirror import ALLOWED
from .grid import CPML
from .monitors import DFTPlane, box_flux, flux_box
from .spec import Probe
from .tfsf import TFSF


def check_values(value) -> tuple:
    """The symmetry tuple as three ints, or one ConfigError line."""
    return mirror.check_values(value, 3, named=False)


@dataclass(frozen=True)
class Folded:
    """A monitor's DFT planes in the reduced grid: ``planes`` (indices into the grid
    simulation's monitors, None for a face on a mirror plane, which carries no flux),
    ``factor`` the full-domain flux over the reduced one's (2 per cutting plane, -1 for
    a plane mirrored from the removed half), ``axis`` a plane's normal (None for a box),
    ``area`` the full plane's area in cells."""

    planes: tuple
    factor: float
    axis: int | None = None
    area: float | None = None

    def flux(self, raw, other=None) -> np.ndarray:
        def one(i):
            if i is None:
                return 0.0
            return raw.flux(i) if other is None else raw.flux_difference(other, i)

        parts = [one(i) for i in self.planes]
        return self.factor * (parts[0] if self.axis is not None else box_flux(parts))

    @property
    def first(self) -> int:
        return next(i for i in self.planes if i is not None)


@dataclass(frozen=True, eq=False)
class Reduction:
    """How a symmetric :class:`Simulation` maps onto the half domain that runs."""

    full: object  # the Simulation given
    half: object  # the reduced Simulation (symmetry 0): its grid is the one that ran
    offsets: tuple  # per axis: full-grid index of the reduced grid's index 0
    probe_signs: tuple


def _tol(sim) -> float:
    return 1e-6 * sim.dx


def _parity(sign: int, comp: int, axis: int) -> int:
    """The factor an E component picks up between a point and its mirror image."""
    return sign * (-1 if comp == axis else 1)


def _reduce_dipoles(sim, dipoles):
    out = list(dipoles)
    for a, s in enumerate(sim.symmetry):
        if s == 0:
            continue
        c0, kept = sim.center[a], []
        for d in out:
            comp = "xyz".index(d.component) if isinstance(d.component, str) else int(d.component)
            p = _parity(s, comp, a)
            if abs(d.position[a] - c0) <= _tol(sim):
                if p != 1:
                    raise ConfigError(
                        f"symmetry: a Dipole along {'xyz'[comp]} on the {'xyz'[a]} mirror plane is "
                        f"{'odd' if s == 1 else 'even'} under it, so symmetry[{a}] must be {-s:+d} "
                        f"or 0 here (allowed values: {ALLOWED})"
                    )
                pos = list(d.position)
                pos[a] = c0 + 0.5 * sim.dx  # its nodes lie at +-dx/2: the current split over them
                kept.append(replace(d, position=tuple(pos), amplitude=0.5 * d.amplitude))
                continue
            mirror = list(d.position)
            mirror[a] = 2 * c0 - d.position[a]
            twin = [
                e
                for e in out
                if e.component == d.component
                and e.waveform == d.waveform
                and np.allclose(e.position, mirror, rtol=0, atol=_tol(sim))
                and math.isclose(e.amplitude, p * d.amplitude, rel_tol=1e-9)
            ]
            if not twin:
                raise ConfigError(
                    f"symmetry: the Dipole at {d.position} has no mirror image across the "
                    f"{'xyz'[a]} plane (at {tuple(mirror)}, amplitude {p * d.amplitude:g}); add it or "
                    f"set symmetry[{a}] = 0 (allowed values: {ALLOWED})"
                )
            if d.position[a] > c0:
                kept.append(d)
        out = kept
    return out


def _check_plane_wave(sim, s):
    for a, sign in enumerate(sim.symmetry):
        if sign == 0:
            continue
        pol = np.asarray(s.polarization, float)
        wrong = np.any(np.abs(np.delete(pol, a)) > 1e-12) if sign == -1 else abs(pol[a]) > 1e-12
        if abs(s.direction[a]) > 1e-12 or wrong or abs(s.center[a] - sim.center[a]) > _tol(sim):
            kind, pol_txt = ("odd", f"along {'xyz'[a]}") if sign == -1 else ("even", f"normal to {'xyz'[a]}")
            raise ConfigError(
                f"symmetry: a PlaneWaveSource is {kind} under the {'xyz'[a]} mirror only if it travels "
                f"parallel to the plane, polarized {pol_txt}, its box centred on the plane; "
                f"set symmetry[{a}] (allowed values: {ALLOWED}) to match"
            )


def validate(sim) -> None:
    """Refuse what the half domain cannot represent (one ConfigError line)."""
    from .physical_parts import CrossSections, Dipole, FieldPlane, FluxBox, FluxPlane, PlaneWaveSource

    for a, s in enumerate(sim.symmetry):
        if s == 0:
            continue
        b = sim.boundary[a]
        if not (isinstance(b, CPML) and b.sides == "both"):
            raise ConfigError(f"symmetry along {'xyz'[a]} needs a CPML on both faces of that axis, got {b!r}")
        if sim.interior_cells[a] % 2 != (s == 1):
            raise ConfigError(
                f"symmetry {s:+d} along {'xyz'[a]}: size * resolution must be an "
                f"{'odd' if s == 1 else 'even'} number of cells (the mirror plane is "
                f"{'an H' if s == 1 else 'an E'} plane), got {sim.interior_cells[a]}"
            )
    for src in sim.sources:
        if isinstance(src, PlaneWaveSource):
            _check_plane_wave(sim, src)
        elif not isinstance(src, Dipole):
            raise ConfigError(f"symmetry: only Dipole and PlaneWaveSource sources, got {type(src).__name__}")
    _reduce_dipoles(sim, [x for x in sim.sources if isinstance(x, Dipole)])
    _check_scene(sim)
    for m in sim.monitors:
        if isinstance(m, FieldPlane) or type(m) not in (FluxBox, FluxPlane, CrossSections):
            raise ConfigError(
                f"symmetry: monitors must be FluxBox, FluxPlane or CrossSections, got {type(m).__name__}"
            )


def _check_scene(sim, samples: int = 4000) -> None:
    """The scene must be its own mirror image: its material at random points in (and
    around) each object and at their mirror images must agree."""
    sc = sim.scene
    if sc is None or not sc.objects:
        return
    if sc.traced:
        sc = sc.primal()
    rng = np.random.default_rng(0)
    lo = np.asarray(sim.center) - np.asarray(sim.size) / 2
    hi = lo + np.asarray(sim.size)
    pts = []
    for o in sc.objects:
        a, b = (np.clip(v, lo, hi) for v in o.bounds())
        pad = 0.1 * (b - a) + sim.dx
        pts.append(rng.uniform(np.maximum(a - pad, lo), np.minimum(b + pad, hi), (samples, 3)))
    p = np.concatenate(pts)
    for a, sign in enumerate(sim.symmetry):
        if sign:
            q = p.copy()
            q[:, a] = 2 * sim.center[a] - q[:, a]
            if np.any(sc.label(*p.T) != sc.label(*q.T)):
                raise ConfigError(
                    f"symmetry: the scene is not symmetric under the {'xyz'[a]} mirror through "
                    f"{sim.center[a]:g}; set symmetry[{a}] = 0 (allowed values: {ALLOWED})"
                )


def _half_simulation(sim):
    size, center, boundary = list(sim.size), list(sim.center), list(sim.boundary)
    for a, s in enumerate(sim.symmetry):
        if s:
            m = sim.interior_cells[a] - sim.interior_cells[a] // 2  # cells from the E plane at or below it
            low = sim.center[a] - (0.5 * sim.dx if s == 1 else 0.0)
            size[a] = m * sim.dx
            center[a] = low + m * sim.dx / 2
            boundary[a] = replace(sim.boundary[a], sides="high", wall="pmc" if s == 1 else "pec")
    from .physical_parts import Dipole

    dipoles = _reduce_dipoles(sim, [x for x in sim.sources if isinstance(x, Dipole)])
    return replace(
        sim,
        size=tuple(size),
        center=tuple(center),
        boundary=tuple(boundary),
        sources=tuple(dipoles),
        monitors=(),
        probes=(),
        symmetry=(0, 0, 0),
    )


def _probes(sim, offsets):
    """Reduced-grid probes and the sign each reading takes (mirrored from the removed half)."""
    from .physical_parts import AXIS, _vec3

    out, signs = [], []
    g = sim.grid
    for i, p in enumerate(sim.probes):
        pos = _vec3(f"probes[{i}] position", p[0])
        if len(p) < 2 or p[1] not in AXIS or (len(p) > 2 and p[2] not in ("E", "H")):
            raise ConfigError(f"probes[{i}] must be (position, 'x'|'y'|'z'[, 'E'|'H']), got {p!r}")
        comp, kind = AXIS[p[1]], (p[2] if len(p) > 2 else "E")
        cells, sign = [sim._cell(pos[ax], ax) for ax in range(3)], 1
        for ax, c in enumerate(cells):
            plo, phi = sim.pml_cells[ax]
            if not plo <= c < g.shape[ax] - phi:
                raise ConfigError(f"probes[{i}] position {pos} lies outside the region along {'xyz'[ax]}")
            s = sim.symmetry[ax]
            if s:
                half = (kind == "E") == (comp == ax)  # the node sits half a cell along ax
                plane = _plane(s, offsets[ax])
                if c + 0.5 * half < plane:
                    cells[ax] = int(round(2 * plane - c - half))
                    par = _parity(s, comp, ax)
                    sign *= par if kind == "E" else -par
                cells[ax] -= offsets[ax]
        out.append(Probe(tuple(cells), comp, kind))
        signs.append(sign)
    return tuple(out), tuple(signs)


def _plane(sign: int, offset: int) -> float:
    """The mirror plane in full-grid cell units: the E plane ``offset`` (odd) or the H plane
    half a cell above it (even)."""
    return offset + (0.5 if sign == 1 else 0.0)


def _centred(lo, hi, plane, a, what):
    if abs(lo + hi - 2 * plane) > 1:
        raise ConfigError(
            f"symmetry: {what} crosses the {'xyz'[a]} mirror plane off-centre; centre it on the "
            f"plane or keep it on one side (or set symmetry[{a}] = 0; allowed values: {ALLOWED})"
        )


def _mirror_box(sim, offsets, lo, hi, what):
    """Reduced-grid (lo, hi, faces to drop, factor) of a full-grid box [lo, hi]."""
    lo, hi, drop, factor = list(lo), list(hi), [], 1.0
    for a, s in enumerate(sim.symmetry):
        if not s:
            continue
        c, plane = offsets[a], _plane(s, offsets[a])
        if lo[a] < plane < hi[a]:  # cut: the half from the plane to the high face, counted twice
            _centred(lo[a], hi[a], plane, a, what)
            lo[a], factor = c, factor * 2
            drop.append(a)
        elif hi[a] <= plane:  # in the removed half: its image
            lo[a], hi[a] = int(round(2 * plane - hi[a])), int(round(2 * plane - lo[a]))
        lo[a] -= c
        hi[a] -= c
    return tuple(lo), tuple(hi), drop, factor


def to_grid(sim):
    """The reduced :class:`GridSimulation`, the monitor map (:class:`Folded` values) and the
    :class:`Reduction`."""
    from .physical_parts import CrossSections, FluxBox, _check_box_vs_tfsf

    half = _half_simulation(sim)
    offsets = tuple(
        sim.pml_cells[a][0] + sim.interior_cells[a] // 2 if s else 0 for a, s in enumerate(sim.symmetry)
    )
    grid_sim, _ = half.to_grid()
    pw = sim._plane_wave
    sources = list(grid_sim.sources)
    tf_full = None
    if pw is not None:
        lo, hi = sim._box_cells(pw.center, pw.size, "PlaneWaveSource box")
        tf_full = TFSF(lo, hi, _wave(pw), pw.waveform)
        o, dx = np.asarray(sim.origin), sim.dx
        if sim.scene is not None:
            sim.scene.check_inside(
                o + np.asarray(lo) * dx + 2 * dx,
                o + np.asarray(hi) * dx - 2 * dx,
                "the PlaneWaveSource box (less two cells)",
            )
        mirror = tuple(bool(s) for s in sim.symmetry)
        hlo = tuple(-(h - c) if m else l - c for l, h, c, m in zip(lo, hi, offsets, mirror))
        hhi = tuple(h - c for h, c in zip(hi, offsets))
        sources.append(TFSF(hlo, hhi, _wave(pw), pw.waveform, mirror=mirror))
    monitors, names = [], {}

    def add_box(lo, hi, freqs, what):
        rlo, rhi, drop, factor = _mirror_box(sim, offsets, lo, hi, what)
        planes = []
        for k, plane in enumerate(flux_box(rlo, rhi, freqs)):
            if k % 2 == 0 and plane.axis in drop:
                planes.append(None)
            else:
                planes.append(len(monitors))
                monitors.append(plane)
        return Folded(tuple(planes), factor)

    for m in sim.monitors:
        if isinstance(m, CrossSections):
            lo, hi = np.array(tf_full.lo), np.array(tf_full.hi)
            g = sim.grid
            for ax in range(3):
                plo, phi = sim.pml_cells[ax]
                if lo[ax] - m.gap_out < plo + 1 or hi[ax] + m.gap_out > g.shape[ax] - phi - 1:
                    raise ConfigError(
                        f"CrossSections: the scattered-field box reaches the CPML along {'xyz'[ax]}"
                    )
                if hi[ax] - lo[ax] <= 2 * m.gap_in + 1:
                    raise ConfigError("CrossSections: the PlaneWaveSource box is too small for gap_in")
            outer = add_box(tuple(lo - m.gap_out), tuple(hi + m.gap_out), m.frequencies, "CrossSections")
            inner = add_box(tuple(lo + m.gap_in), tuple(hi - m.gap_in), m.frequencies, "CrossSections")
            names["cross_sections"] = (outer, inner)
        elif isinstance(m, FluxBox):
            lo, hi = sim._box_cells(m.center, m.size, f"FluxBox {m.name!r}")
            if tf_full is not None:
                _check_box_vs_tfsf(lo, hi, tf_full, f"FluxBox {m.name!r}")
            names[m.name] = add_box(lo, hi, m.frequencies, f"FluxBox {m.name!r}")
        else:
            names[m.name] = _flux_plane(sim, offsets, m, monitors)
    probes, signs = _probes(sim, offsets)
    grid_sim = replace(grid_sim, sources=tuple(sources), monitors=tuple(monitors), probes=probes)
    return grid_sim, names, Reduction(sim, half, offsets, signs)


def _wave(pw):
    from ..scattering import PlaneWave

    return PlaneWave(pw.direction, pw.polarization)


def _flux_plane(sim, offsets, m, monitors):
    ax, size = m.axis, list(m.size)
    size[ax] = 4 * sim.dx
    lo, hi = sim._box_cells(m.center, size, f"FluxPlane {m.name!r}")
    lo, hi = list(lo), list(hi)
    index = sim._cell(m.center[ax], ax)
    lo[ax], hi[ax] = index, index + 1
    factor = 1.0
    extent = [h - lo_ for lo_, h in zip(lo, hi)]
    for a, s in enumerate(sim.symmetry):
        if not s:
            continue
        c, plane = offsets[a], _plane(s, offsets[a])
        if a == ax:
            if abs(index - plane) < 1:
                raise ConfigError(
                    f"symmetry: FluxPlane {m.name!r} lies on the {'xyz'[a]} mirror plane (within a cell), "
                    f"where the flux is zero by symmetry; move it or set symmetry[{a}] = 0"
                )
            if index < plane:  # S_n(mirror r) = -S_n(r)
                index, factor = int(round(2 * plane - index)), -factor
            index -= c
            lo[a], hi[a] = index, index + 1
        else:
            if not lo[a] < plane < hi[a]:
                raise ConfigError(
                    f"symmetry: FluxPlane {m.name!r} must be centred on the {'xyz'[a]} mirror plane "
                    f"(or set symmetry[{a}] = 0; allowed values: {ALLOWED})"
                )
            _centred(lo[a], hi[a], plane, a, f"FluxPlane {m.name!r}")
            extent[a] = 2 * (hi[a] - plane)  # the full plane, symmetric about the mirror
            lo[a], hi[a], factor = 0, hi[a] - c, 2 * factor
    monitors.append(DFTPlane(ax, index, m.frequencies, lo=tuple(lo), hi=tuple(hi)))
    area = math.prod(e for a, e in enumerate(extent) if a != ax)
    return Folded((len(monitors) - 1,), factor, ax, area)


def run_reduced(sim, steps: int, run_grid, **kw):
    """Run the half domain; probes read in full-domain terms (:class:`Result` with
    ``symmetry`` set and ``simulation`` the reduced one that ran)."""
    from .physical_result import Result

    grid_sim, names, red = to_grid(sim)
    raw = run_grid(grid_sim, steps, **kw)
    if red.probe_signs:
        raw = replace(raw, probes=np.asarray(raw.probes) * np.asarray(red.probe_signs, dtype=float))
    return Result(red.half, grid_sim, raw, names, symmetry=red)
