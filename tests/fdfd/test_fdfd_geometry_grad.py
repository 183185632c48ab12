"""jax.grad of a scene's geometry (an object's size, center, rotation; a polygon's vertices)
through the user's API: ``solve_tm`` / ``solve_te`` / ``solve_3d`` on a scene built from
tracers, then ``scattering_width``, ``rcs_3d`` and ``cross_sections_3d``; against central
differences of the same (concrete) calls, and the traced forward value against the concrete
one. The raster's fill fractions are :mod:`emjax.scene.traced`'s (the FDTD's too).

Tolerances: a disk's fill fractions are smooth in its radius and centre, so two-point
differences with step 1e-5 agree to ~3e-8 (measured); boxes and rectangles have interfaces
parallel to the grid, where the shared cube-plane fill (its normal floored at 1e-4 per
component) sums terms of size 1e8 that cancel: the fill fractions carry ~1e-8 of rounding, so
those use five-point differences with a step of 1e-3 (measured agreement <= 4e-6; tolerance
2e-5)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from emjax import fdfd, geometry, scene
from emjax.backend import precision_scope
from emjax.errors import ConfigError
from emjax.krylov import QMR

DX = 1 / 15  # the 2-D grids' cell (resolution 15)


def _width(obj, solve=fdfd.solve_tm, averaging="subpixel"):
    r = solve(
        (1.4, 1.4),
        15,
        1.0,
        fdfd.PlaneWave2D(30.0),
        scene.Scene([obj]),
        pml=fdfd.SCPML(6),
        averaging=averaging,
        progress=False,
    )
    return jnp.sum(fdfd.scattering_width(r, [0.0, 100.0, 180.0]))


def _central(f, x, h):
    return (f(x + h) - f(x - h)) / (2 * h)


def _five_point(f, x, h):
    return (f(x - 2 * h) - 8 * f(x - h) + 8 * f(x + h) - f(x + 2 * h)) / (12 * h)


def _disk(size=0.6, cx=0.013):
    return scene.Object(geometry.Disk(), 2.5, center=(cx, -0.021, 0.0), size=size)


def test_tm_disk_size_and_center_gradients_match_central_differences():
    """A dielectric disk (eps 2.5, diameter 0.6 at 15 cells per wavelength): d/d size and
    d/d center_x of the summed scattering width; the traced forward value is the concrete
    one (the host raster's normals come from differences of the signed distance, the traced
    one's from autodiff: measured 1e-12 relative)."""
    with precision_scope():
        f = lambda s: _width(_disk(size=s))  # noqa: E731
        value, grad = jax.value_and_grad(f)(0.6)
        assert abs(value - f(0.6)) < 1e-9 * abs(value)
        fd = _central(f, 0.6, 1e-5)
        assert abs(grad - fd) < 1e-6 * abs(fd)
        assert abs(grad) > 1.0  # the disk's growth changes the width: not a vanishing check
        f = lambda c: _width(_disk(cx=c))  # noqa: E731
        grad = jax.grad(f)(0.013)
        fd = _central(f, 0.013, 1e-5)
        assert abs(grad - fd) < 1e-5 * abs(fd)


def test_tm_rectangle_rotation_gradient_matches_central_differences():
    """A rectangle (0.6 x 0.42) turned by 17 degrees about z: d/d alpha (degrees)."""

    def f(alpha):
        o = scene.Object(
            geometry.Rectangle(0.7), 2.5, center=(0.013, -0.021, 0.0), size=0.6, rotation=(alpha, 0.0, 0.0)
        )
        return _width(o)

    with precision_scope():
        grad = jax.grad(f)(17.0)
        fd = _five_point(f, 17.0, 1e-2)
        assert abs(grad - fd) < 2e-5 * abs(fd)


def _rectangle(size=9.2 * DX, cx=0.0, cy=0.5 * DX):
    # placed so that no E_x or E_y node near a corner sees an oblique normal (TE refuses
    # those: Kottke's off-diagonal term)
    return scene.Object(geometry.Rectangle(0.7), 2.5, center=(cx, cy, 0.0), size=size)


@pytest.mark.parametrize("which", ["size", "cx", "cy"])
def test_te_rectangle_size_and_center_gradients_match_central_differences(which):
    """TE (H_z) on a rectangle whose interfaces lie along the axes (the diagonal Kottke
    entries): d/d size, d/d center_x, d/d center_y."""
    x0 = {"size": 9.2 * DX, "cx": 0.0, "cy": 0.5 * DX}[which]
    f = lambda v: _width(_rectangle(**{which: v}), fdfd.solve_te)  # noqa: E731
    with precision_scope():
        value, grad = jax.value_and_grad(f)(x0)
        assert abs(value - f(x0)) < 1e-8 * abs(value)
        fd = _five_point(f, x0, 1e-3)
        assert abs(grad - fd) < 2e-5 * abs(fd)


def test_traced_geometry_refusals_name_the_alternative():
    """TE with a traced rotation (its derivative turns the interfaces: Kottke's off-diagonal
    term), TE at oblique interfaces, a staircase raster with traced geometry, and traced
    geometry inside jax.jit (the host raster needs its values): one ConfigError line each,
    naming what to use instead."""
    with precision_scope():
        rot = lambda a: _width(  # noqa: E731
            scene.Object(geometry.Rectangle(0.7), 2.5, size=0.6, rotation=(a, 0.0, 0.0)), fdfd.solve_te
        )
        with pytest.raises(ConfigError, match="rotation.*off-diagonal.*use solve_tm"):
            jax.grad(rot)(0.0)
        with pytest.raises(ConfigError, match="off-diagonal"):
            jax.grad(lambda s: _width(_disk(size=s), fdfd.solve_te))(0.6)
        with pytest.raises(ConfigError, match='staircase.*size.*use averaging="subpixel"'):
            jax.grad(lambda s: _width(_disk(size=s), averaging="staircase"))(0.6)
        with pytest.raises(ConfigError, match="Object.size is abstract.*without jax.jit"):
            jax.jit(jax.grad(lambda s: _width(_disk(size=s))))(0.6)


def test_geometry_gradient_in_32bit_jax():
    """JAX's default 32-bit mode (no precision scope): the fill fractions are computed in
    float64 anyway (the cube-plane formula cancels large terms, which float32 loses) and the
    gradient equals the 64-bit one to float32 rounding (measured 3e-7 relative)."""
    assert not jax.config.jax_enable_x64
    value, grad = jax.value_and_grad(lambda s: _width(_disk(size=s)))(0.6)
    assert grad.dtype == jnp.float32
    with precision_scope():
        ref_value, ref = jax.value_and_grad(lambda s: _width(_disk(size=s)))(0.6)
    assert abs(float(value) - float(ref_value)) < 1e-5 * abs(float(ref_value))
    assert abs(float(grad) - float(ref)) < 1e-5 * abs(float(ref))


def _rcs(obj):
    wave = fdfd.PlaneWave3D((0, 0, 1), (1, 0, 0))
    solver = fdfd.Iterative(QMR(rtol=1e-11, maxiter=20000))
    r = fdfd.solve_3d(
        (1.2, 1.2, 1.2), 8, 1.0, wave, scene.Scene([obj]), pml=fdfd.SCPML(3), solver=solver, progress=False
    )
    return jnp.sum(fdfd.rcs_3d(r, [0.0, 180.0], margin=1)) + fdfd.cross_sections_3d(r, margin=1)["Csca"]


@pytest.mark.slow  # about ten 3-D Krylov solves (~2 min on a busy 2-core CPU)
def test_3d_size_center_and_rotation_gradients_match_central_differences():
    """solve_3d (17^3 cells): a sphere's diameter and center_z, a tilted box's turn about z
    (alpha, degrees)."""

    def sphere(size=0.3, cz=0.015):
        return scene.Object(geometry.Sphere(), 2.25, center=(0.01, -0.02, cz), size=size)

    cases = [
        (lambda s: _rcs(sphere(size=s)), 0.3, 1e-4),
        (lambda c: _rcs(sphere(cz=c)), 0.015, 1e-4),
        (
            lambda b: _rcs(
                scene.Object(
                    geometry.Box(0.6, 0.8),
                    2.25,
                    center=(0.01, -0.02, 0.015),
                    size=0.3,
                    rotation=(b, 30.0, 0.0),
                )
            ),
            20.0,
            1e-3,
        ),
    ]
    with precision_scope():
        for f, x0, h in cases:
            value, grad = jax.value_and_grad(f)(x0)
            assert abs(value - f(x0)) < 1e-7 * abs(value)
            fd = _central(f, x0, h)
            assert abs(grad - fd) < 2e-5 * abs(fd), (x0, grad, fd)
            assert np.isfinite(grad) and grad != 0


# a pentagon (absolute vertices), no vertex on a cell face (the fill fraction is C1 in a
# vertex elsewhere: a vertex on a face between two nodes is a kink)
PENTAGON = np.array([[-0.3, -0.25], [0.28, -0.2], [0.35, 0.22], [0.02, 0.1], [-0.25, 0.3]]) + 0.0123


def _polygon(v):
    """A Polygon placed where its absolute vertices ``v`` say (size and center from them)."""
    lo, hi = jnp.min(v, axis=0), jnp.max(v, axis=0)
    c = (lo + hi) / 2
    return scene.Object(geometry.Polygon(vertices=v), 2.5, center=(c[0], c[1], 0.0), size=hi[0] - lo[0])


def test_tm_polygon_vertex_gradients_match_central_differences():
    """solve_tm on a non-convex pentagon: jax.grad with respect to all ten vertex
    coordinates (the exact polygon-cell areas, emjax.scene.polygon_fill), projected on a
    direction with every component nonzero, against a central difference (step 1e-5) along
    it of concrete solves, which rasterize the same exact areas on the host (measured
    agreement per coordinate 1.5e-8 relative; tolerance 1e-6). A missing or wrong-signed
    vertex term changes the projection by O(1)."""
    direction = np.random.default_rng(3).uniform(0.5, 1.0, PENTAGON.shape) * np.array([1, -1])
    with precision_scope():
        value, grad = jax.value_and_grad(lambda v: _width(_polygon(v)))(jnp.asarray(PENTAGON))
        assert abs(value - _width(_polygon(PENTAGON))) < 1e-10 * abs(value)
        h = 1e-5
        fd = (_width(_polygon(PENTAGON + h * direction)) - _width(_polygon(PENTAGON - h * direction))) / (
            2 * h
        )
        projected = float(np.sum(np.asarray(grad) * direction))
        assert abs(projected - fd) < 1e-6 * np.sum(np.abs(np.asarray(grad) * direction))
        assert np.min(np.abs(np.asarray(grad))) > 0.1  # every vertex matters


def test_polygon_vertices_refused_where_not_differentiable():
    """TE: moving a vertex turns an edge (Kottke's off-diagonal term); inside jax.jit the
    host raster has no values: one ConfigError line each (a 3-D PolygonPrism's vertices:
    tests/scene/test_traced_raster.py)."""
    with precision_scope():
        with pytest.raises(ConfigError, match="vertices.*off-diagonal.*use solve_tm"):
            jax.grad(lambda v: _width(_polygon(v), fdfd.solve_te))(jnp.asarray(PENTAGON))
        with pytest.raises(ConfigError, match="Polygon.vertices are abstract.*without jax.jit"):
            jax.jit(jax.grad(lambda v: _width(_polygon(v))))(jnp.asarray(PENTAGON))
