"""The CPML's face rows aligned (``split.ALIGNED``, the float32 default): the bulk's tiles over
the interior, a kernel per face axis owning exactly the L + TH cells at each y and z face,
the x-CPML's rows in a kernel of their own; the face depth by cost. Emulated on the CPU and
run on a GPU, equal to the XLA step to rounding."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_blocked import _compare, _setup
from test_blocked_cuda import _cpml_all_faces

from emjax import fdtd
from emjax.backend import precision_scope
from emjax.fdtd import blocked
from emjax.fdtd import step as engine
from emjax.fdtd.blocked import emulation
from emjax.fdtd.grid import CPML

emulated = pytest.mark.skipif(not emulation.available(), reason="no host C++ compiler")
gpu = pytest.mark.gpu


@emulated
@pytest.mark.parametrize(
    "slots, x_tail", [(None, True), (11, True), pytest.param(11, False, marks=pytest.mark.slow)]
)
def test_emulated_aligned_bulk_and_face_rows(monkeypatch, slots, x_tail):
    """``split.ALIGNED``: the bulk's tiles over the interior (the last one slid back), the
    CPML's face rows owning exactly the L + TH cells at each y and z face (z faces over the
    interior's y) in windows a bulk tile long along the face, the x-CPML's rows with the
    bulk's windows in a kernel of their own. With 11 CTAs at once the bulk's last tile runs
    in x pieces: with ``X_TAIL`` in a kernel with the x-CPML's code ahead of the faces' (its
    x rows left out: the x rows then fill whole waves), else as the bulk's tail."""
    from emjax.fdtd.blocked import cuda_advance
    from emjax.fdtd.blocked import split as cpml_split

    monkeypatch.setattr(cpml_split, "ALIGNED", True)
    monkeypatch.setattr(cpml_split, "SLOTS", slots)
    monkeypatch.setattr(cpml_split, "X_TAIL", x_tail)
    jax.clear_caches()  # the flags are read while tracing: a program of another case would serve
    nx = 12 if slots is None else 24  # 24: the x ends apart, and x pieces of the tail that pay
    sim = _cpml_all_faces((nx, 30, 26))
    plan, arrays, _ = _setup(sim, 5)
    spec = cuda_advance.make_spec(plan, arrays, jnp.float64, 2, (5, 6))
    bulk, tail, fixes, rows = cpml_split.split(spec)
    # y: faces of 4 cells (L + TH = 4; 5 would leave 4 whole tiles of 5, but 2 more face cells
    # cost more than the 3 cells the last of the interior's 5 tiles, slid back, computes
    # twice); z: 4 (a multiple of the 4 float64 cells of a 32-byte sector, and 3 whole tiles)
    assert bulk.span == ((4, 22), (4, 18)) and bulk.grid[:2] == (3, 5)
    blocks = [((4, 6), (2, 2, 2)), ((5, 4), (2, 2, 2)), ((5, 6), (2, 0, 0))]  # y faces, z faces, x
    merged = slots is not None and x_tail
    assert [(f.block, f.pml) for f, _ in fixes] == [((5, 6), (2, 0, 0))] * merged + blocks
    assert (tail is not None) == (slots is not None and not x_tail)
    if merged:  # the tail's 4 tiles over all of x, in pieces; the x rows of the other 11
        # tiles (one march at each x end), two waves of 11
        xt, xr = ([rows[i] for i in fixes[j][1]] for j in (0, -1))
        assert (
            len({(r[0], r[1]) for r in xt}) == 4
            and min(r[8] for r in xt) == 0
            and max(r[9] for r in xt) == 24
        )
        assert not {(r[0], r[1]) for r in xt} & {(r[0], r[1]) for r in xr} and len(xr) == 22
    yface, zface = ([rows[i] for i in fixes[j + merged][1]] for j in (0, 1))
    assert {(r[2], r[3]) for r in yface} == {(0, 4), (26, 30)} and {r[5] - r[4] for r in yface} == {6, 2}
    assert {(r[4], r[5]) for r in zface} == {(0, 4), (22, 26)} and {(r[2], r[3]) for r in zface} >= {(4, 9)}
    _compare(sim, 5, th=2, tile=(nx, 5, 6), kernel="emulate")


