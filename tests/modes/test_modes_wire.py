"""emjax.modes on a silicon wire: the published effective index, the scene form against the
pixel form, normalization and orthogonality, losses by perturbation theory, and the group
index against the energy velocity."""

import numpy as np
import pytest
from test_modes_analytic import WAVELENGTH as SLAB_WAVELENGTH  # tests/modes on sys.path
from test_modes_analytic import slab_pixels

from emjax import ConfigError, geometry, modes, scene

N_SI, N_OX, WAVELENGTH = 3.476, 1.444, 1.55


def wire_pixels(resolution: int, window=(1.6, 1.2), size=(0.5, 0.22)) -> np.ndarray:
    """A ``size`` (default 500 x 220 nm) Si wire in SiO2 (lengths in um), centred, its
    edges on the nearest cell edges."""
    nx, ny = round(window[0] * resolution), round(window[1] * resolution)
    cw, ch = round(size[0] * resolution), round(size[1] * resolution)
    eps = np.full((nx, ny), N_OX**2)
    x0, y0 = (nx - cw) // 2, (ny - ch) // 2
    eps[x0 : x0 + cw, y0 : y0 + ch] = N_SI**2
    return eps


def wire_scene(size=(0.5, 0.22)) -> scene.Scene:
    """The wire as a scene object: a box ``size`` in (x, y), long along z, at the origin."""
    box = geometry.Box(y_over_x=size[1] / size[0], z_over_x=40.0)
    return scene.Scene([scene.Object(box, N_SI**2, center=(0.0, 0.0, 0.0), size=size[0])], background=N_OX**2)


def test_silicon_wire_te0_published_value():
    """TE0 of the 500 x 220 nm Si wire in SiO2 at 1.55 um from a z-normal plane through the
    scene (subpixel averaging), 2.0 x 1.6 um window, 50 nm cells: n_eff = 2.444 within 0.01,
    E mostly along x (TE fraction > 0.95), TM0 (fraction < 0.1, n_eff 1.77-1.81) next.

    References: n_eff = 2.44 for this wire in oxide at 1550 nm (Chrostowski and Hochberg,
    Silicon Photonics Design, Cambridge 2015, ch. 3); an independent discretization, EMpy's
    vector finite differences on the same pixels (benchmarks/modes_crosscheck.py), gives
    2.4489 at 10 nm cells, emjax's pixel form 2.4450. The tolerance: with 20-50 nm cells the
    subpixel-averaged results scatter by +-0.006 with the wire's position in the grid (the
    corners' field singularities)."""
    plane = modes.Plane(center=(0.0, 0.0, 0.0), size=(2.0, 1.6, 0.0))
    r = modes.solve_scene(wire_scene(), plane, 20, 1 / WAVELENGTH, 2, group_index=False)
    assert abs(r.n_eff[0].real - 2.444) < 0.01 and abs(r.n_eff[0].imag) < 1e-12
    assert r.te_fraction[0] > 0.95 and r.te_fraction[1] < 0.1
    assert 1.77 < r.n_eff[1].real < 1.81


def test_scene_plane_matches_pixels_and_axes_rotate():
    """A plane through the scene and the same wire as pixels (480 x 240 nm: its faces on cell
    edges at 40 nm cells): the node permittivities agree (the subpixel mean at a face is the
    pixel form's average; to 1e-4, the raster's fill of a face-parallel plane) except at the
    four E_z nodes on the box's edges, where the raster's tangent-plane fill is 1/2 where the
    pixels' is 1/4 (n_eff then within 0.01). A y-normal plane through the wire turned to run
    along y gives the z-normal plane's modes to 1e-9, on the plane's (u, v) = (z, x) axes:
    TE0's E is then along v."""
    res, size = 25, (0.48, 0.24)
    pixels = modes.solve(wire_pixels(res, size=size), res, 1 / WAVELENGTH, 2, group_index=False)
    plane = modes.Plane((0, 0, 0), (1.6, 1.2, 0))
    r = modes.solve_scene(wire_scene(size), plane, res, 1 / WAVELENGTH, 2, group_index=False)
    for c in range(3):
        off = np.abs(r.eps_yee[c] - pixels.eps_yee[c]) > 1e-4 * np.abs(pixels.eps_yee[c])
        assert off.sum() == (4 if c == 2 else 0), c
    assert np.allclose(r.n_eff, pixels.n_eff, atol=1e-2, rtol=0)
    assert r.E.shape[2:] == (40, 30) and np.isclose(r.x[0], -0.8 + 0.02)
    box = geometry.Box(y_over_x=80.0, z_over_x=size[1] / size[0])
    turned = scene.Scene([scene.Object(box, N_SI**2, size=size[0])], background=N_OX**2)
    plane = modes.Plane((0, 0, 0), (1.6, 0.0, 1.2))
    r2 = modes.solve_scene(turned, plane, res, 1 / WAVELENGTH, 2, group_index=False)
    assert r2.E.shape[2:] == (30, 40)
    assert np.allclose(r2.n_eff, r.n_eff, atol=1e-9, rtol=0)
    assert r2.te_fraction[0] < 0.05  # E along v = x


