"""The traced raster (emjax.scene.traced): fill fractions and normals as JAX functions of an
object's geometry, equal to the host (NumPy) raster for concrete values and smooth as a
boundary crosses cells; objects accept tracers for size, center, rotation and eps."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from emjax import ConfigError, geometry, scene
from emjax.backend import precision_scope
from emjax.scene import traced

SHAPE = (16, 16, 16)
DX = 0.05
ORIGIN = (-0.4, -0.4, -0.4)
OBJECTS = [
    (geometry.Sphere(), (0.013, -0.021, 0.007), 0.42, None),
    (geometry.Ellipsoid(0.7, 1.3), (0.01, 0.0, -0.02), 0.4, (20.0, 35.0, 10.0)),
    (geometry.Box(0.8, 1.2), (-0.017, 0.011, 0.0), 0.38, (15.0, 25.0, 40.0)),
    (geometry.Cylinder(1.1), (0.0, 0.02, 0.013), 0.36, (0.0, 30.0, 0.0)),
]


@pytest.mark.parametrize("shape, center, size, rotation", OBJECTS, ids=lambda v: getattr(v, "name", ""))
def test_traced_values_equal_the_host_raster(shape, center, size, rotation):
    """Every interface node of each E component: the traced fill fraction and normal (size,
    center and rotation traced through ``jax.jit``) vs the host raster's. The host takes the
    normal by central differences of the signed distance (step 1e-6 dx), the traced raster by
    autodiff: measured max differences 2e-11 (fill) and 3e-10 (normal); tolerances 1e-8 and
    1e-7. The dense :func:`traced.fill_fraction` agrees at the same nodes."""
    obj = scene.Object(shape, 2.0, center=center, size=size, rotation=rotation)
    r = scene.rasterize(scene.Scene([obj]), SHAPE, DX, ORIGIN)
    rot0 = rotation if rotation is not None else (0.0, 0.0, 0.0)
    with precision_scope():

        def values(size, center, rot):
            o = scene.Object(shape, 2.0, center=tuple(center), size=size, rotation=tuple(rot))
            return [traced.interface_values(scene.Scene([o]), r, c, base=r.scene) for c in range(3)]

        args = (size, jnp.asarray(center), jnp.asarray(rot0))
        out = jax.jit(values)(*args)  # the parameters are tracers inside
        for c, (f, n) in enumerate(out):
            it = r.interface[c]
            assert len(it["fill"]) > 50
            assert np.max(np.abs(np.asarray(f) - it["fill"])) <= 1e-8
            assert np.max(np.abs(np.asarray(n) - it["normal"])) <= 1e-7
            dense = np.asarray(traced.fill_fraction(obj, SHAPE, DX, ORIGIN, c))[tuple(it["index"].T)]
            own_is_obj = it["own"] == 1
            np.testing.assert_allclose(np.where(own_is_obj, dense, 1 - dense), it["fill"], rtol=0, atol=1e-8)


def test_filled_volume_and_its_radius_derivative():
    """The smooth raster's filled volume ``dx^3 sum fill`` of a sphere tracks 4/3 pi r^3, and
    its derivative (``jax.grad``) tracks the surface 4 pi r^2, for radii sweeping across a
    cell (0.30 .. 0.35, dx 0.05): measured within 0.3% and 1%; tolerances 1% and 3%. The
    derivative varies smoothly: neighbouring radii (1/20 cell apart) change it by < 3%, no
    jumps as the surface crosses nodes (a staircase or sample count has a zero or spiky
    derivative)."""
    with precision_scope():

        def volume(radius):
            o = scene.Object(geometry.Sphere(), 2.0, center=(0.003, -0.002, 0.001), size=2 * radius)
            return jnp.sum(traced.fill_fraction(o, SHAPE, DX, ORIGIN, 2)) * DX**3

        grad = jax.jit(jax.value_and_grad(volume))
        radii = np.linspace(0.30, 0.35, 21)
        vols, areas = np.array([[float(v) for v in grad(r)] for r in radii]).T
    np.testing.assert_allclose(vols, 4 / 3 * np.pi * radii**3, rtol=1e-2)
    np.testing.assert_allclose(areas, 4 * np.pi * radii**2, rtol=3e-2)
    assert np.max(np.abs(np.diff(areas) / areas[1:])) < 3e-2


def test_objects_accept_tracers_and_check_concrete_values():
    """Size, center (a tuple or an array), rotation and eps may be tracers; concrete bad input
    keeps its one-line ConfigError, a traced value is checked where JAX knows it, and the
    host raster refuses a traced scene with what to use instead; a shape's proportions and
    a polygon's vertices are refused as not differentiable (one line each)."""

    def build(size, cz, eps, beta):
        o = scene.Object(geometry.Box(), eps, center=(0.0, 0.0, cz), size=size, rotation=(0.0, beta, 0.0))
        sc = scene.Scene([o])
        assert o.traced == ("center", "size", "rotation") and sc.traced
        assert o.primal().size == pytest.approx(0.3) and sc.primal().materials[1].permittivity(
            1.0
        ) == pytest.approx(2.0)
        with pytest.raises(ConfigError, match="host .NumPy. raster.*objects.0..center, objects.0..size"):
            scene.rasterize(sc, (8, 8, 8), 0.1)
        return size * cz * eps * beta

    jax.grad(build, argnums=(0, 1, 2, 3))(0.3, 0.1, 2.0, 10.0)
    jax.grad(lambda c: scene.Object(geometry.Sphere(), 2.0, center=c).center[1])(jnp.zeros(3))
    with pytest.raises(ConfigError, match="Object.size must be > 0"):
        jax.grad(lambda s: scene.Object(geometry.Sphere(), 2.0, size=s).size)(-0.5)
    with pytest.raises(ConfigError, match="Im eps must be >= 0|must be finite"):
        jax.grad(lambda e: scene.Object(geometry.Sphere(), e).size)(float("nan"))
    with pytest.raises(ConfigError, match="Object.size must be > 0"):
        scene.Object(geometry.Sphere(), 2.0, size=-1.0)
    with pytest.raises(ConfigError, match="Object.center must be three"):
        scene.Object(geometry.Sphere(), 2.0, center=(0.0, 1.0))

    with pytest.raises(ConfigError, match="y_over_x is not differentiable .got a JAX tracer"):
        jax.grad(lambda a: scene.Object(geometry.Box(y_over_x=a), 2.0).size)(0.5)
    with pytest.raises(ConfigError, match="PolygonPrism.vertices are not differentiable .*geometry.Polygon"):
        jax.grad(lambda a: scene.Object(geometry.PolygonPrism([[0, 0], [a, 0], [0, 1.0]]), 2.0).size)(0.5)

    def polygon(a):  # a 2-D Polygon's vertices may be traced: the object names them
        o = scene.Object(geometry.Polygon([[0, 0], [a, 0], [0, 1.0]]), 2.0)
        assert o.traced == ("vertices",) and not o.primal().traced
        np.testing.assert_allclose(o.primal().shape.vertices, [[-0.5, -1.0], [0.5, -1.0], [-0.5, 1.0]])
        return jnp.sum(o.shape.traced_vertices[:, 1])  # scaled by the x extent a: -0.5 / a

    assert jax.grad(polygon)(0.5) == pytest.approx(2.0)

    def abstract(size):
        return scene.Object(geometry.Sphere(), 2.0, size=size).primal()

    with pytest.raises(ConfigError, match="abstract .traced inside jax.jit"):
        jax.jit(abstract)(0.3)


def test_untraceable_shape_is_named():
    """A prism has no analytic signed distance: traced geometry of it is refused naming the
    shapes that can be traced."""
    r = scene.rasterize(scene.Scene([scene.Object(geometry.Prism(6, 1.0), 2.0, size=0.4)]), SHAPE, DX, ORIGIN)

    def values(size):
        o = scene.Object(geometry.Prism(6, 1.0), 2.0, size=size)
        return traced.interface_values(scene.Scene([o]), r, 0)[0]

    with pytest.raises(ConfigError, match="prism.*Sphere, Ellipsoid, Box, Cylinder"):
        jax.jvp(values, (0.4,), (1.0,))


def test_concrete_jax_scalars_are_numbers():
    """An optimizer's parameters are concrete 0-d JAX arrays between steps: a material and a
    size given so are numbers, as NumPy scalars are."""
    import jax.numpy as jnp

    from emjax import geometry, scene

    o = scene.Object(geometry.Sphere(), jnp.asarray(2.25), size=jnp.asarray(0.5))
    assert o.material == (2.25,) and float(o.size) == 0.5
    with pytest.raises(ConfigError, match="Im eps must be >= 0"):
        scene.Object(geometry.Sphere(), jnp.asarray(2.0 - 0.1j), size=0.5)
