"""Waveguide modes: full-vector eigenmodes of a cross-section on the Yee grid.

:func:`solve` takes pixels of relative permittivity (isotropic or diagonal anisotropic,
complex for lossy or dispersive media at the frequency); :func:`solve_scene` takes a plane
through an :class:`emjax.scene.Scene`. Walls are PEC or PMC, optionally behind a
stretched-coordinate :class:`PML`; a bend is the conformal map ``eps (1 + u / R)^2``. Each
mode comes with its complex effective index, group index, polarization (TE fraction),
effective area and its six field components normalized to unit power.

>>> import numpy as np
>>> from emjax import modes
>>> eps = np.full((60, 40), 1.444**2); eps[19:41, 14:26] = 3.476**2
>>> res = modes.solve(eps, resolution=40, frequency=1 / 1.55, num_modes=2)
"""

from .grid import PML
from .results import ModeResult
from .scene_plane import Plane, solve_scene
from .solve import solve

__all__ = ["PML", "ModeResult", "Plane", "solve", "solve_scene"]
