"""The CUDA blocked kernel (yee_blocked.cu): passes of TH steps, each CTA marching along x
through a y/z window with TH-deep halos, equal to the XLA step to rounding. On the CPU the
same kernel text runs emulated (host threads and barriers); on a GPU it runs through NVRTC
and XLA's kernel call."""

from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_blocked import _compare, _cpml_dielectric, _setup

from emjax import ConfigError, fdtd
from emjax.backend import precision_scope
from emjax.fdtd import blocked
from emjax.fdtd import step as engine
from emjax.fdtd.blocked import cuda, cuda_advance, emulation
from emjax.fdtd.grid import CPML, PEC, Periodic

emulated = pytest.mark.skipif(not emulation.available(), reason="no host C++ compiler")


def _kappa_pec_cells():
    """CPML with kappa > 1 on every face of y and z, x walled by a CPML on its high face
    only (PEC at i = 0), lossless eps per component (ca = 1, cb (3, ...)), PEC cells, a
    dipole on the x wall (dropped, as the XLA step drops it) and one inside."""
    shape = (14, 11, 9)
    rng = np.random.default_rng(3)
    g = fdtd.Grid(
        shape,
        1.0,
        boundary=(
            CPML(thickness=3, sides="high", kappa_max=3.0),
            CPML(thickness=2, kappa_max=2.0),
            Periodic(),
        ),
        precision="double",
    )
    eps = 1.0 + 2.0 * rng.random((3,) + shape)
    pec = np.zeros(shape, bool)
    pec[7:9, 4:6, 3:5] = True
    srcs = (
        fdtd.PointDipole((0, 5, 4), 1, fdtd.GaussianPulse(frequency=0.1, bandwidth=0.5)),
        fdtd.PointDipole((4, 8, 2), 0, fdtd.GaussianPulse(frequency=0.12, bandwidth=0.5)),
    )
    probes = (fdtd.Probe((4, 8, 3), 0), fdtd.Probe((12, 1, 8), 2, "H"))
    return fdtd.GridSimulation(g, eps=eps, pec=pec, sources=srcs, probes=probes)


@emulated
def test_emulated_cpml_dielectric():
    # 7 steps in passes of 2 (the last of 1); y tiles of 5 (the last slides back), z of 4
    _compare(_cpml_dielectric(), 7, th=2, tile=(16, 5, 4), kernel="emulate")


@emulated
def test_emulated_kappa_pec_cells_periodic_z():
    _compare(_kappa_pec_cells(), 6, th=3, tile=(14, 4, 5), kernel="emulate")


@emulated
def test_emulated_bulk_tiles_and_planes_without_cpml_code():
    """A grid with tiles and x planes away from every slab (the kernel compiles the levels
    without CPML code there): 16 x 26 x 26, a 2-cell CPML on every face, tiles of 4."""
    g = fdtd.Grid((16, 26, 26), 1.0, boundary=CPML(thickness=2), precision="double")
    # x and z dipoles, so that every psi is a field's (an Ez dipole alone leaves Hz, and the
    # psi of its differences, at rounding noise, which no ordering reproduces)
    srcs = (
        fdtd.PointDipole((4, 3, 22), 2, fdtd.GaussianPulse(frequency=0.15, bandwidth=0.5)),
        fdtd.PointDipole((11, 21, 5), 0, fdtd.GaussianPulse(frequency=0.12, bandwidth=0.5)),
    )
    sim = fdtd.GridSimulation(g, sources=srcs, probes=(fdtd.Probe((8, 12, 12), 0),))
    with precision_scope():
        plan, arrays, state = _setup(sim, 25)
        ref, rec_ref, _ = engine.advance(plan, arrays, jax.tree_util.tree_map(jnp.copy, state), 25)
        out, rec, _ = blocked.advance(plan, arrays, state, 25, th=2, tile=(16, 4, 4), kernel="emulate")
    for f in "EH":
        a, b = np.stack(out[f]), np.stack(ref[f])
        assert np.abs(a - b).max() <= 1e-12 * np.abs(b).max(), f
    # psi to 1e-12 of the largest psi: some components here are 1e-6 of the others and carry
    # rounding of the fields' size, as in the XLA step itself
    scale = max(np.abs(np.asarray(v)).max() for v in ref["psi"].values())
    for k in ref["psi"]:
        assert np.abs(np.asarray(out["psi"][k]) - np.asarray(ref["psi"][k])).max() <= 1e-12 * scale, k
    assert np.abs(np.asarray(rec) - np.asarray(rec_ref)).max() <= 1e-12 * np.abs(np.asarray(rec_ref)).max()


