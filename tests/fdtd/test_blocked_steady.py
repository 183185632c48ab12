"""The blocked kernel's steady iterations (every level runs, no guards, the buffer set and the
chains' slots at compile time) in float32, two or one at a time, against the XLA step;
and the host emulation's race check of the shared-memory buffers, which a wrong set parity
trips."""

import jax.numpy as jnp
import numpy as np
import pytest
from test_blocked import _compare, _copy, _cpml_dielectric, _rel, _setup

from emjax import fdtd
from emjax.backend import precision_scope
from emjax.fdtd import blocked
from emjax.fdtd import step as engine
from emjax.fdtd.blocked import cuda, emulation
from emjax.fdtd.grid import CPML, PEC

emulated = pytest.mark.skipif(not emulation.available(), reason="no host C++ compiler")


def _sim(boundary, shape=(21, 12, 11)):
    g = fdtd.Grid(shape, 1.0, boundary=boundary, precision="single")
    # sources and probes near the low x end: the planes after them march in steady iterations
    srcs = (
        fdtd.PointDipole((3, 5, 4), 1, fdtd.GaussianPulse(frequency=0.1, bandwidth=0.5)),
        fdtd.PointDipole((5, 8, 7), 2, fdtd.GaussianPulse(frequency=0.13, bandwidth=0.5)),
    )
    # and a probe in the middle: the steady pairs resume after it (realigned, TH odd)
    probes = (fdtd.Probe((4, 6, 5), 1), fdtd.Probe((12, 3, 8), 0, "H"))
    # vacuum: kernels with per-cell coefficient arrays take one steady iteration at a time
    return fdtd.GridSimulation(g, eps=1.0, sources=srcs, probes=probes)


def _compare32(sim, steps, th, tile, tol=2e-6):
    with precision_scope():
        plan, arrays, state = _setup(sim, steps, jnp.float32)
        ref, rec_ref, _ = engine.advance(plan, arrays, _copy(state), steps)
        out, rec, _ = blocked.advance(plan, arrays, _copy(state), steps, th=th, tile=tile, kernel="emulate")
    assert np.abs(np.stack(ref["E"])).max() > 1e-6
    for f in "EH":
        assert _rel(np.stack(out[f]), np.stack(ref[f])) <= tol, f
    rec, rec_ref = np.asarray(rec), np.asarray(rec_ref)
    assert np.abs(rec - rec_ref).max() <= tol * max(np.abs(rec_ref).max(), 1e-20)


def _steady_n(th, pml):
    walls, kappa = (True,) * 3, (False,) * 3
    spec = cuda.Spec("float32", (21, 12, 11), th, (4, 4), 1.0, 0.5, 1.0, 0.5, None, walls, pml, kappa, (), ())
    head = cuda.source(spec).splitlines()
    return int(next(ln.split()[2] for ln in head if ln.startswith("#define STEADY_N ")))


@emulated
@pytest.mark.parametrize("th", [2, 3])
def test_emulated_float32_steady_pairs(th):
    """PEC walls: iterations run two steady ones at a time (both parities of the
    level count, TH even and odd), steps not a multiple of TH."""
    assert _steady_n(th, (0, 0, 0)) == 2
    _compare32(_sim(PEC()), 3 * th + 1, th, (8, 4, 4))


@emulated
def test_emulated_float32_cpml_bulk_and_faces():
    """A CPML: the bulk's steady pairs beside the CPML kernels' steady iterations, one at a
    time in their own loop."""
    assert _steady_n(2, (2, 2, 2)) == 1
    _compare32(_sim(CPML(thickness=2), shape=(20, 22, 21)), 5, 2, (8, 4, 4))


@emulated
def test_emulated_sources_stay_out_of_steady_iterations(monkeypatch):
    """With every iteration free to be steady, the point sources' and probes' planes march in
    steady ones, which leave their code out: the fields then differ from the XLA step's."""
    monkeypatch.setattr(cuda, "steady_free", lambda spec: "true")
    with pytest.raises(AssertionError):
        _compare32(_sim(PEC()), 7, 2, (8, 4, 4))


def _break(monkeypatch, good, bad):
    real = emulation.source

    def broken(spec):
        text = real(spec)
        assert good in text
        return text.replace(good, bad)

    monkeypatch.setattr(emulation, "source", broken)


@emulated
def test_emulation_reports_a_race_on_the_buffer_sets(monkeypatch):
    """With the second steady iteration's set parity off by one, two consecutive levels use one
    buffer set: the emulation counts a read and a write with no barrier between and raises."""
    good = "iteration(i + 1, Mode<true, (P0 + TH) & 1, (TH + 1) & 1>{});"
    _break(monkeypatch, good, "iteration(i + 1, Mode<true, (P0 + TH + 1) & 1, (TH + 1) & 1>{});")
    with pytest.raises(RuntimeError, match="raced"):
        _compare32(_sim(PEC()), 5, 2, (8, 4, 4))