@emulated
def test_emulated_corners_in_the_z_faces_rows(monkeypatch):
    """``split.CORNERS_Z``: the z faces' rows own the cells in both the y and the z slabs (over
    every y), the y faces' rows the y slabs over the interior's z only; dipoles in the
    corners (both slabs) and next to them."""
    from emjax.fdtd.blocked import cuda_advance
    from emjax.fdtd.blocked import split as cpml_split

    for name, value in (("ALIGNED", True), ("SLOTS", None), ("CORNERS_Z", True)):
        monkeypatch.setattr(cpml_split, name, value)
    jax.clear_caches()
    g = fdtd.Grid((12, 30, 26), 1.0, boundary=CPML(thickness=2), precision="double")
    pulse = fdtd.GaussianPulse(frequency=0.1, bandwidth=0.5)
    at = ((6, 1, 1), (6, 28, 24), (5, 3, 2), (6, 2, 13), (7, 15, 24))  # corners, by them, faces
    srcs = tuple(fdtd.PointDipole(p, i % 3, pulse) for i, p in enumerate(at))
    sim = fdtd.GridSimulation(g, sources=srcs, probes=(fdtd.Probe((6, 1, 2), 0), fdtd.Probe((6, 3, 24), 2)))
    plan, arrays, _ = _setup(sim, 5)
    spec = cuda_advance.make_spec(plan, arrays, jnp.float64, 2, (5, 6))
    bulk, _, fixes, rows = cpml_split.split(spec)
    yface, zface = ([rows[i] for i in fixes[j][1]] for j in (0, 1))
    assert {(r[2], r[3]) for r in yface} == {(0, 4), (26, 30)}
    assert min(r[4] for r in yface) == 4 and max(r[5] for r in yface) == 22  # the interior's z
    assert {(r[4], r[5]) for r in zface} == {(0, 4), (22, 26)}
    assert min(r[2] for r in zface) == 0 and max(r[3] for r in zface) == 30  # every y
    _compare(sim, 5, th=2, tile=(12, 5, 6), kernel="emulate")


def _x_ends_vacuum(nx=24):
    """A CPML on every face, vacuum (no coefficients' box, whose kernel would march the
    tiles again), dipoles and probes near both x ends."""
    g = fdtd.Grid((nx, 30, 26), 1.0, boundary=CPML(thickness=2), precision="double")
    pulse = fdtd.GaussianPulse(frequency=0.1, bandwidth=0.5)
    at = ((4, 15, 13), (4, 12, 10), (nx - 5, 12, 10), (nx - 5, 15, 13))  # (y and z: every psi)
    srcs = tuple(fdtd.PointDipole(p, 1 + i % 2, pulse) for i, p in enumerate(at))
    probes = (fdtd.Probe((5, 15, 13), 2), fdtd.Probe((nx - 4, 12, 10), 1))
    return fdtd.GridSimulation(g, sources=srcs, probes=probes)


def _x_inside(monkeypatch, march=None):
    """The pass's spec and bulk kernel of :func:`_x_ends_vacuum` (``split.ALIGNED``, 11 CTAs at once),
    its march replaced by ``march(spec, xmarch)`` where given."""
    from dataclasses import replace

    from emjax.fdtd.blocked import cuda_advance
    from emjax.fdtd.blocked import split as cpml_split

    monkeypatch.setattr(cpml_split, "ALIGNED", True)
    monkeypatch.setattr(cpml_split, "SLOTS", 11)
    monkeypatch.setattr(cpml_split, "BULK_X_INSIDE", True)
    real = cpml_split.split

    def changed(spec, *a, **k):
        parts = real(spec, *a, **k)
        if parts[0].xmarch is None:
            return parts
        return (replace(parts[0], xmarch=march(spec, parts[0].xmarch)), *parts[1:])

    if march is not None:
        monkeypatch.setattr(cpml_split, "split", changed)
    jax.clear_caches()
    sim = _x_ends_vacuum()
    plan, arrays, _ = _setup(sim, 9)
    spec = cuda_advance.make_spec(plan, arrays, jnp.float64, 2, (5, 6))
    return sim, spec, real(spec)[0]


