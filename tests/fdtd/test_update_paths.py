"""The two ways CPML corrections and sources reach the fields (padded into the bulk pass, as on
a GPU, or added to the slabs in place, as on the CPU) give the same fields."""

import numpy as np
import pytest

from emjax import fdtd
from emjax.fdtd import step as S
from emjax.materials import Dispersive, DrudePole, LorentzPole


def _sim(order=2):
    shape = (30, 28, 26)
    g = fdtd.Grid(
        shape,
        dx=1.0,
        order=order,
        boundary=(fdtd.CPML(6), fdtd.CPML(5, kappa_max=3.0, sides="low"), fdtd.CPML(7, sides="high")),
        precision="double",
    )
    rng = np.random.default_rng(3)
    eps = 1 + rng.random(shape)
    sigma = 0.02 * rng.random(shape)
    pec = np.zeros(shape, bool)
    pec[20:23, 5:9, 15:18] = True
    mask = np.zeros(shape, bool)
    mask[8:12, 16:20, 4:9] = True  # reaches into the z slabs
    drude = Dispersive(eps_inf=1.5, poles=(DrudePole(0.8, 0.1), LorentzPole(1.2, 0.6, 0.05)))
    wf = fdtd.GaussianPulse(frequency=0.08, bandwidth=0.06)
    sources = (
        fdtd.PointDipole((15, 14, 13), 2, wf),
        fdtd.PointDipole((3, 14, 13), 1, fdtd.Ricker(frequency=0.1)),  # inside the x slab
        fdtd.PlaneSource(0, 24, 1, wf, amplitude=0.5),
    )
    probes = tuple(fdtd.Probe(p, c) for p, c in (((2, 3, 1), 2), ((15, 20, 24), 0), ((28, 26, 12), 1)))
    return fdtd.GridSimulation(
        g, eps=eps, sigma=sigma, pec=pec, dispersive=(drude, mask), sources=sources, probes=probes
    )


@pytest.mark.parametrize(
    "inplace, order",
    [
        ((True, True, True), 2),
        pytest.param((True, False, True), 2, marks=pytest.mark.slow),  # mixed: the slow set
        pytest.param((False, True, False), 2, marks=pytest.mark.slow),
        ((True, True, True), 4),
    ],
)
def test_inplace_equals_padded(monkeypatch, inplace, order):
    sim = _sim(order)
    monkeypatch.setattr(S, "INPLACE", (False, False, False))
    ref = fdtd.run(sim, 80, chunk=40)
    monkeypatch.setattr(S, "INPLACE", inplace)
    got = fdtd.run(sim, 80, chunk=40)
    for a, b in ((ref.E, got.E), (ref.H, got.H), (ref.probes, got.probes)):
        a, b = np.asarray(a), np.asarray(b)
        scale = np.max(np.abs(a))
        assert scale > 1e-6  # the fields did reach everywhere that matters
        np.testing.assert_allclose(b, a, rtol=0, atol=1e-12 * scale)
    # the wall planes stay zero (tangential E) in both
    E = np.asarray(got.E)
    assert np.all(E[1, 0] == 0) and np.all(E[2, 0] == 0)
    assert np.all(E[0, :, :, 0] == 0) and np.all(E[1, :, :, 0] == 0)