def test_normalization_and_orthogonality():
    """Four modes of the wire: each carries unit power ``(1/2) Re int E x H* . z = 1`` (to
    1e-12) and the cross terms between different modes vanish (< 1e-10: the Yee system's
    modes are exactly orthogonal in this inner product for a lossless section); E and H on
    the cell centres carry the same power to the averaging's O(d^2)."""
    r = modes.solve(wire_pixels(20), 20, 1 / WAVELENGTH, 4, group_index=False)
    gram = np.array([[r.overlap(m, n) for n in range(4)] for m in range(4)])
    assert np.allclose(np.diag(gram).real, 1.0, atol=1e-12, rtol=0)
    assert np.max(np.abs(gram - np.diag(np.diag(gram)))) < 1e-10
    d = 1 / 20
    centred = 0.5 * np.sum(np.real(r.E[0, 0] * r.H[0, 1].conj() - r.E[0, 1] * r.H[0, 0].conj())) * d * d
    assert abs(centred - 1.0) < 0.02


def _weighted(r, m, values):
    """sum over the Yee E nodes of ``values[c] * |E_c|^2`` times the dual areas."""
    d = 1 / r.resolution
    wx, wy = r._weights()  # (E_x grid, E_y grid)
    wz = np.zeros(r.E_yee[2].shape[1:])
    wz[1:-1, 1:-1] = 1.0  # PEC walls: E_z is zero on them
    return (
        sum(np.sum(w * v * abs(r.E_yee[c][m]) ** 2) for c, (w, v) in enumerate(zip((wx, wy, wz), values)))
        * d
        * d
    )


def test_lossy_core_against_perturbation_theory():
    """A small absorption ``i delta`` in the core (delta = 1e-4): Im n_eff of TE0 and TM0
    equals first-order perturbation theory ``(1/4) int Im(delta eps) |E|^2 dA`` with the
    lossless modes (unit power), evaluated on the same Yee nodes, to 1e-3 relative (the
    second-order term is ~delta); Re n_eff moves by O(delta^2)."""
    eps = wire_pixels(20)
    core = eps > 2 * N_OX**2
    lossless = modes.solve(eps, 20, 1 / WAVELENGTH, 2, group_index=False)
    lossy = modes.solve(eps + 1e-4j * core, 20, 1 / WAVELENGTH, 2, group_index=False)
    for m in range(2):
        delta = [e.imag for e in lossy.eps_yee]
        expected = 0.25 * _weighted(lossless, m, delta)
        assert abs(lossy.n_eff[m].imag - expected) < 1e-3 * expected, (m, lossy.n_eff[m], expected)
        assert abs(lossy.n_eff[m].real - lossless.n_eff[m].real) < 1e-6


def test_group_index_is_the_energy_velocity():
    """For a lossless, non-dispersive section with closed walls, ``n_g = c / v_g`` equals
    ``(1/4) int (eps |E|^2 + |H|^2) dA / ((1/2) Re int E x H* . z dA)`` (energy per length
    over power: the energy velocity theorem) on the Yee grid, to 1e-6; n_g of a Si wire is
    about 4 (4.05 at 10 nm cells)."""
    r = modes.solve(wire_pixels(20), 20, 1 / WAVELENGTH, 2)
    d = 1 / 20
    for m in range(2):
        electric = _weighted(r, m, [e.real for e in r.eps_yee])
        magnetic = sum(np.sum(abs(h[m]) ** 2) for h in r.H_yee) * d * d  # H_x, H_y zero on PEC
        assert abs(0.25 * (electric + magnetic) - r.group_index[m]) < 1e-6 * r.group_index[m], m
    assert 3.9 < r.group_index[0] < 4.2