@emulated
@pytest.mark.parametrize("x_tail", [True, pytest.param(False, marks=pytest.mark.slow)])
def test_emulated_bulk_marches_inside_the_x_cpml(monkeypatch, x_tail):
    """``split.BULK_X_INSIDE``: on one device with the face rows aligned the bulk marches
    [L, NX - L) and writes [L + TH, NX - L - TH); the x rows own the rest of x: equal to
    the XLA step, with dipoles and probes near both x ends; the bulk's last wave in a kernel
    with the x-CPML's code (``X_TAIL``) or as its own tail. Off, or where one x row marches
    all of x, the bulk marches all of it."""
    from dataclasses import replace

    from emjax.fdtd.blocked import cuda
    from emjax.fdtd.blocked import split as cpml_split

    monkeypatch.setattr(cpml_split, "X_TAIL", x_tail)
    sim, spec, bulk = _x_inside(monkeypatch)
    assert bulk.xmarch == (2, 20, 4, 20) and bulk.tiles[4] > 0  # (some tiles are the bulk's)
    assert "#define XM_X0 2\n#define XM_NXW 20\n#define XM_OX0 4\n#define XM_OX1 20" in cuda.source(bulk)
    spec = replace(spec, span=bulk.span)  # (as the split has it: the interior's tiles)
    assert cpml_split.bulk_x_inside(spec, True, 1) == (2, 20, 4, 20)
    assert cpml_split.bulk_x_inside(replace(spec, shape=(12, 30, 26)), True, 1) is None
    assert cpml_split.bulk_x_inside(spec, True, 2) is None  # (slabs: their own x ranges)
    assert cpml_split.bulk_x_inside(spec, False, 1) is None  # (no x rows)
    _compare(sim, 9, th=2, tile=(24, 5, 6), kernel="emulate")
    monkeypatch.setattr(cpml_split, "BULK_X_INSIDE", False)
    assert cpml_split.bulk_x_inside(spec, True, 1) is None


