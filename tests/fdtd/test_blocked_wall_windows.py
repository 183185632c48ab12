"""The CPML's face rows in windows that end at the walls (``split.WALL_WINDOWS`` with the
aligned rows): TH halo cells on the inner side only. Past the last row the H update reads
the wall's E (the grid's first row: the pass's input at the first level, then 0), as the
XLA step's wrapped difference does; checked from a random state, whose tangential E on the
walls is not zero, so that the input's value matters."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_blocked import _rel, _setup
from test_blocked_cuda import _cpml_all_faces

from emjax.backend import precision_scope
from emjax.fdtd import blocked
from emjax.fdtd import step as engine
from emjax.fdtd.blocked import cuda, cuda_advance, emulation, launches
from emjax.fdtd.blocked import split as cpml_split


def _split(monkeypatch, walls: bool, shape=(12, 30, 26)):
    monkeypatch.setattr(cpml_split, "ALIGNED", True)
    monkeypatch.setattr(cpml_split, "WALL_WINDOWS", walls)
    jax.clear_caches()  # the flags are read while tracing
    sim = _cpml_all_faces(shape)
    plan, arrays, _ = _setup(sim, 5)
    spec = cuda_advance.make_spec(plan, arrays, jnp.float64, 2, (5, 6))
    return sim, cpml_split.split(spec)


def _from_random_state(sim, tile, seed):
    """5 steps from random E and H (the walls' tangential E too), the XLA step's and the
    emulated blocked kernel's at TH = 2: (out, rec, finite), (ref, rec_ref)."""
    rng = np.random.default_rng(seed)
    with precision_scope():
        plan, arrays, state = _setup(sim, 5)
        state = dict(state)
        for f in ("E", "H"):
            state[f] = tuple(jnp.asarray(rng.standard_normal(np.shape(v))) for v in state[f])
        ref, rec_ref, _ = engine.advance(plan, arrays, jax.tree_util.tree_map(jnp.copy, state), 5)
        out, rec, finite = blocked.advance(
            plan, arrays, jax.tree_util.tree_map(jnp.copy, state), 5, th=2, tile=tile, kernel="emulate"
        )
    return (out, rec, finite), (ref, rec_ref)


def _assert_fields_and_psi_equal(out, ref):
    """E and H to 1e-12 of their largest values, each psi to 1e-12 of its own largest."""
    for f in ("E", "H"):
        assert _rel(np.stack(out[f]), np.stack(ref[f])) <= 1e-12, f
    for k in ref["psi"]:
        scale = max(np.abs(np.asarray(ref["psi"][k])).max(), 1e-300)
        assert np.abs(np.asarray(out["psi"][k]) - np.asarray(ref["psi"][k])).max() <= 1e-12 * scale, k


def test_face_windows_end_at_the_walls(monkeypatch):
    """y faces' windows 4 + 2 rows (own 4, TH = 2 inside) for 4 + 4; z faces' 4 + 2 along z;
    the low faces' rows start TH later (the window's first cell is the wall's); the x rows
    and the bulk keep halos on both sides."""
    _, (bulk, _, fixes, rows) = _split(monkeypatch, True)
    (ys, yi), (zs, zi), (xs, _) = fixes
    assert (ys.wall, ys.window, ys.threads) == (1, (6, 10), 64)  # 60 cells, one a thread
    assert (zs.wall, zs.window) == (2, (9, 6))
    assert xs.wall == 0 and bulk.wall == 0 and xs.window == (9, 10)
    # the face kernels (fewer threads) hold their y and z profiles in registers, others not
    assert "#define PROFILE_REGS 1" in cuda.source(ys) and "#define PROFILE_REGS 0" in cuda.source(xs)
    assert {rows[i][0] for i in yi} == {2, 26}  # window origins: y = 0 and 26 - 2 = 24 first
    assert {rows[i][1] for i in zi} == {2, 22}
    _, (_, _, plain, _) = _split(monkeypatch, False)
    assert plain[0][0].window == (8, 10) and plain[0][0].wall == 0


@pytest.mark.skipif(not emulation.available(), reason="no host C++ compiler")
@pytest.mark.parametrize("walls", [True, False])
def test_random_state_through_wall_windows_equals_the_xla_step(monkeypatch, walls):
    """5 steps in passes of 2 (the last of 1) from random E and H (the walls' tangential E
    too): the blocked kernel (emulated) equals the XLA step to 1e-12, with the face windows
    at the walls and without."""
    sim, _ = _split(monkeypatch, walls)
    (out, rec, finite), (ref, rec_ref) = _from_random_state(sim, (12, 5, 6), 3)
    assert bool(finite)
    _assert_fields_and_psi_equal(out, ref)
    assert _rel(rec, rec_ref) <= 1e-12


def test_a_cpml_on_z_alone_takes_z_wall_windows(monkeypatch):
    """Aligned rows with a CPML on z only (PEC walls on x and y): z faces' windows end at the
    walls, and there are no y faces."""
    from emjax import fdtd
    from emjax.fdtd.grid import CPML, PEC

    monkeypatch.setattr(cpml_split, "ALIGNED", True)
    g = fdtd.Grid((12, 30, 26), 1.0, boundary=(PEC(), PEC(), CPML(thickness=2)), precision="double")
    src = fdtd.PointDipole((5, 15, 13), 2, fdtd.GaussianPulse(frequency=0.1, bandwidth=0.5))
    plan, arrays, _ = _setup(fdtd.GridSimulation(g, sources=(src,)), 5)
    spec = cuda_advance.make_spec(plan, arrays, jnp.float64, 2, (5, 6))
    _, _, fixes, rows = cpml_split.split(spec)
    ((zs, zi),) = fixes
    assert zs.wall == 2 and {rows[i][1] for i in zi} == {2, 22}


def test_face_rows_one_row_a_thread_beside_the_bulks_two(monkeypatch):
    """By default (``split.FACE_ROWS_PER_THREAD = 1``) the face rows' kernels take one window
    row a thread while the bulk takes two, and keep every axis's psi chains in shared memory
    where they fit (the random-state test above runs them against the XLA step); where they
    do not, as many as fit, the face's own axis first."""
    monkeypatch.setattr(cpml_split, "ALIGNED", True)
    sim = _cpml_all_faces((12, 30, 26))
    plan, arrays, _ = _setup(sim, 5)
    bulk, _, fixes, _ = cpml_split.split(cuda_advance.make_spec(plan, arrays, jnp.float64, 2, (6, 6)))
    assert bulk.ry == 2 and [f.ry for f, _ in fixes[:2]] == [1, 1] and fixes[0][0].wall == 1
    assert [f.smem_chains for f, _ in fixes[:2]] == [(True, True, True)] * 2 and fixes[0][0].chain_smem
    # room for one axis's chains: the face's own; for two: the other face's next
    spec = cuda_advance.make_spec(plan, arrays, jnp.float64, 2, (6, 6))
    for room, want in ((1, [(0, 1, 0), (0, 0, 1)]), (2, [(0, 1, 1)] * 2)):
        monkeypatch.setattr(cpml_split, "chains_fit", lambda sp, axes, limit=0, room=room: axes <= room)
        got = [f.smem_chains for f, _ in cpml_split.split(spec)[2][:2]]
        assert got == [tuple(map(bool, w)) for w in want], room


@pytest.mark.slow  # settings that are off by default
@pytest.mark.skipif(not emulation.available(), reason="no host C++ compiler")
@pytest.mark.parametrize("along, own_axis", [(4, True), (None, True), (4, False)])
def test_face_rows_shorter_along_the_face_and_chains_of_their_own_axis(monkeypatch, along, own_axis):
    """``split.FACE_ALONG``: the face rows own fewer cells along the face than the bulk's tile
    (more windows); ``split.FACE_CHAINS_OWN_AXIS``: only the face's axis keeps its psi
    chains in shared memory, the corners' and the x ends' in local memory; two CTAs an SM
    (``split.FACE_MIN_CTAS``). From a random state the pass equals the XLA step to 1e-12."""
    monkeypatch.setattr(cpml_split, "FACE_ALONG", along)
    monkeypatch.setattr(cpml_split, "FACE_CHAINS_OWN_AXIS", own_axis)
    monkeypatch.setattr(cpml_split, "FACE_MIN_CTAS", 2)
    monkeypatch.setattr(cpml_split, "ALIGNED", True)
    jax.clear_caches()
    sim = _cpml_all_faces((12, 30, 26))
    plan, arrays, _ = _setup(sim, 5)
    _, _, fixes, rows = cpml_split.split(cuda_advance.make_spec(plan, arrays, jnp.float64, 2, (6, 6)))
    (ys, yi), (zs, zi) = fixes[:2]
    assert ys.block[1] == zs.block[0] == (along or 6) and ys.min_ctas == zs.min_ctas == 2
    assert "MIN_CTAS 2" in cuda.source(ys)
    want = (False, (False, True, False)) if own_axis else (True, ys.chain_axes)
    assert (ys.chain_smem, ys.chain_axes) == want
    assert {rows[i][5] - rows[i][4] for i in yi} <= {along or 6, 26 % (along or 6)}  # own z cells
    (out, _, _), (ref, _) = _from_random_state(sim, (12, 6, 6), 7)
    _assert_fields_and_psi_equal(out, ref)


@pytest.mark.slow  # settings that are off by default
@pytest.mark.skipif(not emulation.available(), reason="no host C++ compiler")
def test_x_rows_one_row_a_thread_with_their_chains_in_local_memory(monkeypatch):
    """``split.X_ROWS_PER_THREAD = 1`` and ``split.X_CHAINS_IN_SMEM = False``: the x-CPML's
    rows one window row a thread, their psi chains in local memory; from a random state the
    pass equals the XLA step to 1e-12, psi included."""
    monkeypatch.setattr(cpml_split, "X_ROWS_PER_THREAD", 1)
    monkeypatch.setattr(cpml_split, "X_CHAINS_IN_SMEM", False)
    monkeypatch.setattr(cpml_split, "ALIGNED", True)
    jax.clear_caches()
    sim = _cpml_all_faces((30, 30, 26))
    plan, arrays, _ = _setup(sim, 5)
    bulk, _, fixes, _ = cpml_split.split(cuda_advance.make_spec(plan, arrays, jnp.float64, 2, (6, 6)))
    xs = [f for f, _ in fixes if f.pml == (f.pml[0], 0, 0) and f.pml[0]]
    assert xs and all(f.ry == 1 and not f.chain_smem and not any(f.smem_chains) for f in xs)
    assert bulk.ry == 2
    (out, _, _), (ref, _) = _from_random_state(sim, (30, 6, 6), 11)
    _assert_fields_and_psi_equal(out, ref)


def test_face_rows_chains_only_where_they_fit(monkeypatch):
    """The face rows keep every axis's psi chains in shared memory where they fit beside the
    buffers (TH = 4); at TH = 8 the y faces keep their own axis's, and where not even that
    fits (the z faces' windows of 40 x 32 cells) every chain goes to local memory; no kernel
    asks for more shared memory than it may, or for more than 1024 threads (the y faces'
    windows of 26 x 40 cells take two rows a thread there, not one). (The faces' kernels
    apart: in one launch each keeps its own.)"""
    monkeypatch.setattr(launches, "MERGE_FACES", False)
    walls, kappa, pml = (True,) * 3, (False,) * 3, (10, 10, 10)
    chains = {}
    for th in (4, 8):
        coef = (1.0, 0.5, 1.0, 0.5, None)
        spec = cuda.Spec("float32", (128,) * 3, th, (24, 24), *coef, walls, pml, kappa, (), (), ry=2)
        _, _, fixes, _ = cpml_split.split(spec)
        assert all(f.smem_bytes <= f.smem_limit and f.threads <= 1024 for f, _ in fixes)
        chains[th] = [f.smem_chains for f, _ in fixes[:2]]
        rows8 = [f.ry for f, _ in fixes[:2]]
    assert chains[4] == [(True, True, True)] * 2
    assert chains[8] == [(False, True, False), (False, False, False)]
    assert rows8 == [2, 2]


def test_a_large_odd_window_takes_more_rows_a_thread():
    """Tiles of 25 at TH = 4 make windows of 33 x 33 cells: one row a thread would ask for
    1120 threads, so the spec takes three rows a thread (384); asked for one row, it says so
    in one line."""
    from emjax.errors import ConfigError

    sim = _cpml_all_faces((12, 40, 40))
    plan, arrays, _ = _setup(sim, 5)
    spec = cuda_advance.make_spec(plan, arrays, jnp.float64, 4, (25, 25))
    assert spec.window == (33, 33) and spec.ry == 3 and spec.threads == 384
    assert cuda_advance.make_spec(plan, arrays, jnp.float64, 4, (24, 24)).ry == 2
    with pytest.raises(ConfigError, match="rows per thread 1: a window of 33 x 33 cells needs 1120 threads"):
        cuda_advance.make_spec(plan, arrays, jnp.float64, 4, (25, 25, 1))


@pytest.mark.slow  # a setting that is off by default
@pytest.mark.skipif(not emulation.available(), reason="no host C++ compiler")
def test_bulk_two_ctas_an_sm(monkeypatch):
    """``split.BULK_MIN_CTAS = 2``: the bulk kernel and its tail ask for two CTAs an SM (the
    CPML's kernels keep one), and the bulk's last wave is counted at two CTAs an SM (as one
    CTA an SM on twice the SMs), unless the x-CPML's kernel marches it (``split.X_TAIL``);
    from a random state the pass equals the XLA step to 1e-12."""
    monkeypatch.setattr(cpml_split, "ALIGNED", True)
    monkeypatch.setattr(cpml_split, "X_TAIL", False)
    sim = _cpml_all_faces((30, 30, 26))
    plan, arrays, _ = _setup(sim, 5)
    spec = cuda_advance.make_spec(plan, arrays, jnp.float64, 2, (6, 6))
    monkeypatch.setattr(cpml_split, "SLOTS", 8)  # 12 tiles: 8 kept, 4 in the tail
    one = cpml_split.split(spec)
    monkeypatch.setattr(cpml_split, "SLOTS", 4)  # (one CTA an SM: 12 kept, no tail)
    monkeypatch.setattr(cpml_split, "BULK_MIN_CTAS", 2)
    jax.clear_caches()
    bulk, tail, fixes, _ = cpml_split.split(spec)
    assert bulk.min_ctas == tail.min_ctas == 2 and "#define MIN_CTAS 2" in cuda.source(bulk)
    assert all(f.min_ctas == 1 for f, _ in fixes)
    assert bulk.tiles == one[0].tiles and bulk.tiles[4] == 8  # the tiles the bulk keeps
    (out, _, _), (ref, _) = _from_random_state(sim, (30, 6, 6), 13)
    _assert_fields_and_psi_equal(out, ref)
    # the x-CPML's kernel (one CTA an SM) marching the last wave: counted at one an SM
    monkeypatch.setattr(cpml_split, "X_TAIL", True)
    assert cpml_split.split(spec)[0].tiles[4] == 12


@pytest.mark.slow  # a setting that is off by default
@pytest.mark.skipif(not emulation.available(), reason="no host C++ compiler")
def test_corner_windows_in_one_more_piece(monkeypatch):
    """``split.FACE_CORNER_PIECES``: the y faces' windows over the z-CPML march x in one more
    piece than the others where that fills no more waves of CTAs (24 CTAs: 20 rows, and the
    corners' 4 more); from a random state the pass equals the XLA step to 1e-12."""
    monkeypatch.setattr(cpml_split, "ALIGNED", True)
    monkeypatch.setattr(cpml_split, "SLOTS", 24)
    sim = _cpml_all_faces((40, 30, 26))
    plan, arrays, _ = _setup(sim, 5)
    spec = cuda_advance.make_spec(plan, arrays, jnp.float64, 2, (6, 6))

    def pieces():  # per own z range of the y faces' windows: its x pieces
        _, _, fixes, rows = cpml_split.split(spec)
        yi = next(idx for f, idx in fixes if f.wall == 1)
        out = {}
        for i in yi:
            out.setdefault(rows[i][4:6], set()).add(rows[i][6:])
        return {own: len(m) for own, m in out.items()}

    assert set(pieces().values()) == {2}
    monkeypatch.setattr(cpml_split, "FACE_CORNER_PIECES", True)
    jax.clear_caches()
    got = pieces()
    assert {own: n for own, n in got.items() if n == 3} == {(0, 6): 3, (24, 26): 3}, got
    (out, _, _), (ref, _) = _from_random_state(sim, (40, 6, 6), 17)
    _assert_fields_and_psi_equal(out, ref)
