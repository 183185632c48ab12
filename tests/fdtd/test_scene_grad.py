"""``jax.grad`` of scene parameters through the physical-unit FDTD API: an object's size,
center and rotation and a material's eps, traced through ``fdtd.Simulation`` and
``fdtd.run``, against central differences of concrete runs (the NumPy raster, unchanged).

The set-up: a 12^3 PEC box (dx = 0.1), a Ricker dipole E_z below the object, a probe E_z
above it, 36 steps (six rematerialized segments of six), float64; the objective is the
probe's energy ``sum E_z(t)^2`` (scaled to O(1e-2)). The object lies two cells inside the
walls so every interface node is in the subpixel box. Gradients go through the traced
raster (emjax.scene.traced) and JAX's reverse mode of the checkpointed time loop; the
central differences (h = 1e-4) go through the concrete NumPy raster, so an error in either
path (or a difference between their forward values) shows. Measured relative errors
(2026-11-26, XLA:CPU) are given in each test; tolerance 1e-5: the central difference's own
error is ~3e-7 at h = 1e-4 (the fill fraction is piecewise cubic in the distance, C1: at
h = 1e-3 it is 4e-5) and, below h = 1e-5, the host raster's rounding noise (~1e-10 of the
objective, its normals taken by differences) over 2h.
"""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from emjax import ConfigError, fdtd, geometry, scene
from emjax.backend import precision_scope

STEPS = 36
H = 1e-4  # the fill fraction is piecewise cubic (C1): O(h^2) error ~3e-7 here; smaller h meets
# the host raster's rounding noise (its normals by differences: ~1e-10 of the objective)


def _sim(obj, averaging="subpixel", background=1.0):
    wf = fdtd.Ricker(frequency=1.5)
    return fdtd.Simulation(
        size=(1.2, 1.2, 1.2),
        resolution=10,
        scene=scene.Scene([obj], background),
        sources=[fdtd.Dipole(position=(0.0, 0.0, -0.45), component="z", waveform=wf)],
        probes=[((0.0, 0.05, 0.45), "z")],
        boundary=fdtd.PEC(),
        precision="double",
        averaging=averaging,
    )


def _energy(obj, **kw):
    res = fdtd.run(_sim(obj, **kw), STEPS, progress=False)
    return jnp.sum(jnp.asarray(res.raw.probes) ** 2) * 1e4


def _sphere(radius, cz, eps):
    return scene.Object(geometry.Sphere(), eps, center=(0.0, 0.0, cz), size=2 * radius)


def _box(size, cx, eps):
    return scene.Object(geometry.Box(y_over_x=0.8, z_over_x=1.2), eps, center=(cx, 0.02, 0.0), size=size)


def _check(make, p0, index, rel):
    """The gradient of the energy of ``make(*p)`` w.r.t. the parameters ``index`` vs central
    differences; the traced forward value vs the concrete one."""
    p0 = tuple(float(v) for v in p0)
    with precision_scope():
        value, grad = jax.value_and_grad(lambda *p: _energy(make(*p)), argnums=index)(*p0)
        # the traced raster's normals by autodiff, the host's by differences: 1e-10 apart
        assert abs(float(value) - float(_energy(make(*p0)))) <= 1e-8 * abs(float(value))
        for k, g in zip(index, grad):
            up = list(p0)
            dn = list(p0)
            up[k] += H
            dn[k] -= H
            fd = (float(_energy(make(*up))) - float(_energy(make(*dn)))) / (2 * H)
            print(f"parameter {k}: grad {float(g):.10g}, central difference {fd:.10g}")
            assert abs(float(g) - fd) <= rel * abs(fd), (k, float(g), fd)


def _effective_inverse(sim):
    """The inverse permittivity the update applies, (3, 3, nx, ny, nz): row c at E_c's nodes
    (the box's tensor rows at its active nodes, else 1 / the node's eps: per node, or the
    cell's eps for all three components)."""
    box = sim.subpixel
    eps = jnp.asarray(sim.eps, float)
    return _effective(eps, jnp.asarray(box.eps_inv), jnp.asarray(box.active_mask), box.lo, sim.grid.shape)