@emulated
@pytest.mark.parametrize("one_launch", [False, pytest.param(True, marks=pytest.mark.slow)])  # (off: slow)
def test_emulated_hole_marches_inside_the_x_cpml(monkeypatch, one_launch):
    """With a box of per-cell coefficients and ``split.BULK_X_INSIDE``, the marches of the
    tiles whose windows meet the box (:func:`.bulk.hole_rows`) keep, away from the box, to
    the planes the bulk writes, [L + TH, NX - L - TH): the x rows own the rest. Equal to the
    XLA step, with a dipole and probes in those tiles near both x ends. With
    ``bulk.HOLE_ONE_LAUNCH`` the bulk's tiles run as whole marches in the tail's kernel with
    the hole's, each away from the box in one piece, the longest first."""
    from dataclasses import replace

    from emjax.fdtd.blocked import bulk as bulk_mod
    from emjax.fdtd.blocked import coef_box, cuda_advance
    from emjax.fdtd.blocked import split as cpml_split

    for name, value in (("ALIGNED", True), ("SLOTS", 5), ("BULK_X_INSIDE", True)):
        monkeypatch.setattr(cpml_split, name, value)
    monkeypatch.setattr(bulk_mod, "HOLE_ONE_LAUNCH", one_launch)
    jax.clear_caches()
    shape = (26, 30, 26)
    g = fdtd.Grid(shape, 1.0, boundary=CPML(thickness=2), precision="double")
    eps = np.ones((3,) + shape)
    eps[:, 11:15, 13:17, 11:15] = 2.5
    pulse = fdtd.GaussianPulse(frequency=0.1, bandwidth=0.5)
    srcs = (fdtd.PointDipole((4, 15, 13), 1, pulse), fdtd.PointDipole((21, 14, 12), 2, pulse))
    probes = (fdtd.Probe((5, 15, 12), 2), fdtd.Probe((20, 16, 14), 1, "H"), fdtd.Probe((13, 14, 12), 0))
    sim = fdtd.GridSimulation(g, eps=eps, sources=srcs, probes=probes)
    with precision_scope():
        plan, arrays, _ = _setup(sim, 8)
        found = coef_box.find(plan, arrays)
        spec = cuda_advance.make_spec(plan, arrays, jnp.float64, 2, (5, 6), cbox=found)
    bulk, tail, _, rows = cpml_split.split(spec)
    gap = bulk.tiles[5:]
    assert bulk.xmarch == (2, 22, 4, 22) and gap != (0, 0, 0, 0)
    spec = replace(spec, span=bulk.span)  # (as the split has it: the interior's tiles)
    box, rest = bulk_mod.hole_rows(spec, gap, cpml_split.slots(), 1, bulk.xmarch, one_launch)
    assert min(r[8] for r in rest) == 4 and max(r[9] for r in rest) == 22 and box
    _, whole = bulk_mod.hole_rows(spec, gap, cpml_split.slots())
    assert min(r[8] for r in whole) == 0 and max(r[9] for r in whole) == 26
    trows = rows[len(rows) - tail.ntask :]
    if one_launch:  # the bulk launches nothing; its tiles lead the tail's rows
        bulk_tiles = bulk_mod.tile_rows(spec, bulk.tiles[:4], 10**9, gap, bulk.xmarch)
        assert bulk.tiles[4] == 0 and set(trows) == set(bulk_tiles) | set(rest)
        assert [r[7] for r in trows] == sorted((r[7] for r in trows), reverse=True)
        assert trows[0][6:] == (2, 22, 4, 22) and len(bulk_tiles) > 0
    else:
        assert bulk.tiles[4] > 0 and set(rest) <= set(trows)
    _compare(sim, 8, th=2, tile=(26, 5, 6), kernel="emulate")


@pytest.mark.slow  # shows that the check above can fail
@emulated
def test_emulated_bulk_march_too_short_for_its_planes_fails(monkeypatch):
    """A bulk whose march starts TH planes later and ends TH earlier but writes the same
    planes: those next to the march's ends are spoiled, and the fields differ."""
    sim, _, _ = _x_inside(monkeypatch, lambda spec, m: (m[0] + spec.th, m[1] - 2 * spec.th, m[2], m[3]))
    with pytest.raises(AssertionError):
        _compare(sim, 9, th=2, tile=(24, 5, 6), kernel="emulate")


def test_aligned_faces_start_the_bulk_on_a_sector():
    """The face rows' depth: at least L + TH, along z a whole number of 32-byte sectors (8
    float32 cells); of those up to a tile deeper, the one whose cells cost least (the bulk's
    cells computed twice in a last tile slid back, each face cell past the least depth at
    ``FACE_COST``); on a tie whole tiles."""
    from emjax.fdtd.blocked.tiling import face_depth

    assert face_depth(512, 24, 14, 8) == 16  # 480 = 20 tiles of 24
    assert face_depth(512, 24, 14, 1) == 16
    assert face_depth(500, 24, 14, 8) == 16  # no multiple of 8 up to 38 leaves whole tiles
    assert face_depth(100, 24, 17, 4) == 20  # 60 cells: not whole tiles; the sector first
    assert face_depth(14, 5, 4, 1) == 4  # 7 would leave whole tiles, but none
    # 1024 and 256: the least depths (a tile column slid back costs less than more face cells)
    assert [face_depth(n, 24, 14, a) for n in (256, 1024) for a in (1, 8)] == [14, 16, 14, 16]
    assert all(face_depth(n, b, r, 8) % 8 == 0 for n in (96, 512, 777) for b in (16, 24) for r in (5, 14))


