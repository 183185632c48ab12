"""The calculation window (emjax.fdtd.window) equals the in-memory run bit for bit
on the CPU: the state in host memory, slabs along x with ghost planes, th steps per pass.

Every comparison is np.array_equal (no tolerance): the slab runs the same jitted step on a
sub-grid whose planes hold the same numbers, so any difference is a bug. The fields are
launched at step 0 (Ricker with no delay) so that they cross the slab cuts, the CPML and the
walls within the few steps the fast suite affords. Compiles dominate (one per distinct
sub-plan and pass length): each run uses few slabs."""

import jax
import numpy as np
import pytest

from emjax import fdtd
from emjax.backend import precision, precision_scope
from emjax.errors import ConfigError, ResourceError
from emjax.fdtd import simulation, window
from emjax.fdtd import step as engine
from emjax.materials import Dispersive, DrudePole, LorentzPole
from emjax.scattering import PlaneWave

WAVE = fdtd.Ricker(frequency=1.5, delay=0.0)


def dip(i, c=2):
    return fdtd.PointDipole(i, c, WAVE)


def same(sim, steps, th, slab, host_memory=None, ahead=None):
    """Run both ways; assert E, H, probes and DFT sums equal bit for bit (and the window's
    plan of the whole grid equal to the one fdtd.run steps). The window takes the path
    ``host_memory`` (None: pinned_host memory, which this JAX's CPU backend offers);
    ``ahead``: whether the pinned path must upload each next pass's first ring early."""
    seen = []
    orig = engine.advance
    engine.advance = lambda plan, *a: seen.append(plan) or orig(plan, *a)
    try:
        a = fdtd.run(sim, steps)
    finally:
        engine.advance = orig
    with precision_scope():
        dtype = precision(sim.grid.precision).real
        assert window._global_setup(sim, steps, dtype, None)[0] == seen[0]
    stats = {}
    b = window.run_window(sim, steps, th=th, slab=slab, host_memory=host_memory, stats=stats)
    if host_memory is None and window.host_memory_kind() is not None:
        assert stats["host_memory"] == "pinned" and stats["memory_kind"] == "pinned_host"
        assert ahead is None or stats["ahead"] == ahead
    else:
        assert stats["host_memory"] == (host_memory or "numpy")
    assert b.total_steps == a.total_steps == steps
    equal(a, b)
    return a, b


def equal(a, b):
    """Two runs' E, H, probes and DFT sums equal bit for bit."""
    assert np.array_equal(np.asarray(a.E), np.asarray(b.E)), np.max(np.abs(np.asarray(a.E) - b.E))
    assert np.array_equal(np.asarray(a.H), np.asarray(b.H)), np.max(np.abs(np.asarray(a.H) - b.H))
    assert np.asarray(a.probes).shape == np.asarray(b.probes).shape
    assert np.array_equal(np.asarray(a.probes), np.asarray(b.probes))
    for x, y in zip(a.dft, b.dft, strict=True):
        for f in "EH":
            assert np.array_equal(np.asarray(x[f]), np.asarray(y[f]))
    assert np.abs(np.asarray(b.E)).max() > 1e-3  # the test has fields to compare


class _Stop(Exception):
    pass


def stop_at(step):
    """A progress callback that ends the run (like a killed job) once ``step`` is done."""

    def progress(done, total):
        if done >= step:
            raise _Stop(done)

    return progress


def test_checkpoint_interval_default():
    """A window run's default checkpoint interval: ~10 minutes of work (2e8 cell updates/s
    on the CPU), a multiple of th, at most the run."""
    assert window.checkpoint_every(1000, 10**6, 3) == 1000
    assert window.checkpoint_every(10**6, 10**9, 32) == 96  # 120 steps -> a multiple of 32
    assert window.checkpoint_every(10**6, 10**12, 8) == 8  # never less than one pass


def _checkpoint_case():
    """test_cpml_dipole_probes_monitors_2nd_order's simulation (its compiled slabs reused)."""
    g = fdtd.Grid((21, 12, 12), dx=0.05, boundary=fdtd.CPML(4))
    probes = (fdtd.Probe((2, 6, 6), 2), fdtd.Probe((10, 6, 6), 2), fdtd.Probe((16, 6, 6), 1, "H"))
    mons = (fdtd.DFTPlane(0, 16, (0.8, 1.5)), fdtd.DFTPlane(2, 8, (1.5,)))
    return fdtd.GridSimulation(g, sources=(dip((9, 6, 6)),), probes=probes, monitors=mons)