@partial(jax.jit, static_argnames=("lo", "shape"))
def _effective(eps, inv, act, lo, shape):
    eps = eps if eps.ndim == 4 else jnp.stack([jnp.broadcast_to(eps, shape)] * 3)
    out = jnp.eye(3)[:, :, None, None, None] / eps[:, None]
    sl = (slice(None), slice(None)) + tuple(slice(a, a + n) for a, n in zip(lo, inv.shape[2:]))
    return out.at[sl].set(jnp.where(act[:, None], inv, out[sl]))


def _value_and_jacobian(f, p0):
    """``f(*p0)`` through the traced path and its Jacobian (forward mode, one pass)."""

    def both(*p):
        out = f(*p)
        return out, out

    jac, value = jax.jacfwd(both, argnums=tuple(range(len(p0))), has_aux=True)(*p0)
    return np.asarray(value), [np.asarray(j) for j in jac]


def test_traced_materials_equal_concrete_and_their_derivatives_central_differences():
    """The fast check of the chain scene -> cell-index materials: the inverse permittivity
    the update applies (subpixel tensors included) for a sphere (radius 0.22, center z 0.03,
    eps 2.25), traced (``jax.jacfwd`` over the three) vs concrete: the same values (measured
    max difference 2e-11; tolerance 1e-9, the host's normals by differences) and the
    derivatives equal central differences of the concrete raster (h = 1e-4; measured max
    error 4e-6 of the largest entry; tolerance 1e-4). This failed before scene parameters
    could be traced (``ConfigError: Object.size must be a real number``)."""
    p0 = (0.22, 0.03, 2.25)

    def inverse(*p):
        return _effective_inverse(_sim(_sphere(*p)).to_grid()[0])

    with precision_scope():
        base = np.asarray(inverse(*p0))
        value, jac = _value_and_jacobian(inverse, p0)
        assert np.max(np.abs(value - base)) <= 1e-9
        for k in range(3):
            up, dn = list(p0), list(p0)
            up[k] += H
            dn[k] -= H
            fd = (np.asarray(inverse(*up)) - np.asarray(inverse(*dn))) / (2 * H)
            err = np.max(np.abs(np.asarray(jac[k]) - fd)) / np.max(np.abs(fd))
            print(f"parameter {k}: max |d/dp - central difference| / max |d/dp| = {err:.2e}")
            assert np.max(np.abs(fd)) > 0 and err <= 1e-4


@pytest.mark.slow
def test_2d_disk_raster_derivatives_central_differences():
    """A 2-D grid (12 x 12 x 1, periodic along z) with a Disk of radius 0.3 at x = 0.02: the
    traced inverse permittivity equals the concrete one (measured 4.5e-11) and its
    derivatives in the radius and the center's x equal central differences (h = 1e-4;
    measured 3.4e-6 and 3.1e-6 of the largest entry; tolerance 1e-4). End to end (probe
    energy after 36 steps) the radius derivative was measured 2e-7 from the central
    difference."""

    def inverse(r, cx):
        o = scene.Object(geometry.Disk(), 3.0, center=(cx, 0.01, 0.0), size=2 * r)
        sim = fdtd.Simulation(
            size=(1.2, 1.2, 0.1),
            resolution=10,
            scene=scene.Scene([o]),
            boundary=(fdtd.PEC(), fdtd.PEC(), fdtd.Periodic()),
            precision="double",
        )
        return _effective_inverse(sim.to_grid()[0])

    p0 = (0.3, 0.02)
    with precision_scope():
        value, jac = _value_and_jacobian(inverse, p0)
        assert value.shape[2:] == (12, 12, 1)
        assert np.max(np.abs(value - np.asarray(inverse(*p0)))) <= 1e-9
        for k in range(2):
            up, dn = list(p0), list(p0)
            up[k] += H
            dn[k] -= H
            fd = (np.asarray(inverse(*up)) - np.asarray(inverse(*dn))) / (2 * H)
            assert np.max(np.abs(fd)) > 0 and np.max(np.abs(jac[k] - fd)) <= 1e-4 * np.max(np.abs(fd))


