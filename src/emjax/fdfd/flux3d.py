"""Poynting fluxes of a 3-D FDFD solution through a closed box, exact on the Yee grid.

The grid's fields obey the discrete Maxwell equations ``curl_e E = i omega H`` (forward
differences; H on the faces) and ``curl_h H = -i omega eps E`` (backward differences, the
transpose of ``curl_e``). Summation by parts turns ``sum_faces H* . curl_e E - sum_edges E .
curl_h H*`` over the cells of a box into a sum over its surface only, the grid's ``oint (E x
H*) . n dS``:

    Phi(E, H) = dx^2 sum_faces (+/-) sum_{tangential edges} (E_b H_c* - E_c H_b*)

with (a, b, c) cyclic for the face normal to a, E on the box's surface and H half a cell
outside it (every edge on the surface counts fully, also those on the box's edges and
corners). For a field that solves the grid's equations in the box (the total field), its
real part is ``-omega sum_box Im(eps) |E|^2 dx^3``: zero for lossless media. So the flux of
a field that solves the vacuum equations between two boxes (the scattered field off the
scatterer) is the same through both, to the solver's residual: no quadrature error, no
far-field approximation.

H is the discrete curl of the stored E (mu = 1 off the PML); the incident field is the
result's ``E - Es`` (the grid's own plane wave). The cross sections divide the powers by the
unit wave's intensity 1/2 (the grid's plane wave, whose E and H sit half a cell apart, carries
``cos(k~ dx / 2) / 2`` through the staggered sum along an axis; the choice is O((k dx)^2) and
1/2 measured closer to Mie):

    Csca = Re Phi(E_s, H_s)
    Cext = -Re [Phi(E_inc, H_s) + Phi(E_s, H_inc)]
    Cabs = -Re Phi(E, H) = Cext - Csca
"""

from __future__ import annotations

import numpy as np

from ..errors import ConfigError
from .scene_traced import scene_mask, xp_of

__all__ = ["box_flux", "box_bounds"]


def box_bounds(result, margin: int) -> tuple:
    """(lo, hi) node indices (per axis) of a box ``margin`` cells inside the PML, checked to
    enclose the scene (vacuum on and next to its surface)."""
    L = result.pml_cells
    shape = np.shape(result.E)[1:]
    lo = [L + margin] * 3
    hi = [n - 1 - L - margin for n in shape]
    if any(h - lo_ < 2 for lo_, h in zip(lo, hi)):
        raise ConfigError(
            f"margin {margin}: the integration box leaves no room inside the PML (grid {tuple(shape)}, "
            f"PML {L} cells); give a smaller margin or enlarge the region"
        )
    on = scene_mask(result)
    inside = np.zeros(shape, bool)
    inside[lo[0] + 1 : hi[0], lo[1] + 1 : hi[1], lo[2] + 1 : hi[2]] = True
    ring = ~inside  # the nodes on the box's surface and one layer either side of it
    ring[: lo[0] - 1] = ring[hi[0] + 2 :] = False
    ring[:, : lo[1] - 1] = ring[:, hi[1] + 2 :] = False
    ring[:, :, : lo[2] - 1] = ring[:, :, hi[2] + 2 :] = False
    for c in range(3):
        if np.any(on[c][ring]):
            raise ConfigError(
                f"margin {margin}: the integration box crosses the scene; give a smaller margin or enlarge "
                "the region"
            )
    return lo, hi


def _h_slab(E: np.ndarray, dx: float, omega: float, a: int, i: int, c: int) -> np.ndarray:
    """H_c = (curl_e E)_c / (i omega) on the plane of half-index ``i + 1/2`` along ``a``
    (c != a; H_c sits at node + (e_a + e_b) / 2, b the third axis)."""
    # (curl E)_c = d_{c+1} E_{c+2} - d_{c+2} E_{c+1} (cyclic)
    p, q = (c + 1) % 3, (c + 2) % 3
    xp = xp_of(E)

    def take(comp, shift_axis):  # E_comp on plane i along a, forward difference along shift_axis
        f = E[comp]
        if shift_axis == a:
            return (xp.take(f, i + 1, axis=a) - xp.take(f, i, axis=a)) / dx
        g = xp.take(f, i, axis=a)
        ax = shift_axis if shift_axis < a else shift_axis - 1
        n = g.shape[ax]
        hi = xp.take(g, np.arange(1, n), axis=ax)
        lo = xp.take(g, np.arange(0, n - 1), axis=ax)
        d = (hi - lo) / dx
        pad = [(0, 0), (0, 0)]
        pad[ax] = (0, 1)
        return xp.pad(d, pad)  # the last row has no forward neighbour: never used below

    return (take(q, p) - take(p, q)) / (1j * omega)


def box_flux(Ea: np.ndarray, Eb: np.ndarray, dx: float, omega: float, lo, hi) -> complex:
    """``Phi(Ea, Hb)``: the grid's ``oint (Ea x Hb*) . n dS`` over the box of nodes
    ``[lo, hi]`` (per axis), ``Hb = curl_e Eb / (i omega)`` (module docstring)."""
    total = 0.0j
    xp = xp_of(Ea, Eb)
    for a in range(3):
        b, c = (a + 1) % 3, (a + 2) % 3
        for i, h, sign in ((hi[a], hi[a], 1.0), (lo[a], lo[a] - 1, -1.0)):
            # tangential edges on the face: E_b (b-index lo..hi-1, c-index lo..hi), E_c alike
            Hc = _h_slab(Eb, dx, omega, a, h, c)
            Hb = _h_slab(Eb, dx, omega, a, h, b)
            eb, ec = xp.take(Ea[b], i, axis=a), xp.take(Ea[c], i, axis=a)
            # the face plane's two axes in increasing order; b's position in it
            ib, ic = (0, 1) if b < c else (1, 0)
            sb = [slice(None), slice(None)]
            sb[ib], sb[ic] = slice(lo[b], hi[b]), slice(lo[c], hi[c] + 1)
            sc = [slice(None), slice(None)]
            sc[ib], sc[ic] = slice(lo[b], hi[b] + 1), slice(lo[c], hi[c])
            sb, sc = tuple(sb), tuple(sc)
            total += sign * (xp.sum(eb[sb] * xp.conj(Hc[sb])) - xp.sum(ec[sc] * xp.conj(Hb[sc])))
    return total * dx**2
