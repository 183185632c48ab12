"""The TF/SF plane-wave source in the CUDA blocked kernel (emjax.fdtd.blocked.incidence): the
kernel's text run emulated on the host equals the XLA step to rounding (fields, psi, probes,
the 1-D grid's state), for incidence along +x, -y and +z with a CPML on every face and a
dielectric inside the box, TH not dividing the step count, box faces on tile edges and next to
the CPML, boxes spanning several tiles; the scattered-field region stays empty in vacuum; DFT
planes around a scatterer (the cross-section workflow) equal the XLA step's. Oblique incidence
is refused with its reason."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_blocked import _copy, _rel, _setup

from emjax import ConfigError, fdtd
from emjax.backend import precision_scope
from emjax.fdtd import blocked
from emjax.fdtd import monitors as M
from emjax.fdtd import step as engine
from emjax.fdtd import tfsf as tfsf_mod
from emjax.fdtd.blocked import cuda, emulation
from emjax.fdtd.grid import CPML, PEC
from emjax.scattering import PlaneWave

emulated = pytest.mark.skipif(not emulation.available(), reason="no host C++ compiler")
PULSE = fdtd.GaussianPulse(frequency=0.15, bandwidth=0.5)

# direction, polarization, box (lo, hi): the faces on the y tiles' edges (tiles of 5: 5, 10)
# and the z tiles' (tiles of 4: 4, 8), a face next to the 2-cell CPML (index 2)
CASES = {
    "+x": ((1, 0, 0), (0, 0.6, 0.8), (3, 5, 2), (11, 10, 8)),
    "-y": ((0, -1, 0), (0.8, 0, -0.6), (2, 5, 4), (12, 10, 9)),
    "+z": ((0, 0, 1), (0, 1, 0), (4, 2, 2), (10, 11, 8)),
}


def _sim(direction, pol, lo, hi, precision="double", shape=(14, 13, 11), mirror=(False,) * 3, boundary=None):
    """A CPML on every face (2 cells), a dielectric block inside the box, probes inside and
    outside it."""
    g = fdtd.Grid(shape, 1.0, boundary=boundary or CPML(thickness=2), precision=precision)
    eps = np.ones(shape)
    eps[6:9, 6:9, 4:7] = 3.0
    tf = fdtd.TFSF(lo, hi, PlaneWave(direction, pol), PULSE, mirror=mirror)
    probes = (fdtd.Probe((7, 7, 5), 1), fdtd.Probe((1, 2, 9), 2, "H"), fdtd.Probe((7, 7, 5), 0, "H"))
    return fdtd.GridSimulation(g, eps=eps, sources=(tf,), probes=probes)


def _compare(sim, steps, th, tile, tol=1e-12):
    """Fields, probes and the 1-D grid's state to ``tol`` relative to their largest value;
    psi to ``tol`` of the largest psi (a psi of a component the wave leaves at rounding noise
    carries rounding of the fields' size, as in the XLA step itself)."""
    with precision_scope():
        plan, arrays, state = _setup(sim, steps)
        ref, rec_ref, _ = engine.advance(plan, arrays, _copy(state), steps)
        out, rec, finite = blocked.advance(
            plan, arrays, _copy(state), steps, th=th, tile=tile, kernel="emulate"
        )
    assert bool(finite) and int(out["n"]) == steps
    assert np.abs(np.stack(ref["E"])).max() > 1e-3  # the wave entered the box
    for f in "EH":
        assert _rel(np.stack(out[f]), np.stack(ref[f])) <= tol, f
    assert rec.shape == rec_ref.shape and _rel(rec, rec_ref) <= tol
    scale = max(np.abs(np.asarray(v)).max() for v in ref["psi"].values())
    assert sorted(out["psi"]) == sorted(ref["psi"])
    for k in ref["psi"]:
        assert np.abs(np.asarray(out["psi"][k]) - np.asarray(ref["psi"][k])).max() <= tol * scale, k
    for a, b in zip(out["aux"], ref["aux"], strict=True):
        assert _rel(a, b) <= tol


def _check_aux(sim, steps, th, tile, tol, dtype=jnp.float64):
    """The 1-D grid's state and the step count after the kernel's passes are the XLA step's."""
    with precision_scope():
        plan, arrays, state = _setup(sim, steps, dtype)
        ref, _, _ = engine.advance(plan, arrays, _copy(state), steps)
        out, _, _ = blocked.advance(plan, arrays, _copy(state), steps, th=th, tile=tile, kernel="emulate")
    assert int(out["n"]) == steps and len(out["aux"]) == 2
    for a, b in zip(out["aux"], ref["aux"]):
        assert _rel(a, b) <= tol
    return out, ref


@emulated
@pytest.mark.parametrize("case", sorted(CASES))
def test_emulated_equals_xla(case):
    """9 steps in passes of 2 (the last of 1), y tiles of 5 and z tiles of 4: the box spans
    several tiles with faces on their edges and next to the CPML."""
    d, p, lo, hi = CASES[case]
    _compare(_sim(d, p, lo, hi), 9, th=2, tile=(14, 5, 4))


@emulated
def test_emulated_aux_state_and_float32():
    """Float32 (TH 3 over 8 steps): fields to 1e-5; the 1-D grid's state carried out of the
    passes as the XLA step leaves it (so a next run and the incident spectrum are unchanged)."""
    d, p, lo, hi = CASES["-y"]
    sim = _sim(d, p, lo, hi, precision="single")
    out, ref = _check_aux(sim, 8, 3, (14, 5, 4), 1e-6, jnp.float32)
    for f in "EH":
        assert _rel(np.stack(out[f]), np.stack(ref[f])) <= 1e-5, f


@emulated
def test_emulated_backward_along_x_mirrored_box():
    """Incidence along -x (the 1-D grid mirrored) with the box mirrored through the PEC wall
    at y = 0 (y: a CPML on the high face only), one tile in z."""
    g_bound = (CPML(thickness=2), CPML(thickness=2, sides="high"), CPML(thickness=2))
    sim = _sim((-1, 0, 0), (0, 1, 0), (3, -6, 3), (11, 6, 8), mirror=(False, True, False), boundary=g_bound)
    _compare(sim, 7, th=3, tile=(14, 4, 11))


@emulated
def test_emulated_box_through_the_grid_ends():
    """A box past the grid's ends (as the window re-indexes a box into a slab's ring): along
    x it starts at -1, along y it covers the axis, along z it ends at the last plane; the
    differences at the ends wrap as the XLA step's do (faces across the wrap)."""
    from dataclasses import replace

    d, p, _, _ = CASES["+x"]
    sim = _sim(d, p, (3, 3, 3), (11, 9, 8))
    box = fdtd.TFSF((-1, -3, 4), (9, 16, 12), PlaneWave(d, p), PULSE)
    with precision_scope():
        plan, arrays, state = _setup(sim, 9)
        plan = replace(plan, sources=(box,))
        ref, _, _ = engine.advance(plan, arrays, _copy(state), 9)
        out, _, _ = blocked.advance(plan, arrays, _copy(state), 9, th=2, tile=(14, 5, 4), kernel="emulate")
    assert np.abs(np.stack(ref["E"])).max() > 1e-3
    for f in "EH":
        assert _rel(np.stack(out[f]), np.stack(ref[f])) <= 1e-12, f


def _outside(F, kind, src, shape):
    """The field on the nodes outside the total-field box (the scattered-field region)."""
    mask = tfsf_mod.e_mask if kind == "E" else tfsf_mod.h_mask
    return np.stack([np.asarray(F[c]) * (1 - np.asarray(mask(src, shape, c, jnp.float64))) for c in range(3)])


@emulated
def test_emulated_scattered_region_stays_empty_in_vacuum():
    """In vacuum the incident wave lives inside the box only: outside it the kernel's fields
    stay at rounding level (1e-13 of the field inside) while the pulse crosses the box; a
    missing or misplaced face correction leaks at order one."""
    shape = (16, 12, 11)
    g = fdtd.Grid(shape, 1.0, boundary=CPML(thickness=2), precision="double")
    src = fdtd.TFSF(
        (3, 3, 3), (13, 9, 8), PlaneWave((1, 0, 0), (0, 0, 1)), fdtd.Ricker(frequency=0.2, delay=0.0)
    )
    sim = fdtd.GridSimulation(g, sources=(src,))
    with precision_scope():
        plan, arrays, state = _setup(sim, 16)
        out, _, _ = blocked.advance(plan, arrays, state, 16, th=3, tile=(16, 5, 4), kernel="emulate")
    inside = max(np.abs(np.stack(out["E"])).max(), np.abs(np.stack(out["H"])).max())
    assert inside > 0.1
    for kind in "EH":
        assert np.abs(_outside(out[kind], kind, src, shape)).max() <= 1e-13 * inside, kind


@emulated
def test_emulated_flux_box_around_a_scatterer():
    """Six DFT planes closing a box around the scatterer in the scattered-field region (the
    cross-section workflow): their running DFTs equal the XLA step's (one tile in y and z:
    the tiled cases are above)."""
    shape = (14, 12, 12)
    g = fdtd.Grid(shape, 1.0, boundary=CPML(thickness=2), precision="double")
    eps = np.ones(shape)
    eps[6:8, 5:7, 5:7] = 4.0
    src = fdtd.TFSF(
        (4, 4, 4), (10, 8, 8), PlaneWave((1, 0, 0), (0, 1, 0)), fdtd.Ricker(frequency=0.2, delay=0.0)
    )
    lo, hi = (3, 3, 3), (11, 9, 9)
    mons = []
    for ax in range(3):
        for i in (lo[ax], hi[ax]):
            mons.append(M.DFTPlane(ax, i, (0.15, 0.2), lo=lo, hi=hi))
    sim = fdtd.GridSimulation(g, eps=eps, sources=(src,), monitors=tuple(mons))
    steps = 10
    with precision_scope():
        plan, arrays, state = _setup(sim, steps)
        ref, _, _ = engine.advance(plan, arrays, _copy(state), steps)
        out, _, _ = blocked.advance(plan, arrays, state, steps, th=3, tile=shape, kernel="emulate")
    for a, b in zip(out["dft"], ref["dft"], strict=True):
        for k in "EH":
            scale = np.abs(b[k]).max()
            assert scale > 1e-6  # the scattered field reached the plane
            assert np.abs(a[k] - b[k]).max() <= 1e-12 * scale


@emulated
def test_gpu_driver_with_the_kernel_emulated(monkeypatch):
    """The GPU driver (one jit: passes in pairs in a scan, an odd pass, a shorter last one,
    the 1-D grid carried beside the DFTs) with each kernel launch emulated through a host
    callback: 7 steps in passes of 2 equal the XLA step, the aux state included (float32:
    the callbacks run outside the caller's double-precision scope)."""
    from emjax.fdtd.blocked import cuda_advance, shards

    monkeypatch.setattr(cuda, "gpu_pass", shards._emulated)
    d, p, lo, hi = CASES["+z"]
    sim = _sim(d, p, lo, hi, precision="single")
    plan, arrays, state = _setup(sim, 7, jnp.float32)
    ref, rec_ref, _ = engine.advance(plan, arrays, _copy(state), 7)
    out, rec, finite = cuda_advance.advance_gpu(plan, arrays, _copy(state), 7, 2, (5, 4))
    assert bool(finite) and int(out["n"]) == 7
    for f in "EH":
        assert _rel(np.stack(out[f]), np.stack(ref[f])) <= 1e-5, f
    assert _rel(rec, rec_ref) <= 1e-5
    for a, b in zip(out["aux"], ref["aux"], strict=True):
        assert _rel(a, b) <= 1e-6


def test_oblique_and_others_refused_with_the_reason():
    """Oblique incidence: the CUDA kernel refuses naming it (auto logs it and keeps XLA); the
    other blocked traversals refuse TF/SF altogether. Several devices carry it (the slabs'
    tests: test_blocked_shards.py)."""
    from dataclasses import replace

    from emjax.fdtd.blocked import choice, cuda_advance

    d, p, lo, hi = CASES["+x"]
    with precision_scope():
        plan, arrays, state = _setup(_sim((0.6, 0, 0.8), (0.8, 0, -0.6), lo, hi), 4)
        with pytest.raises(ConfigError, match="oblique TF/SF incidence"):
            blocked.advance(plan, arrays, state, 4, th=2, tile=(14, 5, 4), kernel="emulate")
        assert "oblique TF/SF incidence" in choice.carries(plan, jnp.float64)
        plan, arrays, state = _setup(_sim(d, p, lo, hi), 4)
        assert choice.carries(plan, jnp.float64) is None
        with pytest.raises(ConfigError, match="TF/SF sources"):
            blocked.advance(plan, arrays, state, 4, th=2, tile=(14, 5, 4), kernel="xla")
    assert cuda_advance.unsupported(replace(plan, layout=object())) is None


def test_auto_takes_the_kernel_along_an_axis_and_says_why_not_oblique(monkeypatch, caplog):
    """With a GPU stood in: "auto" takes the blocked kernel for incidence along an axis and
    keeps XLA for oblique incidence, logging the reason; "blocked" refuses it naming it."""
    import logging

    from emjax import backend
    from emjax.fdtd.blocked import choice

    monkeypatch.setattr(choice.jax, "default_backend", lambda: "gpu")
    monkeypatch.setattr(cuda, "nvrtc", lambda: object())
    monkeypatch.setattr(backend, "device_memory_bytes", lambda: 10**9)
    d, p, lo, hi = CASES["+z"]
    g = fdtd.Grid((14, 13, 11), 1.0, boundary=PEC(), precision="single")
    for wave, want in ((PlaneWave(d, p), "blocked"), (PlaneWave((0.6, 0, 0.8), (0.8, 0, -0.6)), "xla")):
        sim = fdtd.GridSimulation(g, sources=(fdtd.TFSF(lo, hi, wave, PULSE),))
        plan, _, _ = _setup(sim, 4, jnp.float32)
        with caplog.at_level(logging.INFO, logger="emjax.fdtd"):
            _, name, why = choice.select(plan, np.float32, "auto")
        assert name == want, why
    assert "oblique TF/SF incidence" in why and "oblique TF/SF incidence" in caplog.text
    with pytest.raises(ConfigError, match="kernel='blocked' cannot run this simulation: .*oblique TF/SF"):
        choice.select(plan, np.float32, "blocked")


def test_kernel_text_has_the_box_and_its_lines():
    """The generated header carries the box's bounds (integer and half-integer nodes), the
    amplitudes and the lines' input ``tinc`` of TH x 2 x n values along the axis."""
    d, p, lo, hi = CASES["-y"]
    with precision_scope():
        plan, arrays, _ = _setup(_sim(d, p, lo, hi), 4)
    spec = blocked.cuda_advance.make_spec(plan, arrays, jnp.float64, 2, (5, 4))
    names = dict(cuda.inputs(spec))
    assert names["tinc"] == (2 * 2 * 13,)
    text = cuda.source(spec)
    assert "#define TFSF 1" in text and "#define TF_AXIS 1" in text
    assert "#define TF_LO_TABLE {2, 5, 4}, {2, 5, 4}" in text
    assert "#define TF_HI_TABLE {11, 9, 8}, {10, 8, 7}" in text


gpu = pytest.mark.gpu


@gpu
@pytest.mark.parametrize("case", sorted(CASES))
def test_gpu_1000_steps_float64_and_float32(case):
    """A 40^3 grid with a CPML on every face, a dielectric block inside the box: 1005 steps
    of the CUDA kernel (the default tilings: float32 TH 4, 251 passes and one of 1; float64
    TH 2, 502 and one of 1), float64 to 1e-12 and float32 to 1e-5 of the largest value; the
    1-D grid's state too."""
    d, p, _, _ = CASES[case]
    n = 40
    lo, hi = (10, 12, 9), (30, 28, 31)
    eps = np.ones((n,) * 3)
    eps[16:24, 15:25, 14:22] = 4.0
    for precision, dtype, tol in (("double", jnp.float64, 1e-12), ("single", jnp.float32, 1e-5)):
        g = fdtd.Grid((n,) * 3, 1.0, boundary=CPML(8), precision=precision)
        tf = fdtd.TFSF(lo, hi, PlaneWave(d, p), fdtd.GaussianPulse(frequency=0.08, bandwidth=0.5))
        sim = fdtd.GridSimulation(g, eps=eps, sources=(tf,), probes=(fdtd.Probe((20, 20, 20), 1),))
        th, tile, ry = blocked.choice.default_tiling(dtype)
        with precision_scope():
            plan, arrays, state = _setup(sim, 1005, dtype)
            ref, rec_ref, _ = engine.advance(plan, arrays, jax.tree_util.tree_map(jnp.copy, state), 1005)
            out, rec, finite = blocked.advance(
                plan, arrays, state, 1005, th=th, tile=(n, 24, 24), kernel="cuda", rows_per_thread=ry
            )
            assert bool(finite)
            for f in "EH":
                assert _rel(np.stack(out[f]), np.stack(ref[f])) <= tol, (precision, f)
            assert _rel(rec, rec_ref) <= tol, precision
            for a, b in zip(out["aux"], ref["aux"]):
                assert _rel(a, b) <= tol, precision


@gpu
def test_gpu_run_flux_box_blocked_equals_xla():
    """``fdtd.run`` with ``kernel="blocked"`` (the default tiling) and ``"xla"``: a TF/SF plane
    wave on a dielectric block, a flux box around it in the scattered-field region; the
    fields and the flux box's DFTs agree to 1e-12 (float64). In float32 the scattered-field
    region's DFTs differ by about 7e-4 of their largest value (measured on an H200): the
    total field, of the incident wave's size and a hundred times the scattered one, is
    rounded to 1e-7 of itself at every step, and the DFT sums that over the steps."""
    n = 48
    g = fdtd.Grid((n,) * 3, 1.0, boundary=CPML(8), precision="double")
    eps = np.ones((n,) * 3)
    eps[20:28, 18:30, 20:28] = 2.25
    tf = fdtd.TFSF((14,) * 3, (34,) * 3, PlaneWave((0, -1, 0), (0, 0, 1)), fdtd.GaussianPulse(0.1, 0.5))
    sim = fdtd.GridSimulation(
        g, eps=eps, sources=(tf,), monitors=fdtd.flux_box((11,) * 3, (37,) * 3, (0.08, 0.1))
    )
    a = fdtd.run(sim, 301, kernel="xla", progress=False)
    b = fdtd.run(sim, 301, kernel="blocked", progress=False)
    assert b.kernel.startswith("blocked")
    for x, y in [(a.E, b.E), (a.H, b.H)] + [
        (u[k], v[k]) for u, v in zip(a.dft, b.dft, strict=True) for k in "EH"
    ]:
        x, y = np.asarray(x), np.asarray(y)
        assert np.abs(x - y).max() <= 1e-12 * np.abs(x).max()