def _stop_and_resume(sim, ref, ck, host_memory=None):
    """th = 3 with a checkpoint every 5 steps (a pass is cut at step 5, mid-way through the
    second pass of three steps): stopped there, resumed, bit for bit ``ref``."""
    kw = dict(th=3, slab=8, checkpoint=ck, chunk=5, host_memory=host_memory)
    with pytest.raises(_Stop):
        window.run_window(sim, 11, progress=stop_at(5), **kw)
    stats, seen = {}, []
    equal(ref, window.run_window(sim, 11, stats=stats, progress=lambda d, n: seen.append(d), **kw))
    assert stats["host_memory"] == (host_memory or "pinned")
    assert seen == [8, 10, 11]  # resumed at step 5; passes cut at the checkpoint at 10


def test_checkpoint_resume_mid_pass(tmp_path):
    """A window run (pinned path) stopped at a checkpoint mid-pass and resumed equals the
    uninterrupted in-memory run bit for bit; a corrupt checkpoint is refused by name."""
    sim = _checkpoint_case()
    ref = fdtd.run(sim, 11)
    _stop_and_resume(sim, ref, tmp_path / "window.npz")
    ck = tmp_path / "bad.npz"
    ck.write_bytes(b"not a checkpoint")
    with pytest.raises(ConfigError, match="not a readable emjax FDTD checkpoint"):
        window.run_window(sim, 11, th=3, slab=8, checkpoint=ck)


@pytest.mark.slow
def test_checkpoint_resume_numpy_path_and_across_run_kinds(tmp_path):
    """The same on the NumPy host path; the window's checkpoint resumes fdtd.run and
    fdtd.run's resumes the window (one format)."""
    sim = _checkpoint_case()
    ref = fdtd.run(sim, 11)
    _stop_and_resume(sim, ref, tmp_path / "numpy.npz", host_memory="numpy")
    ck = tmp_path / "window-then-run.npz"
    with pytest.raises(_Stop):
        window.run_window(sim, 11, th=3, slab=8, checkpoint=ck, chunk=5, progress=stop_at(5))
    equal(ref, fdtd.run(sim, 11, chunk=5, checkpoint=ck))
    ck = tmp_path / "run-then-window.npz"
    with pytest.raises(_Stop):
        fdtd.run(sim, 11, chunk=4, checkpoint=ck, progress=stop_at(4))
    equal(ref, window.run_window(sim, 11, th=3, slab=8, checkpoint=ck, chunk=4))


def test_cpml_dipole_probes_monitors_2nd_order():
    """CPML on all faces, a dipole, probes in several slabs (one in the CPML), DFT planes
    normal to x (one on a slab cut: it reads H one plane below) and to z (spans every slab);
    nx = 21 with slab 8 (the last slab shorter), th = 3, 11 steps (a short last pass)."""
    g = fdtd.Grid((21, 12, 12), dx=0.05, boundary=fdtd.CPML(4))
    probes = (fdtd.Probe((2, 6, 6), 2), fdtd.Probe((10, 6, 6), 2), fdtd.Probe((16, 6, 6), 1, "H"))
    mons = (fdtd.DFTPlane(0, 16, (0.8, 1.5)), fdtd.DFTPlane(2, 8, (1.5,)))
    sim = fdtd.GridSimulation(g, sources=(dip((9, 6, 6)),), probes=probes, monitors=mons)
    a, b = same(sim, 11, 3, 8, ahead=True)
    assert np.array_equal(a.flux(0), b.flux(0))


@pytest.mark.slow
def test_th1_and_one_slab():
    """th = 1 (no temporal blocking) and a single slab (the whole grid: the plain run)."""
    g = fdtd.Grid((13, 10, 10), dx=0.05, boundary=fdtd.CPML(3))
    sim = fdtd.GridSimulation(g, sources=(dip((6, 5, 5)),), probes=(fdtd.Probe((11, 5, 5), 2),))
    same(sim, 5, 1, 4)
    same(sim, 4, 2, 13)


