"""Mirror symmetry planes for the FDFD (``solve_tm`` / ``solve_te`` / ``solve_3d``'s
``symmetry``).

``symmetry = (sx, sy)`` (2-D) or ``(sx, sy, sz)`` (3-D): per axis 0 (none), -1 or +1, a
mirror plane normal to that axis through ``center``, with the FDTD's (and Meep's) sign:
the value is the sign that the E components *parallel to the plane* take under the
reflection (the normal one takes the opposite sign). -1 (odd): tangential E vanishes on the
plane, a perfect electric conductor (PEC); +1 (even): tangential H vanishes on it, a
perfect magnetic conductor (PMC). In TM, E_z is parallel to both planes, so its parity is
the value itself; in TE, H_z (a pseudovector's component normal to the grid) takes the
opposite sign.

The operator is assembled on the whole grid (a cost linear in the cells) and folded: with
``R`` the reflection and ``p`` the unknowns' parities, a symmetric scene has ``R A R = A``,
a symmetric source ``R b = p b``, so the solution has ``R x = p x`` and is ``x = E y``,
``E`` spreading the values ``y`` of the upper half (the nodes at ``x > c``, plus those on
the plane where the parity is +1: an odd component vanishes there) to their mirror nodes
times the parity. The rows of the upper half, ``(S A E) y = S b``, determine ``y``: the
factorization and the solve, the costly part, run on half the unknowns per plane. The field
comes back on the whole grid, so everything computed from it (scattering width, far
fields, cross sections, mode amplitudes) is the whole domain's. In 3-D only the direct
solver folds (the iterative one's operator is matrix-free, and its matrix-vector product
on the whole grid would save nothing).

The grid's nodes are laid out symmetrically about ``center`` (each staggered lattice's last
node along its own axis, in the outer PML, excepted), and the plane may pass through
nodes or between them. The PML's far ends are the one place the discrete operator is not
mirror symmetric (the differences are zero-padded differently at the low and the high end),
so the folded solve is the full one with the high end's termination on both sides: the two
differ by what the PML lets back from its outer wall (about 1e-10 of the field outside the
PML with the default R = 1e-8, rounding at R = 1e-12).

Refused, in one line naming ``symmetry``: a scene that is not its own mirror image
(materials sampled at random points in and around each object and at their images), and a
source whose right side or incident field lacks the declared parity (a line source off the
plane, or on an odd plane; a plane wave not travelling parallel to the plane, or of the
wrong parity; a dipole whose image is not itself times the parity).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .. import mirror
from ..errors import ConfigError
from ..mirror import ALLOWED


def check_values(value) -> tuple:
    """The 2-D symmetry as two ints, or one ConfigError line."""
    return mirror.check_values(value, 2)


def _fold_1d(pos: np.ndarray, c: float, dx: float, p: int, axis: int):
    """(E, S) along one axis: ``E`` (n, m) spreads the m kept nodes' values to their mirror
    images times ``p``; ``S`` (m, n) picks the kept nodes' rows."""
    n = len(pos)
    on = np.abs(pos - c) < 0.25 * dx
    kept = np.nonzero((pos > c + 0.25 * dx) | (on & (p == 1)))[0]
    mirror = np.rint((2 * c - pos - pos[0]) / dx).astype(int)
    rows, cols, vals = [], [], []
    covered = on.copy() if p == -1 else np.zeros(n, bool)
    for col, k in enumerate(kept):
        rows.append(k)
        cols.append(col)
        vals.append(1.0)
        covered[k] = True
        j = mirror[k]
        if 0 <= j < n and j != k:
            rows.append(j)
            cols.append(col)
            vals.append(float(p))
            covered[j] = True
    if not covered.all():  # a node in the lower half whose image is not a node
        raise ConfigError(
            f"symmetry: the grid's nodes along {'xy'[axis]} are not symmetric about the plane; "
            f"set symmetry[{axis}] = 0 (allowed values: {ALLOWED})"
        )
    E = sp.csr_matrix((vals, (rows, cols)), shape=(n, len(kept)))
    S = sp.csr_matrix((np.ones(len(kept)), (np.arange(len(kept)), kept)), shape=(len(kept), n))
    return E, S


@dataclass(frozen=True, eq=False)
class Fold:
    """The expansion ``E`` (N, n) and restriction ``S`` (n, N) of a 2-D grid's unknowns, the
    reduced grid's ``shape`` and the declared ``symmetry``."""

    E: sp.csr_matrix
    S: sp.csr_matrix
    shape: tuple
    symmetry: tuple

    def matrix(self, A) -> sp.csr_matrix:
        """The folded operator ``S A E`` (CSR, or CSC where ``A`` is)."""
        R = (self.S @ sp.csr_matrix(A) @ self.E).tocsr()
        R.sum_duplicates()
        return R.tocsc() if sp.isspmatrix_csc(A) else R

    def check(self, v: np.ndarray, what: str) -> None:
        """Refuse node values ``v`` (N, K) without the declared parity (``E S v != v``)."""
        v = np.asarray(v).reshape(self.E.shape[0], -1)
        scale = np.abs(v).max()
        if scale == 0:
            return
        if np.abs(self.E @ (self.S @ v) - v).max() > 1e-9 * scale:
            raise ConfigError(
                f"symmetry {list(self.symmetry)}: {what} is not symmetric with this parity under the "
                f"mirror plane(s); set symmetry to its parity or to 0 (allowed values: {ALLOWED})"
            )

    def check_sources(self, incident, rhs) -> None:
        """Refuse incident fields (a list, or None) and right sides without the parity."""
        if incident is not None:
            self.check(np.stack(list(incident), 1), "the incident plane wave")
        self.check(np.stack(list(rhs), 1) if isinstance(rhs, list) else rhs, "the source (its right side)")