@pytest.mark.slow  # about 6 s
def test_pml_leaves_guided_modes_and_bends_leak():
    """A PML over the outer cladding: the guided TE0 of a slab keeps the walled section's n_eff
    (to 1e-9) with |Im n_eff| < 1e-12; bent (conformal map, radius R in wavelengths) it leaks:
    Im n_eff > 0, falling steeply as R grows (bend loss ~exp(-c R): by > 5x from R = 2.4 to
    3 and > 100x from 3 to 5), its field staying guided (effective area within 2x of the
    straight one), and its Im n_eff independent of the PML's thickness and strength (5%)."""
    eps = slab_pixels(40)
    walled = modes.solve(eps, 40, 1 / SLAB_WAVELENGTH, 1, group_index=False)
    pml = modes.PML(thickness=(16, 16, 0, 0))
    straight = modes.solve(eps, 40, 1 / SLAB_WAVELENGTH, 1, pml=pml, group_index=False)
    assert abs(straight.n_eff[0] - walled.n_eff[0]) < 1e-9 and abs(straight.n_eff[0].imag) < 1e-12
    loss = []
    for R in (2.4, 3.0, 5.0):
        r = modes.solve(
            eps,
            40,
            1 / SLAB_WAVELENGTH,
            3,
            pml=pml,
            bend_radius=R,
            n_guess=walled.n_eff[0].real,
            group_index=False,
        )
        k = int(np.argmin(abs(r.n_eff.imag)))  # the bound one; the others live in the PML
        assert r.effective_area[k] < 2 * walled.effective_area[0]
        loss.append(r.n_eff[k].imag)
    assert loss[0] > 5 * loss[1] > 0 and loss[1] > 100 * loss[2] > 0, loss
    # the leak is the mode's, not the layer's: a thicker, stronger PML changes it by < 5%
    other = modes.PML(thickness=(30, 30, 0, 0), reflection=1e-12)
    r = modes.solve(
        eps,
        40,
        1 / SLAB_WAVELENGTH,
        3,
        pml=other,
        bend_radius=3.0,
        n_guess=walled.n_eff[0].real,
        group_index=False,
    )
    assert abs(r.n_eff[np.argmin(abs(r.n_eff.imag))].imag - loss[1]) < 0.05 * loss[1]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"eps": np.ones(5)}, "eps must be an"),
        ({"eps": np.full((5, 5), np.nan)}, "eps must be finite"),
        ({"eps": np.full((5, 5), 2 - 1j)}, "Im >= 0"),
        ({"eps": np.ones((2, 5))}, "at least 3 cells"),
        ({"resolution": -1}, "resolution must be > 0"),
        ({"frequency": 0}, "frequency must be > 0"),
        ({"num_modes": 0}, "num_modes must be an integer in"),
        ({"boundary": "open"}, "boundary must be 'pec', 'pmc'"),
        ({"pml": modes.PML(thickness=4)}, "PML.thickness along x"),
        ({"pml": modes.PML(reflection=2)}, "PML.reflection must be in"),
        ({"pml": 3}, "pml must be None or an emjax.modes.PML"),
        ({"bend_radius": 0.1}, "bend_radius must be None or a number with"),
        ({"bend_axis": 2}, "bend_axis must be 0"),
        ({"bend_radius": [1.0, 2.0]}, "bend_radius must be a real number"),
        ({"bend_axis": np.zeros(2)}, "bend_axis must be 0"),
        ({"boundary": ("pec", "pec", "pec")}, "four of them"),
        ({"eps": "abc"}, "eps must be an"),
        ({"n_guess": -1.0}, "n_guess must be > 0"),
    ],
)
def test_bad_input_is_one_line(kwargs, match):
    args = {"eps": np.ones((6, 6)), "resolution": 10, "frequency": 1.0, **kwargs}
    with pytest.raises(ConfigError, match=match) as info:
        modes.solve(args.pop("eps"), args.pop("resolution"), args.pop("frequency"), **args)
    assert "\n" not in str(info.value)


def test_scene_form_bad_input():
    with pytest.raises(ConfigError, match="exactly one 0"):
        modes.solve_scene(wire_scene(), modes.Plane((0, 0, 0), (1, 1, 1)), 20, 1.0)
    with pytest.raises(ConfigError, match="needs >= 3 along each axis"):
        modes.solve_scene(wire_scene(), modes.Plane((0, 0, 0), (1, 0.1, 0)), 20, 1.0)
    with pytest.raises(ConfigError, match="PEC object crosses"):
        pec = scene.Scene([scene.Object(geometry.Box(), scene.PEC, size=0.2)])
        modes.solve_scene(pec, modes.Plane((0, 0, 0), (1, 1, 0)), 20, 1.0)
    with pytest.raises(ConfigError, match="plane must be an emjax.modes.Plane"):
        modes.solve_scene(wire_scene(), (0, 0, 0), 20, 1.0)