@emulated
@pytest.mark.parametrize(
    "split_cpml,nx",
    # the split kernels' fast checks: the bulk's tail in pieces and its covered tiles (below)
    [
        pytest.param(True, 20, marks=pytest.mark.slow),
        (False, 20),
        pytest.param(True, 40, marks=pytest.mark.slow),
    ],
)
def test_emulated_cpml_kernel_of_its_own(split_cpml, nx):
    """The CPML as a kernel of its own after a bulk kernel without CPML code, with windows
    that just cover each slab plus TH cells (y: 3 + 3 in tiles of 5, z: 2 + 3 in tiles of
    4), x marches of L + 2 TH planes at each face, a dipole and probes in the slabs and in
    the bulk; and the single kernel with the CPML inside it (``split_cpml=False``). With 40
    x planes the y/z slabs' windows march in pieces of x (TH = 3: 3 pieces)."""
    g = fdtd.Grid(
        (nx, 30, 27),
        1.0,
        boundary=(CPML(thickness=3), CPML(thickness=3), CPML(thickness=2)),
        precision="double",
    )
    srcs = (
        fdtd.PointDipole((10, 15, 13), 1, fdtd.GaussianPulse(frequency=0.15, bandwidth=0.5)),
        fdtd.PointDipole((2, 27, 1), 0, fdtd.GaussianPulse(frequency=0.12, bandwidth=0.5)),
        fdtd.PointDipole((10, 1, 12), 2, fdtd.GaussianPulse(frequency=0.1, bandwidth=0.5)),
    )
    probes = (fdtd.Probe((1, 14, 13), 2), fdtd.Probe((10, 15, 14), 0, "H"), fdtd.Probe((18, 4, 25), 1))
    sim = fdtd.GridSimulation(g, sources=srcs, probes=probes)
    with precision_scope():
        plan, arrays, state = _setup(sim, 7)
        ref, rec_ref, _ = engine.advance(plan, arrays, jax.tree_util.tree_map(jnp.copy, state), 7)
        out, rec, _ = blocked.advance(
            plan, arrays, state, 7, th=3, tile=(20, 5, 4), kernel="emulate", split_cpml=split_cpml
        )
    for f in "EH":
        a, b = np.stack(out[f]), np.stack(ref[f])
        assert np.abs(a - b).max() <= 1e-12 * np.abs(b).max(), f
    scale = max(np.abs(np.asarray(v)).max() for v in ref["psi"].values())
    for k in ref["psi"]:
        assert np.abs(np.asarray(out["psi"][k]) - np.asarray(ref["psi"][k])).max() <= 1e-12 * scale, k
    assert np.abs(np.asarray(rec) - np.asarray(rec_ref)).max() <= 1e-12 * np.abs(np.asarray(rec_ref)).max()


def _dft_planes_case():
    from emjax.fdtd import monitors as M

    g = fdtd.Grid(
        (20, 17, 15), 1.0, boundary=(CPML(thickness=3), CPML(thickness=2), Periodic()), precision="double"
    )
    srcs = (fdtd.PointDipole((10, 8, 7), 1, fdtd.GaussianPulse(frequency=0.15, bandwidth=0.5)),)
    mons = (
        M.DFTPlane(0, 5, (0.1, 0.15)),
        M.DFTPlane(1, 12, (0.12,), lo=(4, 0, 3), hi=(15, 0, 12)),
        M.DFTPlane(2, 9, (0.1, 0.2), lo=(2, 3, 0), hi=(18, 14, 0)),
        M.DFTPlane(1, 4, (0.1,)),
    )
    return fdtd.GridSimulation(g, sources=srcs, monitors=mons, probes=(fdtd.Probe((3, 3, 3), 0),))


