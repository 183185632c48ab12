"""A TF/SF plane wave on the blocked kernel's x slabs (several devices, each advancing the
same 1-D incident line) equals the one-device XLA step: on virtual CPU devices with the
kernel emulated, and on two GPUs where a machine has them; ``kernel="auto"`` takes it."""

import jax
import numpy as np
import pytest
from multidevice import run_with_devices
from test_blocked_shards import _two_gpus_equal_one

from emjax.fdtd.blocked import emulation

CASE_TFSF = r"""
import jax, jax.numpy as jnp, numpy as np
jax.config.update("jax_enable_x64", True)
from emjax import fdtd
from emjax.fdtd import step as engine
from emjax.fdtd import monitors as M
from emjax.fdtd.blocked import cuda_advance, shards
from emjax.fdtd.blocked import split as cpml_split
from emjax.fdtd.grid import CPML
from emjax.layout import Layout
from emjax.scattering import PlaneWave

def check(direction, pol, n, steps=21, nx=24, th=2, yz=(12, 11)):
    g = fdtd.Grid((nx,) + yz, 1.0, boundary=(CPML(thickness=3), CPML(thickness=2), CPML(thickness=2)),
                  precision="double")
    eps = np.ones(g.shape)
    eps[10:14, 5:8, 4:7] = 3.0  # across the slab boundary at x = 12 (2 devices) / 8, 16 (3)
    pulse = fdtd.GaussianPulse(frequency=0.15, bandwidth=0.5)
    box = fdtd.TFSF((5, 3, 3), (19, 9, 8), PlaneWave(direction, pol), pulse)
    # a DFT plane inside the box and one across it, over the slab boundaries
    lo, hi = (4, 2, 2), (20, 10, 9)
    mons = (M.DFTPlane(0, 8, (0.12, 0.15), lo=lo, hi=hi), M.DFTPlane(1, 6, (0.15,), lo=lo, hi=hi))
    probes = (fdtd.Probe((8, 6, 5), 1), fdtd.Probe((13, 5, 6), 2, "H"))
    s = fdtd.GridSimulation(g, eps=eps, sources=(box,), probes=probes, monitors=mons)
    arrays, pml = engine.coefficients(s, jnp.float64)
    plan1 = engine.make_plan(s, steps, jnp.float64, arrays, pml)
    state = engine.initial_state(s, plan1, jnp.float64, None)
    ref, rec_ref, _ = engine.advance(plan1, arrays, jax.tree_util.tree_map(jnp.copy, state), steps)
    plan = engine.make_plan(s, steps, jnp.float64, arrays, pml, layout=Layout.of(n))
    assert shards.unsupported(plan, th) is None and cuda_advance.unsupported(plan) is None
    spec = cuda_advance.make_spec(plan, arrays, jnp.float64, th, (4, 4))
    assert shards.last_spares_sends(spec, n, th) == (cpml_split.aligned(spec) is not None)
    out, rec, fin = shards.advance(plan, arrays, state, steps, th, (4, 4), True, emulate=True)
    rel = lambda a, b: float(np.abs(np.asarray(a) - np.asarray(b)).max() / np.abs(np.asarray(b)).max())
    assert np.abs(np.stack(ref["E"])).max() > 1e-3  # the wave entered the box
    err = {f: rel(np.stack(out[f]), np.stack(ref[f])) for f in "EH"}
    err["aux"] = max(rel(a, b) for a, b in zip(out["aux"], ref["aux"], strict=True))
    err["rec"] = rel(rec, rec_ref)
    err["dft"] = max(rel(a[k], b[k]) for a, b in zip(out["dft"], ref["dft"]) for k in "EH")
    assert bool(fin) and int(out["n"]) == steps
    assert all(v <= 1e-12 for v in err.values()), (direction, n, err)

import sys
check((1, 0, 0), (0, 0.6, 0.8), 2)  # the incident line runs across the slabs
if "more" in sys.argv:
    check((0, 0, -1), (0, 1, 0), 2)  # the box's x faces in different slabs
    check((0, 1, 0), (1, 0, 0), 3)
    # the face rows aligned: every halo (the incident line's corrections in it) sent before
    # the x-CPML's kernel
    cpml_split.ALIGNED = True
    check((1, 0, 0), (0, 0.6, 0.8), 2, yz=(14, 13))
    check((0, 1, 0), (1, 0, 0), 3, yz=(14, 13))
    cpml_split.ALIGNED = None
print("ok")
"""