@pytest.mark.slow
def test_4th_order_pec_walls():
    """4th order next to bare PEC walls (the wall terms read across the wrap at i = 0 = nx)
    and a probe on the wall plane."""
    g = fdtd.Grid((19, 10, 10), dx=0.05, order=4, boundary=fdtd.PEC())
    probes = (fdtd.Probe((0, 5, 5), 1), fdtd.Probe((18, 5, 5), 2))
    sim = fdtd.GridSimulation(g, sources=(dip((2, 5, 5)),), probes=probes)
    same(sim, 8, 2, 7)
    same(sim, 8, 2, 7, host_memory="numpy")


@pytest.mark.slow
def test_periodic_x_plane_source_dft_field():
    """Periodic x (the slabs' ghosts wrap around), a PlaneSource normal to y (spans the
    slabs), a DFTField normal to y (its window spans x and wraps)."""
    g = fdtd.Grid((19, 10, 10), dx=0.05, boundary=(fdtd.Periodic(), fdtd.CPML(3), fdtd.PEC()))
    src = (dip((1, 5, 5)), fdtd.PlaneSource(1, 4, 2, WAVE))
    mons = (fdtd.DFTPlane(2, 5, (1.0,)), fdtd.DFTField(1, 6, (1.0,)))
    sim = fdtd.GridSimulation(g, sources=src, probes=(fdtd.Probe((18, 5, 5), 2),), monitors=mons)
    same(sim, 8, 4, 6, ahead=True)  # ring 0 wraps onto the last slab: those chunks from the device


@pytest.mark.slow
def test_tfsf_z_drude_lorentz_flux_box():
    """A TF/SF plane wave along z through all slabs, a Drude + Lorentz block across a slab
    cut, a flux box of six DFT planes."""
    g = fdtd.Grid((21, 14, 16), dx=0.05, boundary=fdtd.CPML(3))
    tf = fdtd.TFSF(
        (5, 4, 4), (16, 10, 11), PlaneWave((0, 0, 1), (1, 0, 0)), fdtd.GaussianPulse(1.5, 1.0, 1.0)
    )
    mask = np.zeros(g.shape, bool)
    mask[8:13, 5:9, 6:10] = True
    mat = Dispersive(eps_inf=2.0, poles=(DrudePole(omega_p=3.0, gamma=0.5), LorentzPole(1.0, 2.0, 0.1)))
    sim = fdtd.GridSimulation(
        g,
        sources=(tf,),
        dispersive=(mat, mask),
        probes=(fdtd.Probe((10, 7, 8), 0),),
        monitors=fdtd.flux_box((4, 3, 3), (17, 11, 12), (1.5,)),
    )
    same(sim, 12, 3, 7, ahead=True)  # the TF/SF line state of each pass from its last slab


@pytest.mark.slow
def test_tfsf_along_x_and_refusals():
    """A TF/SF wave along x (the slab axis): its 1-D grid indices follow the slabs; an edge
    slab whose ghosts would hold both box faces is refused, as are unsupported features."""
    g = fdtd.Grid((36, 10, 10), dx=0.05, boundary=fdtd.CPML(3))
    tf = fdtd.TFSF((7, 3, 3), (21, 7, 7), PlaneWave((1, 0, 0), (0, 0, 1)), fdtd.GaussianPulse(1.5, 1.0, 1.0))
    sim = fdtd.GridSimulation(g, sources=(tf,), probes=(fdtd.Probe((12, 5, 5), 2),))
    same(sim, 8, 2, 9)  # slab 0's ring: [0, 12) + [33, 36); the box is clear of [24, 36)
    wide = fdtd.Grid((41, 10, 10), dx=0.05, boundary=fdtd.CPML(3))
    box = fdtd.TFSF((7, 3, 3), (38, 7, 7), tf.wave, tf.waveform)
    # slab 0's sub-grid: planes [0, 14) + [36, 41), the box's faces on both sides of its cut
    with pytest.raises(ConfigError, match="TF/SF box along x cannot"):
        window.run_window(fdtd.GridSimulation(wide, sources=(box,)), 8, th=4, slab=9)
    oblique = fdtd.TFSF((7, 3, 3), (21, 7, 7), PlaneWave((0.6, 0, 0.8), (0.8, 0, -0.6)), WAVE)
    with pytest.raises(ConfigError, match="oblique"):
        window.run_window(fdtd.GridSimulation(g, sources=(oblique,)), 4, th=2, slab=9)
    bloch = fdtd.Grid((12, 8, 8), dx=0.05, boundary=(fdtd.Bloch(1.0), fdtd.PEC(), fdtd.PEC()))
    with pytest.raises(ConfigError, match="Bloch"):
        window.run_window(fdtd.GridSimulation(bloch), 4, th=2, slab=4)


