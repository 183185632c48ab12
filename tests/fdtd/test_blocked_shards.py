"""The blocked kernel on several devices (x slabs with TH-deep halos exchanged once per pass)
equals the one-device XLA step: on virtual CPU devices with the kernel emulated (a callback
per device), and on GPUs where a machine has two."""

import jax
import numpy as np
import pytest
from multidevice import run_with_devices

from emjax.fdtd.blocked import cuda

CASE = r"""
import jax, jax.numpy as jnp, numpy as np
jax.config.update("jax_enable_x64", True)
from emjax import fdtd
from emjax.fdtd import step as engine
from emjax.fdtd.blocked import shards
from emjax.fdtd.grid import CPML
from emjax.layout import Layout

def sim(nx, with_probes=True):
    g = fdtd.Grid((nx, 14, 13), 1.0, boundary=(CPML(thickness=3), CPML(thickness=2), CPML(thickness=2)),
                  precision="double")
    pulse = lambda f: fdtd.GaussianPulse(frequency=f, bandwidth=0.5)
    # dipoles in a halo (x = 11, 12 on 2 and 3 devices), in the x- and y-CPML, at the far end
    srcs = (fdtd.PointDipole((11, 7, 6), 1, pulse(0.15)), fdtd.PointDipole((2, 12, 1), 0, pulse(0.12)),
            fdtd.PointDipole((nx - 3, 3, 6), 2, pulse(0.1)), fdtd.PointDipole((16, 5, 7), 0, pulse(0.13)))
    probes = (fdtd.Probe((1, 6, 6), 2), fdtd.Probe((12, 7, 7), 0, "H"), fdtd.Probe((nx - 2, 4, 11), 1))
    eps = 1 + np.random.default_rng(0).random((nx, 14, 13))
    from emjax.fdtd import monitors as M
    mons = (M.DFTPlane(0, 12, (0.1, 0.15)), M.DFTPlane(2, 6, (0.12,), lo=(2, 3, 0), hi=(nx - 2, 12, 0)))
    return fdtd.GridSimulation(g, eps=eps, sources=srcs, probes=probes if with_probes else (), monitors=mons)

def check(n, split, steps=7, nx=24, th=2, with_probes=True):
    s = sim(nx, with_probes)
    arrays, pml = engine.coefficients(s, jnp.float64)
    plan1 = engine.make_plan(s, steps, jnp.float64, arrays, pml)
    state = engine.initial_state(s, plan1, jnp.float64, None)
    ref, rec_ref, _ = engine.advance(plan1, arrays, jax.tree_util.tree_map(jnp.copy, state), steps)
    plan = engine.make_plan(s, steps, jnp.float64, arrays, pml, layout=Layout.of(n))
    assert shards.unsupported(plan, th) is None
    out, rec, fin = shards.advance(plan, arrays, state, steps, th, (5, 4), split, emulate=True)
    def rel(a, b, s=None):
        a, b = np.asarray(a), np.asarray(b)
        return float(np.abs(a - b).max() / (s or np.abs(b).max()))

    err = {f: rel(np.stack(out[f]), np.stack(ref[f])) for f in "EH"}
    scale = max(float(np.abs(np.asarray(v)).max()) for v in ref["psi"].values())
    err["psi"] = max(rel(out["psi"][k], ref["psi"][k], scale) for k in ref["psi"])
    err["rec"] = rel(rec, rec_ref) if with_probes else float(np.shape(rec) != (steps, 0))
    err["dft"] = max(rel(a[k], b[k]) for a, b in zip(out["dft"], ref["dft"]) for k in "EH")
    assert int(out["n"]) == steps and bool(fin)
    assert all(v <= 1e-12 for v in err.values()), (n, split, err)

import sys
if "more" in sys.argv:
    check(3, True)
    check(2, False)
else:
    check(2, True)
    check(2, True, steps=9, with_probes=False)
s = sim(25)
arrays, pml = engine.coefficients(s, jnp.float64)
bad = engine.make_plan(s, 4, jnp.float64, arrays, pml, layout=Layout.of(2))
assert "not divisible" in shards.unsupported(bad, 2)
s = sim(18)
arrays, pml = engine.coefficients(s, jnp.float64)
thin = engine.make_plan(s, 4, jnp.float64, arrays, pml, layout=Layout.of(3))
assert "slabs of 6 planes, under the 7" in shards.unsupported(thin, 2), shards.unsupported(thin, 2)
print("ok")
"""


@pytest.mark.skipif(not cuda.emulation_available(), reason="no host C++ compiler")
def test_slabs_with_halos_equal_one_device_emulated():
    """2 virtual devices, the CPML as a kernel of its own, 7 steps in passes of 2 (the last
    of 1), dipoles and probes in halos and in the slabs, DFT planes; 9 steps without probes."""
    assert run_with_devices(3, CASE).strip().endswith("ok")


@pytest.mark.slow
@pytest.mark.skipif(not cuda.emulation_available(), reason="no host C++ compiler")
def test_slabs_on_three_devices_and_the_cpml_inside_the_kernel_emulated():
    """3 virtual devices; and 2 with the CPML inside the one kernel."""
    assert run_with_devices(3, "import sys; sys.argv.append('more')\n" + CASE).strip().endswith("ok")


@pytest.mark.gpu
def test_two_gpus_equal_one_device_run():
    if len(jax.devices("gpu")) < 2:
        pytest.skip("needs 2 GPUs")
    from emjax import fdtd
    from emjax.backend import precision_scope
    from emjax.fdtd.grid import CPML

    with precision_scope():
        g = fdtd.Grid((64, 48, 40), 1.0, boundary=CPML(thickness=4), precision="double")
        src = fdtd.PointDipole((31, 20, 17), 2, fdtd.GaussianPulse(frequency=0.1, bandwidth=0.5))
        sim = fdtd.GridSimulation(g, sources=(src,), probes=(fdtd.Probe((33, 24, 20), 2),))
        one = fdtd.run(sim, 203, kernel="xla")
        two = fdtd.run(sim, 203, kernel="blocked", layout=2)
    assert two.kernel.startswith("blocked")
    for a, b in ((two.E, one.E), (two.H, one.H), (two.probes, one.probes)):
        a, b = np.asarray(a), np.asarray(b)
        assert np.abs(a - b).max() <= 1e-12 * np.abs(b).max()
