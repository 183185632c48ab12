"""GPU-only checks (skipped without a GPU): the same DDA solve on the GPU and on the CPU."""

import jax
import numpy as np
import pytest

from emjax import dda, geometry


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["double", "single"])
def test_gpu_matches_cpu(precision):
    """One code path: a 16^3 sphere solved on the GPU equals the CPU solve to the solver
    tolerance (both stop at rtol 1e-8; FFT rounding differs between cuFFT and DUCC)."""
    prob = dda.DDAProblem(
        geometry.Sphere(),
        (1.5 + 0.01j,),
        eq_rad=1.0,
        grid=16,
        precision=precision,
        theta=(0.0, 45.0, 90.0, 180.0),
    )
    solver = dda.QMR(rtol=1e-8)
    gpu = dda.solve(prob, solver)
    with jax.default_device(jax.devices("cpu")[0]):
        cpu = dda.solve(prob, solver)
    tol = 1e-7 if precision == "double" else 2e-5
    np.testing.assert_allclose(gpu.Cext_xy, cpu.Cext_xy, rtol=tol)
    np.testing.assert_allclose(gpu.Cabs_xy, cpu.Cabs_xy, rtol=tol)
    np.testing.assert_allclose(gpu.mueller, cpu.mueller, rtol=10 * tol, atol=tol * cpu.mueller.max())
