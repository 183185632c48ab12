"""The CPML kernels' psi chains split by axis (``split.CHAIN_AXES_APART``): the chains of the
axes that fit in shared memory there, the others in local memory, in one kernel. Emulated on
the host against the XLA step; the choice of axes for the 512^3 kernels checked as the GPU
would make it."""

import jax.numpy as jnp
import pytest
from test_blocked import _compare, _setup

from emjax import fdtd
from emjax.fdtd.blocked import cuda, cuda_advance, emulation
from emjax.fdtd.blocked import split as cpml_split
from emjax.fdtd.grid import CPML

emulated = pytest.mark.skipif(not emulation.available(), reason="no host C++ compiler")


def _faces_case(th):
    """A CPML on every face, dipoles beside an x, a y and a z face, a probe in a corner."""
    g = fdtd.Grid((14, 22, 20), 1.0, boundary=CPML(thickness=2), precision="double")
    pulse = fdtd.GaussianPulse(frequency=0.15, bandwidth=0.8)
    near = (((3, 11, 10), 1), ((7, 3, 10), 2), ((7, 11, 17), 0))
    src = tuple(fdtd.PointDipole(n, c, pulse) for n, c in near)
    return fdtd.GridSimulation(g, sources=src, probes=(fdtd.Probe((1, 2, 18), 1, "H"),))


@pytest.mark.slow
@emulated
@pytest.mark.parametrize("axes", [(False, True, True), (True, False, True), (False, False, False)])
def test_emulated_chains_of_some_axes_in_shared_memory(monkeypatch, axes):
    """Every field, psi and probe equals the XLA step's with the chains of ``axes`` in shared
    memory and the others' in local memory, at TH = 3 (a shorter last pass of 2)."""
    monkeypatch.setattr(cpml_split, "CPML_BLOCK", (3, 4))
    monkeypatch.setattr(cpml_split, "CHAIN_AXES_APART", True)
    monkeypatch.setattr(cpml_split, "chains_fit", lambda *a, **k: False)  # not all of them
    monkeypatch.setattr(cpml_split, "chain_axes", lambda sp, mask, limit: axes)
    monkeypatch.setattr(cpml_split, "ALIGNED", False)  # (one CPML kernel)
    th, steps = 3, 14
    sim = _faces_case(th)
    plan, arrays, _ = _setup(sim, steps)
    spec = cuda_advance.make_spec(plan, arrays, jnp.float64, th, (5, 4))
    fixes = cpml_split.split(spec)[2]
    for f, _ in fixes:
        want = tuple(bool(L) and a for L, a in zip(f.pml, axes))
        assert not f.chain_smem and f.smem_chains == want and f.chains == 4 * f.chain_slots * sum(want)
        text = cuda.source(f)
        for a in range(3):
            assert f"#define CHAIN_SMEM{a} {int(want[a])}" in text
    _compare(sim, steps, th=th, tile=(14, 5, 4), kernel="emulate")


def _spec_512(dtype, th, block):
    """The blocked kernel's spec for a vacuum 512^3 grid with 10-cell CPML slabs."""
    return cuda.Spec(
        dtype, (512,) * 3, th, block[:2], 1.0, 0.5, 1.0, 0.5, None, (True,) * 3, (10,) * 3,
        (False,) * 3, (), (), block[2], smem_limit=200 * 1024,
    )  # fmt: skip


@pytest.mark.parametrize(
    "dtype, th, block, axes",
    [
        # float32, TH = 4, tiles of 24 (windows of 32 x 32): the buffers 48 KB, each axis's
        # chains 64 KB: y and z fit in 200 KB, x stays in local memory
        ("float32", 4, (24, 24, 2), "yz"),
        # float64, TH = 3, tiles of 16 (22 x 22): 45 KB and 45 KB per axis: all three
        ("float64", 3, (16, 16, 1), "xyz"),
    ],
)
def test_chain_axes_at_512(monkeypatch, dtype, th, block, axes):
    """The one CPML kernel of all axes (the face rows not aligned) at 512^3 as an H100
    compiles it (200 KB of shared memory): with the split on (the default), the faces' axes
    first; off, the chains of all axes in local memory."""
    monkeypatch.setattr(cpml_split, "SLOTS", 132)
    monkeypatch.setattr(cpml_split, "ALIGNED", False)
    monkeypatch.setattr(cpml_split, "CHAIN_AXES_APART", False)
    spec = _spec_512(dtype, th, block)
    fixes = cpml_split.split(spec)[2]
    assert fixes and all(not f.chain_smem and not any(f.smem_chains) for f, _ in fixes)
    monkeypatch.setattr(cpml_split, "CHAIN_AXES_APART", True)
    fixes = cpml_split.split(spec)[2]
    for f, _ in fixes:
        got = "".join(a for a, c in zip("xyz", f.smem_chains) if c)
        assert got == "".join(a for a, L in zip("xyz", f.pml) if L and a in axes), (f.pml, got)
        assert f.smem_bytes <= f.smem_limit


@pytest.mark.gpu
@pytest.mark.parametrize("th, tile", [(2, (48, 24, 24)), (3, (48, 20, 20))])
def test_gpu_chains_of_some_axes_in_shared_memory(monkeypatch, th, tile):
    """On a 48^3 grid with a CPML on every face and a dielectric block, float64, the CPML
    kernels' windows the bulk's tiles: the chains of y (and z, where they fit) in shared
    memory, x's in local memory (all three do not fit); every field, psi and probe to 1e-12
    after 60 steps."""
    import jax
    from test_blocked_cuda import _cpml_all_faces

    monkeypatch.setattr(cpml_split, "CPML_BLOCK", "bulk")
    monkeypatch.setattr(cpml_split, "CHAIN_AXES_APART", True)
    monkeypatch.setattr(cpml_split, "ALIGNED", False)  # (one CPML kernel)
    sim = _cpml_all_faces((48, 48, 48))
    plan, arrays, _ = _setup(sim, 60)
    spec = cuda_advance.make_spec(plan, arrays, jnp.float64, th, tile[1:])
    fixes = cpml_split.split(spec)[2]
    # (with the psi prefetch's extra slot, TH = 3's windows of 26 hold y's chains alone)
    assert any(f.pml[0] and not f.smem_chains[0] and any(f.smem_chains[1:]) for f, _ in fixes)
    jax.clear_caches()
    try:
        _compare(sim, 60, th=th, tile=tile, kernel="cuda")
    finally:
        jax.clear_caches()