@emulated
def test_emulation_reports_steady_pairs_out_of_step(monkeypatch):
    """One loop for the steady pairs and the general iterations (``cuda.STEADY_LOOP`` off, as
    for PEC walls), TH odd: after the general iterations of the middle probe's planes, a
    steady pair that did not wait for its parities (one more general iteration) uses the
    wrong set."""
    good = "const bool aligned = STEADY_N == 1 || ((task & 1) == P0 && (i & 1) == (TH & 1));"
    _break(monkeypatch, good, "const bool aligned = true;")
    with pytest.raises(RuntimeError, match="raced"):
        _compare32(_sim(PEC()), 7, 3, (8, 4, 4))


def test_which_kernels_take_steady_iterations_and_where(monkeypatch):
    """Steady pairs in the kernels without CPML code, per-cell arrays (but literals for a
    coefficient box's background), poles or a TF/SF box; the planes of point sources,
    recorded probes and monitor boxes are not free for them (a box that wraps: none is)."""
    from dataclasses import replace

    walls, kappa = (True,) * 3, (False,) * 3
    base = cuda.Spec(
        "float32", (30, 12, 11), 4, (4, 4), 1.0, 0.5, 1.0, 0.5, None, walls, (0, 0, 0), kappa, (), ()
    )
    assert cuda.steady_n(base) == 2 and cuda.steady_n(replace(base, dtype="float64")) == 2
    assert cuda.steady_n(replace(base, pml=(2, 0, 0))) == 1  # one at a time
    assert cuda.steady_n(replace(base, cb="grid")) == 1 and cuda.steady_n(replace(base, pec="comp")) == 1
    assert cuda.steady_n(replace(base, cb="grid", cbox_bg=True)) == 2
    assert cuda.steady_n(replace(base, ca="array", cb="array")) == 2  # one traced value each
    # the bulk between a one-device pass's aligned face rows, and on a slab: pairs
    between = replace(base, span=((2, 10), (2, 9)))
    assert cuda.steady_n(between) == 2 and cuda.steady_n(replace(between, dtype="float64")) == 2
    assert cuda.steady_n(replace(between, nxa=38, xhalo=4)) == 2
    assert cuda.steady_free(base) == "true"
    # the kinds, and which of them run their steady iterations in a loop of their own
    kinds = {
        "plain": [base, replace(base, cb="grid", cbox_bg=True), replace(between, nxa=38, xhalo=4)],
        "between": [between],
        "tail": [replace(between, ntask=5)],
        "box": [replace(base, cb="grid", cbox=(2, 8, 2, 8, 2, 8), cbg=(("cb", (0.5,) * 3),))],
        "cpml": [replace(base, pml=(2, 0, 0)), replace(base, cb="grid")],
    }
    for kind, specs in kinds.items():
        for sp in specs:
            assert cuda.steady_kind(sp) == kind
            assert f"#define STEADY_LOOP {int(cuda.STEADY_LOOP[kind])}" in cuda.source(sp)
    assert [cuda.STEADY_LOOP[k] for k in ("plain", "between", "cpml", "faces", "box", "tail")] == [False] + [
        True
    ] * 5
    # the bulk's marches from a table one at a time in float32 (a pair spills), pairs in float64
    assert cuda.steady_n(replace(between, ntask=5)) == 1
    assert cuda.steady_n(replace(between, ntask=5, dtype="float64")) == 2
    monkeypatch.setattr(cuda, "STEADY_LOOP", True)  # a bool: every kind
    assert "#define STEADY_LOOP 1" in cuda.source(base)
    monkeypatch.undo()
    # the CPML's face rows (windows that end at a wall) by their own setting
    faces = replace(base, pml=(2, 2, 2), wall=1)
    assert cuda.steady_kind(faces) == "faces" and cuda.steady_kind(replace(faces, wall=0)) == "cpml"
    assert "#define STEADY_LOOP 1" in cuda.source(faces) and cuda.steady_n(faces) == 1
    spec = replace(
        base,
        sources=(((5, 1, 1), 0), (None, 1)),
        probes=(("E", 0, (9, 2, 2)), ("H", 1, (20, 3, 3))),
        record=(0,),
        boxes=(("E", 2, (12, 0, 0), (3, 12, 11)),),
    )
    free = eval(f"lambda lo, hi: {cuda.steady_free(spec).replace('&&', 'and').replace('||', 'or')}")
    blocked_planes = {5, 9, 12, 13, 14}  # the probe at x = 20 is not this kernel's to record
    for p in range(30):
        assert free(p, p) == (p not in blocked_planes), p
    assert not free(0, 29) and free(15, 29)
    wrap = replace(base, boxes=(("E", 2, (28, 0, 0), (4, 12, 11)),))
    assert cuda.steady_free(wrap) == "false"