def _compare_dft(sim, steps, kernel, tol=1e-13):
    with precision_scope():
        plan, arrays, state = _setup(sim, steps)
        ref, rec_ref, _ = engine.advance(plan, arrays, jax.tree_util.tree_map(jnp.copy, state), steps)
        out, rec, _ = blocked.advance(plan, arrays, state, steps, th=2, tile=(20, 5, 4), kernel=kernel)
    for a, b in zip(out["dft"], ref["dft"]):
        for k in "EH":
            assert a[k].shape == b[k].shape
            assert np.abs(a[k] - b[k]).max() <= tol * np.abs(b[k]).max()
    assert np.abs(np.asarray(rec) - np.asarray(rec_ref)).max() <= 1e-12 * np.abs(np.asarray(rec_ref)).max()


@emulated
def test_emulated_dft_planes():
    """DFT planes recorded by the kernel every step and summed after each pass equal the XLA
    step's running DFTs: planes normal to x, y and z, whole (wrapped samples on a periodic z
    and at the grid's end) and limited to boxes, one crossing the CPML kernel's slabs."""
    _compare_dft(_dft_planes_case(), 5, "emulate")


def test_cpml_kernel_tasks_cover_the_slabs_once_per_cell_kind():
    """Every cell within L + TH of a CPML face is written by some task, and no task writes
    a plane its march spoils (the TH planes at an end inside the grid)."""
    from emjax.fdtd.blocked import split as cpml_split

    spec = cuda.Spec(
        "float32",
        (64, 100, 41),
        4,
        (24, 24),
        1.0,
        0.5,
        1.0,
        0.5,
        None,
        (True,) * 3,
        (6, 5, 0),
        (False,) * 3,
        (),
        (),
    )
    rows = cpml_split.tasks(spec)
    hit = np.zeros(spec.shape, bool)
    for y0, z0, oy0, oy1, oz0, oz1, x0, nxw, ox0, ox1 in rows:
        assert y0 <= oy0 and oy1 <= y0 + 24 and z0 <= oz0 and oz1 <= z0 + 24
        assert (x0 == 0 or ox0 >= x0 + 4) and (x0 + nxw == 64 or ox1 <= x0 + nxw - 4)
        hit[ox0:ox1, oy0:oy1, oz0:oz1] = True
    x, y = np.arange(64)[:, None, None], np.arange(100)[None, :, None]
    need = (x < 10) | (x >= 54) | (y < 9) | (y >= 91)
    assert hit[np.broadcast_to(need, hit.shape)].all()
    assert not hit[20:44, 30:70].any()  # the bulk is left alone


