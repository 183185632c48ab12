"""The calculation window's slabs advanced by the blocked kernel (emjax.fdtd.window.kernel):
on the CPU the kernel's text runs emulated (``kernel="emulate"``), and the window equals the
in-memory XLA run to rounding (float64, 1e-12 relative). Interior slabs run their sub-grid
walled at both ends (the seams), edge rings keep the grid's x wall and x-CPML; the ghost
planes keep every seam's spoiled planes out of the owned ones.

Each kernel the emulation compiles (one per distinct slab plan and pass length) is cached on
disk (EMJAX_CACHE), so a first run of these tests compiles for a while; the grids are tiny."""

import logging

import numpy as np
import pytest

from emjax import ConfigError, fdtd
from emjax.backend import precision_scope
from emjax.fdtd import monitors as M
from emjax.fdtd import window
from emjax.fdtd.blocked import cuda, emulation
from emjax.fdtd.grid import CPML, PEC
from emjax.fdtd.window import driver
from emjax.fdtd.window import kernel as wk

emulated = pytest.mark.skipif(not emulation.available(), reason="no host C++ compiler")
WAVE = fdtd.Ricker(frequency=0.15, delay=0.0)


def _pec():
    """PEC x walls (and y, z); with slab 7 and th 3 (4 ghost planes): edge rings
    [0, 11) + [24, 28) and [0, 4) + [17, 28), interior slabs [3, 18) and [10, 25); a dipole
    in an interior slab and one in an edge ring, probes in both kinds."""
    g = fdtd.Grid((28, 8, 7), 1.0, boundary=PEC(), precision="double")
    srcs = (fdtd.PointDipole((12, 4, 3), 2, WAVE), fdtd.PointDipole((4, 3, 3), 1, WAVE))
    probes = (fdtd.Probe((16, 4, 3), 2), fdtd.Probe((1, 4, 3), 1), fdtd.Probe((25, 2, 2), 0, "H"))
    return fdtd.GridSimulation(g, sources=srcs, probes=probes)


def _cpml_dielectric():
    """A 3-cell CPML on every face, per-cell eps and sigma, a DFT plane normal to x (owned
    by one slab) and one normal to y (spanning every slab)."""
    shape = (24, 10, 9)
    g = fdtd.Grid(shape, 1.0, boundary=CPML(3), precision="double")
    rng = np.random.default_rng(5)
    eps = 1.0 + 2.0 * rng.random(shape)
    sigma = 0.02 * rng.random(shape)
    srcs = (fdtd.PointDipole((10, 5, 4), 2, WAVE), fdtd.PointDipole((20, 4, 4), 0, WAVE))
    probes = (fdtd.Probe((13, 5, 4), 2), fdtd.Probe((2, 5, 4), 1))
    mons = (M.DFTPlane(0, 11, (0.1, 0.15)), M.DFTPlane(1, 6, (0.12,)))
    return fdtd.GridSimulation(g, eps=eps, sigma=sigma, sources=srcs, probes=probes, monitors=mons)


def close(a, b, tol=1e-12):
    """E, H, probes and DFT sums of two runs equal to ``tol`` relative to each one's largest."""
    pairs = [(a.E, b.E), (a.H, b.H), (a.probes, b.probes)]
    pairs += [(x[f], y[f]) for x, y in zip(a.dft, b.dft, strict=True) for f in "EH"]
    for x, y in pairs:
        x, y = np.asarray(x), np.asarray(y)
        assert x.shape == y.shape
        scale = np.abs(x).max()
        assert scale > 0  # there are fields to compare
        assert np.abs(x - y).max() <= tol * scale, np.abs(x - y).max() / scale
    assert np.abs(np.asarray(a.E)).max() > 1e-3


def both(sim, steps, th, slab, **kw):
    a = fdtd.run(sim, steps, kernel="xla", progress=False)
    stats = {}
    b = window.run_window(sim, steps, th=th, slab=slab, kernel="emulate", stats=stats, **kw)
    assert stats["kernel"] == "blocked" and b.kernel.startswith("blocked (TH = ")
    return a, b, stats


@emulated
def test_pec_walls_interior_slab_between_edge_rings():
    """Slabs of 7 planes, th 2 (3 ghost planes): edge rings [0, 10) + [18, 21) and
    [0, 3) + [11, 21) (one kernel for both), the interior slab [4, 17) walled at its seams,
    its dipole's field crossing into both edge rings' owned planes."""
    g = fdtd.Grid((21, 8, 7), 1.0, boundary=PEC(), precision="double")
    sim = fdtd.GridSimulation(
        g, sources=(fdtd.PointDipole((10, 4, 3), 2, WAVE),), probes=(fdtd.Probe((11, 4, 3), 2),)
    )
    a, b, stats = both(sim, 6, th=2, slab=7)
    assert stats["slabs"] == 3
    close(a, b)


