"""Per-cell coefficients held only in the box where they differ from the background
(emjax.fdtd.blocked.coef_box): the box found bounds the scatterer, the kernel's arrays are
cut to it, and the kernel (emulated on the host) equals the XLA step to rounding with the
coefficient ring and without it, also where most tiles take the background values as
literals and the tiles whose windows meet the box run apart (bulk.hole); grids filled with
coefficients keep whole arrays."""

import jax.numpy as jnp
import numpy as np
import pytest
from test_blocked import _compare, _cpml_dielectric, _setup

from emjax import fdtd
from emjax.backend import precision_scope
from emjax.fdtd.blocked import bulk as bulk_mod
from emjax.fdtd.blocked import coef_box, cuda, cuda_advance, emulation, split, tiling
from emjax.fdtd.grid import CPML

emulated = pytest.mark.skipif(not emulation.available(), reason="no host C++ compiler")


def _scatterer(component_eps=True):
    """18 x 13 x 12 with a CPML on every face: a lossy dielectric block (eps per component
    or one eps) with a PEC cell inside it, a dipole outside, probes inside and outside."""
    shape = (18, 13, 12)
    g = fdtd.Grid(shape, 1.0, boundary=CPML(thickness=3), precision="double")
    rng = np.random.default_rng(5)
    eps = np.ones((3,) + shape if component_eps else shape)
    eps[..., 6:11, 4:9, 3:8] = 1.5 + rng.random(eps[..., 6:11, 4:9, 3:8].shape)
    sigma = np.zeros(shape)
    sigma[7:10, 5:8, 4:7] = 0.03
    pec = np.zeros(shape, bool)
    pec[8, 6, 5] = True
    src = fdtd.PointDipole((4, 6, 6), 2, fdtd.GaussianPulse(frequency=0.1, bandwidth=0.5))
    probes = (fdtd.Probe((8, 6, 4), 2), fdtd.Probe((13, 10, 9), 1, "H"), fdtd.Probe((2, 2, 2), 0))
    return fdtd.GridSimulation(g, eps=eps, sigma=sigma, pec=pec, sources=(src,), probes=probes)


def test_box_bounds_the_scatterer_and_the_inputs_are_cut():
    with precision_scope():
        plan, arrays, _ = _setup(_scatterer(), 4)
        found = coef_box.find(plan, arrays)
        assert found is not None
        box, bgs = found
        assert box == (6, 11, 4, 9, 3, 8)
        assert {k for k, _ in bgs} == {"ca", "cb", "pec"}
        spec = cuda_advance.make_spec(plan, arrays, jnp.float64, 2, (5, 4), cbox=found)
        static, _ = cuda_advance.static_inputs(plan, arrays, spec)
        shapes = dict(cuda.inputs(spec))
        for name, a in zip(("ca", "cb", "pec"), static):
            assert a.shape == shapes[name] and a.shape[-3:] == (5, 5, 5)
            whole = np.asarray(arrays["pec_keep" if name == "pec" else name])
            assert np.array_equal(np.asarray(a), coef_box.crop(whole, box))
        text = cuda.source(spec)
        assert "#define CBOX 1" in text and "#define CB_X0 6" in text


def test_grid_filled_with_coefficients_keeps_whole_arrays():
    with precision_scope():
        plan, arrays, _ = _setup(_cpml_dielectric(), 4)  # eps and sigma random everywhere
        assert coef_box.find(plan, arrays) is None
        spec = cuda_advance.make_spec(plan, arrays, jnp.float64, 2, (5, 4))
        assert "#define CBOX 0" in cuda.source(spec)


@emulated
@pytest.mark.parametrize("ring", [True, False])
@pytest.mark.parametrize("component_eps", [True, False])
def test_emulated_box_equals_the_xla_step(ring, component_eps, monkeypatch):
    """13 steps in passes of 3 (the last of 1), tiles that cut the box, the CPML kernel of
    its own; the coefficients through the shared-memory ring or read where used."""
    monkeypatch.setattr(cuda, "COEF_RING", ring)
    _compare(_scatterer(component_eps), 13, th=3, tile=(18, 5, 4), kernel="emulate")


