"""The scene shared by the grid methods (FDTD, FDFD): objects in physical units and their
rasterization onto the Yee grid with subpixel averaging.

An object's size, center and rotation, a 2-D Polygon's vertices and a permittivity may be
JAX tracers (``jax.grad`` over them): :func:`rasterize` (NumPy) then works on
:meth:`Scene.primal` (the values: the structure) and :mod:`emjax.scene.traced` gives the
fill fractions and normals at the interface nodes as JAX functions of the geometry (the
FDTD's and the FDFD's traced paths alike).

>>> from emjax import geometry, materials, scene
>>> sc = scene.Scene([scene.Object(geometry.Sphere(), 6.0, center=(0, 0, 0), size=0.5)])
>>> r = scene.rasterize(sc, (40, 40, 40), 0.025, origin=(-0.5, -0.5, -0.5))
>>> r.interface[0]["fill"]          # fill fractions at E_x's interface nodes
"""

from .objects import PEC, Object, PerfectConductor, PrimalValue, Scene, check_material
from .raster import YeeRaster, cube_plane_fill, rasterize

__all__ = [
    "PEC",
    "Object",
    "PerfectConductor",
    "PrimalValue",
    "Scene",
    "YeeRaster",
    "check_material",
    "cube_plane_fill",
    "rasterize",
]
