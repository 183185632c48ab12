"""The Yee grid of a waveguide cross-section: node positions, walls, stretched-coordinate PML
and the difference operators of the transverse curl.

The section spans ``[0, nx d] x [0, ny d]`` (``d = 1 / resolution``); the propagation axis is
z. With fields ``~ exp(i beta z - i omega t)`` the 2-D Yee nodes are the 3-D cell's, seen
along z:

==========  =====================  ==========================
component   node (units of d)      array shape
==========  =====================  ==========================
E_x, H_y    (i + 1/2, j)           (nx, ny + 1)
E_y, H_x    (i, j + 1/2)           (nx + 1, ny)
E_z         (i, j)                 (nx + 1, ny + 1)
H_z         (i + 1/2, j + 1/2)     (nx, ny)
==========  =====================  ==========================

(in a 3-D Yee cell E_z, H_x and H_y sit half a step further along z: a phase
``exp(i beta d / 2)``, which a field at one z plane does not need). The walls lie on the
integer nodes 0 and n of each axis. A perfect electric conductor (PEC) makes every quantity on
the integer nodes of that axis odd about the wall (tangential E and normal H vanish there: those
nodes are not unknowns); a perfect magnetic conductor (PMC) makes the half-node quantities odd
(tangential H, normal E), the wall nodes are unknowns and their backward difference sees the
mirrored ghost ``v(-1/2) = -v(1/2)``. With the dual-cell weights (1/2 on a kept wall node),
``W D_backward = -D_forward^T`` on each axis, as in the interior.

A PML is the complex stretch ``d/dx -> (1 / s(x)) d/dx`` with ``s = 1 + i a (t / T)^3`` over
the ``T`` outermost cells (``t`` the depth into the layer), ``a`` set for the round-trip
reflection ``R`` of a wave of the section's largest index at normal incidence:
``a = 4 ln(1 / R) / (2 k0 n_max T d)``. With ``exp(-i omega t)``, ``Im s > 0`` damps outgoing
waves.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..errors import ConfigError, require_int, require_positive

__all__ = ["PML", "Axis", "axis", "curl_operators"]

#: the wall conditions by name
WALLS = ("pec", "pmc")


@dataclass(frozen=True)
class PML:
    """A stretched-coordinate absorbing layer inside the section's edges: ``thickness`` cells
    (an int for every side, or ``(x_low, x_high, y_low, y_high)``; 0 for none on a side),
    cubic grading, designed round-trip ``reflection`` at normal incidence."""

    thickness: object = 12
    reflection: float = 1e-8

    def sides(self) -> tuple:
        t = self.thickness
        if isinstance(t, (tuple, list)):
            if len(t) != 4:
                raise ConfigError(
                    f"PML.thickness must be an int or (x_low, x_high, y_low, y_high), got {t!r}"
                )
            return tuple(require_int(f"PML.thickness[{i}]", v, 0) for i, v in enumerate(t))
        v = require_int("PML.thickness", t, 0)
        return (v, v, v, v)

    def check(self) -> None:
        self.sides()
        r = require_positive("PML.reflection", self.reflection)
        if r >= 1:
            raise ConfigError(f"PML.reflection must be in (0, 1), got {self.reflection!r}")


@dataclass(frozen=True)
class Axis:
    """One transverse axis: ``n`` cells of size ``d``; ``keep`` the integer nodes that are
    unknowns; ``weight`` their dual-cell widths in units of d (1/2 on a kept wall node);
    ``s_int``, ``s_half`` the PML stretch at the integer and half nodes."""

    n: int
    d: float
    keep: np.ndarray
    weight: np.ndarray
    s_int: np.ndarray
    s_half: np.ndarray

    def forward(self) -> sp.csr_matrix:
        """Integer (kept) nodes -> half nodes: ``(u[h + 1] - u[h]) / (s d)``, PEC nodes 0."""
        n = self.n
        full = sp.diags([-np.ones(n), np.ones(n)], [0, 1], shape=(n, n + 1), format="csr")
        return (sp.diags(1.0 / (self.s_half * self.d)) @ full[:, self.keep]).tocsr()

    def backward(self) -> sp.csr_matrix:
        """Half nodes -> integer (kept) nodes: ``(v[i + 1/2] - v[i - 1/2]) / (s d)``, the ghost
        beyond a PMC wall mirrored with a sign change."""
        n = self.n
        full = sp.lil_matrix((n + 1, n))
        for i in range(n + 1):
            if i < n:
                full[i, i] += 1.0
            else:
                full[i, n - 1] += -1.0  # ghost v(n + 1/2) = -v(n - 1/2)
            if i > 0:
                full[i, i - 1] += -1.0
            else:
                full[i, 0] += 1.0  # ghost v(-1/2) = -v(1/2)
        full = full.tocsr()[self.keep, :]
        return (sp.diags(1.0 / (self.s_int[self.keep] * self.d)) @ full).tocsr()


def axis(n: int, d: float, walls: tuple, pml: tuple, k0: float, n_max: float, reflection: float) -> Axis:
    """The :class:`Axis` of ``n`` cells with ``walls = (low, high)`` ('pec' or 'pmc') and
    ``pml = (cells_low, cells_high)``."""
    lo = 0 if walls[0] == "pmc" else 1
    hi = n if walls[1] == "pmc" else n - 1
    keep = np.arange(lo, hi + 1)
    weight = np.ones(len(keep))
    weight[keep == 0] = 0.5
    weight[keep == n] = 0.5

    def stretch(pos):  # pos in units of d
        s = np.ones(len(pos), complex)
        for t, depth in ((pml[0], pml[0] - pos), (pml[1], pos - (n - pml[1]))):
            if t > 0:
                a = 4.0 * np.log(1.0 / reflection) / (2.0 * k0 * n_max * t * d)
                u = np.clip(depth / t, 0.0, 1.0)
                s = s + 1j * a * u**3
        return s

    return Axis(n, d, keep, weight, stretch(np.arange(n + 1.0)), stretch(np.arange(n) + 0.5))


@dataclass(frozen=True)
class CurlOperators:
    """The differences of the transverse curl between the component grids (kept nodes only,
    C-order flattening). ``Gx``: E_y -> H_z grid (d/dx), ``Gy``: E_x -> H_z (d/dy); ``Cx``: H_z
    -> E_y (d/dx), ``Cy``: H_z -> E_x (d/dy); ``Fx``: H_y -> E_z (d/dx), ``Fy``: H_x -> E_z
    (d/dy); ``Kx``: E_z -> E_x (d/dx), ``Ky``: E_z -> E_y (d/dy)."""

    Gx: sp.csr_matrix
    Gy: sp.csr_matrix
    Cx: sp.csr_matrix
    Cy: sp.csr_matrix
    Fx: sp.csr_matrix
    Fy: sp.csr_matrix
    Kx: sp.csr_matrix
    Ky: sp.csr_matrix


def curl_operators(ax: Axis, ay: Axis) -> CurlOperators:
    """The 2-D difference operators on the grids of ``ax`` (x) and ``ay`` (y)."""
    nx, ny, mx, my = ax.n, ay.n, len(ax.keep), len(ay.keep)

    def on_x(a, ny_):
        return sp.kron(a, sp.identity(ny_), format="csr")

    def on_y(a, nx_):
        return sp.kron(sp.identity(nx_), a, format="csr")

    fx, bx, fy, by = ax.forward(), ax.backward(), ay.forward(), ay.backward()
    return CurlOperators(
        Gx=on_x(fx, ny),
        Gy=on_y(fy, nx),
        Cx=on_x(bx, ny),
        Cy=on_y(by, nx),
        Fx=on_x(bx, my),
        Fy=on_y(by, mx),
        Kx=on_x(fx, my),
        Ky=on_y(fy, mx),
    )


def node_permittivity(eps: np.ndarray) -> tuple:
    """Pixel permittivities ``(3, nx, ny)`` (diagonal entries per cell) -> the values at the
    E_x, E_y, E_z nodes (shapes as in the module docstring), each the arithmetic mean of the
    cells its dual cell covers (two for E_x and E_y, four for E_z, cells beyond a wall mirrored).
    Every interface of a pixelated section runs along the cell edges, so each component is
    tangential to the interfaces it meets and the arithmetic mean is its exact average."""
    px = np.concatenate([eps[0][:, :1], eps[0], eps[0][:, -1:]], axis=1)
    ex = 0.5 * (px[:, :-1] + px[:, 1:])  # (nx, ny + 1)
    py = np.concatenate([eps[1][:1], eps[1], eps[1][-1:]], axis=0)
    ey = 0.5 * (py[:-1] + py[1:])  # (nx + 1, ny)
    pz = np.pad(eps[2], 1, mode="edge")
    ez = 0.25 * (pz[:-1, :-1] + pz[1:, :-1] + pz[:-1, 1:] + pz[1:, 1:])  # (nx + 1, ny + 1)
    return ex, ey, ez
