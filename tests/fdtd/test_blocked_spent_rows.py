"""The blocked kernel leaving out, at each level, the window rows no own cell needs
(``cuda.SKIP_SPENT_ROWS``): H^s holds in rows [s - 1, WY - s) and E^s in [s, WY - s), so the
rows outside need not be computed. It is float64's default, so every emulated float64 test
runs it (a row fewer at either side fails them); float32 computes every row, which the slow
cases here check on the emulated float64 cases that reach every part of a level (CPML on every
face and kappa, PEC cells, per-cell coefficients, DFT planes, Drude poles, a TF/SF box)."""

import numpy as np
import pytest
import test_blocked_poles as poles
import test_blocked_tfsf as tfsf
from test_blocked import _compare, _cpml_dielectric
from test_blocked_cuda import _compare_dft, _cpml_all_faces, _dft_planes_case, _kappa_pec_cells

from emjax.fdtd.blocked import cuda, emulation

emulated = pytest.mark.skipif(not emulation.available(), reason="no host C++ compiler")


@pytest.fixture
def skip_rows(monkeypatch):
    """Every row computed, float32's choice, on the float64 cases."""
    monkeypatch.setattr(cuda, "SKIP_SPENT_ROWS", False)
    assert "#define SKIP_SPENT 0" in cuda.source(cuda_spec())


def cuda_spec(dtype="float64"):
    return cuda.Spec(
        dtype, (16, 16, 16), 2, (4, 4), 1.0, 0.5, 1.0, 0.5, None, (True,) * 3, (0,) * 3,
        (False,) * 3, (), (),
    )  # fmt: skip


@pytest.mark.slow
@emulated
def test_emulated_cpml_dielectric_th4_not_dividing(skip_rows):
    _compare(_cpml_dielectric(), 23, th=4, tile=(16, 5, 4), kernel="emulate")


@pytest.mark.slow
@emulated
def test_emulated_kappa_pec_cells_periodic_z(skip_rows):
    _compare(_kappa_pec_cells(), 6, th=3, tile=(14, 4, 5), kernel="emulate")


@pytest.mark.slow
@emulated
def test_emulated_cpml_kernel_of_its_own_and_dft_planes(skip_rows):
    _compare(_cpml_all_faces(), 5, th=2, tile=(24, 5, 4), kernel="emulate")
    _compare_dft(_dft_planes_case(), 5, "emulate")


@pytest.mark.slow
@emulated
def test_emulated_poles_and_tfsf(skip_rows):
    shape = (16, 13, 11)
    w = np.zeros((3,) + shape)
    w[:, 0:9, 2:11, 3:9] = 1.0
    poles._compare(poles._sim(w), 9, 4, (16, 5, 4))
    d, p, lo, hi = tfsf.CASES[sorted(tfsf.CASES)[0]]
    tfsf._compare(tfsf._sim(d, p, lo, hi), 9, th=2, tile=(14, 5, 4))


@pytest.mark.gpu
@pytest.mark.parametrize("skip", [True, False])
@pytest.mark.parametrize("th, tile", [(4, (48, 24, 24)), (3, (48, 16, 16))])
def test_gpu_rows_left_out(monkeypatch, skip, th, tile):
    """On the GPU, a 48^3 grid with a CPML on every face and a dielectric block, float64:
    every field, psi and probe to 1e-12 after 60 steps with the spent rows left out (the
    default) and with every row computed."""
    import jax

    monkeypatch.setattr(cuda, "SKIP_SPENT_ROWS", skip)
    jax.clear_caches()
    try:
        _compare(_cpml_all_faces((48, 48, 48)), 60, th=th, tile=tile, kernel="cuda")
    finally:
        jax.clear_caches()