def test_rings_cover_and_model():
    """Every slab's ring holds its ghosts (cyclically) and the boundary planes of an edge
    ring; the model is transfer bound at th = 1 and compute bound at large th."""
    for walled, (w_lo, w_hi) in ((False, (0, 0)), (True, (4, 4)), (True, (2, 5))):
        for nx, slab, g in ((21, 5, 4), (40, 8, 3), (19, 7, 9), (30, 30, 2)):
            rs = window.rings(nx, slab, g, walled, w_lo, w_hi)
            assert [(r.lo, r.hi) for r in rs] == [(a, min(a + slab, nx)) for a in range(0, nx, slab)]
            for r in rs:
                planes = r.planes
                assert len(set(planes.tolist())) == len(planes) and planes.min() >= 0 and planes.max() < nx
                need = {p % nx for p in range(r.lo - g, r.hi + g)}
                assert need <= set(planes.tolist()) or len(planes) == nx
                if r.edge and walled:
                    assert planes[0] == 0 and planes[-1] == nx - 1
                    assert set(range(w_lo)) | set(range(nx - w_hi, nx)) <= set(planes.tolist())
                q0, q1 = r.own
                assert np.array_equal(planes[q0:q1], np.arange(r.lo, r.hi))
    kw = dict(nx=1000, bytes_in=32.0, bytes_out=24.0)
    low = window.model_rate(3e10, 2.5e10, 1, 100, 2, **kw)
    high = window.model_rate(3e10, 2.5e10, 1000, 100, 2, **kw)
    assert low == pytest.approx(2.5e10 * 100 / (104 * 32 + 100 * 24), rel=1e-12)  # G = 2
    assert high == pytest.approx(3e10 * 100 / 1000, rel=1e-12)  # the ring is the whole grid


def test_default_th_from_the_rate_model_with_one_host_set_up(monkeypatch):
    """``th`` left out: run_window takes choose_th's best for the budget (XLA's in-memory rate
    on the CPU), sets the grid up on the host once for the choice, the slab and the run, and
    equals the in-memory run."""
    from emjax.fdtd.window import driver, planning

    g = fdtd.Grid((16, 10, 10), dx=0.05, boundary=fdtd.CPML(3))
    sim = fdtd.GridSimulation(g, sources=(dip((8, 5, 5)),), probes=(fdtd.Probe((3, 5, 5), 2),))
    budget = 400_000  # th 4, two slabs of 8 planes
    want = window.choose_th(sim, budget, planning.RATE_XLA, 5e10)[0]
    calls = []
    real = driver._global_setup
    monkeypatch.setattr(driver, "_global_setup", lambda *a: calls.append(1) or real(*a))
    monkeypatch.setattr(planning, "_global_setup", lambda *a: calls.append(1) or real(*a))
    stats = {}
    b = window.run_window(sim, 5, device_bytes=budget, stats=stats)
    assert stats["th"] == want and stats["slab"] < 16 and len(calls) == 1
    a = fdtd.run(sim, 5)
    assert np.array_equal(np.asarray(a.E), b.E) and np.array_equal(np.asarray(a.probes), b.probes)


@pytest.mark.slow
def test_device_budget_forces_the_window():
    """A device budget smaller than the grid picks a slab (the window), which equals the run."""
    g = fdtd.Grid((16, 10, 10), dx=0.05, boundary=fdtd.CPML(3))
    sim = fdtd.GridSimulation(g, sources=(dip((8, 5, 5)),), probes=(fdtd.Probe((3, 5, 5), 2),))
    slab = window.slab_for_budget(sim, 2, 200_000)
    assert 1 <= slab < 16
    a = fdtd.run(sim, 5)
    b = window.run_window(sim, 5, th=2, device_bytes=200_000)
    assert np.array_equal(np.asarray(a.E), b.E) and np.array_equal(np.asarray(a.probes), b.probes)
    with pytest.raises(ConfigError, match="device budget"):
        window.slab_for_budget(sim, 2, 1000)