def _fold_axes(positions, centers, dx: float, parities):
    """(E, S, reduced shape) of one field component on a grid with the node ``positions``
    per axis, ``parities`` per axis (0: no plane): the Kronecker product of the 1-D folds."""
    E = S = None
    shape = []
    for ax, (pos, c, p) in enumerate(zip(positions, centers, parities)):
        if p == 0:
            e = s = sp.identity(len(pos), format="csr")
        else:
            e, s = _fold_1d(np.asarray(pos, float), c, dx, p, ax)
        shape.append(e.shape[1])  # the reduced nodes along this axis
        E = e if E is None else sp.kron(E, e, format="csr")
        S = s if S is None else sp.kron(S, s, format="csr")
    return E, S, tuple(shape)


def _centers(origin, shape, dx) -> tuple:
    return tuple(o + (n - 1) / 2 * dx for o, n in zip(origin, shape))


def fold(g, symmetry, te: bool, scene=None) -> Fold | None:
    """The :class:`Fold` of the 2-D grid ``g`` (emjax.fdfd.grid2d) for ``symmetry``
    (checked), TE (``te``: H_z's parity is minus the value) or TM; the scene checked
    symmetric. None without symmetry."""
    symmetry = check_values(symmetry)
    if not any(symmetry):
        return None
    c = _centers(g.origin, g.shape, g.dx)
    _check_scene(scene, symmetry, c, (g.x[0], g.y[0]), (g.x[-1], g.y[-1]), g.dx)
    E, S, shape = _fold_axes((g.x, g.y), c, g.dx, [-s if te else s for s in symmetry])
    return Fold(E, S, shape, symmetry)


def check_values_3d(value) -> tuple:
    """The 3-D symmetry as three ints, or one ConfigError line."""
    return mirror.check_values(value, 3)


def fold_3d(g, symmetry, scene=None) -> Fold | None:
    """The :class:`Fold` of the 3-D Yee grid ``g`` (emjax.fdfd.maxwell3d) for ``symmetry``:
    E_c at the nodes shifted half a cell along c; under the mirror normal to axis a the
    components parallel to the plane take the value's sign, E_a the opposite one. The
    unknowns are ordered (c, i, j, k) as the operator's."""
    symmetry = check_values_3d(symmetry)
    if not any(symmetry):
        return None
    c = _centers(g.origin, g.shape, g.dx)
    lo, hi = [a[0] for a in g.axes], [a[-1] for a in g.axes]
    _check_scene(scene, symmetry, c, lo, hi, g.dx)
    Es, Ss = [], []
    for comp in range(3):
        pos = [a + (0.5 * g.dx if ax == comp else 0.0) for ax, a in enumerate(g.axes)]
        par = [0 if s == 0 else (-s if ax == comp else s) for ax, s in enumerate(symmetry)]
        e, s_, _ = _fold_axes(pos, c, g.dx, par)
        Es.append(e)
        Ss.append(s_)
    E = sp.block_diag(Es, format="csr")
    S = sp.block_diag(Ss, format="csr")
    return Fold(E, S, None, symmetry)


def _check_scene(scene, symmetry, c, lo, hi, dx, samples: int = 4000) -> None:
    """The scene must be its own mirror image: its material at random points in (and
    around) each object and at their mirror images must agree (2-D grids: z = 0)."""
    if scene is None or not scene.objects:
        return
    sc = scene.primal() if scene.traced else scene
    rng = np.random.default_rng(0)
    d = len(symmetry)
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    pts = []
    for o in sc.objects:
        a, b = (np.clip(v[:d], lo, hi) for v in o.bounds())
        pad = 0.1 * (b - a) + dx
        pts.append(rng.uniform(np.maximum(a - pad, lo), np.minimum(b + pad, hi), (samples, d)))
    p = np.concatenate(pts)

    def label(q):
        return sc.label(q[:, 0], q[:, 1], q[:, 2] if d == 3 else np.zeros(len(q)))

    here = label(p)
    for a, s in enumerate(symmetry):
        if s:
            q = p.copy()
            q[:, a] = 2 * c[a] - q[:, a]
            if np.any(here != label(q)):
                raise ConfigError(
                    f"symmetry: the scene is not symmetric under the {'xyz'[a]} mirror through "
                    f"{c[a]:g}; set symmetry[{a}] = 0 (allowed values: {ALLOWED})"
                )