def _cpml_all_faces(shape=(10, 30, 26)):
    """A CPML on every face, a dielectric block, probes in the bulk, in a y slab and at a
    corner: with tiles of 5 x 4 and TH 2 the bulk kernel leaves out some tiles at each y
    and z face (the CPML kernels recompute them) and computes the rest."""
    nx, ny, nz = shape
    g = fdtd.Grid(shape, 1.0, boundary=CPML(thickness=2), precision="double")
    eps = np.ones(shape)
    eps[3:7, 8 : ny - 8, 6 : nz - 6] = 3.0
    src = fdtd.PointDipole((5, ny // 2, nz // 2), 2, fdtd.GaussianPulse(frequency=0.1, bandwidth=0.5))
    probes = (
        fdtd.Probe((nx - 5, ny // 2 + 2, nz // 2), 2),
        fdtd.Probe((4, 1, 13), 0),
        fdtd.Probe((1, ny - 2, nz - 2), 1, "H"),
    )
    return fdtd.GridSimulation(g, eps=eps, sources=(src,), probes=probes)


@emulated
def test_emulated_bulk_tail_in_pieces(monkeypatch):
    """With 7 CTAs at once, the bulk's 9 tiles leave 2 for a last wave: they run as a second
    launch of x pieces (3 of 8 planes and their halos each)."""
    from emjax.fdtd.blocked import cuda_advance
    from emjax.fdtd.blocked import split as cpml_split

    monkeypatch.setattr(cpml_split, "SLOTS", 7)
    monkeypatch.setattr(cpml_split, "ALIGNED", False)  # (the layout of one CPML kernel)
    sim = _cpml_all_faces((24, 22, 18))
    plan, arrays, _ = _setup(sim, 5)
    spec = cuda_advance.make_spec(plan, arrays, jnp.float64, 2, (5, 4))
    bulk, tail, fixes, rows = cpml_split.split(spec)
    assert bulk.tiles == (1, 4, 1, 4, 7, 0, 0, 0, 0) and tail.ntask == 6  # no hole
    assert {r[8:] for r in rows[-6:]} == {(0, 8), (8, 16), (16, 24)}
    _compare(sim, 5, th=2, tile=(24, 5, 4), kernel="emulate")


@emulated
def test_emulated_cpml_kernel_with_its_own_window(monkeypatch):
    """The CPML kernel with smaller windows than the bulk's (``split.CPML_BLOCK``), its psi
    chains in shared memory: the bulk leaves out only the tiles those windows cover."""
    from emjax.fdtd.blocked import cuda_advance
    from emjax.fdtd.blocked import split as cpml_split

    monkeypatch.setattr(cpml_split, "CPML_BLOCK", (3, 4))
    monkeypatch.setattr(cpml_split, "ALIGNED", False)  # (the layout of one CPML kernel)
    sim = _cpml_all_faces()
    plan, arrays, _ = _setup(sim, 5)
    spec = cuda_advance.make_spec(plan, arrays, jnp.float64, 2, (5, 4))
    bulk, tail, fixes, rows = cpml_split.split(spec)
    assert bulk.block == (5, 4) and all(f.block == (3, 4) and f.chain_smem for f, _ in fixes)
    _compare(sim, 5, th=2, tile=(10, 5, 4), kernel="emulate")


@emulated
@pytest.mark.parametrize("th", [3, 4])
def test_emulated_psi_ring_in_shared_memory_deeper_than_two_steps(monkeypatch, th):
    """The psi chains in shared memory keep plane p's psi in slot p % TH while levels 1 .. TH
    update it: at TH = 3 and 4 (a shorter last pass) with dipoles beside an x, a y and a z
    face, every psi, field and probe equals the XLA step's; a ring one slot short (two
    planes in flight sharing one) does not."""
    from emjax.fdtd.blocked import cuda_advance
    from emjax.fdtd.blocked import split as cpml_split

    monkeypatch.setattr(cpml_split, "CPML_BLOCK", (3, 4))
    shape, steps = (14, 22, 20), 4 * th + 2
    g = fdtd.Grid(shape, 1.0, boundary=CPML(thickness=2), precision="double")
    pulse = fdtd.GaussianPulse(frequency=0.15, bandwidth=0.8)
    near = (((3, 11, 10), 1), ((7, 3, 10), 2), ((7, 11, 17), 0))  # beside an x, a y and a z face
    src = tuple(fdtd.PointDipole(n, c, pulse) for n, c in near)
    sim = fdtd.GridSimulation(g, sources=src, probes=(fdtd.Probe((1, 2, 18), 1, "H"),))
    plan, arrays, _ = _setup(sim, steps)
    spec = cuda_advance.make_spec(plan, arrays, jnp.float64, th, (5, 4))
    fixes = cpml_split.split(spec)[2]
    assert all(f.chain_smem and f.chains == 4 * f.chain_slots * sum(map(bool, f.pml)) for f, _ in fixes)
    _compare(sim, steps, th=th, tile=(14, 5, 4), kernel="emulate")


@pytest.mark.slow
@emulated
def test_emulated_x_slabs_in_a_kernel_of_their_own(monkeypatch):
    """The rows that reach the x-CPML alone in a kernel compiled for that axis
    (``split.X_SLABS_APART``), after the kernel of the y and z faces' rows."""
    from emjax.fdtd.blocked import cuda_advance
    from emjax.fdtd.blocked import split as cpml_split

    monkeypatch.setattr(cpml_split, "X_SLABS_APART", True)
    monkeypatch.setattr(cpml_split, "ALIGNED", False)  # (the layout of one CPML kernel)
    sim = _cpml_all_faces()
    plan, arrays, _ = _setup(sim, 5)
    spec = cuda_advance.make_spec(plan, arrays, jnp.float64, 2, (5, 4))
    fixes = cpml_split.split(spec)[2]
    assert [f.pml for f, _ in fixes] == [(2, 2, 2), (2, 0, 0)] and fixes[1][0].chain_smem
    _compare(sim, 5, th=2, tile=(10, 5, 4), kernel="emulate")


@pytest.mark.slow
@emulated
def test_emulated_face_marches_apart_from_the_x_ends(monkeypatch):
    """``split.X_ENDS_APART``: the y and z faces' marches cut where the x-CPML ends; those
    between reach one CPML axis and run in a kernel per axis with their chains in shared
    memory, after the kernel of all three axes (the x ends, the corners, the x rows)."""
    from emjax.fdtd.blocked import cuda_advance
    from emjax.fdtd.blocked import split as cpml_split

    monkeypatch.setattr(cpml_split, "X_ENDS_APART", True)
    monkeypatch.setattr(cpml_split, "ALIGNED", False)  # (the layout of one CPML kernel)
    sim = _cpml_all_faces((24, 30, 26))
    plan, arrays, _ = _setup(sim, 5)
    spec = cuda_advance.make_spec(plan, arrays, jnp.float64, 2, (5, 4))
    fixes, rows = cpml_split.split(spec)[2:]
    assert [f.pml for f, _ in fixes] == [(2, 2, 2), (0, 2, 0), (0, 0, 2)]
    assert fixes[1][0].chain_smem and fixes[2][0].chain_smem
    middle = {(rows[i][8], rows[i][9]) for _, idx in fixes[1:] for i in idx}
    assert min(a for a, _ in middle) == 4 and max(b for _, b in middle) == 19  # Lx + TH, nx - Lx - TH - 1
    _compare(sim, 5, th=2, tile=(24, 5, 4), kernel="emulate")


@emulated
def test_emulated_bulk_leaves_covered_tiles(monkeypatch):
    from emjax.fdtd.blocked import cuda_advance
    from emjax.fdtd.blocked import split as cpml_split

    monkeypatch.setattr(cpml_split, "GROUP_BY_AXES", True)
    monkeypatch.setattr(cpml_split, "ALIGNED", False)
    sim = _cpml_all_faces()
    plan, arrays, _ = _setup(sim, 5)
    spec = cuda_advance.make_spec(plan, arrays, jnp.float64, 2, (5, 4))
    bulk, tail, fixes, rows = cpml_split.split(spec)
    ty0, ty1, tz0, tz1 = bulk.tiles[:4]
    assert 0 < ty0 < ty1 < 6 and 0 < tz0 < tz1 < 7  # some tiles left out at each face, not all
    assert tail is None and sorted(i for _, idx in fixes for i in idx) == list(range(len(rows)))
    assert any(f.chain_smem for f, _ in fixes) and len(fixes) > 1
    _compare(sim, 5, th=2, tile=(10, 5, 4), kernel="emulate")


def test_cpml_kernels_by_axes_at_512(monkeypatch):
    """At 512^3 with 10-cell CPML slabs, most rows reach one CPML axis only: their kernels
    keep the psi chains in shared memory; a row is never given a kernel without an axis its
    window or march reaches."""
    from emjax.fdtd.blocked import split as cpml_split

    spec = cuda.Spec(
        "float32",
        (512,) * 3,
        4,
        (24, 24),
        1.0,
        0.5,
        1.0,
        0.5,
        None,
        (True,) * 3,
        (10,) * 3,
        (False,) * 3,
        (),
        (),
        2,
    )
    monkeypatch.setattr(cpml_split, "SLOTS", 132)
    monkeypatch.setattr(cpml_split, "GROUP_BY_AXES", True)
    monkeypatch.setattr(cpml_split, "ALIGNED", False)
    monkeypatch.setattr(cpml_split, "CHAIN_AXES_APART", False)  # (tested apart)
    bulk, tail, fixes, rows = cpml_split.split(spec)
    # 400 tiles: 3 waves of 132 on an H100, the last 4 tiles in 32 x pieces (one more wave)
    assert bulk.tiles == (1, 21, 1, 21, 396, 0, 0, 0, 0) and not any(bulk.pml) and tail.ntask == 4 * 32
    rows = rows[: len(rows) - tail.ntask]
    single = sum(len(idx) for f, idx in fixes if sum(map(bool, f.pml)) == 1)
    assert single > 0.6 * len(rows)
    for f, idx in fixes:
        assert f.chain_smem == (sum(map(bool, f.pml)) == 1) and f.smem_bytes <= 160 * 1024
        for i in idx:
            y0, z0, x0, nxw = rows[i][0], rows[i][1], rows[i][6], rows[i][7]
            ys = {g % 512 for g in range(y0 - 4, y0 + 28)}
            zs = {g % 512 for g in range(z0 - 4, z0 + 28)}
            xs = set(range(x0, min(x0 + nxw + 1, 512)))
            for a, cells in enumerate((xs, ys, zs)):
                if any(g < 10 or g >= 502 for g in cells):
                    assert f.pml[a], (rows[i], f.pml)


@emulated
@pytest.mark.slow
def test_emulated_th4_not_dividing():
    _compare(_cpml_dielectric(), 23, th=4, tile=(16, 5, 4), kernel="emulate")


def test_refuses_periodic_x():
    g = fdtd.Grid((8, 8, 8), 1.0, boundary=(Periodic(), PEC(), PEC()))
    sim = fdtd.GridSimulation(
        g, sources=(fdtd.PointDipole((4, 4, 4), 2, fdtd.GaussianPulse(frequency=0.1, bandwidth=0.5)),)
    )
    plan, arrays, state = _setup(sim, 4)
    with pytest.raises(ConfigError, match="periodic x axis"):
        blocked.advance(plan, arrays, state, 4, th=2, tile=(8, 4, 4), kernel="emulate")


def test_source_text_names_every_buffer():
    plan, arrays, _ = _setup(_cpml_dielectric(), 4)
    spec = blocked.cuda_advance.make_spec(plan, arrays, jnp.float64, 2, (5, 4))
    text = cuda.source(spec)
    for name, _ in cuda.inputs(spec) + cuda.outputs(spec):
        assert f"*__restrict__ {name}" in text
    assert "#define TH 2" in text and "#define WY 9" in text


def test_indices_are_32_bit_where_every_array_fits(monkeypatch):
    """32-bit indices where the largest array the kernel indexes holds fewer than 2^31
    values: 1024^3 fields do, 1024^3 per-component coefficients (3 values a cell) do not."""

    def spec(n, cb):
        walls, pml, kappa = (True,) * 3, (10,) * 3, (False,) * 3
        return cuda.Spec(
            "float32", (n,) * 3, 4, (24, 24), 1.0, 0.5, 1.0, cb, None, walls, pml, kappa, (), (), 2
        )

    assert "#define IDXT int" in cuda.source(spec(1024, 0.5))
    assert "#define IDXT long" in cuda.source(spec(1024, "comp"))
    assert "#define IDXT int" in cuda.source(spec(512, "comp"))
    assert cuda.index_type(replace(spec(512, "comp"), nxa=3000)) == "long"  # 3 x 3000 x 512^2
    assert cuda.index_type(replace(spec(512, 0.5), poles=(4, 2, 2, 0, 3))) == "int"  # 12 x 512^3
    assert cuda.index_type(replace(spec(512, 0.5), poles=(6, 2, 2, 0, 3))) == "long"  # 18 x 512^3
    monkeypatch.setattr(cuda, "INDEX_INT32", False)
    assert "#define IDXT long" in cuda.source(spec(512, 0.5))


def test_per_cell_coefficients_staged_in_shared_memory(monkeypatch):
    """Per-component cb and PEC masks go through the shared-memory ring (TH + 1 planes of
    their values per window cell); past the size limit they are read from global memory.
    The setting is part of the spec (the jitted drivers' key): changing it makes another."""
    plan, arrays, _ = _setup(_kappa_pec_cells(), 4)
    spec = cuda_advance.make_spec(plan, arrays, jnp.float64, 3, (4, 5))
    assert spec.ring == (("cb", 3), ("pec", 1))  # one mask per cell here
    w = spec.window[0] * spec.window[1]
    assert spec.smem_bytes == (12 + 4 * 4) * w * 8
    assert "#define NRING 4" in cuda.source(spec) and "#define RING_CB 0" in cuda.source(spec)
    small = cuda_advance.make_spec(plan, arrays, jnp.float64, 3, (4, 5), (True, (12 + 4 * 3) * w * 8))
    assert small.ring == (("cb", 3),) and small != spec  # room for cb only
    monkeypatch.setattr(cuda, "COEF_RING", False)
    assert cuda.ring_setting()[0] is False
    off = cuda_advance.make_spec(plan, arrays, jnp.float64, 3, (4, 5))
    assert off != spec and off.ring == () and off.smem_bytes == 12 * w * 8
    assert "#define NRING 0" in cuda.source(off)


def test_ring_limit_follows_the_device(monkeypatch):
    """The ring's shared memory stays within what the GPU lets a block opt into."""

    class Dev:
        def __init__(self, cc):
            self.compute_capability = cc

    for cc, kb in (("9.0", 227), ("8.0", 163), ("8.6", 99), ("8.9", 99), ("7.5", 64)):
        monkeypatch.setattr(jax, "devices", lambda backend=None, cc=cc: [Dev(cc)])
        assert cuda.smem_limit() == min(kb * 1024 - 1024, cuda.RING_SMEM_LIMIT)


@emulated
def test_emulated_coefficients_without_the_ring(monkeypatch):
    """The kernel reading cb and the PEC masks from global memory (no room for the ring)."""
    monkeypatch.setattr(cuda, "COEF_RING", False)
    _compare(_kappa_pec_cells(), 6, th=3, tile=(14, 4, 5), kernel="emulate")


gpu = pytest.mark.gpu


@gpu
@pytest.mark.parametrize("case", ["cpml_dielectric", "kappa_pec_cells"])
def test_gpu_equals_xla_float64(case):
    sim = _cpml_dielectric() if case == "cpml_dielectric" else _kappa_pec_cells()
    _compare(sim, 23, th=4, tile=(16, 5, 4), kernel="cuda")


@gpu
def test_gpu_1000_steps_float64_and_float32():
    """A 40^3 grid with a CPML on every face and a dielectric block: 1000 steps, float64 to
    1e-12 and float32 to 1e-5 (relative to the largest value)."""
    n = 40
    eps = np.ones((n,) * 3)
    eps[14:26, 10:30, 12:20] = 4.0
    for precision, dtype, tol in (("double", jnp.float64, 1e-12), ("single", jnp.float32, 1e-5)):
        g = fdtd.Grid((n,) * 3, 1.0, boundary=CPML(8), precision=precision)
        src = fdtd.PointDipole((20, 20, 20), 2, fdtd.GaussianPulse(frequency=0.08, bandwidth=0.5))
        sim = fdtd.GridSimulation(g, eps=eps, sources=(src,), probes=(fdtd.Probe((24, 20, 20), 2),))
        with precision_scope():
            plan, arrays, state = _setup(sim, 1000, dtype)
            ref, rec_ref, _ = engine.advance(plan, arrays, jax.tree_util.tree_map(jnp.copy, state), 1000)
            out, rec, finite = blocked.advance(
                plan, arrays, state, 1000, th=4, tile=(n, 24, 24), kernel="cuda"
            )
            E, Er = np.stack(out["E"]), np.stack(ref["E"])
            assert np.abs(E - Er).max() <= tol * np.abs(Er).max(), precision
            assert (
                np.abs(np.asarray(rec) - np.asarray(rec_ref)).max() <= tol * np.abs(np.asarray(rec_ref)).max()
            )


@gpu
def test_gpu_dft_planes_float64():
    _compare_dft(_dft_planes_case(), 41, "cuda", tol=1e-12)


@gpu
@pytest.mark.parametrize("cpml_block, th", [((16, 16), 2), ((8, 12), 2), ((16, 16), 4)])
def test_gpu_cpml_kernel_with_its_own_window(monkeypatch, cpml_block, th):
    """The CPML kernel with windows smaller than the bulk's on a 48^3 grid with a CPML on
    every face (bulk tiles of 24 x 24), float64 to 1e-12 after 60 steps: at TH = 2 its three
    axes' psi chains fit in shared memory, at TH = 4 they do not."""
    from emjax.fdtd.blocked import split as cpml_split

    monkeypatch.setattr(cpml_split, "CPML_BLOCK", cpml_block)
    jax.clear_caches()
    try:
        _compare(_cpml_all_faces((48, 48, 48)), 60, th=th, tile=(48, 24, 24), kernel="cuda")
    finally:
        jax.clear_caches()


@gpu
@pytest.mark.parametrize("flag", ["X_SLABS_APART", "X_ENDS_APART"])
def test_gpu_cpml_rows_in_kernels_per_axis(monkeypatch, flag):
    """``split.X_SLABS_APART`` (the x-CPML's rows in a kernel of their own) and
    ``split.X_ENDS_APART`` (the faces' marches cut at the x-CPML's ends) on a 48^3 grid with a
    CPML on every face, float64 to 1e-12 after 60 steps in passes of 4."""
    from emjax.fdtd.blocked import split as cpml_split

    monkeypatch.setattr(cpml_split, flag, True)
    jax.clear_caches()
    try:
        _compare(_cpml_all_faces((48, 48, 48)), 60, th=4, tile=(48, 24, 24), kernel="cuda")
    finally:
        jax.clear_caches()