@pytest.mark.slow
def test_4th_order_cpml_long():
    """4th order with a CPML (kappa_max > 1: the km1 term) on x, PEC on z, a dipole, DFT planes
    normal to x and y, Drude medium, initial fields: 40 steps, th = 6, slab 6."""
    g = fdtd.Grid(
        (23, 12, 12), dx=0.05, order=4, boundary=(fdtd.CPML(4, kappa_max=3.0), fdtd.CPML(3), fdtd.PEC())
    )
    mask = np.zeros(g.shape, bool)
    mask[5:9, 3:8, 3:8] = True
    mat = Dispersive(eps_inf=1.5, poles=(DrudePole(omega_p=2.0, gamma=0.3),))
    rng = np.random.default_rng(0)
    initial = (rng.standard_normal((3,) + g.shape) * 1e-2, np.zeros((3,) + g.shape))
    sim = fdtd.GridSimulation(
        g,
        sources=(dip((11, 6, 6)),),
        probes=(fdtd.Probe((1, 6, 6), 2), fdtd.Probe((21, 6, 6), 1, "H")),
        monitors=(fdtd.DFTPlane(0, 12, (0.8, 1.5)), fdtd.DFTPlane(1, 6, (1.5,))),
        dispersive=(mat, mask),
    )
    a = fdtd.run(sim, 40, initial=initial)
    b = window.run_window(sim, 40, th=6, slab=6, initial=initial)
    assert np.array_equal(np.asarray(a.E), b.E) and np.array_equal(np.asarray(a.H), b.H)
    assert np.array_equal(np.asarray(a.probes), b.probes)
    for x, y in zip(a.dft, b.dft):
        assert all(np.array_equal(np.asarray(x[f]), y[f]) for f in "EH")


def test_run_out_of_core_entry():
    """``fdtd.run(..., out_of_core={...})`` goes through the window (bit for bit the
    in-memory run); ``out_of_core=False`` and the default on the CPU stay in memory; a
    layout, remat, a bad chunk or an unknown option with it are refused, naming them."""
    sim = _checkpoint_case()  # compiled slabs shared with the tests around it
    a = fdtd.run(sim, 11)
    b = fdtd.run(sim, 11, out_of_core={"th": 3, "slab": 8})
    assert isinstance(b.E, np.ndarray) and np.array_equal(np.asarray(a.E), b.E)
    assert np.array_equal(np.asarray(a.probes), b.probes)
    c = fdtd.run(sim, 11, out_of_core=False)
    assert np.array_equal(np.asarray(a.E), np.asarray(c.E))
    with pytest.raises(ConfigError, match="no layout or remat"):
        fdtd.run(sim, 9, out_of_core=True, layout=1, remat=3)
    with pytest.raises(ConfigError, match="chunk"):
        fdtd.run(sim, 9, out_of_core=True, chunk=0)
    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['tile'\]"):
        fdtd.run(sim, 9, out_of_core={"tile": 3})
    with pytest.raises(ConfigError, match="out_of_core must be"):
        fdtd.run(sim, 9, out_of_core="yes")


def test_cpu_offers_pinned_host():
    """This JAX's CPU backend has a pinned_host memory kind, so the CPU suite runs the
    window's pinned path (the GPU's); a bad host_memory is refused naming it."""
    assert window.host_memory_kind() == "pinned_host"
    assert window.host_memory_path() == "pinned"
    assert window.host_memory_path("numpy") == "numpy"
    assert window.pinned_pool_limit() is None  # the CPU: plain host memory
    with pytest.raises(ConfigError, match="host_memory must be"):
        window.host_memory_path("pageable")