def test_the_level_that_reads_the_next_plane_by_precision(monkeypatch):
    """The next plane is read at level 3 in float32 and 2 in float64 (at most TH); the
    kernels without CPML code or walls take ``PREFETCH_OPEN``'s where it has their precision
    (float64: 1); an int setting holds for every precision."""
    from dataclasses import replace

    walls, kappa = (True,) * 3, (False,) * 3
    f32 = cuda.Spec(
        "float32", (30, 12, 11), 4, (4, 4), 1.0, 0.5, 1.0, 0.5, None, walls, (2, 2, 2), kappa, (), ()
    )
    f64 = replace(f32, dtype="float64", th=3)
    assert cuda.prefetch_level(f32) == 3 and cuda.prefetch_level(f64) == 2
    assert cuda.prefetch_level(replace(f32, th=2)) == 2
    assert "#define PREFETCH_LEVEL 2" in cuda.source(f64)
    # kernels without CPML code or walls (a CPML run's bulk) by a setting of their own
    bulk = replace(f64, pml=(0, 0, 0), walls=(False,) * 3)
    assert cuda.prefetch_level(bulk) == 1 and "#define PREFETCH_LEVEL 1" in cuda.source(bulk)
    assert cuda.prefetch_level(replace(bulk, walls=(True, False, False))) == 2
    assert cuda.prefetch_level(f64) == 2 and cuda.prefetch_level(replace(bulk, dtype="float32", th=4)) == 3
    monkeypatch.setattr(cuda, "PREFETCH_OPEN", {})
    assert cuda.prefetch_level(bulk) == 2
    monkeypatch.setattr(cuda, "PREFETCH_LEVEL", 1)
    assert cuda.prefetch_level(f32) == 1 and "#define PREFETCH_LEVEL 1" in cuda.source(f64)


@emulated
@pytest.mark.parametrize("level", [1, 2, 3])
def test_emulated_float64_at_each_read_level(monkeypatch, level):
    """float64 at TH = 3 (a CPML on some faces, per-cell eps and sigma, a dipole and
    probes): the kernel that reads the next plane at each level compiles and gives the XLA
    step's fields."""
    monkeypatch.setattr(cuda, "PREFETCH_LEVEL", {4: 3, 8: level})
    _compare(_cpml_dielectric(), 7, th=3, tile=(16, 5, 4), kernel="emulate")


@pytest.mark.slow  # a setting that is off by default
@emulated
@pytest.mark.parametrize("th", [2, 3])
def test_emulated_steady_iterations_in_the_general_loop(monkeypatch, th):
    """``cuda.STEADY_LOOP`` off: a steady pair or a general iteration at each turn of one loop.
    PEC walls, TH even and odd; and a CPML, with the settings before the loop of their own
    (general iterations in the bulk between the face rows and in the CPML's kernels)."""
    monkeypatch.setattr(cuda, "STEADY_LOOP", dict.fromkeys(cuda.STEADY_LOOP, False))
    coef, walls, kappa = (1.0, 0.5, 1.0, 0.5, None), (True,) * 3, (False,) * 3
    spec = cuda.Spec("float32", (21, 12, 11), th, (4, 4), *coef, walls, (2,) * 3, kappa, (), ())
    assert "#define STEADY_LOOP 0" in cuda.source(spec)  # (a CPML kernel: on by default)
    _compare32(_sim(PEC()), 3 * th + 1, th, (8, 4, 4))
    old = {"plain": {4: 2, 8: 2}, "cpml": {4: 0, 8: 0}, "between": {4: 0, 8: 2}, "faces": {4: 0, 8: 0}}
    old.update(box=old["cpml"], tail=old["between"])
    monkeypatch.setattr(cuda, "STEADY", old)
    _compare32(_sim(CPML(thickness=2), shape=(26, 22, 21)), 3 * th + 1, th, (8, 4, 4))


@emulated
def test_emulation_reports_a_steady_loop_out_of_step(monkeypatch):
    """The inner loop's test of the parities left out: after the middle probe's general
    iterations (TH odd) a pair starts on the wrong set, and the emulation raises."""
    monkeypatch.setattr(cuda, "STEADY_LOOP", dict.fromkeys(cuda.STEADY_LOOP, True))
    good = "(STEADY_N == 1 || ((task & 1) == P0 && (i & 1) == (TH & 1))) &&"
    _break(monkeypatch, good, "true &&")
    with pytest.raises(RuntimeError, match="raced"):
        _compare32(_sim(PEC()), 7, 3, (8, 4, 4))