@pytest.mark.slow
@emulated
def test_pec_walls_interior_and_edge_slabs(monkeypatch):
    """Two interior slabs (walled seams) and two edge rings; the kernel's TH (2 here) does
    not divide the window's th = 3: each slab visit ends with a 1-step kernel pass."""
    from emjax.fdtd.blocked import choice

    monkeypatch.setattr(choice, "TILINGS", {**choice.TILINGS, 8: ((2, 24, 1),)})
    sim = _pec()
    a, b, stats = both(sim, 9, th=3, slab=7)
    assert stats["slabs"] == 4
    assert b.kernel == "blocked (TH = 2, tiles of 8 x 7, slab seams walled)"
    close(a, b)


@pytest.mark.slow
@emulated
def test_cpml_every_face_dielectric_and_dft_planes():
    """Edge rings keep the grid's x-CPML (the low and high faces' psi) and wall; the y/z
    CPML's psi and the DFT sums travel with every slab; the NumPy host path as well."""
    sim = _cpml_dielectric()
    a, b, _ = both(sim, 8, th=2, slab=6)
    close(a, b)
    c = window.run_window(sim, 8, th=2, slab=6, kernel="emulate", host_memory="numpy")
    close(a, c)


@pytest.mark.slow
@emulated
def test_th_not_dividing_the_steps_with_a_cpml():
    """7 steps in passes of th = 4 (the last of 3; kernel passes 2 + 2, then 2 + 1)."""
    sim = _cpml_dielectric()
    a, b, _ = both(sim, 7, th=4, slab=8)
    close(a, b)


def test_too_few_ghost_planes_refused(monkeypatch):
    """A ghost region that does not hold what a pass spoils next to a seam: one line naming
    the slab, before any step."""
    monkeypatch.setattr(driver, "ghost", lambda order, th: th)
    with pytest.raises(
        ConfigError, match=r"^run_window: slab 0 \(planes 0..6\) keeps its owned planes 3 planes"
    ):
        window.run_window(_pec(), 9, th=3, slab=7, kernel="emulate")


@pytest.mark.slow
@emulated
def test_the_comparison_sees_a_seam_too_close(monkeypatch):
    """The mutation the check above guards against: with th - 1 ghost planes (the check
    switched off) the seams' spoiled planes reach the owned ones, and the window is wrong."""
    sim = _pec()
    a = fdtd.run(sim, 9, kernel="xla", progress=False)
    monkeypatch.setattr(driver, "ghost", lambda order, th: th - 1)
    monkeypatch.setattr(driver, "check_ghosts", lambda *args: None)
    b = window.run_window(sim, 9, th=3, slab=7, kernel="emulate")
    with pytest.raises(AssertionError):
        close(a, b, tol=1e-3)


def test_clearance_of_rings():
    """Planes from the owned ones to the nearest cut: an edge ring's seam above or below
    them, an interior ring's ends."""
    r = window.rings(24, 5, 4, True, 2, 2)
    pieces = [((0, 9), (20, 24)), ((0, 14), (22, 24)), ((6, 19),), ((0, 2), (11, 24)), ((0, 4), (16, 24))]
    assert [x.pieces for x in r] == pieces
    assert [wk.clearance(x) for x in r] == [4, 4, 4, 4, 4]
    r = window.rings(24, 5, 3, True, 2, 2)
    assert [wk.clearance(x) for x in r] == [3, 3, 3, 3, 3]
    assert wk.clearance(window.rings(8, 8, 4, True, 2, 2)[0]) is None  # the whole grid: no cut


def test_kernel_choice_on_the_cpu(caplog):
    """auto keeps XLA saying why (no GPU); blocked is refused by name, here and from
    fdtd.run's out_of_core; a bad name is one line."""
    sim = _pec()
    with caplog.at_level(logging.INFO, logger="emjax.fdtd"):
        r = window.run_window(sim, 2, th=2, slab=10)
    assert r.kernel.startswith("xla (the blocked kernel not taken: no GPU")
    assert "FDTD window kernel: xla" in caplog.text
    assert window.run_window(sim, 2, th=2, slab=10, kernel="xla").kernel == "xla (asked for)"
    with pytest.raises(
        ConfigError, match=r"^run_window: kernel='blocked' cannot run this simulation's slabs: no GPU"
    ):
        window.run_window(sim, 2, th=2, slab=10, kernel="blocked")
    with pytest.raises(ConfigError, match=r"kernel='blocked' cannot run this simulation's slabs: no GPU"):
        fdtd.run(sim, 2, out_of_core={"th": 2, "slab": 10}, kernel="blocked", progress=False)
    with pytest.raises(
        ConfigError, match=r"^run_window: kernel must be 'auto', 'xla', 'blocked' or 'emulate'"
    ):
        window.run_window(sim, 2, th=2, slab=10, kernel="fast")


def _subs(sim, th, slab):
    from emjax.backend import precision
    from emjax.fdtd.window.subgrid import _sub_problem

    with precision_scope():
        dtype = precision(sim.grid.precision).real
        plan, arrays, _ = window._global_setup(sim, 4, dtype, None)
        L = plan.pml[0]
        w = max(L, 2)
        rings = window.rings(sim.grid.shape[0], slab, window.ghost(2, th), True, w, w)
        return plan, dtype, [_sub_problem(sim, plan, arrays, r) for r in rings]


