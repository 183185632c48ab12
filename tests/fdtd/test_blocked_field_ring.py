"""The bulk kernel's next plane through shared memory (``cuda.FIELD_RING``): its six fields
copied with ``cp.async`` into one of two slots as an iteration starts, read from there as the
next one starts. The bulk and its tail take the slots (12 values a window cell more), the
CPML's kernels not; from a random state the passes equal the XLA step to 1e-12 (emulated:
float64's default tiling, and two rows a thread)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_blocked import _setup
from test_blocked_cuda import _cpml_all_faces
from test_blocked_float64_tiling import SHAPE, _default_tiling
from test_blocked_float64_tiling import (
    test_float64_default_tiling_from_a_random_state_equals_the_xla_step as f64_random,
)
from test_blocked_wall_windows import _assert_fields_and_psi_equal

from emjax.backend import precision_scope
from emjax.fdtd import blocked
from emjax.fdtd import step as engine
from emjax.fdtd.blocked import cuda, cuda_advance, emulation
from emjax.fdtd.blocked import split as cpml_split


def _split(monkeypatch, ring: bool):
    monkeypatch.setattr(cuda, "FIELD_RING", ring)
    th, tile, ry = _default_tiling()
    plan, arrays, _ = _setup(_cpml_all_faces(SHAPE), 7)
    spec = cuda_advance.make_spec(plan, arrays, jnp.float64, th, (*tile[1:], ry))
    return cpml_split.split(spec)


def test_the_bulk_and_its_tail_take_the_slots(monkeypatch):
    bulk0, tail0, fixes0, _ = _split(monkeypatch, False)
    bulk, tail, fixes, _ = _split(monkeypatch, True)
    w = bulk.window[0] * bulk.window[1]
    assert bulk.field_ring and bulk.smem_bytes == bulk0.smem_bytes + 12 * w * 8
    assert "#define FRING 1" in cuda.source(bulk) and "#define FRING 0" in cuda.source(bulk0)
    assert tail is None or (tail.field_ring and not tail0.field_ring)
    assert [f for f, _ in fixes] == [f for f, _ in fixes0]  # the CPML's kernels as they were
    assert not any(f.field_ring for f, _ in fixes)


@pytest.mark.skipif(not emulation.available(), reason="no host C++ compiler")
def test_float64_default_tiling_from_a_random_state(monkeypatch):
    monkeypatch.setattr(cuda, "FIELD_RING", True)
    f64_random(monkeypatch, False)


@pytest.mark.skipif(not emulation.available(), reason="no host C++ compiler")
def test_two_rows_a_thread_from_a_random_state(monkeypatch):
    """TH = 2, tiles of 6 x 6 (windows of 10 x 10, two rows a thread), 5 steps (passes of 2,
    2 and 1): fields, psi and the probe's record."""
    monkeypatch.setattr(cuda, "FIELD_RING", True)
    monkeypatch.setattr(cpml_split, "ALIGNED", True)
    jax.clear_caches()
    sim = _cpml_all_faces((12, 30, 26))
    rng = np.random.default_rng(5)
    with precision_scope():
        plan, arrays, state = _setup(sim, 5)
        state = dict(state)
        for f in ("E", "H"):
            state[f] = tuple(jnp.asarray(rng.standard_normal(np.shape(v))) for v in state[f])
        ref, rec_ref, _ = engine.advance(plan, arrays, jax.tree_util.tree_map(jnp.copy, state), 5)
        out, rec, _ = blocked.advance(
            plan, arrays, state, 5, th=2, tile=(12, 6, 6), rows_per_thread=2, kernel="emulate"
        )
    _assert_fields_and_psi_equal(out, ref)
    rec, rec_ref = np.asarray(rec), np.asarray(rec_ref)
    assert np.abs(rec - rec_ref).max() <= 1e-12 * np.abs(rec_ref).max()


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["double", "single"])
def test_gpu_equals_the_xla_step(monkeypatch, precision):
    """On a GPU: float64 at the default tiling, 1000 steps, to 1e-12; float32's dipole to
    1e-5 (the tests of the kernel without the slots, with them)."""
    from test_blocked_aligned import gpu_float32_dipole_equals_xla
    from test_blocked_float64_tiling import test_gpu_float64_default_tiling_1000_steps as f64_gpu

    monkeypatch.setattr(cuda, "FIELD_RING", True)
    jax.clear_caches()
    try:
        f64_gpu() if precision == "double" else gpu_float32_dipole_equals_xla()
    finally:
        jax.clear_caches()