def _meets(a, w, b, m, n):
    """Whether cells [a, a + w) modulo n meet [b, b + m): a tile's window against the box."""
    return w > 0 if w >= n else bool(set(np.arange(a, a + w) % n) & set(range(b, b + m)))


def _away():
    """16 x 21 x 19 with a CPML on every face, a small block of eps per component (one cell's
    y component higher) and probes inside and outside it. The tiles span x whole, so the
    tile structure the tests below count is that of y and z; the kernel's emulated time
    grows with x."""
    shape = (16, 21, 19)
    g = fdtd.Grid(shape, 1.0, boundary=CPML(thickness=3), precision="double")
    eps = np.ones((3,) + shape)
    eps[:, 6:10, 13:16, 4:7] = 2.5
    eps[1, 7, 14, 5] = 4.0
    src = fdtd.PointDipole((8, 11, 10), 2, fdtd.GaussianPulse(frequency=0.1, bandwidth=0.5))
    probes = (fdtd.Probe((7, 14, 5), 1), fdtd.Probe((12, 16, 12), 2, "H"), fdtd.Probe((4, 17, 15), 0))
    return fdtd.GridSimulation(g, eps=eps, sources=(src,), probes=probes)


@emulated
def test_emulated_windows_away_from_the_box_take_the_backgrounds(monkeypatch):
    """A small scatterer in a larger grid: most tiles' windows miss the box and take the
    background literals; the tiles whose windows meet it (:func:`bulk.hole`) march over
    the box in a kernel of their own. Equal to the XLA step to rounding, the probes inside
    and outside the box included. The box's y and z ranges meet bulk windows in their last
    and first two cells (a window that wrongly took the backgrounds there would spoil its
    own cells)."""
    monkeypatch.setattr(cuda, "COEF_RING", True)
    shape, sim = (16, 21, 19), _away()
    with precision_scope():
        plan, arrays, _ = _setup(sim, 4)
        box, _ = coef_box.find(plan, arrays)
    assert box == (6, 10, 13, 16, 4, 7)
    th, b = 3, 4
    starts = [min(t * b, n - b) - th for n in shape[1:] for t in range(-(-n // b))]
    ys, zs = starts[: -(-shape[1] // b)], starts[-(-shape[1] // b) :]
    hits = [
        _meets(y, b + 2 * th, 13, 3, shape[1]) and _meets(z, b + 2 * th, 4, 3, shape[2])
        for y in ys
        for z in zs
    ]
    assert 0 < sum(hits) < len(hits) / 2  # both kinds of CTA, mostly those away from the box
    spec = cuda_advance.make_spec(plan, arrays, jnp.float64, th, (b, b), cbox=coef_box.find(plan, arrays))
    # the CPML rows whose windows miss the box in a kernel with the backgrounds as literals
    assert {(any(f.pml), f.cbox_bg) for f, _ in split.split(spec)[2]} == {
        (False, False),
        (True, True),
        (True, False),
    }
    # 41 steps: the pulse reaches every CPML slab (their psi then holds more than rounding)
    _compare(sim, 41, th=th, tile=(16, b, b), kernel="emulate")


def _hole_case():
    """40 x 21 x 19 with PEC walls, a small block of eps per component (one cell's z
    component higher), probes in the box, in a tile whose window meets it (x away from it),
    in the bulk and in its last tiles."""
    from emjax.fdtd.grid import PEC

    shape = (40, 21, 19)
    g = fdtd.Grid(shape, 1.0, boundary=PEC(), precision="double")
    eps = np.ones((3,) + shape)
    eps[:, 18:22, 13:16, 4:7] = 2.5
    eps[2, 19, 14, 5] = 4.0
    src = fdtd.PointDipole((20, 11, 10), 2, fdtd.GaussianPulse(frequency=0.1, bandwidth=0.5))
    probes = (
        fdtd.Probe((19, 14, 5), 1),  # in the box
        fdtd.Probe((5, 14, 5), 2, "H"),  # a hole tile, x away from the box
        fdtd.Probe((20, 2, 16), 0),  # a bulk tile
        fdtd.Probe((25, 19, 17), 2),  # the bulk's last tiles in launch order
    )
    return fdtd.GridSimulation(g, eps=eps, sources=(src,), probes=probes)


@emulated
@pytest.mark.parametrize(
    "box_rows, mixed, one",  # the settings that are off by default: slow
    [
        (None, True, False),
        pytest.param(4, True, False, marks=pytest.mark.slow),
        pytest.param(None, False, False, marks=pytest.mark.slow),
        pytest.param(None, True, True, marks=pytest.mark.slow),
    ],
)
def test_emulated_hole_in_the_bulk_equals_the_xla_step(box_rows, mixed, one, monkeypatch):
    """PEC walls (no CPML kernel): the bulk kernel, with the backgrounds as literals, leaves
    out the tiles whose windows meet the box; their marches over the box run in a kernel of
    their own, the rest of their x range and the bulk's last wave (few CTA slots here) in the
    tail. Equal to the XLA step, probes in each kernel's cells included; also with four
    window rows a thread in the box's kernel (the last pass, TH = 1, has windows of 6 rows:
    the bulk's two), and with the marches in pieces of two lengths (bulk.MIXED_PIECES); with
    the bulk's tiles in the tail's launch (bulk.HOLE_ONE_LAUNCH), whole x marches first."""
    monkeypatch.setattr(cuda, "COEF_RING", True)
    monkeypatch.setattr(split, "SLOTS", 5 if mixed else 7)  # 5: two lengths pay off
    monkeypatch.setattr(split, "BOX_ROWS_PER_THREAD", box_rows)
    monkeypatch.setattr(bulk_mod, "MIXED_PIECES", mixed)
    monkeypatch.setattr(bulk_mod, "HOLE_ONE_LAUNCH", one)
    sim = _hole_case()
    with precision_scope():
        plan, arrays, _ = _setup(sim, 4)
        spec = cuda_advance.make_spec(plan, arrays, jnp.float64, 2, (4, 4), cbox=coef_box.find(plan, arrays))
    bulk, tail, fixes, _ = split.split(spec)
    gap = bulk.tiles[5:]
    _, rest = bulk_mod.hole_rows(spec, gap, split.slots())  # the hole's marches away from the box
    assert len({r[9] - r[8] for r in rest}) == (2 if mixed else 1)
    assert bulk.cbox_bg and tail.cbox_bg and gap != (0, 0, 0, 0)
    assert (gap[1] - gap[0]) * (gap[3] - gap[2]) < 6 * 5 / 2  # most tiles in the bulk
    assert bulk.tiles[4] < 6 * 5  # the bulk's last wave goes to the tail
    if one:  # every tile in the tail's launch, the whole x marches first
        assert bulk.tiles[4] == 0 and {r[7] for r in _tail_rows(tail, _rows(spec))[:3]} == {40}
    assert [f.pml for f, _ in fixes] == [(0, 0, 0)] and not fixes[0][0].cbox_bg
    assert fixes[0][0].ry == (box_rows or bulk.ry)
    _compare(sim, 13, th=2, tile=(40, 4, 4), kernel="emulate")


def _rows(spec):
    return split.split(spec)[3]


def _tail_rows(tail, rows):
    return rows[len(rows) - tail.ntask :]


@pytest.mark.gpu
@pytest.mark.parametrize("case", ["away", "hole", "hole-one-launch"])
def test_gpu_box_and_hole_equal_the_xla_step(case, monkeypatch):
    """The two emulated cases above on the GPU (the hole also with the bulk's tiles in the
    tail's launch, ``bulk.HOLE_ONE_LAUNCH``): float64 to 1e-12 of the largest value."""
    monkeypatch.setattr(split, "SLOTS", 7 if case != "away" else None)
    monkeypatch.setattr(bulk_mod, "HOLE_ONE_LAUNCH", case == "hole-one-launch")
    import jax

    jax.clear_caches()  # (the setting is read while tracing)
    if case == "away":
        _compare(_away(), 41, th=3, tile=(16, 4, 4), kernel="cuda")
    else:
        _compare(_hole_case(), 13, th=2, tile=(40, 4, 4), kernel="cuda")


def test_slabs_hold_every_plane_and_read_the_box_only_over_its_x_range(monkeypatch):
    """On x slabs (two devices) the arrays hold the box's y-z cells of every plane, indexed
    from the slab's first plane, while the kernels read them only over the box's x range:
    the marches of the tiles that meet the box in y-z cover the box and TH planes either
    side in a kernel of their own, cut at the slabs' boundary (each device's pieces fill its
    SMs), the rest of x in one with the background literals. (Their
    equality with the XLA step: the emulated slabs' tests in test_blocked_shards.py.)"""
    from dataclasses import replace

    monkeypatch.setattr(split, "SLOTS", 7)
    sim, th = _hole_case(), 2
    with precision_scope():
        plan, arrays, _ = _setup(sim, 4)
        found = coef_box.find_slabs(plan, arrays)
        assert found[0] == (18, 22, 13, 16, 4, 7) and found[2]
        spec = cuda_advance.make_spec(plan, arrays, jnp.float64, th, (4, 4), cbox=found)
        static, _ = cuda_advance.static_inputs(plan, arrays, spec)
    assert spec.cbox_slabs and static[-1].shape == (3, 40, 3, 3)  # eps per component: cb
    _, tail, fixes, rows = split.split(spec, None, 2)  # cut for 2 slabs, as .shards does
    box = [rows[i] for f, idx in fixes if not f.cbox_bg for i in idx]
    assert box and all(16 <= r[8] and r[9] <= 24 for r in box)  # the planes they write
    assert {r[8] < 20 for r in box} == {True, False} and all((r[8] < 20) == (r[9] <= 20) for r in box)
    assert tail.cbox_bg and len(rows) > len(box)
    local = cuda.source(replace(spec, nxa=20 + 2 * th, xhalo=th))
    assert "#define CB_X0 18" in local and "#define CB_NX 4" in local and "#define CB_XA xoff" in local
    with pytest.raises(ValueError, match="slab"):  # one device's box on a slab's kernel
        cuda.source(replace(spec, cbox_slabs=False, nxa=20 + 2 * th, xhalo=th))


def test_mixed_pieces_fill_the_last_wave():
    """Pieces of two lengths, the longer first, finish sooner than every march cut alike
    where the marches do not fill whole waves (144 marches of 132 planes on 132 SMs: 3 pieces
    each make 432 CTAs, a last wave of 36)."""
    assert tiling.list_makespan([3, 3, 3], 2) == 6 and tiling.list_makespan([5, 1, 1, 1, 1, 1], 2) == 5
    n, length, th, slots = 144, 132, 4, 132
    ks = tiling.mixed_pieces(n, length, th, slots)
    assert len(ks) == n and ks == sorted(ks) and len(set(ks)) == 2 and min(length // k for k in ks) >= 4 * th

    def makespan(ks):
        return tiling.list_makespan(
            sorted((length / k + 3 * th for k in ks for _ in range(k)), reverse=True), slots
        )

    uniform = tiling.best_pieces(n, length, th, slots)
    assert makespan(ks) < 0.9 * makespan([uniform] * n)
    assert makespan([uniform] * n) == tiling.march_cost(n, uniform, length, th, slots)


@emulated
def test_emulated_box_with_copies_landing_as_issued(monkeypatch):
    """The coefficients' ring with every asynchronous copy landing as it is issued
    (``EMJAX_EMULATE_COPIES=early``) rather than at the wait that covers it."""
    monkeypatch.setenv("EMJAX_EMULATE_COPIES", "early")
    test_emulated_box_equals_the_xla_step(True, True, monkeypatch)
