"""Permittivity of a 2-D scene on the FDFD grid: eps at the TM E_z nodes (the arithmetic
subpixel mean) and Kottke's in-plane inverse tensor at the TE E_x, E_y edges (the rules are
described in :mod:`emjax.fdfd.tm`)."""

from __future__ import annotations

import math

import numpy as np


def _permittivity(material, omega: float, component: int = 2) -> complex:
    """eps of ``material`` at ``omega`` seen by the E component ``component`` (0, 1, 2: x,
    y, z; it matters for :class:`emjax.materials.DiagonalAnisotropic` only)."""
    from ..materials import DiagonalAnisotropic
    from ..scene import PEC

    if material is PEC:  # the limit; the solvers treat it as a boundary condition
        return complex(math.inf, 0.0)
    if isinstance(material, DiagonalAnisotropic):
        return complex(material.components(omega)[component])
    if hasattr(material, "permittivity"):
        return complex(material.permittivity(omega))
    return complex(material)


def node_permittivity(scene, shape, dx, origin, omega, averaging="subpixel") -> np.ndarray:
    """eps at the E_z nodes of a 2-D grid (``shape = (nx, ny)``, node (0, 0) at ``origin``)."""
    from ..scene import rasterize

    if scene is None:
        return np.ones(shape, complex)
    r = rasterize(
        scene,
        (shape[0], shape[1], 1),
        dx,
        (origin[0], origin[1], -dx / 2),
        averaging=averaging,
        components=(2,),
    )
    lut = np.array([_permittivity(m, omega, 2) for m in scene.materials])  # E_z sees eps_zz
    eps = lut[r.label[2][:, :, 0]]
    it = r.interface[2]
    if averaging == "subpixel" and len(it["fill"]):
        # no mean with a conductor: its nodes stay inf, their neighbours keep their own eps
        ok = np.isfinite(lut[it["own"]]) & np.isfinite(lut[it["other"]])
        i, j, f = it["index"][ok, 0], it["index"][ok, 1], it["fill"][ok]
        eps[i, j] = f * lut[it["own"][ok]] + (1 - f) * lut[it["other"][ok]]
    return eps


def _inplane_inverse(scene, shape, dx, origin, omega, averaging) -> tuple:
    """Kottke's inverse permittivity at the E_x and E_y nodes of a 2-D grid (node (i, j) of
    E_x at origin + (i + 1/2, j) dx, of E_y at (i, j + 1/2) dx): ``(inv_x, inv_y, off_x,
    off_y)``, the diagonal entries ``n_c^2 <1/eps> + (1 - n_c^2) / <eps>`` and the
    off-diagonal ``n_x n_y (<1/eps> - 1 / <eps>)`` at interface nodes (zero elsewhere and
    with ``averaging="staircase"``). A diagonal-anisotropic medium enters with eps_xx at
    the E_x nodes and eps_yy at the E_y nodes (each node's rule applied to its own entry:
    exact for interfaces along the axes, an approximation at oblique ones). 1/eps = 0 at
    nodes inside a conductor; where a conductor meets another material, that material's
    1/eps and no off-diagonal (the open fraction comes on top)."""
    from ..scene import rasterize

    if scene is None:
        one, zero = np.ones(shape, complex), np.zeros(shape, complex)
        return one, one, zero, zero
    r = rasterize(
        scene,
        (shape[0], shape[1], 1),
        dx,
        (origin[0], origin[1], -dx / 2),
        averaging=averaging,
        components=(0, 1),
    )
    diag, off = [], []
    for c in (0, 1):
        lut = np.array([_permittivity(m, omega, c) for m in scene.materials])
        inv = 1.0 / lut[r.label[c][:, :, 0]]
        cross = np.zeros(shape, complex)
        it = r.interface[c]
        if averaging == "subpixel" and len(it["fill"]):
            f, e1, e2 = it["fill"], lut[it["own"]], lut[it["other"]]
            nrm = it["normal"]
            i, j = it["index"][:, 0], it["index"][:, 1]
            conductor = np.isinf(e1) | np.isinf(e2)
            with np.errstate(invalid="ignore", divide="ignore"):
                harmonic, arithmetic = f / e1 + (1 - f) / e2, 1 / (f * e1 + (1 - f) * e2)
                kottke = nrm[:, c] ** 2 * harmonic + (1 - nrm[:, c] ** 2) * arithmetic
                coupling = nrm[:, 0] * nrm[:, 1] * (harmonic - arithmetic)
            inv[i, j] = np.where(np.isinf(e1), 1 / e2, np.where(np.isinf(e2), 1 / e1, kottke))
            cross[i, j] = np.where(conductor, 0.0, coupling)
        diag.append(inv)
        off.append(cross)
    return diag[0], diag[1], off[0], off[1]
