"""The blocked kernel's cell size: where a kernel's curl is the differences alone (no CPML,
TF/SF or poles), 1/dx multiplies dt and cb instead of each difference (``cuda.FOLD_DX``).
Grids of dx = 0.05 (where a misplaced 1/dx is a factor of 20), emulated on the host and
equal to the XLA step to rounding: PEC walls (one kernel), and a CPML on every face around
a box of per-cell coefficients (the bulk with the box's arrays folds, the CPML's kernel
does not)."""

import jax.numpy as jnp
import numpy as np
import pytest
from test_blocked import _compare, _setup

from emjax import fdtd
from emjax.fdtd.blocked import coef_box, cuda, cuda_advance, emulation, split
from emjax.fdtd.grid import CPML, PEC

emulated = pytest.mark.skipif(not emulation.available(), reason="no host C++ compiler")
DX = 0.05


def _pec_box(dx=DX):
    """16 x 12 x 10 between PEC walls, two dipoles and probes across the grid."""
    g = fdtd.Grid((16, 12, 10), dx, boundary=PEC(), precision="double")
    pulse = fdtd.GaussianPulse(frequency=0.1 / dx, bandwidth=0.5)
    srcs = (fdtd.PointDipole((5, 4, 5), 2, pulse), fdtd.PointDipole((10, 8, 3), 0, pulse))
    probes = (fdtd.Probe((7, 5, 5), 2), fdtd.Probe((12, 9, 4), 1, "H"), fdtd.Probe((2, 2, 7), 0))
    return fdtd.GridSimulation(g, sources=srcs, probes=probes)


def _box_in_cpml(dx=DX):
    """18 x 13 x 12 with a CPML on every face: a dielectric block (eps per component) with a
    PEC cell inside it, a dipole outside, probes inside and outside."""
    shape = (18, 13, 12)
    g = fdtd.Grid(shape, dx, boundary=CPML(thickness=3), precision="double")
    rng = np.random.default_rng(7)
    eps = np.ones((3,) + shape)
    eps[..., 6:11, 4:9, 3:8] = 1.5 + rng.random(eps[..., 6:11, 4:9, 3:8].shape)
    pec = np.zeros(shape, bool)
    pec[8, 6, 5] = True
    src = fdtd.PointDipole((4, 6, 6), 2, fdtd.GaussianPulse(frequency=0.1 / dx, bandwidth=0.5))
    probes = (fdtd.Probe((8, 6, 4), 2), fdtd.Probe((13, 10, 9), 1, "H"), fdtd.Probe((2, 2, 2), 0))
    return fdtd.GridSimulation(g, eps=eps, pec=pec, sources=(src,), probes=probes)


def test_which_kernels_fold_the_cell_size(monkeypatch):
    plan, arrays, _ = _setup(_box_in_cpml(), 4)
    found = coef_box.find(plan, arrays)
    spec = cuda_advance.make_spec(plan, arrays, jnp.float64, 3, (5, 4), cbox=found)
    bulk, _, fixes, _ = split.split(spec)
    assert bulk.cbox is not None and not bulk.cbox_bg  # (the box's arrays in the bulk kernel)
    assert "#define FOLD_DX 1" in cuda.source(bulk)
    assert fixes and all("#define FOLD_DX 0" in cuda.source(f) for f, _ in fixes)  # the CPML's
    monkeypatch.setattr(cuda, "FOLD_DX", False)
    assert "#define FOLD_DX 0" in cuda.source(bulk)


@emulated
@pytest.mark.parametrize("fold", [True, False])
def test_emulated_pec_walls_at_a_small_cell(fold, monkeypatch):
    """11 steps in passes of 3 (the last of 2), folded or not: the same to rounding."""
    monkeypatch.setattr(cuda, "FOLD_DX", fold)
    _compare(_pec_box(), 11, th=3, tile=(16, 5, 4), kernel="emulate")


@emulated
def test_emulated_box_in_a_cpml_at_a_small_cell():
    """13 steps in passes of 3: the bulk (with the box's arrays) folded, the CPML's not."""
    _compare(_box_in_cpml(), 13, th=3, tile=(18, 5, 4), kernel="emulate")