def test_features_the_kernel_cannot_carry_fall_back(monkeypatch):
    """With a GPU stood in: a plane source is not carried (auto: XLA with the reason;
    emulate or blocked: refused naming it); a PEC run takes the kernel, interior slabs
    walled at their seams, edge rings as they are."""
    from emjax import backend
    from emjax.fdtd.blocked import choice

    monkeypatch.setattr(choice.jax, "default_backend", lambda: "gpu")
    monkeypatch.setattr(cuda, "nvrtc", lambda: object())
    monkeypatch.setattr(backend, "device_memory_bytes", lambda: 10**9)
    base = _pec()
    sim = fdtd.GridSimulation(base.grid, sources=(fdtd.PlaneSource(2, 3, 0, WAVE),))
    plan, dtype, subs = _subs(sim, 3, 7)
    name, why = wk.choose(plan, dtype, "auto", subs, 3)
    assert name == "xla" and "plane sources" in why
    assert all(s.step.func.__name__ == "advance" for s in subs)
    with pytest.raises(ConfigError, match=r"kernel='emulate' cannot run .* slabs: .*plane sources"):
        wk.choose(plan, dtype, "emulate", subs, 3)
    plan, dtype, subs = _subs(base, 3, 7)
    # float64: TH = 3 (it divides the window's th = 3)
    assert wk.choose(plan, dtype, "auto", subs, 3) == ("blocked", "TH = 3, tiles of 8 x 7, slab seams walled")
    walls = [s.step.args[0].walls[0] for s in subs]
    assert walls == [True] * 4 and [s.ring.edge for s in subs] == [True, False, False, True]
    assert [s.plan.walls[0] for s in subs] == [True, False, False, True]  # XLA's sub-plans wrap


@pytest.mark.slow
@emulated
def test_float32_cpml_th_4():
    """Float32 (the kernel's TH 4, the window's th 4) with a CPML on every face: 1e-5."""
    g = fdtd.Grid((28, 9, 8), 1.0, boundary=CPML(3), precision="single")
    base = _pec()
    sim = fdtd.GridSimulation(g, sources=base.sources, probes=base.probes)
    a, b, _ = both(sim, 10, th=4, slab=7)
    assert b.kernel.startswith("blocked (TH = 4,")
    close(a, b, tol=1e-5)


@emulated
def test_tfsf_along_x_in_the_slabs():
    """A TF/SF box with incidence along x (the slab axis) across three slabs, a CPML on every
    face: each slab's box and 1-D grid indices re-indexed into its ring, the kernel's
    corrections from them equal the in-memory XLA run's."""
    from emjax.scattering import PlaneWave

    g = fdtd.Grid((36, 10, 10), 1.0, boundary=CPML(3), precision="double")
    tf = fdtd.TFSF((7, 3, 3), (21, 7, 7), PlaneWave((1, 0, 0), (0, 0, 1)), WAVE)
    sim = fdtd.GridSimulation(g, sources=(tf,), probes=(fdtd.Probe((12, 5, 5), 2),))
    a, b, stats = both(sim, 8, th=2, slab=9)
    assert stats["slabs"] == 4
    close(a, b)


@pytest.mark.slow
@emulated
def test_tfsf_along_z_in_the_slabs():
    """A TF/SF box (incidence along z) spanning every slab, an interior one walled at its
    seams: each slab's corrections from the same 1-D grid, the window's aux state after
    every visit the in-memory run's."""
    from emjax.scattering import PlaneWave

    g = fdtd.Grid((28, 8, 9), 1.0, boundary=PEC(), precision="double")
    tf = fdtd.TFSF((9, 2, 2), (18, 6, 6), PlaneWave((0, 0, 1), (1, 0, 0)), WAVE)
    sim = fdtd.GridSimulation(g, sources=(tf,), probes=(fdtd.Probe((12, 4, 3), 0),))
    a, b, _ = both(sim, 9, th=3, slab=7)
    close(a, b)


@emulated
def test_drude_block_across_slabs():
    """A two-pole Drude block spanning three slabs (PEC walls): the currents travel with
    each slab's state like the fields (the kernel carries them level to level)."""
    import math

    from emjax import materials

    metal = materials.Dispersive(
        2.0, (materials.DrudePole(2 * math.pi * 0.2, 0.05), materials.DrudePole(2 * math.pi * 0.1, 0.01))
    )
    g = fdtd.Grid((21, 8, 7), 1.0, boundary=PEC(), precision="double")
    mask = np.zeros(g.shape, bool)
    mask[5:16, 2:6, 2:5] = True
    sim = fdtd.GridSimulation(
        g,
        sources=(fdtd.PointDipole((10, 4, 3), 2, WAVE),),
        probes=(fdtd.Probe((11, 4, 3), 2),),
        dispersive=(metal, mask),
    )
    a, b, stats = both(sim, 7, th=3, slab=7)
    assert stats["slabs"] == 3 and b.kernel.startswith("blocked")
    close(a, b)