@gpu
def test_gpu_bulk_marches_inside_the_x_cpml(monkeypatch):
    """``split.BULK_X_INSIDE`` on a 64^3 grid with an 8-cell CPML on every face, float64,
    TH = 3, 61 steps, dipoles near both x ends, the bulk given tiles (2 CTAs at once): to
    1e-12 of the XLA step."""
    from emjax.fdtd.blocked import split as cpml_split

    for name, value in (("ALIGNED", True), ("SLOTS", 2), ("BULK_X_INSIDE", True)):
        monkeypatch.setattr(cpml_split, name, value)
    jax.clear_caches()
    n = 64
    g = fdtd.Grid((n,) * 3, 1.0, boundary=CPML(thickness=8), precision="double")
    pulse = fdtd.GaussianPulse(frequency=0.08, bandwidth=0.5)
    at = ((10, 30, 27), (10, 25, 33), (n - 11, 25, 33), (n - 11, 30, 27))
    srcs = tuple(fdtd.PointDipole(p, 1 + i % 2, pulse) for i, p in enumerate(at))
    sim = fdtd.GridSimulation(
        g, sources=srcs, probes=(fdtd.Probe((12, 30, 27), 2), fdtd.Probe((n - 12, 25, 33), 1))
    )
    from emjax.fdtd.blocked import cuda_advance

    plan, arrays, _ = _setup(sim, 61)
    spec = cuda_advance.make_spec(plan, arrays, jnp.float64, 3, (16, 16))
    assert cpml_split.split(spec)[0].xmarch == (8, 48, 11, 53)  # (on, and the bulk has tiles)
    try:
        _compare(sim, 61, th=3, tile=(n, 16, 16), kernel="cuda")
    finally:
        jax.clear_caches()


def gpu_float32_dipole_equals_xla(n=48, steps=60):
    """float32 on an n^3 grid with an 8-cell CPML on every face, a dipole: the blocked
    kernel's E (passes of 4, tiles of 24) within 1e-5 of the XLA step's largest after
    ``steps`` steps."""
    g = fdtd.Grid((n,) * 3, 1.0, boundary=CPML(8), precision="single")
    src = fdtd.PointDipole((20, 20, 20), 2, fdtd.GaussianPulse(frequency=0.08, bandwidth=0.5))
    sim = fdtd.GridSimulation(g, sources=(src,), probes=(fdtd.Probe((24, 5, 20), 2),))
    with precision_scope():
        plan, arrays, state = _setup(sim, steps, jnp.float32)
        ref, _, _ = engine.advance(plan, arrays, jax.tree_util.tree_map(jnp.copy, state), steps)
        out, _, _ = blocked.advance(plan, arrays, state, steps, th=4, tile=(n, 24, 24), kernel="cuda")
        E, Er = np.stack(out["E"]), np.stack(ref["E"])
        assert np.abs(E - Er).max() <= 1e-5 * np.abs(Er).max()


@gpu
@pytest.mark.parametrize(
    "precision, corners_z", [("double", False), ("single", False), ("double", True), ("single", True)]
)
def test_gpu_aligned_bulk_and_face_rows(monkeypatch, precision, corners_z):
    """``split.ALIGNED`` on a 48^3 grid with a CPML on every face after 60 steps in passes
    of 4: float64 to 1e-12, float32 to 1e-5; the corners in the y or (``CORNERS_Z``) the z
    faces' rows."""
    from emjax.fdtd.blocked import split as cpml_split

    monkeypatch.setattr(cpml_split, "ALIGNED", True)
    monkeypatch.setattr(cpml_split, "CORNERS_Z", corners_z)
    jax.clear_caches()
    try:
        if precision == "double":
            _compare(_cpml_all_faces((48, 48, 48)), 60, th=4, tile=(48, 24, 24), kernel="cuda")
        else:
            gpu_float32_dipole_equals_xla()
    finally:
        jax.clear_caches()
