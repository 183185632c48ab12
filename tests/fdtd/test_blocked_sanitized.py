"""The emulated kernels under AddressSanitizer (``EMJAX_EMULATE_SANITIZE``, in a process that
preloads its runtime): no read or write outside the arrays, where results cannot show it (a
value read from outside that feeds no cell anyone reads). Grids whose y tiling wraps around
the axis (PEC walls on y, no CPML face rows there), float64's default tiling, 4 steps
(passes of 3 and 1), with and without the halo rows that no cone reaches left unread or
read from the next row (``cuda.HALO_TRIM``)."""

import subprocess

import pytest
from multidevice import run_with_devices

from emjax.fdtd.blocked import emulation

CASE = r"""
import sys
import jax, jax.numpy as jnp, numpy as np
jax.config.update("jax_enable_x64", True)
from emjax import fdtd
from emjax.backend import precision_scope
from emjax.fdtd import blocked
from emjax.fdtd import step as engine
from emjax.fdtd.grid import CPML, PEC
from emjax.fdtd.blocked import choice, cuda

for trim in (False, True, "clamp"):
    cuda.HALO_TRIM = trim
    jax.clear_caches()
    shape = (6, 22, 32)
    g = fdtd.Grid(shape, 1.0, boundary=(PEC(), PEC(), CPML(thickness=2)), precision="double")
    src = fdtd.PointDipole((3, 11, 16), 2, fdtd.GaussianPulse(frequency=0.1, bandwidth=0.5))
    sim = fdtd.GridSimulation(g, sources=(src,))
    th, tile, ry = choice.default_tiling(jnp.float64)
    rng = np.random.default_rng(3)
    with precision_scope():
        arrays, pml = engine.coefficients(sim, jnp.float64)
        plan = engine.make_plan(sim, 4, jnp.float64, arrays, pml)
        state = dict(engine.initial_state(sim, plan, jnp.float64, None))
        for f in ("E", "H"):
            state[f] = tuple(jnp.asarray(rng.standard_normal(np.shape(v))) for v in state[f])
        ref, _, _ = engine.advance(plan, arrays, jax.tree_util.tree_map(jnp.copy, state), 4)
        out, _, _ = blocked.advance(plan, arrays, state, 4, th=th, tile=(shape[0], *tile[1:]),
                                    rows_per_thread=ry, kernel="emulate")
    for f in ("E", "H"):
        a, b = np.stack(out[f]), np.stack(ref[f])
        assert np.abs(a - b).max() <= 1e-12 * np.abs(b).max(), (trim, f)
print("ok")
"""


def _runtime(name: str) -> str | None:
    try:
        p = subprocess.run(["gcc", f"-print-file-name={name}"], capture_output=True, text=True)
    except OSError:
        return None
    path = p.stdout.strip()
    return path if "/" in path else None  # (a bare name: GCC has none)


@pytest.mark.slow
@pytest.mark.skipif(not emulation.available(), reason="no host C++ compiler")
def test_no_access_outside_the_arrays_where_the_y_tiling_wraps(tmp_path):
    asan, cxx = _runtime("libasan.so"), _runtime("libstdc++.so")
    if asan is None or cxx is None:
        pytest.skip("GCC without AddressSanitizer's runtime")
    env = {
        "LD_PRELOAD": f"{asan} {cxx}",
        "ASAN_OPTIONS": "detect_leaks=0",
        "EMJAX_EMULATE_SANITIZE": "1",
        "EMJAX_CACHE": str(tmp_path),
    }
    assert run_with_devices(1, CASE, env=env).strip().endswith("ok")
