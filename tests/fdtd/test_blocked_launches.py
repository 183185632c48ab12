"""Several kernels of a pass in one launch (``launches.MERGE_FACES``): the CPML's y and z face
rows' kernels, each compiled in a namespace of its own inside one entry that picks by the
CTA's index. From a random state the pass equals the XLA step to 1e-12 (emulated)."""

import dataclasses
from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_blocked_cuda import _cpml_all_faces
from test_blocked_wall_windows import _assert_fields_and_psi_equal, _from_random_state, _split

from emjax import fdtd
from emjax.fdtd.blocked import choice, cuda, emulation, launches


def _faces(monkeypatch, merge: bool):
    """(sim, split) of the aligned rows with windows that end at the walls, the faces'
    kernels merged or not."""
    monkeypatch.setattr(launches, "MERGE_FACES", merge)
    return _split(monkeypatch, True)


def test_the_faces_kernels_in_one_launch(monkeypatch):
    """One fix where there were two: the y faces' rows then the z faces', the CTA the larger
    of the two, each kernel's source in its namespace."""
    _, (_, _, apart, rows) = _faces(monkeypatch, False)
    _, (_, _, one, rows2) = _faces(monkeypatch, True)
    assert rows2 == rows and len(one) == len(apart) - 1
    (ys, yi), (zs, zi) = [f for f in apart if f[0].wall]
    merged, idx = next(f for f in one if f[0].merged)
    assert merged.merged == (ys, zs) and idx == yi + zi and merged.ntask == ys.ntask + zs.ntask
    assert merged.grid == (len(idx), 1, 1)
    assert merged.threads == max(ys.threads, zs.threads)
    assert merged.smem_bytes == max(ys.smem_bytes, zs.smem_bytes)
    text = cuda.source(merged)
    assert text.count("namespace emjax_part") == 2 and f"if (blockIdx.x < {ys.ntask})" in text
    assert f"__launch_bounds__({merged.threads}, " in text


def test_kernels_of_other_parameters_are_refused(monkeypatch):
    _, (_, _, apart, _) = _faces(monkeypatch, False)
    (ys, _), (zs, _) = [f for f in apart if f[0].wall]
    other = replace(zs, pml=(0,) + zs.pml[1:])  # (no x psi: other parameters)
    with pytest.raises(ValueError, match="same parameters"):
        cuda.source(replace(ys, ntask=ys.ntask + other.ntask, merged=(ys, other)))
    monkeypatch.setattr(launches, "MERGE_FACES", True)
    assert launches.merge_faces([(ys, (0,)), (zs, (1,))], ["y", "z"])[0][0].merged == (ys, zs)
    assert launches.merge_faces([(ys, (0,)), (other, (1,))], ["y", "z"]) == [(ys, (0,)), (other, (1,))]


@pytest.mark.skipif(not emulation.available(), reason="no host C++ compiler")
def test_one_launch_from_a_random_state_equals_the_xla_step(monkeypatch):
    """Fields, psi and the probes' records, probes in the y faces' and the z faces' rows."""
    sim, _ = _faces(monkeypatch, True)
    zprobe = fdtd.Probe((6, 15, 1), 0)  # a z face's cell over the interior's y
    sim = dataclasses.replace(sim, probes=sim.probes + (zprobe,))
    (out, rec, _), (ref, rec_ref) = _from_random_state(sim, (12, 5, 6), 11)
    _assert_fields_and_psi_equal(out, ref)
    rec, rec_ref = np.asarray(rec), np.asarray(rec_ref)
    assert np.abs(rec[:, -1]).max() > 0 and np.abs(rec - rec_ref).max() <= 1e-12 * np.abs(rec_ref).max()


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["double", "single"])
def test_gpu_one_launch_equals_the_xla_step(monkeypatch, precision):
    """On a GPU (NVRTC builds the merged source): a 48^3 grid with a CPML on every face after
    60 steps, the faces' kernels in one launch: float64 (the default tiling) every field,
    psi and probe to 1e-12; float32 E to 1e-5."""
    from test_blocked import _compare
    from test_blocked_aligned import gpu_float32_dipole_equals_xla

    monkeypatch.setattr(launches, "MERGE_FACES", True)
    jax.clear_caches()
    try:
        if precision == "double":
            th, tile, ry = choice.default_tiling(jnp.float64)
            sim = _cpml_all_faces((48, 48, 64))
            assert ry == 1
            _compare(sim, 60, th=th, tile=(48, *tile[1:]), kernel="cuda")
            return
        gpu_float32_dipole_equals_xla()
    finally:
        jax.clear_caches()
