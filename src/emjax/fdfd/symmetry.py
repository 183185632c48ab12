"""Mirror symmetry planes for the 2-D FDFD (``solve_tm`` / ``solve_te``'s ``symmetry``).

``symmetry = (sx, sy)``: per axis 0 (none), -1 or +1, a mirror plane normal to that axis
through ``center``, with the FDTD's (and Meep's) sign: the value is the sign that the E
components *parallel to the plane* take under the reflection. -1 (odd): tangential E
vanishes on the plane, a perfect electric conductor (PEC); +1 (even): tangential H vanishes
on it, a perfect magnetic conductor (PMC). In TM, E_z is parallel to both planes, so E_z's
parity is the value itself; in TE, H_z (a pseudovector's normal-to-the-grid component) takes
the opposite sign.

The operator is assembled on the whole grid (a cost linear in the cells) and folded: with
``R`` the reflection and ``p`` the unknown's parity, a symmetric scene has ``R A R = A``, a
symmetric source ``R b = p b``, so the solution has ``R x = p x`` and is ``x = E y``, ``E``
spreading the values ``y`` of the upper half (the nodes at ``x > c``, plus those on the
plane when ``p = +1``: an odd field vanishes there) to their mirror nodes times ``p``. The
rows of the upper half, ``(S A E) y = S b``, determine ``y``: the factorization and the
solve, the costly part, run on half the unknowns per plane (a quarter on two). The field
comes back on the whole grid, so everything computed from it (scattering width, far
fields, mode amplitudes) is the whole domain's.

The grid's nodes are laid out symmetrically about ``center`` (TM's E_z nodes exactly; TE's
H_z cell centres all but the last, which lies in the outer PML), and the plane may pass
through nodes or between them. The PML's far ends are the one place the discrete operator
is not mirror symmetric (the differences are zero-padded differently at the low and the
high end), so the folded solve is the full one with the high end's termination on both
sides: the two differ by what the PML lets back from its outer wall.

Refused, in one line naming ``symmetry``: a scene that is not its own mirror image
(materials sampled at random points in and around each object and at their images), and a
source whose right side or incident field lacks the declared parity (a line source off the
plane, or on an odd plane; a plane wave not travelling parallel to the plane, or of the
wrong parity).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..errors import ConfigError

ALLOWED = "0 (none), -1 (odd: tangential E vanishes on the plane, a PEC) or +1 (even: a PMC)"


def check_values(value) -> tuple:
    """The 2-D symmetry as two ints, or one ConfigError line."""
    try:
        v = tuple(value)
    except TypeError:
        v = ()
    if len(v) != 2 or not all(
        isinstance(s, (int, np.integer)) and not isinstance(s, bool) and s in (-1, 0, 1) for s in v
    ):
        raise ConfigError(f"symmetry must be two values (x, y), each {ALLOWED}, got {value!r}")
    return tuple(int(s) for s in v)


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


def fold(g, symmetry, te: bool, scene=None) -> Fold | None:
    """The :class:`Fold` of the grid ``g`` (emjax.fdfd.grid2d) for ``symmetry`` (checked),
    TE (``te``: H_z's parity is minus the value) or TM; the scene checked symmetric. None
    without symmetry."""
    symmetry = check_values(symmetry)
    if not any(symmetry):
        return None
    c = (g.origin[0] + (g.shape[0] - 1) / 2 * g.dx, g.origin[1] + (g.shape[1] - 1) / 2 * g.dx)
    _check_scene(scene, symmetry, c, g)
    parts = []
    for ax, (s, pos) in enumerate(zip(symmetry, (g.x, g.y))):
        if s == 0:
            n = len(pos)
            parts.append((sp.identity(n, format="csr"), sp.identity(n, format="csr")))
        else:
            parts.append(_fold_1d(np.asarray(pos, float), c[ax], g.dx, -s if te else s, ax))
    (Ex, Sx), (Ey, Sy) = parts
    E = sp.kron(Ex, Ey, format="csr")
    S = sp.kron(Sx, Sy, format="csr")
    return Fold(E, S, (Ex.shape[1], Ey.shape[1]), symmetry)


def _check_scene(scene, symmetry, c, g, samples: int = 4000) -> None:
    """The scene must be its own mirror image: its material at random points in (and
    around) each object and at their mirror images must agree."""
    if scene is None or not scene.objects:
        return
    sc = scene.primal() if scene.traced else scene
    rng = np.random.default_rng(0)
    lo = np.array([g.x[0], g.y[0]])
    hi = np.array([g.x[-1], g.y[-1]])
    pts = []
    for o in sc.objects:
        a, b = (np.clip(v[:2], lo, hi) for v in o.bounds())
        pad = 0.1 * (b - a) + g.dx
        pts.append(rng.uniform(np.maximum(a - pad, lo), np.minimum(b + pad, hi), (samples, 2)))
    p = np.concatenate(pts)
    z = np.zeros(len(p))
    here = sc.label(p[:, 0], p[:, 1], z)
    for a, s in enumerate(symmetry):
        if s:
            q = p.copy()
            q[:, a] = 2 * c[a] - q[:, a]
            if np.any(here != sc.label(q[:, 0], q[:, 1], z)):
                raise ConfigError(
                    f"symmetry: the scene is not symmetric under the {'xy'[a]} mirror through "
                    f"{c[a]:g}; set symmetry[{a}] = 0 (allowed values: {ALLOWED})"
                )
