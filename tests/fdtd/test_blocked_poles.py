"""Drude and Lorentz poles in the CUDA blocked kernel (emjax.fdtd.blocked.poles): the
kernel's text run emulated on the host equals the XLA step to rounding (fields, psi, probes
and the poles' state), for a two-pole Drude block and a Drude-Lorentz metal inside a
CPML-bounded grid lit by a dipole, TH not dividing the step count, tiles that cut the block,
a pole medium also inside the CPML and with a per-component fill (subpixel-like weights);
"auto" says why it keeps XLA. Several devices: test_blocked_shards.py."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_blocked import _copy, _rel, _setup

from emjax import ConfigError, fdtd, materials
from emjax.backend import precision_scope
from emjax.fdtd import blocked
from emjax.fdtd import step as engine
from emjax.fdtd.blocked import choice, cuda, cuda_advance, emulation
from emjax.fdtd.grid import CPML

emulated = pytest.mark.skipif(not emulation.available(), reason="no host C++ compiler")
METAL = materials.Dispersive(
    2.0, (materials.DrudePole(2 * math.pi * 0.9, 0.4), materials.DrudePole(2 * math.pi * 0.3, 0.05))
)
# a Drude-Lorentz metal as the material catalog's fits are: one Drude and two Lorentz poles
LD = materials.Dispersive(
    1.5,
    (
        materials.DrudePole(2 * math.pi * 0.8, 0.3),
        materials.LorentzPole(1.2, 2 * math.pi * 0.7, 0.2),
        materials.LorentzPole(0.6, 2 * math.pi * 1.1, 0.4),
    ),
)


def _sim(mask, shape=(16, 13, 11), precision="double", material=METAL):
    g = fdtd.Grid(shape, 0.05, boundary=CPML(thickness=2), precision=precision)
    src = fdtd.PointDipole((4, 6, 5), 2, fdtd.GaussianPulse(frequency=0.8, bandwidth=0.5))
    probes = (fdtd.Probe((9, 7, 5), 2), fdtd.Probe((12, 4, 6), 0, "H"), fdtd.Probe((8, 6, 4), 1))
    return fdtd.GridSimulation(g, sources=(src,), probes=probes, dispersive=(material, mask))


def _block(shape, lo=(6, 3, 2), hi=(12, 10, 8)):
    m = np.zeros(shape, bool)
    m[lo[0] : hi[0], lo[1] : hi[1], lo[2] : hi[2]] = True
    return m


def _compare(sim, steps, th, tile, tol=1e-12):
    with precision_scope():
        plan, arrays, state = _setup(sim, steps)
        assert plan.n_poles + plan.n_lorentz >= 2
        ref, rec_ref, _ = engine.advance(plan, arrays, _copy(state), steps)
        out, rec, finite = blocked.advance(
            plan, arrays, _copy(state), steps, th=th, tile=tile, kernel="emulate"
        )
    assert bool(finite) and int(out["n"]) == steps
    assert np.abs(np.stack(ref["E"])).max() > 1e-6
    for f in "EH":
        assert _rel(np.stack(out[f]), np.stack(ref[f])) <= tol, f
    jref = np.stack(jax.tree_util.tree_leaves(ref["J"]))
    assert np.abs(jref).max() > 0  # the currents moved
    assert _rel(np.stack(jax.tree_util.tree_leaves(out["J"])), jref) <= tol
    scale = max(float(np.abs(np.asarray(v)).max()) for v in ref["psi"].values())
    for k in ref["psi"]:
        assert np.abs(np.asarray(out["psi"][k]) - np.asarray(ref["psi"][k])).max() <= tol * scale, k
    assert _rel(rec, rec_ref) <= tol


@emulated
@pytest.mark.parametrize("split_tile", [(16, 5, 4), (16, 13, 11)], ids=["tiles", "one-tile"])
def test_emulated_drude_block_equals_the_xla_step(split_tile):
    """7 steps in passes of 3 (the last of 1): a two-pole Drude block cut by the tiles."""
    shape = (16, 13, 11)
    _compare(_sim(_block(shape)), 7, 3, split_tile)


@emulated
def test_emulated_drude_in_the_cpml_and_with_per_component_fill():
    """The medium reaching into the CPML, and a fill fraction per E component (the kernel
    takes beta per cell and component, k per cell)."""
    shape = (16, 13, 11)
    w = np.zeros((3,) + shape)
    w[:, 0:9, 2:11, 3:9] = 1.0
    w[0, 8, :, :] *= 0.5
    w[2, :, :, 3] *= 0.25
    _compare(_sim(w), 9, 4, (16, 5, 4))


@emulated
def test_emulated_drude_lorentz_metal_equals_the_xla_step():
    """One Drude and two Lorentz poles (the catalog's Drude-Lorentz form): each Lorentz
    pole carries the polarization now and one step before from level to level."""
    shape = (16, 13, 11)
    _compare(_sim(_block(shape), material=LD), 7, 3, (16, 5, 4))


def test_auto_says_why_it_keeps_xla():
    shape = (16, 13, 11)
    with precision_scope():
        plan, arrays, state = _setup(_sim(_block(shape)), 4)
        assert choice.carries(plan, jnp.float64) is None
        assert "poles it is not yet faster than the XLA step" in choice.auto_reason(plan, jnp.float32)
        with pytest.raises(ConfigError, match="poles"):  # the other traversals
            blocked.advance(plan, arrays, state, 4, th=2, tile=(16, 5, 4), kernel="xla")
    from dataclasses import replace

    assert cuda_advance.unsupported(replace(plan, layout=object())) is None  # test_blocked_shards.py


@emulated
def test_gpu_driver_carries_the_currents_emulated(monkeypatch):
    """The GPU driver (one jit: passes in pairs in a scan, an odd pass, a shorter last one;
    the currents in the loop's carry beside the fields) with each launch emulated through a
    host callback: 7 steps in passes of 2 equal the XLA step, J included (float32: the
    callbacks run outside the caller's double-precision scope)."""
    from emjax.fdtd.blocked import shards

    monkeypatch.setattr(cuda, "gpu_pass", shards._emulated)
    shape = (16, 13, 11)
    plan, arrays, state = _setup(_sim(_block(shape), precision="single"), 7, jnp.float32)
    ref, rec_ref, _ = engine.advance(plan, arrays, _copy(state), 7)
    out, rec, finite = cuda_advance.advance_gpu(plan, arrays, _copy(state), 7, 2, (5, 4))
    assert bool(finite) and int(out["n"]) == 7
    for f in "EH":
        assert _rel(np.stack(out[f]), np.stack(ref[f])) <= 1e-5, f
    jref = np.stack(jax.tree_util.tree_leaves(ref["J"]))
    assert _rel(np.stack(jax.tree_util.tree_leaves(out["J"])), jref) <= 1e-5
    assert _rel(rec, rec_ref) <= 1e-5


@pytest.mark.gpu
def test_gpu_drude_1000_steps_float64_and_float32():
    """A 40^3 grid with a CPML on every face and a two-pole Drude block: 1001 steps of the
    CUDA kernel with the default tilings against the XLA step, fields, currents and probes,
    relative to the largest value the run carried (sampled every 91 steps): float64 to
    1e-12; ``fdtd.run(kernel="blocked")`` takes it. The scale is the run's, not the last
    step's: by then the CPML has left H at 1/14 and J at 1/66 of their sampled peaks. On an
    H100 float64 H differs by 5.0e-12 of the last H (3.5e-13 of its peak; emulated on the
    host 3.9e-12; without the poles 3.3e-12), about 1.6e3 float64 epsilons. float32 rounds
    the same way: 1.2e-4 of H's peak, about 1.0e3 float32 epsilons, over the 1e-5 the tests
    without poles hold; it is held to 4x the float64 run's error in each type's epsilons."""
    n = 40
    mask = _block((n,) * 3, (14, 12, 10), (28, 26, 30))
    units = {}  # the float64 errors in float64 epsilons
    for precision, dtype, tol in (("double", jnp.float64, 1e-12), ("single", jnp.float32, None)):
        sim = _sim(mask, shape=(n,) * 3, precision=precision)
        sim = fdtd.GridSimulation(
            fdtd.Grid((n,) * 3, 0.05, boundary=CPML(8), precision=precision),
            sources=sim.sources,
            probes=sim.probes,
            dispersive=sim.dispersive,
        )
        th, tile, ry = blocked.choice.default_tiling(dtype)
        with precision_scope():
            plan, arrays, state = _setup(sim, 1001, dtype)
            ref, recs, peak = _copy(state), [], {"E": 0.0, "H": 0.0, "J": 0.0}
            for _ in range(11):  # the XLA step in chunks of 91, its peaks sampled
                ref, r, _ = engine.advance(plan, arrays, ref, 91)
                recs.append(np.asarray(r))
                for f in "EHJ":
                    peak[f] = max(
                        peak[f], max(float(jnp.abs(v).max()) for v in jax.tree_util.tree_leaves(ref[f]))
                    )
            out, rec, finite = blocked.advance(
                plan, arrays, state, 1001, th=th, tile=(n, 24, 24), kernel="cuda", rows_per_thread=ry
            )
            assert bool(finite) and int(ref["n"]) == 1001
            eps = float(jnp.finfo(dtype).eps)
            errs = {"rec": _rel(rec, np.concatenate(recs))}  # the probes' records hold the peak
            for f in "EHJ":
                a, b = (np.stack(jax.tree_util.tree_leaves(x[f])) for x in (out, ref))
                errs[f] = float(np.abs(a - b).max()) / peak[f]
            for f, err in errs.items():
                if tol is not None:
                    units[f] = max(err / eps, 10.0)
                assert err <= (tol if tol is not None else 4 * units[f] * eps), (precision, f, err, units)
            run = fdtd.run(sim, 40, kernel="blocked")
            assert run.kernel.startswith("blocked")