@pytest.mark.slow  # ~10 s
def test_compiled_raster_reused_only_for_the_same_structure():
    """A second gradient with the same interface nodes (another eps, the same geometry) reuses
    the compiled raster function and gives what a fresh compilation gives (bit for bit);
    another radius (other interface nodes) compiles its own."""
    from emjax.fdtd import scene_grad, subpixel

    def inverse(*p):
        return _effective_inverse(_sim(_sphere(*p)).to_grid()[0])

    with precision_scope():
        scene_grad._COMPILED.clear()
        _value_and_jacobian(inverse, (0.22, 0.03, 2.25))
        entries = list(scene_grad._COMPILED.values())
        cached = _value_and_jacobian(inverse, (0.22, 0.03, 2.5))
        assert list(scene_grad._COMPILED.values()) == entries  # reused, nothing new
        scene_grad._COMPILED.clear()
        subpixel._WEIGHTS.clear()
        fresh = _value_and_jacobian(inverse, (0.22, 0.03, 2.5))
        np.testing.assert_array_equal(cached[0], fresh[0])
        for a, b in zip(cached[1], fresh[1]):
            np.testing.assert_array_equal(a, b)
        _value_and_jacobian(inverse, (0.25, 0.03, 2.25))
        assert len(scene_grad._COMPILED) == 2


@pytest.mark.slow  # ~11 s
def test_32_bit_jax_gets_the_float64_raster_and_its_derivatives():
    """In JAX's default 32-bit mode the traced raster is computed in float64 (float32 loses
    the cube-plane fill where a normal is near an axis: 2% off in Csca before) and handed on
    in float32 with a float32 derivative rule: values and ``jax.grad`` (reverse mode, whose
    backward pass runs outside any 64-bit scope) equal 64-bit JAX's to float32
    rounding (measured 7e-10 in the value, 1.4e-7 of the largest derivative; tolerance 1e-5)."""
    p0 = (0.22, 0.03, 2.25)
    weights = np.random.default_rng(1).random((3, 3, 12, 12, 12))

    def loss(*p):
        return jnp.sum(
            jnp.asarray(weights, jnp.asarray(0.0).dtype) * _effective_inverse(_sim(_sphere(*p)).to_grid()[0])
        )

    with precision_scope():
        v64, g64 = jax.value_and_grad(loss, argnums=(0, 1, 2))(*p0)
    assert not jax.config.jax_enable_x64
    v32, g32 = jax.value_and_grad(loss, argnums=(0, 1, 2))(*p0)
    assert abs(float(v32) - float(v64)) <= 1e-5 * abs(float(v64))
    scale = max(abs(float(g)) for g in g64)
    for a, b in zip(g32, g64):
        assert abs(float(a) - float(b)) <= 1e-5 * scale, (float(a), float(b))


@pytest.mark.slow
def test_sphere_radius_center_and_eps_gradients_match_central_differences():
    """A sphere (radius 0.22, center z 0.03, eps 2.25): ``jax.grad`` through
    ``fdtd.run(fdtd.Simulation(...))`` of its radius, its center's z and its eps, each
    against a central difference of concrete runs. Measured relative errors: 2.6e-6 (radius),
    2e-6 (center z), 1e-8 (eps); ``jax.jvp`` of the radius equals ``jax.grad``'s within 1e-9.
    This failed before scene parameters could be traced
    (``ConfigError: Object.size must be a real number``)."""
    _check(_sphere, (0.22, 0.03, 2.25), (0, 1, 2), 1e-5)
    with precision_scope():  # forward mode: the same derivative (to rounding)
        f = lambda r: _energy(_sphere(r, 0.03, 2.25))  # noqa: E731
        (_, tangent), grad = jax.jvp(f, (0.22,), (1.0,)), jax.grad(f)(0.22)
        # measured 8e-10 apart: the cube-plane fill's cancellation near axis normals amplifies
        # rounding differently in the two orders
        assert abs(float(tangent) - float(grad)) <= 1e-8 * abs(float(grad))


