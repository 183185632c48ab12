"""jax.grad through the FDTD's mode monitors: the mode amplitudes of a physical-unit run as
the objective, differentiated with respect to a design region's per-cell permittivities and
a polygon's vertices, checked against central finite differences of the forward run."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from emjax import fdtd, geometry, scene
from emjax.backend import precision_scope
from emjax.errors import ConfigError

RES = 8
DX = 1 / RES
F0 = 1 / 1.55
PLANE = (0, 1.2, DX)


def _core():
    # a 0.5 um Si strip along x in SiO2 (it runs into the CPML: staircase raster)
    v = [[-10, -0.25], [10, -0.25], [10, 0.25], [-10, 0.25]]
    return scene.Object(geometry.Polygon(vertices=v), 3.476**2, size=20.0)


def _sim(design, size=(1.6, 1.4, DX), boundary=None, monitor_x=0.55, averaging="staircase"):
    wf = fdtd.GaussianPulse(F0, 0.2 * F0)
    return fdtd.Simulation(
        size=size,
        resolution=RES,
        scene=scene.Scene([_core(), design], background=1.444**2),
        boundary=boundary or (fdtd.CPML(6), fdtd.CPML(6), fdtd.Periodic()),
        precision="double",
        sources=[fdtd.ModeSource((-0.55, 0, 0), PLANE, "+", 0, wf)],
        monitors=[
            fdtd.ModeMonitor((monitor_x, 0, 0), PLANE, (F0,), name="out"),
            fdtd.ModeMonitor((-0.4, 0, 0), PLANE, (F0,), name="back"),
        ],
        averaging=averaging,
    )


def _voxels(eps):
    """A 3 x 3-cell design region above the strip, each cell its own (traced) permittivity."""
    vox = geometry.Voxels(array=np.arange(9).reshape(3, 3, 1))
    return scene.Object(vox, tuple(eps[i] for i in range(9)), center=(0, 0.25, 0), size=3 * DX)


def _power(sim, name="out", direction=0):
    r = fdtd.run(sim, until=12.0, progress=False)
    return jnp.abs(r.mode_amplitudes(name)[0, 0, direction]) ** 2


@pytest.mark.slow
def test_grad_of_mode_power_over_per_cell_eps_matches_finite_differences():
    """Set-up: a mode launched along a strip guide past a 3 x 3-cell design region of nine
    traced permittivities (staircase raster); the objectives: the transmitted power (the
    forward mode on a monitor past the region) and the reflected power (the backward mode
    on a monitor between the source and the region). Reference: central differences of the
    forward run, step 1e-3 in eps (double precision: the truncation error ~h^2 f''' is
    ~1e-9 of the derivative). Measured agreement ~1e-9 relative; tolerance 1e-6. A sign error
    or a missing term (e.g. the H overlap of the decomposition) fails it by O(1)."""
    eps0 = np.linspace(2.5, 9.0, 9)

    def f(e):  # both terms in one objective: one backward pass
        sim = _sim(_voxels(e))
        r = fdtd.run(sim, until=12.0, progress=False)
        t = jnp.abs(r.mode_amplitudes("out")[0, 0, 0]) ** 2
        return t - 5 * jnp.abs(r.mode_amplitudes("back")[0, 0, 1]) ** 2

    with precision_scope():
        g = np.asarray(jax.grad(f)(jnp.asarray(eps0)))
        assert np.all(np.isfinite(g)) and np.max(np.abs(g)) > 0
        h = 1e-3
        for i in (0, 4, 8):
            d = np.zeros(9)
            d[i] = h
            fd = (float(f(jnp.asarray(eps0 + d))) - float(f(jnp.asarray(eps0 - d)))) / (2 * h)
            assert g[i] == pytest.approx(fd, rel=1e-6, abs=1e-6 * np.max(np.abs(g)))


@pytest.mark.slow
def test_grad_of_mode_power_over_polygon_vertices_matches_finite_differences():
    """Set-up: as above with the design a Si triangle above the strip whose apex (x, height)
    is traced (subpixel averaging: the fill fractions as JAX functions of the vertices; x
    periodic, so no interface meets a CPML). Reference: central differences, step 1e-4 um
    (double precision). Measured agreement 5e-7 relative; tolerance 1e-5."""

    def design(p):
        tri = jnp.stack([jnp.array([-0.2, 0.4]), jnp.array([0.2, 0.4]), jnp.stack([p[0], 0.4 + p[1]])])
        return scene.Object(geometry.Polygon(vertices=tri), 3.476**2, center=(0, 0.52, 0), size=0.4)

    boundary = (fdtd.Periodic(), fdtd.CPML(6), fdtd.Periodic())

    def f(p):
        return _power(_sim(design(p), (1.6, 2.0, DX), boundary, averaging="subpixel"))

    p0 = np.array([0.05, 0.23])
    with precision_scope():
        g = np.asarray(jax.grad(f)(jnp.asarray(p0)))
        h = 1e-4
        for i in range(2):
            d = np.zeros(2)
            d[i] = h
            fd = (float(f(jnp.asarray(p0 + d))) - float(f(jnp.asarray(p0 - d)))) / (2 * h)
            assert g[i] == pytest.approx(fd, rel=1e-5)


def test_a_design_on_a_mode_plane_is_refused():
    # the mode profiles are held fixed: a traced object within a cell of a mode plane would
    # lose the profile's derivative, so it is refused (the design region over the monitor)
    def f(e):
        return _power(_sim(_voxels(e), monitor_x=0.1))

    with pytest.raises(ConfigError, match=r"objects\[1\].*mode profile is held fixed"):
        with precision_scope():
            jax.grad(f)(jnp.full(9, 4.0))

    def g(bg):
        sim = _sim(_voxels(np.full(9, 4.0)))
        sim = fdtd.Simulation(**{**_fields(sim), "scene": scene.Scene(sim.scene.objects, background=bg)})
        return _power(sim)

    with pytest.raises(ConfigError, match="background permittivity is traced"):
        with precision_scope():
            jax.grad(g)(2.0)


def _fields(sim):
    names = ("size", "resolution", "boundary", "precision", "sources", "monitors", "averaging")
    return {n: getattr(sim, n) for n in names}


def test_a_mode_beyond_the_grids_band_edge_is_refused():
    # at 6 cells per um the strip's mode (n_eff 3.3 at 1.55 um) has 2.8 cells per guided
    # wavelength, under pi: the Yee grid carries no such wave (its normalization would divide
    # by cos(beta_d dx / 2) = 0): one line naming the resolution instead of fields of 1e8
    sim = fdtd.Simulation(
        size=(1.4, 1.2, 1 / 6),
        resolution=6,
        scene=scene.Scene([_core()], background=1.444**2),
        boundary=(fdtd.CPML(4), fdtd.CPML(4), fdtd.Periodic()),
        averaging="staircase",
        sources=[fdtd.ModeSource((-0.35, 0, 0), (0, 1.0, 1 / 6), "+", 0, fdtd.GaussianPulse(F0, 0.2 * F0))],
    )
    with pytest.raises(ConfigError, match=r"under pi cells.*raise resolution \(now 6\)"):
        fdtd.run(sim, until=1.0, progress=False)