def test_scene_group_index_includes_material_dispersion():
    """A wire of a Lorentz material (eps = 11 + a resonance at 0.8 um) in a scene: the group
    index from the solve (perturbation of the operator with the permittivity re-evaluated at
    the neighbouring frequencies) equals ``d (k0 n_eff) / d k0`` from two more solves at
    f (1 +- 1e-3) (centred difference: error ~1e-6), to 1e-4; material dispersion raises it
    above the non-dispersive wire's at the same eps."""
    from emjax import materials

    f0, h = 1 / WAVELENGTH, 1e-3
    lorentz = materials.Dispersive(11.0, (materials.LorentzPole(1.0, 2 * np.pi / 0.8, 0.0),))
    sc = scene.Scene(
        [scene.Object(geometry.Box(y_over_x=0.44, z_over_x=40.0), lorentz, size=0.5)], background=N_OX**2
    )
    plane = modes.Plane((0, 0, 0), (1.6, 1.2, 0))
    r = modes.solve_scene(sc, plane, 20, f0, 1)
    n = [
        modes.solve_scene(sc, plane, 20, f0 * (1 + s * h), 1, group_index=False).n_eff[0].real
        for s in (-1, 1)
    ]
    ng = (n[1] * (1 + h) - n[0] * (1 - h)) / (2 * h)
    assert abs(r.group_index[0] - ng) < 1e-4, (r.group_index[0], ng)
    eps0 = complex(lorentz.permittivity(2 * np.pi * f0)).real
    flat = scene.Scene(
        [scene.Object(geometry.Box(y_over_x=0.44, z_over_x=40.0), eps0, size=0.5)], background=N_OX**2
    )
    plain = modes.solve_scene(flat, plane, 20, f0, 1)
    assert abs(plain.n_eff[0] - r.n_eff[0]) < 1e-9 and r.group_index[0] > plain.group_index[0] + 0.05


def test_memory_is_checked_before_the_solve(monkeypatch):
    """A section whose sparse LU would not fit the available host memory is refused with a
    ResourceError (needed vs available) before anything is assembled."""
    from emjax import ResourceError, hostinfo

    monkeypatch.setattr(hostinfo, "host_available_bytes", lambda: 50 * 2**20)
    with pytest.raises(ResourceError, match=r"needs about .* GiB of host memory .* available"):
        modes.solve(np.ones((400, 400)), 10, 1.0)
    with pytest.raises(ResourceError, match="host memory"):
        modes.solve_scene(wire_scene(), modes.Plane((0, 0, 0), (40, 40, 0)), 10, 1.0)


def test_traced_permittivity_is_refused_in_one_line():
    import jax

    def loss(e):
        return modes.solve(e, 10, 1.0).n_eff[0].real

    with pytest.raises(ConfigError, match="eps is a JAX tracer"):
        jax.grad(loss)(jax.numpy.ones((6, 6)))


def test_result_to_xarray_and_save(tmp_path):
    """The result as a labelled Dataset (dims mode, component, x, y; units) and saved to
    NetCDF, read back equal."""
    import xarray as xr

    from tests.netcdf_units import assert_units

    r = modes.solve(wire_pixels(10), 10, 1 / WAVELENGTH, 2, group_index=False)
    ds = r.to_xarray()
    assert (
        ds["E_real"].dims == ("mode", "component", "x", "y")
        and ds["effective_area"].attrs["units"] == "length^2"
    )
    r.save(tmp_path / "modes.nc")
    assert_units(tmp_path)  # every variable and coordinate has units, none all NaN
    assert "array(2, 3, 16, 12)" in repr(r)  # print(result) shows arrays by shape
    back = xr.open_dataset(tmp_path / "modes.nc")
    assert np.allclose(back["n_eff_real"].values, r.n_eff.real)
    assert np.allclose(back["E_imag"].values, r.E.imag)


@pytest.mark.slow
def test_silicon_wire_converges_second_order_near_an_independent_solver():
    """The wire's TE0 in the pixel form at 20, 10 and 6.67 nm cells (2.0 x 1.6 um window): the
    successive differences fall as the cell size squared, and Richardson's extrapolation
    lies within 2.5e-3 of EMpy's vector finite-difference value at 5 nm cells (2.44760,
    benchmarks/modes_crosscheck.py; EMpy converges at first order from above, so the two
    bracket the limit) and within 0.01 of the published 2.44."""
    found = []
    for res in (50, 100, 150):
        eps = wire_pixels(res, window=(2.0, 1.6))
        found.append(modes.solve(eps, res, 1 / WAVELENGTH, 1, group_index=False).n_eff[0].real)
    h2 = np.array([50.0, 100.0, 150.0]) ** -2
    d1, d2 = found[1] - found[0], found[2] - found[1]
    # second order: d1 / d2 = (h1^2 - h0^2) / (h2^2 - h1^2) = 5.4 (first order: 3)
    assert 4.2 < d1 / d2 < 7.0, (found, d1 / d2)
    limit = found[2] - d2 * h2[2] / (h2[2] - h2[1])
    assert abs(limit - 2.44760) < 2.5e-3 and abs(limit - 2.44) < 0.01, (found, limit)