@pytest.mark.slow
def test_box_size_and_center_gradients_match_central_differences():
    """A box 0.44 x 0.352 x 0.528 off the grid's symmetry planes: the gradient of its size
    (along x; y and z scale with it) and its center's x vs central differences (edges and
    corners: the tangent plane of the nearest face, as the host raster). Measured relative
    errors: see the assertion's tolerance (1e-5)."""
    _check(_box, (0.44, 0.013, 3.0), (0, 1), 1e-5)


@pytest.mark.slow
def test_rotated_ellipsoid_gradient_matches_central_differences():
    """An ellipsoid turned by traced Euler angles (20, 35, 0) deg: the gradient of the angle
    beta and of its size vs central differences (first-order signed distance, as the host)."""

    def make(size, beta):
        return scene.Object(
            geometry.Ellipsoid(0.7, 1.3),
            2.0,
            center=(0.01, -0.02, 0.0),
            size=size,
            rotation=(20.0, beta, 0.0),
        )

    _check(make, (0.42, 35.0), (0, 1), 1e-5)


def test_staircase_and_pec_refuse_traced_geometry():
    """A staircased boundary has no derivative in the geometry, and a PEC object no traced
    raster: both refused with the way out named, before any run."""
    with pytest.raises(ConfigError, match='averaging="subpixel"'):
        jax.grad(lambda r: _energy(_sphere(r, 0.0, 2.0), averaging="staircase"))(0.2)
    with pytest.raises(ConfigError, match="dielectric"):
        jax.grad(lambda r: _energy(scene.Object(geometry.Sphere(), scene.PEC, size=2 * r)))(0.2)


@pytest.mark.slow  # ~20 s
def test_2d_polygon_raster_derivatives_central_differences():
    """A 2-D grid (12 x 12 x 1) with a triangle (eps 3) of traced size, center x and angle
    about z: the traced inverse permittivity equals the concrete one (exact cell areas on
    both sides: measured 4e-16) and its derivatives equal central differences (h = 1e-5;
    measured <= 2.4e-7 of the largest entry; tolerance 1e-5)."""

    def inverse(size, cx, alpha):
        tri = geometry.Polygon([[0.0, 0.0], [1.0, 0.1], [0.3, 0.8]])
        o = scene.Object(tri, 3.0, center=(cx, 0.01, 0.0), size=size, rotation=(alpha, 0.0, 0.0))
        sim = fdtd.Simulation(
            size=(1.2, 1.2, 0.1),
            resolution=10,
            scene=scene.Scene([o]),
            boundary=(fdtd.PEC(), fdtd.PEC(), fdtd.Periodic()),
            precision="double",
        )
        return _effective_inverse(sim.to_grid()[0])

    p0, h = (0.6, 0.02, 10.0), 1e-5
    with precision_scope():
        value, jac = _value_and_jacobian(inverse, p0)
        assert np.max(np.abs(value - np.asarray(inverse(*p0)))) <= 1e-12
        for k in range(3):
            up, dn = list(p0), list(p0)
            up[k] += h
            dn[k] -= h
            fd = (np.asarray(inverse(*up)) - np.asarray(inverse(*dn))) / (2 * h)
            assert np.max(np.abs(fd)) > 0 and np.max(np.abs(jac[k] - fd)) <= 1e-5 * np.max(np.abs(fd))


