"""The exact polygon-cell areas (emjax.scene.polygon_fill) against an independent
algorithm: Sutherland-Hodgman clipping of the polygon by the cell's four sides and the
shoelace area of what is left (exact for a convex clip window, any simple polygon). The
normal against the derivative of the area with respect to the cell's position, and the
traced (jax.numpy) values against the host's."""

import jax
import jax.numpy as jnp
import numpy as np

from emjax.backend import precision_scope
from emjax.scene.polygon_fill import is_simple, polygon_cell_fill

# non-convex, one edge horizontal and one vertical (the formula's special cases)
POLY = np.array([[0.0, 0.0], [1.0, 0.0], [1.2, 0.9], [0.5, 0.6], [0.5, 1.1], [0.1, 1.0]])


def _clipped_area(poly, lo, hi):
    """Sutherland-Hodgman: the polygon clipped by x >= lo_x, x <= hi_x, y >= lo_y, y <= hi_y."""
    pts = [tuple(p) for p in poly]
    for axis, bound, keep_below in ((0, lo[0], False), (0, hi[0], True), (1, lo[1], False), (1, hi[1], True)):

        def inside(p, axis=axis, bound=bound, keep_below=keep_below):
            return p[axis] <= bound if keep_below else p[axis] >= bound

        out = []
        for k in range(len(pts)):
            a, b = pts[k - 1], pts[k]
            if inside(b):
                if not inside(a):
                    t = (bound - a[axis]) / (b[axis] - a[axis])
                    out.append((a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1])))
                out.append(b)
            elif inside(a):
                t = (bound - a[axis]) / (b[axis] - a[axis])
                out.append((a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1])))
        pts = out
        if not pts:
            return 0.0
    x, y = np.array(pts).T
    return 0.5 * abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))


def test_cell_areas_equal_clipping_both_orientations():
    """400 random cells of side 0.13 over the polygon (about half of them cut by an edge):
    the area share equals the clipped polygon's to 1e-12, for either vertex order."""
    rng = np.random.default_rng(0)
    dx = 0.13
    centers = rng.uniform(-0.2, 1.4, (400, 2))
    ref = np.array([_clipped_area(POLY, c - dx / 2, c + dx / 2) for c in centers]) / dx**2
    for poly in (POLY, POLY[::-1]):
        fill, _ = polygon_cell_fill(np, poly, centers, dx)
        np.testing.assert_allclose(fill, ref, rtol=0, atol=1e-12)
    assert np.sum((ref > 0) & (ref < 1)) > 100


def test_normal_is_the_area_gradient_and_traced_equals_host():
    """Where an edge crosses the cell the normal is -grad_p(area) / |grad_p(area)| (p the
    cell's centre; central differences, step 1e-6: agreement 1e-8), pointing out of the
    polygon; jax.numpy gives the host's values (1e-14), and its vertex derivative equals
    central differences (step 1e-6: 1e-7 of the largest)."""
    rng = np.random.default_rng(1)
    dx = 0.13
    centers = rng.uniform(-0.2, 1.4, (300, 2))
    fill, normal = polygon_cell_fill(np, POLY, centers, dx)
    h = 1e-6
    grad = np.stack(
        [
            (
                polygon_cell_fill(np, POLY, centers + h * e, dx)[0]
                - polygon_cell_fill(np, POLY, centers - h * e, dx)[0]
            )
            / (2 * h)
            for e in np.eye(2)
        ],
        axis=-1,
    )
    cut = (fill > 1e-3) & (fill < 1 - 1e-3)
    expect = -grad[cut] / np.linalg.norm(grad[cut], axis=1, keepdims=True)
    np.testing.assert_allclose(normal[cut], expect, rtol=0, atol=1e-8)
    with precision_scope():
        f_j, n_j = jax.jit(lambda v, c: polygon_cell_fill(jnp, v, c, dx))(
            jnp.asarray(POLY), jnp.asarray(centers)
        )
        np.testing.assert_allclose(np.asarray(f_j), fill, rtol=0, atol=1e-14)
        np.testing.assert_allclose(np.asarray(n_j), normal, rtol=0, atol=1e-12)
        total = jax.jit(lambda v: jnp.sum(polygon_cell_fill(jnp, v, jnp.asarray(centers), dx)[0] ** 2))
        g = np.asarray(jax.jit(jax.grad(total))(jnp.asarray(POLY)))
        fd = np.zeros_like(POLY)
        for i, j in np.ndindex(*POLY.shape):
            e = np.zeros_like(POLY)
            e[i, j] = h
            fd[i, j] = (total(jnp.asarray(POLY + e)) - total(jnp.asarray(POLY - e))) / (2 * h)
        assert np.max(np.abs(g - fd)) < 1e-7 * np.max(np.abs(fd))


def test_simple_outlines():
    """Simple: a square, the pentagon above, a U whose two top edges are collinear but
    apart; not simple: a bow tie, a vertex touching another edge."""
    assert is_simple([[0, 0], [1, 0], [1, 1], [0, 1]]) and is_simple(POLY)
    assert is_simple([[0, 0], [3, 0], [3, 2], [2, 2], [2, 1], [1, 1], [1, 2], [0, 2]])
    assert not is_simple([[0, 0], [1, 1], [1, 0], [0, 1]])
    assert not is_simple([[0, 0], [2, 0], [2, 1], [1, 0], [0, 1]])