def test_chunks_tile_rings_and_owned_planes():
    """The pinned chunks cut x at every slab and ring boundary and the x-CPML's inner faces:
    each ring's chunks, concatenated, are its planes (in the ring's order, across the wrap),
    each slab's owned chunks are its planes and the bounds it returns pick them out of its
    ring; the x-face psi (L planes at a face) go to the edge rings only, whole, and come back
    from the slabs owning their planes; a chunk's last reader is the last ring holding it."""
    from types import SimpleNamespace

    for nx, slab, g, walled, w in (
        (21, 5, 4, False, (0, 0)),
        (40, 8, 3, True, (4, 4)),
        (19, 3, 2, True, (4, 5)),
    ):
        rs = window.rings(nx, slab, g, walled, *w)
        subs = [SimpleNamespace(ring=r, arrays={}) for r in rs]
        planes = np.broadcast_to(np.arange(nx, dtype=np.float32)[:, None, None], (nx, 2, 3))
        psi = {}
        if walled:  # x-CPML psi of w planes at each face
            psi = {"E01lo": planes[: w[0]], "H02hi": planes[nx - w[1] :]}
        host = {"E": (planes,) * 3, "H": (planes,) * 3, "psi": psi, "J": ()}
        store = window._Chunks(subs, host, {}, nx, jax.devices()[0])
        assert store.data[("E", 0)][0].sharding.memory_kind == "pinned_host"
        first = lambda xs: np.concatenate([np.asarray(x)[:, 0, 0] for x in xs])
        for k, r in enumerate(rs):
            ring = first(store.ring(k, ("E", 0)))
            assert np.array_equal(ring, r.planes)
            down = {n: (ids, bd) for n, ids, bd in store.down[k]}
            ids, bd = down[("E", 0)]
            assert np.array_equal(first(store.data[("E", 0)][c] for c in ids), np.arange(r.lo, r.hi))
            assert np.array_equal(np.concatenate([ring[a:b] for a, b in bd]), np.arange(r.lo, r.hi))
            for key, face in psi.items():
                name = ("psi", key)
                assert (name in store.up[k]) == r.edge
                if r.edge:
                    assert np.array_equal(first(store.ring(k, name)), face[:, 0, 0])
                mine = [p for p in face[:, 0, 0] if r.lo <= p < r.hi]
                if mine:
                    ids, bd = down[name]
                    assert np.array_equal(np.concatenate([face[a:b, 0, 0] for a, b in bd]), mine)
                else:
                    assert name not in down
        for c in range(len(store.cuts) - 1):
            assert store.last_reader[c] == max(k for k, r in enumerate(rs) if store.cuts[c] in r.planes)


@pytest.mark.slow
def test_pinned_pool_too_small_falls_back_to_numpy(monkeypatch):
    """A pinned pool too small for the chunks: the NumPy path with a warning saying why (bit
    for bit the in-memory run), a ResourceError when pinned was asked for."""
    g = fdtd.Grid((14, 8, 8), dx=0.05, boundary=fdtd.CPML(2))
    sim = fdtd.GridSimulation(g, sources=(dip((6, 4, 4)),), probes=(fdtd.Probe((9, 4, 4), 2),))
    a = fdtd.run(sim, 6)
    monkeypatch.setattr(window.hoststate, "pinned_pool_limit", lambda device=None: 1000)
    stats = {}
    with pytest.warns(UserWarning, match="NumPy host path instead of pinned memory"):
        c = window.run_window(sim, 6, th=3, slab=7, stats=stats)
    assert stats["host_memory"] == "numpy" and "XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB" in stats["fallback"]
    assert np.array_equal(np.asarray(a.E), c.E) and np.array_equal(np.asarray(a.H), c.H)
    assert np.array_equal(np.asarray(a.probes), c.probes)
    assert np.abs(c.E).max() > 1e-3
    with pytest.raises(ResourceError, match="pinned host pool"):
        window.run_window(sim, 6, th=3, slab=7, host_memory="pinned")


def test_choose_th_balances_link_and_ghosts():
    """choose_th picks the model's best th: th = 1 with an unlimited link (ghosts only
    cost), a larger th for a slower link, and its rate is the model's at its slab."""
    g = fdtd.Grid((200, 40, 40), dx=0.05, boundary=fdtd.CPML(4))
    sim = fdtd.GridSimulation(g, sources=(dip((100, 20, 20)),))
    budget = 2e8
    assert window.choose_th(sim, budget, 3e10, 1e20, 1e20)[0] == 1
    th_fast, _, _ = window.choose_th(sim, budget, 3e10, 5e10, 5e10)
    th_slow, slab, rate = window.choose_th(sim, budget, 3e10, 5e9, 5e9)
    assert 1 < th_fast <= th_slow
    b_in, b_out = window.bytes_per_cell(sim)
    kw = dict(nx=200, bytes_in=b_in, bytes_out=b_out, plane=1600, b_down=5e9)
    assert slab == window.slab_for_budget(sim, th_slow, budget)
    assert rate == window.model_rate(3e10, 5e9, th_slow, slab, 2, **kw)
    for th in (1, 2, 4, 8, 16, 32):
        assert window.model_rate(3e10, 5e9, th, window.slab_for_budget(sim, th, budget), 2, **kw) <= rate


