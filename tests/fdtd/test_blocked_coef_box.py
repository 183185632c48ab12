"""Per-cell coefficients held only in the box where they differ from the background
(emjax.fdtd.blocked.coef_box): the box found bounds the scatterer, the kernel's arrays are
cut to it, and the kernel (emulated on the host) equals the XLA step to rounding with the
coefficient ring and without it; grids filled with coefficients keep whole arrays."""

import jax.numpy as jnp
import numpy as np
import pytest
from test_blocked import _compare, _cpml_dielectric, _setup

from emjax import fdtd
from emjax.backend import precision_scope
from emjax.fdtd.blocked import coef_box, cuda, cuda_advance
from emjax.fdtd.grid import CPML

emulated = pytest.mark.skipif(not cuda.emulation_available(), reason="no host C++ compiler")


def _scatterer(component_eps=True):
    """18 x 13 x 12 with a CPML on every face: a lossy dielectric block (eps per component
    or one eps) with a PEC cell inside it, a dipole outside, probes inside and outside."""
    shape = (18, 13, 12)
    g = fdtd.Grid(shape, 1.0, boundary=CPML(thickness=3), precision="double")
    rng = np.random.default_rng(5)
    eps = np.ones((3,) + shape if component_eps else shape)
    eps[..., 6:11, 4:9, 3:8] = 1.5 + rng.random(eps[..., 6:11, 4:9, 3:8].shape)
    sigma = np.zeros(shape)
    sigma[7:10, 5:8, 4:7] = 0.03
    pec = np.zeros(shape, bool)
    pec[8, 6, 5] = True
    src = fdtd.PointDipole((4, 6, 6), 2, fdtd.GaussianPulse(frequency=0.1, bandwidth=0.5))
    probes = (fdtd.Probe((8, 6, 4), 2), fdtd.Probe((13, 10, 9), 1, "H"), fdtd.Probe((2, 2, 2), 0))
    return fdtd.GridSimulation(g, eps=eps, sigma=sigma, pec=pec, sources=(src,), probes=probes)


def test_box_bounds_the_scatterer_and_the_inputs_are_cut():
    with precision_scope():
        plan, arrays, _ = _setup(_scatterer(), 4)
        found = coef_box.find(plan, arrays)
        assert found is not None
        box, bgs = found
        assert box == (6, 11, 4, 9, 3, 8)
        assert {k for k, _ in bgs} == {"ca", "cb", "pec"}
        spec = cuda_advance.make_spec(plan, arrays, jnp.float64, 2, (5, 4), cbox=found)
        static, _ = cuda_advance.static_inputs(plan, arrays, spec)
        shapes = dict(cuda.inputs(spec))
        for name, a in zip(("ca", "cb", "pec"), static):
            assert a.shape == shapes[name] and a.shape[-3:] == (5, 5, 5)
            whole = np.asarray(arrays["pec_keep" if name == "pec" else name])
            assert np.array_equal(np.asarray(a), coef_box.crop(whole, box))
        text = cuda.source(spec)
        assert "#define CBOX 1" in text and "#define CB_X0 6" in text


def test_grid_filled_with_coefficients_keeps_whole_arrays():
    with precision_scope():
        plan, arrays, _ = _setup(_cpml_dielectric(), 4)  # eps and sigma random everywhere
        assert coef_box.find(plan, arrays) is None
        spec = cuda_advance.make_spec(plan, arrays, jnp.float64, 2, (5, 4))
        assert "#define CBOX 0" in cuda.source(spec)


@emulated
@pytest.mark.parametrize("ring", [True, False])
@pytest.mark.parametrize("component_eps", [True, False])
def test_emulated_box_equals_the_xla_step(ring, component_eps, monkeypatch):
    """13 steps in passes of 3 (the last of 1), tiles that cut the box, the CPML kernel of
    its own; the coefficients through the shared-memory ring or read where used."""
    monkeypatch.setattr(cuda, "COEF_RING", ring)
    _compare(_scatterer(component_eps), 13, th=3, tile=(18, 5, 4), kernel="emulate")


def _meets(a, w, b, m, n):
    """The kernel's test (yee_helpers.cuh): cells [a, a + w) modulo n meet [b, b + m)."""
    return w > 0 if w >= n else bool(set(np.arange(a, a + w) % n) & set(range(b, b + m)))


@emulated
def test_emulated_windows_away_from_the_box_take_the_backgrounds(monkeypatch):
    """A small scatterer in a larger grid: most CTAs' windows and marches miss the box and
    take the background literals without the ring; the rest read the ring. Equal to the XLA
    step to rounding, the probes inside and outside the box included. The box's y and z
    ranges meet bulk windows in their last and first two cells (a window that would wrongly
    take the backgrounds there spoils its own cells)."""
    monkeypatch.setattr(cuda, "COEF_RING", True)
    shape = (24, 21, 19)
    g = fdtd.Grid(shape, 1.0, boundary=CPML(thickness=3), precision="double")
    eps = np.ones((3,) + shape)
    eps[:, 10:14, 13:16, 4:7] = 2.5
    eps[1, 11, 14, 5] = 4.0
    src = fdtd.PointDipole((12, 11, 10), 2, fdtd.GaussianPulse(frequency=0.1, bandwidth=0.5))
    probes = (fdtd.Probe((11, 14, 5), 1), fdtd.Probe((18, 16, 12), 2, "H"), fdtd.Probe((4, 17, 15), 0))
    sim = fdtd.GridSimulation(g, eps=eps, sources=(src,), probes=probes)
    with precision_scope():
        plan, arrays, _ = _setup(sim, 4)
        box, _ = coef_box.find(plan, arrays)
    assert box == (10, 14, 13, 16, 4, 7)
    th, b = 3, 4
    starts = [min(t * b, n - b) - th for n in shape[1:] for t in range(-(-n // b))]
    ys, zs = starts[: -(-shape[1] // b)], starts[-(-shape[1] // b) :]
    hits = [_meets(y, b + 2 * th, 13, 3, shape[1]) and _meets(z, b + 2 * th, 4, 3, shape[2]) for y in ys for z in zs]
    assert 0 < sum(hits) < len(hits) / 2  # both kinds of CTA, mostly those away from the box
    # 41 steps: the pulse reaches every CPML slab (their psi then holds more than rounding)
    _compare(sim, 41, th=th, tile=(24, b, b), kernel="emulate")
