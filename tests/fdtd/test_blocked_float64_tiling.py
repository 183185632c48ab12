"""Float64's default tiling: TH = 3, tiles of 10 x 26 (windows of 16 x 32, a warp one window
row along z), the CPML's face rows aligned, the z faces 16 own cells along y
(``split.FACE_ALONG_DEFAULT``). From a random state the pass equals the XLA step to 1e-12
(emulated on the host), over a step count TH does not divide; on a GPU, 1000 steps."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_blocked import _rel, _setup
from test_blocked_cuda import _cpml_all_faces

from emjax import fdtd
from emjax.backend import precision_scope
from emjax.fdtd import blocked
from emjax.fdtd import step as engine
from emjax.fdtd.blocked import choice, cuda, cuda_advance, emulation
from emjax.fdtd.blocked import split as cpml_split
from emjax.fdtd.grid import CPML

SHAPE = (10, 40, 56)  # with a 2-cell CPML: an interior of 2 x 10 in y and 2 x 26 in z


def _default_tiling():
    th, tile, ry = choice.default_tiling(jnp.float64)
    assert (th, tile[1:], ry) == (3, (10, 26), 1)
    return th, tile, ry


def test_float64_default_split_is_aligned_with_wider_z_face_windows():
    """The bulk over the interior's 10 x 26 tiles; the y faces' windows a bulk tile (26) along
    z, the z faces' 16 along y; each window a multiple of a warp's 32 z cells or less."""
    th, tile, ry = _default_tiling()
    plan, arrays, _ = _setup(_cpml_all_faces(SHAPE), 7)
    spec = cuda_advance.make_spec(plan, arrays, jnp.float64, th, (*tile[1:], ry))
    bulk, _, fixes, rows = cpml_split.split(spec)
    assert cpml_split.aligned(spec) is not None
    assert bulk.window == (16, 32) and bulk.threads == 512
    tags = [f for f, _ in fixes if f.wall]
    ys = next(f for f in tags if f.wall == 1)
    zs = next(f for f in tags if f.wall == 2)
    assert ys.block[1] == 26 and zs.block[0] == 16
    for f, idx in fixes:  # the z faces' rows own at most 16 cells along y
        if f is zs:
            assert max(rows[i][3] - rows[i][2] for i in idx) <= 16


@pytest.mark.skipif(not emulation.available(), reason="no host C++ compiler")
@pytest.mark.parametrize(
    "trim", [False, pytest.param(True, marks=pytest.mark.slow), pytest.param("clamp", marks=pytest.mark.slow)]
)
def test_float64_default_tiling_from_a_random_state_equals_the_xla_step(monkeypatch, trim):
    """Also with ``cuda.HALO_TRIM`` (the rows no own cell's cone reaches left unread; the
    z faces' windows too, with TH halo rows on both sides along y)."""
    monkeypatch.setattr(cuda, "HALO_TRIM", trim)
    th, tile, ry = _default_tiling()
    sim = _cpml_all_faces(SHAPE)
    rng = np.random.default_rng(3)
    steps = 7  # passes of 3, 3 and 1
    with precision_scope():
        plan, arrays, state = _setup(sim, steps)
        state = dict(state)
        for f in ("E", "H"):
            state[f] = tuple(jnp.asarray(rng.standard_normal(np.shape(v))) for v in state[f])
        ref, rec_ref, _ = engine.advance(plan, arrays, jax.tree_util.tree_map(jnp.copy, state), steps)
        tile = (SHAPE[0], *tile[1:])
        out, rec, _ = blocked.advance(
            plan, arrays, state, steps, th=th, tile=tile, rows_per_thread=ry, kernel="emulate"
        )
    for f in ("E", "H"):
        assert _rel(np.stack(out[f]), np.stack(ref[f])) <= 1e-12, f
    for k in ref["psi"]:
        scale = max(np.abs(np.asarray(ref["psi"][k])).max(), 1e-300)
        assert np.abs(np.asarray(out["psi"][k]) - np.asarray(ref["psi"][k])).max() <= 1e-12 * scale, k
    assert np.abs(np.asarray(rec) - np.asarray(rec_ref)).max() <= 1e-12 * np.abs(np.asarray(rec_ref)).max()


@pytest.mark.gpu
def test_gpu_float64_default_tiling_1000_steps():
    """A CPML on every face, a dielectric block, a dipole: 1000 steps (the last pass one step)
    with the default tiling, to 1e-12 of the largest E and of the probe's record."""
    shape = (48, 72, 88)
    eps = np.ones(shape)
    eps[16:32, 20:52, 24:64] = 4.0
    g = fdtd.Grid(shape, 1.0, boundary=CPML(8), precision="double")
    src = fdtd.PointDipole((24, 36, 44), 2, fdtd.GaussianPulse(frequency=0.08, bandwidth=0.5))
    sim = fdtd.GridSimulation(g, eps=eps, sources=(src,), probes=(fdtd.Probe((28, 36, 44), 2),))
    th, tile, ry = _default_tiling()
    with precision_scope():
        plan, arrays, state = _setup(sim, 1000)
        ref, rec_ref, _ = engine.advance(plan, arrays, jax.tree_util.tree_map(jnp.copy, state), 1000)
        out, rec, _ = blocked.advance(
            plan, arrays, state, 1000, th=th, tile=(shape[0], *tile[1:]), rows_per_thread=ry, kernel="cuda"
        )
    E, Er = np.stack(out["E"]), np.stack(ref["E"])
    assert np.abs(E - Er).max() <= 1e-12 * np.abs(Er).max()
    assert np.abs(np.asarray(rec) - np.asarray(rec_ref)).max() <= 1e-12 * np.abs(np.asarray(rec_ref)).max()