def test_default_th_models_the_step_that_will_run(monkeypatch):
    """Without a th, a window run is modelled with the rate of the step that will advance
    its slabs: XLA's on a CPU, for kernel="xla" or float64; the blocked kernel's where it
    would run (a GPU here pretended: the kernel's own checks pass); a faster device rate
    makes the model pick a th at least as large (more steps per transfer)."""
    from emjax.fdtd.blocked import choice

    g = fdtd.Grid((200, 40, 40), dx=0.05, boundary=fdtd.CPML(4))
    sim = fdtd.GridSimulation(g, sources=(dip((100, 20, 20)),))
    assert window.default_rate(sim) == window.planning.RATE_XLA  # the CPU
    monkeypatch.setattr(window.planning.jax, "default_backend", lambda: "gpu")
    seen = []
    monkeypatch.setattr(choice, "why_not", lambda plan, dtype, cells=None: seen.append(cells))
    monkeypatch.setattr(choice, "auto_reason", lambda plan, dtype: None)
    assert window.default_rate(sim) == window.planning.RATE_BLOCKED
    assert seen == [40 * 40]  # one plane: the slabs' memory is checked once they are sized
    assert window.default_rate(sim, "xla") == window.planning.RATE_XLA
    g64 = fdtd.Grid((200, 40, 40), dx=0.05, boundary=fdtd.CPML(4), precision="double")
    assert window.default_rate(fdtd.GridSimulation(g64, sources=sim.sources)) == window.planning.RATE_XLA
    monkeypatch.setattr(choice, "auto_reason", lambda plan, dtype: "slower here")
    assert window.default_rate(sim) == window.planning.RATE_XLA
    assert window.default_rate(sim, "blocked") == window.planning.RATE_BLOCKED
    budget = 2e8
    slow = window.choose_th(sim, budget, window.planning.RATE_XLA, 5e9)[0]
    fast = window.choose_th(sim, budget, window.planning.RATE_BLOCKED, 5e9)[0]
    assert fast >= slow


def test_too_big_for_the_device_and_the_window_says_why(monkeypatch):
    """On a GPU a run that does not fit goes through the window; one the window cannot take
    (subpixel averaging) is refused before any allocation with both reasons: its size against
    the free memory, and what the window lacks. Faked here: a GPU backend with 1 MB free."""
    import emjax.backend

    g = fdtd.Grid((24, 24, 24), dx=0.05, boundary=fdtd.CPML(6))
    inv = np.zeros((3, 3, 4, 4, 4))
    for c in range(3):
        inv[c, c] = 0.5
    sim = fdtd.GridSimulation(g, sources=(dip((12, 12, 12)),), subpixel=fdtd.SubpixelBox((10, 10, 10), inv))
    monkeypatch.setattr(simulation.jax, "default_backend", lambda: "gpu")
    monkeypatch.setattr(emjax.backend, "device_memory_bytes", lambda device=None: 10**6)
    with pytest.raises(ResourceError, match=r"24x24x24 grid needs about .* GB.*does not support subpixel"):
        fdtd.run(sim, 4)
    assert window.unsupported(sim).startswith("subpixel")
    assert window.unsupported(fdtd.GridSimulation(g, sources=(dip((12, 12, 12)),))) is None


def test_raise_pinned_host_limit(monkeypatch):
    """raise_pinned_host_limit sets XLA's pinned pool (read when the GPU backend starts) to
    90% of RAM only where the variable is unset."""
    import os

    from emjax.backend import PINNED_LIMIT_ENV, raise_pinned_host_limit

    monkeypatch.delenv(PINNED_LIMIT_ENV, raising=False)
    raise_pinned_host_limit()
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert int(os.environ[PINNED_LIMIT_ENV]) == int(0.9 * ram / 2**30)
    monkeypatch.setenv(PINNED_LIMIT_ENV, "7")
    raise_pinned_host_limit()
    assert os.environ[PINNED_LIMIT_ENV] == "7"