@pytest.mark.skipif(not emulation.available(), reason="no host C++ compiler")
def test_tfsf_on_slabs_equals_one_device_emulated():
    """A TF/SF box spanning the slabs (incidence along +x on 2 virtual devices), a dielectric
    across a slab boundary, DFT planes inside and across the box, probes: every device
    advances the same 1-D incident line and corrects the faces in its own planes; fields,
    the 1-D grid, the DFTs and the probes equal the one-device XLA step to 1e-12 (float64).
    (DFT planes in the scattered region before anything scatters hold rounding only: the
    planes here see the wave.)"""
    assert run_with_devices(3, CASE_TFSF).strip().endswith("ok")


@pytest.mark.slow
@pytest.mark.skipif(not emulation.available(), reason="no host C++ compiler")
def test_tfsf_on_slabs_more_directions_emulated():
    """The same for -z incidence (the box's x faces in different slabs) and +y on 3 devices;
    +x and +y with the face rows aligned, every halo sent before the x-CPML's kernel."""
    assert run_with_devices(3, "import sys; sys.argv.append('more')\n" + CASE_TFSF).strip().endswith("ok")


@pytest.mark.gpu
def test_tfsf_on_two_gpus_equals_one_device_run():
    """A TF/SF plane wave (+x, across the slabs) onto a dielectric block over the slab
    boundary, float64, 203 steps: the blocked kernel on 2 GPUs equals one device's XLA step."""
    if len(jax.devices("gpu")) < 2:
        pytest.skip("needs 2 GPUs")
    from emjax import fdtd
    from emjax.backend import precision_scope
    from emjax.fdtd.grid import CPML
    from emjax.scattering import PlaneWave

    with precision_scope():
        g = fdtd.Grid((64, 48, 40), 1.0, boundary=CPML(thickness=4), precision="double")
        eps = np.ones(g.shape)
        eps[28:36, 20:28, 16:24] = 2.25
        box = fdtd.TFSF(
            (10, 8, 8),
            (54, 40, 32),
            PlaneWave((1, 0, 0), (0, 0, 1)),
            fdtd.GaussianPulse(frequency=0.1, bandwidth=0.5),
        )
        sim = fdtd.GridSimulation(g, eps=eps, sources=(box,), probes=(fdtd.Probe((33, 24, 20), 2),))
        _two_gpus_equal_one(sim)


def test_auto_takes_the_kernel_for_tfsf_on_several_devices():
    """kernel="auto" gives no TF/SF reason to keep the XLA step, on one device or several
    (the 2-GPU test above equals one device to 1e-12)."""
    from dataclasses import replace

    from emjax import fdtd
    from emjax.fdtd import step as engine
    from emjax.fdtd.blocked import choice
    from emjax.fdtd.grid import PEC
    from emjax.layout import Layout
    from emjax.scattering import PlaneWave

    g = fdtd.Grid((24, 12, 11), 1.0, boundary=PEC())
    pulse = fdtd.GaussianPulse(frequency=0.15, bandwidth=0.5)
    box = fdtd.TFSF((5, 3, 3), (19, 9, 8), PlaneWave((1, 0, 0), (0, 0, 1)), pulse)
    s = fdtd.GridSimulation(g, sources=(box,))
    arrays, pml = engine.coefficients(s, np.float32)
    plan = engine.make_plan(s, 4, np.float32, arrays, pml)
    assert choice.auto_reason(plan, np.float32) is None
    assert choice.auto_reason(replace(plan, layout=Layout.of(1)), np.float32) is None
