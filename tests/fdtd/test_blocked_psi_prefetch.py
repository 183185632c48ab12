"""The CPML's psi that each iteration's first level takes, copied into its chain's slot in
shared memory an iteration ahead (``cuda.PSI_PREFETCH``: chains of TH + 1 planes) instead of
read from memory at that level. Emulated on the host (where a copy lands at the wait that
covers it, never earlier: a GPU may land it sooner, which the GPU test runs) and run on a
GPU, against the XLA step."""

import jax
import jax.numpy as jnp
import pytest
from test_blocked import _compare, _cpml_dielectric, _setup
from test_blocked_aligned import _x_ends_vacuum, gpu_float32_dipole_equals_xla
from test_blocked_chains import _faces_case
from test_blocked_cuda import _cpml_all_faces

from emjax.fdtd.blocked import cuda, cuda_advance, emulation
from emjax.fdtd.blocked import split as cpml_split

emulated = pytest.mark.skipif(not emulation.available(), reason="no host C++ compiler")


def test_prefetch_takes_a_slot_more_per_chain(monkeypatch):
    plan, arrays, _ = _setup(_cpml_dielectric(), 4)
    monkeypatch.setattr(cuda, "PSI_PREFETCH", True)
    spec = cuda_advance.make_spec(plan, arrays, jnp.float64, 3, (5, 4))
    fixes = [f for f, _ in cpml_split.split(spec)[2]]
    assert fixes and all(f.psi_pref and f.chain_slots == 4 for f in fixes)
    for f in fixes:
        text = cuda.source(f)
        assert f"#define PSI_PREF {int(any(f.smem_chains))}" in text
        assert f.chains == 16 * sum(f.smem_chains)
    monkeypatch.setattr(cuda, "PSI_PREFETCH", False)
    off = cuda_advance.make_spec(plan, arrays, jnp.float64, 3, (5, 4))
    assert not off.psi_pref and "#define PSI_PREF 0" in cuda.source(off)


@emulated
@pytest.mark.parametrize("case", ["general", "aligned", "some axes"])
def test_emulated_prefetched_psi_equals_the_xla_step(case, monkeypatch):
    """The CPML kernel of a y and a low-z CPML with per-cell eps and sigma (TH = 3, 7 steps:
        a pass of 1 at the end); the face rows aligned with a CPML on every face and dipoles by both
    x ends (TH = 2); and
        chains of the y and z axes in shared memory, x's in registers (the x ones not
        prefetched), dipoles by each face."""
    monkeypatch.setattr(cuda, "PSI_PREFETCH", True)
    jax.clear_caches()  # the settings are read while tracing
    try:
        if case == "general":
            monkeypatch.setattr(cpml_split, "ALIGNED", False)  # (one CPML kernel)
            _compare(_cpml_dielectric(), 7, th=3, tile=(16, 5, 4), kernel="emulate")
        elif case == "aligned":
            monkeypatch.setattr(cpml_split, "ALIGNED", True)
            monkeypatch.setattr(cpml_split, "SLOTS", None)
            _compare(_x_ends_vacuum(), 9, th=2, tile=(24, 5, 6), kernel="emulate")
        else:
            monkeypatch.setattr(cpml_split, "ALIGNED", False)
            monkeypatch.setattr(cpml_split, "CPML_BLOCK", (3, 4))
            monkeypatch.setattr(cpml_split, "CHAIN_AXES_APART", True)
            monkeypatch.setattr(cpml_split, "chains_fit", lambda *a, **k: False)
            monkeypatch.setattr(cpml_split, "chain_axes", lambda sp, mask, limit: (False, True, True))
            sim = _faces_case(3)
            plan, arrays, _ = _setup(sim, 11)
            spec = cuda_advance.make_spec(plan, arrays, jnp.float64, 3, (5, 4))
            fixes = [f for f, _ in cpml_split.split(spec)[2]]
            assert any(f.pml[0] and f.smem_chains == (False, True, True) for f in fixes)
            _compare(sim, 11, th=3, tile=(14, 5, 4), kernel="emulate")
    finally:
        jax.clear_caches()


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["double", "single"])
def test_gpu_prefetched_psi_equals_the_xla_step(monkeypatch, precision):
    """A 48^3 grid with a CPML on every face after 60 steps: float64 (a dielectric block,
    passes of 3) every field, psi and probe to 1e-12; float32 (passes of 4, the face rows
    aligned) E to 1e-5."""
    monkeypatch.setattr(cuda, "PSI_PREFETCH", True)
    jax.clear_caches()
    try:
        if precision == "double":
            _compare(_cpml_all_faces((48, 48, 48)), 60, th=3, tile=(48, 16, 16), kernel="cuda")
            return
        gpu_float32_dipole_equals_xla()
    finally:
        jax.clear_caches()


@pytest.mark.parametrize("case", ["aligned", "some axes"])
def test_emulated_prefetch_with_copies_landing_as_issued(case, monkeypatch):
    """The same with every asynchronous copy landing as it is issued (``EMJAX_EMULATE_COPIES
    =early``), the other end of what a GPU may do: no slot's old value is read after a copy
    into it was issued."""
    monkeypatch.setenv("EMJAX_EMULATE_COPIES", "early")
    test_emulated_prefetched_psi_equals_the_xla_step(case, monkeypatch)
