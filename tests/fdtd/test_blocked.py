"""The blocked traversal (passes of TH steps over overlapped tiles with TH-deep halos) gives
the XLA step's fields, psi and probe records to rounding, on the CPU: the Pallas kernel in
interpret mode and the plain-JAX loop over the same tiles."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from emjax import ConfigError, fdtd
from emjax.backend import precision_scope
from emjax.fdtd import blocked
from emjax.fdtd import step as engine
from emjax.fdtd.grid import CPML, PEC, Periodic


def _setup(sim, steps, dtype=jnp.float64):
    arrays, pml = engine.coefficients(sim, dtype)
    plan = engine.make_plan(sim, steps, dtype, arrays, pml)
    return plan, arrays, engine.initial_state(sim, plan, dtype, None)


def _copy(state):
    return jax.tree_util.tree_map(jnp.copy, state)


def _rel(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if b.size == 0:  # no probes
        return 0.0 if a.shape == b.shape else np.inf
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def _compare(sim, steps, th, tile, kernel, tol=1e-12, march=False):
    with precision_scope():
        plan, arrays, state = _setup(sim, steps)
        ref, rec_ref, _ = engine.advance(plan, arrays, _copy(state), steps)
        out, rec, finite = blocked.advance(
            plan, arrays, _copy(state), steps, th=th, tile=tile, kernel=kernel, march=march
        )
        assert bool(finite) and int(out["n"]) == steps
        assert np.abs(np.stack(ref["E"])).max() > 1e-6  # the source reached the fields
        assert _rel(np.stack(out["E"]), np.stack(ref["E"])) <= tol
        assert _rel(np.stack(out["H"]), np.stack(ref["H"])) <= tol
        assert sorted(out["psi"]) == sorted(ref["psi"])
        # each psi array to ``tol`` of its own largest value, less a rounding floor of ten
        # ulps of the largest psi of its field (E or H): an array the pulse has not reached
        # holds rounding noise alone, which its own maximum cannot scale
        scale = {
            f: max((np.abs(np.asarray(v)).max() for k, v in ref["psi"].items() if k[0] == f), default=0.0)
            for f in {k[0] for k in ref["psi"]}
        }
        for k in ref["psi"]:
            r = np.asarray(ref["psi"][k])
            floor = 10 * np.finfo(r.dtype).eps * scale[k[0]]
            err = np.abs(np.asarray(out["psi"][k]) - r).max()
            assert err <= tol * np.abs(r).max() + floor, k
        assert rec.shape == rec_ref.shape
        assert _rel(rec, rec_ref) <= tol


def _cpml_dielectric():
    """16x12x10, PEC walls along x, a CPML on both y faces and on the low z face only,
    per-cell eps and sigma, a dipole next to the CPML, probes in a CPML tile and at a corner."""
    shape = (16, 12, 10)
    rng = np.random.default_rng(1)
    g = fdtd.Grid(
        shape, 1.0, boundary=(PEC(), CPML(thickness=3), CPML(thickness=2, sides="low")), precision="double"
    )
    src = fdtd.PointDipole((5, 2, 7), 2, fdtd.GaussianPulse(frequency=0.1, bandwidth=0.5))
    probes = (fdtd.Probe((5, 3, 7), 2), fdtd.Probe((1, 11, 0), 1, "H"), fdtd.Probe((8, 6, 1), 0))
    eps = 1.0 + 3.0 * rng.random(shape)
    sigma = 0.05 * rng.random(shape)
    return fdtd.GridSimulation(g, eps=eps, sigma=sigma, sources=(src,), probes=probes)


def test_pallas_interpret_cpml_dielectric_th_not_dividing():
    # 23 steps in passes of 4 (5 passes and one of 3); y: tiles of 5 (the last slides back to
    # start at 7), z: tiles of 4 (three, the last from 6), x whole; CPML tiles at both y faces
    _compare(_cpml_dielectric(), 23, th=4, tile=(16, 5, 4), kernel="pallas")


@pytest.mark.slow
def test_xla_traversal_x_tiled_periodic_kappa_pec_cells():
    """Every axis tiled (x too), a periodic axis, a CPML with kappa > 1 on the high x face
    only, per-node eps, per-cell PEC, a dipole on a PEC wall, windows longer than the axis
    (z: tiles of 3 with 5-deep halos, 13 cells of 10, some cells twice in a window)."""
    shape = (16, 12, 10)
    rng = np.random.default_rng(2)
    g = fdtd.Grid(
        shape,
        0.5,
        boundary=(CPML(thickness=3, kappa_max=3.0, sides="high"), Periodic(), PEC()),
        precision="double",
    )
    pec = np.zeros(shape, bool)
    pec[9:11, 4:6, 3:5] = True
    pulse = fdtd.GaussianPulse(frequency=0.3, bandwidth=0.5)
    # the second dipole drives E_x on the z wall's plane: the XLA step adds nothing there
    srcs = (fdtd.PointDipole((12, 0, 4), 0, pulse), fdtd.PointDipole((3, 7, 0), 0, pulse))
    probes = (fdtd.Probe((14, 11, 5), 0), fdtd.Probe((0, 0, 0), 2, "H"), fdtd.Probe((3, 7, 0), 0))
    eps = 1.0 + rng.random((3,) + shape)  # per node (the subpixel diagonal's form)
    sim = fdtd.GridSimulation(g, eps=eps, sources=srcs, probes=probes, pec=pec)
    _compare(sim, 12, th=5, tile=(6, 8, 3), kernel="xla")


@pytest.mark.slow
def test_vacuum_pallas_equals_xla_traversal_float32():
    shape = (12, 8, 8)
    g = fdtd.Grid(shape, 1.0, boundary=CPML(thickness=2))
    src = fdtd.PointDipole((6, 4, 4), 1, fdtd.GaussianPulse(frequency=0.15, bandwidth=0.5))
    sim = fdtd.GridSimulation(g, sources=(src,), probes=(fdtd.Probe((6, 5, 4), 1),))
    plan, arrays, state = _setup(sim, 7, jnp.float32)
    ref, rec_ref, _ = engine.advance(plan, arrays, _copy(state), 7)
    outs = [
        blocked.advance(plan, arrays, _copy(state), 7, th=3, tile=(12, 3, 8), kernel=k)
        for k in ("pallas", "xla")
    ]
    for out, rec, _ in outs:
        assert _rel(np.stack(out["E"]), np.stack(ref["E"])) <= 1e-5
        assert _rel(rec, rec_ref) <= 1e-5
    # the two drivers of the same passes: the same arithmetic, the same numbers
    np.testing.assert_array_equal(np.stack(outs[0][0]["E"]), np.stack(outs[1][0]["E"]))


def test_unsupported_and_bad_arguments():
    g = fdtd.Grid((8, 8, 8), 1.0, boundary=PEC(), order=4)
    src = fdtd.PointDipole((4, 4, 4), 2, fdtd.GaussianPulse(frequency=0.1, bandwidth=0.5))
    plan, arrays, state = _setup(fdtd.GridSimulation(g, sources=(src,)), 2, jnp.float32)
    assert blocked.unsupported(plan) == "the 4th-order stencil"
    with pytest.raises(ConfigError, match="does not support the 4th-order stencil"):
        blocked.advance(plan, arrays, state, 2)
    g = fdtd.Grid((8, 8, 8), 1.0, boundary=PEC())
    plan, arrays, state = _setup(fdtd.GridSimulation(g, sources=(src,)), 2, jnp.float32)
    assert blocked.unsupported(plan) is None
    with pytest.raises(ConfigError, match=r"^th must be an integer >= 1"):
        blocked.advance(plan, arrays, state, 2, th=0)
    with pytest.raises(ConfigError, match=r"^tile must be three integers >= 1"):
        blocked.advance(plan, arrays, state, 2, tile=(8, 0, 8))
    with pytest.raises(ConfigError, match=r"^kernel must be 'cuda', 'emulate', 'pallas', 'xla' or 'triton'"):
        blocked.advance(plan, arrays, state, 2, kernel="mosaic")
    if jax.default_backend() != "gpu":
        with pytest.raises(ConfigError, match=r"^kernel='cuda' needs a GPU"):
            blocked.advance(plan, arrays, state, 2, kernel="cuda")


def test_x_march_order_cpml_dielectric():
    """The Pallas kernel with the x-march (the GPU kernel's order and working set: planes
    read and written one at a time, rings of 2 planes per level, NaN before their first
    write) on the CPML/dielectric grid, x whole and walled, y and z tiled, 23 steps in
    passes of 4."""
    _compare(_cpml_dielectric(), 23, th=4, tile=(16, 5, 4), kernel="pallas", march=True)


@pytest.mark.slow
def test_x_march_in_x_tiles_periodic():
    """The march inside x tiles (windows with x halos) on a periodic grid: the Pallas
    kernel (planes from and to global memory) and the plain-JAX passes."""
    shape = (12, 10, 8)
    rng = np.random.default_rng(3)
    g = fdtd.Grid(shape, 1.0, boundary=(Periodic(), CPML(thickness=2), Periodic()), precision="double")
    src = fdtd.PointDipole((2, 5, 7), 1, fdtd.GaussianPulse(frequency=0.2, bandwidth=0.5))
    sim = fdtd.GridSimulation(g, eps=1 + rng.random(shape), sigma=0.02 * rng.random(shape), sources=(src,))
    for kernel in ("pallas", "xla"):
        _compare(sim, 7, th=3, tile=(5, 4, 8), kernel=kernel, march=True)
    with precision_scope():
        plan, arrays, state = _setup(sim, 2)
    with pytest.raises(ConfigError, match=r"^march=True needs x tiled"):
        blocked.advance(plan, arrays, state, 2, tile=(12, 4, 8), march=True)


@pytest.mark.slow  # the Triton kernel's fast check: the x-tiled periodic case below
def test_triton_kernel_interpret_cpml_dielectric():
    """The Triton-shaped kernel (y/z windows of 16 = tiles of 8 + 2 x TH 4, rings in a global
    scratch, shifted masked loads) in interpret mode: 6 steps in a pass of 4 and one of 2,
    CPML tiles at both y faces and the low z face, probes, per-cell eps and sigma."""
    _compare(_cpml_dielectric(), 6, th=4, tile=(16, 8, 8), kernel="triton")


@pytest.mark.slow
def test_triton_kernel_interpret_x_tiled_periodic():
    """The Triton-shaped kernel inside x tiles (windows with x halos) on a periodic x, 7 steps
    in passes of 4 and 3, y/z windows of 16."""
    shape = (12, 12, 10)
    rng = np.random.default_rng(4)
    g = fdtd.Grid(shape, 1.0, boundary=(Periodic(), CPML(thickness=2), PEC()), precision="double")
    src = fdtd.PointDipole((2, 5, 7), 1, fdtd.GaussianPulse(frequency=0.2, bandwidth=0.5))
    probes = (fdtd.Probe((11, 5, 7), 1), fdtd.Probe((0, 6, 2), 0, "H"))
    sim = fdtd.GridSimulation(g, eps=1 + rng.random(shape), sources=(src,), probes=probes)
    _compare(sim, 7, th=4, tile=(5, 8, 8), kernel="triton")


def _lower_for_cuda(sim, steps, th, tile, dtype):
    """The blocked advance lowered for "cuda" on whatever machine runs the test (cross-
    platform lowering: the Pallas call becomes the Triton custom call, IR included, with no
    GPU); the StableHLO text. Skips where this jaxlib cannot lower Pallas for cuda."""
    with precision_scope():
        plan, arrays, state = _setup(sim, steps, dtype)
        traced = blocked._advance.trace(plan, arrays, state, steps, th, tile, "triton", False, True)
        try:
            lowered = traced.lower(lowering_platforms=("cuda",))
        except ValueError as e:
            if "Cannot lower pallas_call on platform" in str(e):
                pytest.skip(f"no Pallas lowering for cuda here: {e}")
            raise
    return lowered.as_text()


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_triton_kernel_lowers_for_cuda(dtype):
    text = _lower_for_cuda(_cpml_dielectric(), 23, 4, (16, 8, 8), dtype)
    assert text.count("__gpu$xla.gpu.triton") == 1  # one kernel, called once per pass


def test_triton_kernel_lowers_for_cuda_x_tiled_pec_window_32():
    """x tiled (a periodic x), per-cell PEC, a kappa CPML, windows of 32 = 24 + 2 x 4 (the
    benchmark's shape) on a grid of 40 x 48 x 40."""
    shape = (40, 48, 40)
    g = fdtd.Grid(shape, 1.0, boundary=(Periodic(), CPML(thickness=4, kappa_max=2.0), PEC()))
    pec = np.zeros(shape, bool)
    pec[10:12, 20:30, 5:9] = True
    src = fdtd.PointDipole((20, 24, 20), 2, fdtd.GaussianPulse(frequency=0.1, bandwidth=0.5))
    sim = fdtd.GridSimulation(g, sources=(src,), probes=(fdtd.Probe((21, 24, 20), 2),), pec=pec)
    text = _lower_for_cuda(sim, 8, 4, (16, 24, 24), jnp.float32)
    assert text.count("__gpu$xla.gpu.triton") == 1


def test_triton_kernel_window_must_be_power_of_two():
    g = fdtd.Grid((16, 20, 20), 1.0, boundary=PEC())
    src = fdtd.PointDipole((4, 4, 4), 2, fdtd.GaussianPulse(frequency=0.1, bandwidth=0.5))
    plan, arrays, state = _setup(fdtd.GridSimulation(g, sources=(src,)), 2, jnp.float32)
    with pytest.raises(ConfigError, match=r"tile \+ 2 th = 18, 16 must be powers of two"):
        blocked.advance(plan, arrays, state, 2, th=4, tile=(16, 10, 8), kernel="triton")
    with pytest.raises(ConfigError, match="y and z must be tiled"):
        blocked.advance(plan, arrays, state, 2, th=4, tile=(16, 24, 8), kernel="triton")