@pytest.mark.slow  # ~40 s (the first gradient compiles the traced raster and the loop)
def test_2d_polygon_vertex_gradient_end_to_end():
    """A 2-D grid (12 x 12 x 1, periodic along z) with a triangle (eps 3) given by traced
    absolute vertices (placed by their bounding box): the probe energy after 36 steps, its
    gradient with respect to the six coordinates projected on a direction with every
    component nonzero, against a central difference along it (h = 1e-4). The fill fractions
    are the exact cell areas (emjax.scene.polygon_fill), host and traced alike: the forward
    values agree to 1e-15; measured gradient error 7e-7 relative."""
    tri = np.array([[0.0, 0.0], [0.6, 0.06], [0.18, 0.48]]) - 0.3 + 0.0123
    direction = np.random.default_rng(3).uniform(0.5, 1.0, tri.shape) * np.array([1, -1])

    def energy(v):
        lo, hi = jnp.min(v, axis=0), jnp.max(v, axis=0)
        c = (lo + hi) / 2
        o = scene.Object(geometry.Polygon(v), 3.0, center=(c[0], c[1], 0.0), size=hi[0] - lo[0])
        sim = fdtd.Simulation(
            size=(1.2, 1.2, 0.1),
            resolution=10,
            scene=scene.Scene([o]),
            sources=[
                fdtd.Dipole(position=(0.0, -0.45, 0.0), component="z", waveform=fdtd.Ricker(frequency=1.5))
            ],
            probes=[((0.05, 0.45, 0.0), "z")],
            boundary=(fdtd.PEC(), fdtd.PEC(), fdtd.Periodic()),
            precision="double",
        )
        return jnp.sum(jnp.asarray(fdtd.run(sim, STEPS, progress=False).raw.probes) ** 2) * 1e4

    with precision_scope():
        value, grad = jax.value_and_grad(energy)(jnp.asarray(tri))
        assert abs(value - energy(tri)) <= 1e-12 * abs(value)
        fd = (energy(tri + H * direction) - energy(tri - H * direction)) / (2 * H)
        projected = float(np.sum(np.asarray(grad) * direction))
        assert abs(projected - fd) <= 1e-5 * np.sum(np.abs(np.asarray(grad) * direction))
        assert np.min(np.abs(np.asarray(grad))) > 1.0  # every vertex matters


def test_traced_geometry_inside_jit_is_refused_with_the_reason():
    """Under ``jax.jit`` the geometry has no value for the host raster: one line names the
    parameter and what to do."""
    with pytest.raises(ConfigError, match="Object.size is abstract.*without jax.jit"):
        jax.jit(jax.grad(lambda r: _energy(_sphere(r, 0.0, 2.0))))(0.2)


def test_material_eps_alone_may_be_traced_under_jit():
    """With concrete geometry the raster's structure needs no values: ``jax.jit`` around a
    function of the sphere's and the background's eps gives the unjitted value and
    derivatives (to rounding), and the traced background matches a central difference."""

    def inverse(eps, background):
        sim = _sim(_sphere(0.22, 0.03, eps), background=background)
        return jnp.sum(_effective_inverse(sim.to_grid()[0]) ** 2)

    with precision_scope():
        plain = jax.value_and_grad(inverse, argnums=(0, 1))(2.25, 1.5)
        jitted = jax.jit(jax.value_and_grad(inverse, argnums=(0, 1)))(2.25, 1.5)
        np.testing.assert_allclose(
            np.asarray(jax.tree.leaves(jitted)), np.asarray(jax.tree.leaves(plain)), rtol=1e-12
        )
        fd = (float(inverse(2.25, 1.5 + H)) - float(inverse(2.25, 1.5 - H))) / (2 * H)
        assert abs(float(plain[1][1]) - fd) <= 1e-6 * abs(fd)


def test_untraceable_shape_names_the_shape():
    """A prism (no analytic signed distance) with a traced size: the ConfigError names it and
    the shapes that can be traced."""
    with pytest.raises(ConfigError, match="prism.*Sphere"):
        jax.grad(lambda s: _energy(scene.Object(geometry.Prism(6, 1.0), 2.0, size=s)))(0.4)


def test_concrete_scene_unchanged():
    """Concrete parameters take the NumPy raster as before: the same grid simulation (cell
    eps array, a concrete subpixel box)."""
    sim, _ = _sim(_sphere(0.22, 0.03, 2.25)).to_grid()
    assert isinstance(sim.eps, np.ndarray) and sim.eps.shape == (12, 12, 12)
    assert not sim.subpixel.traced
    np.testing.assert_equal(np.asarray(sim.subpixel.eps_inv).shape[:2], (3, 3))
