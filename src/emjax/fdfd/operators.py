"""Yee-grid difference operators as sparse matrices, with stretched-coordinate PML.

Fields ~ exp(-i omega t). Along an axis of ``n`` nodes (spacing ``dx``) the forward
difference ``(f[i+1] - f[i]) / dx`` lives at ``i + 1/2`` and the backward one ``(f[i] -
f[i-1]) / dx`` at ``i``; both are zero-padded at the ends (a PEC wall behind the PML). A PML
of ``thickness`` cells on each end stretches the coordinate, ``d/dx -> (1 / s(x)) d/dx`` with
``s = 1 + i sigma(x) / omega`` at the derivative's own position and ``sigma = sigma_max
(d / L)^m`` (d: depth into the PML, L its thickness); ``sigma_max`` defaults to ``-(m + 1)
ln(R) / (2 L)`` for a normal-incidence reflection R = 1e-8 (Shin & Fan, J. Comput. Phys. 231,
3406 (2012), on why stretched coordinates suit iterative solvers).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..errors import ConfigError, require_int, require_positive


@dataclass(frozen=True)
class SCPML:
    """Stretched-coordinate PML: ``thickness`` cells on both ends of each axis it is given
    for, polynomial grading ``order``, reflection ``R`` at normal incidence."""

    thickness: int = 12
    order: float = 3.0
    R: float = 1e-8

    def __post_init__(self):
        require_int("SCPML.thickness", self.thickness, 0)
        require_positive("SCPML.order", self.order)
        if not 0 < self.R < 1:
            raise ConfigError(f"SCPML.R must lie in (0, 1), got {self.R}")

    def stretch(self, n: int, dx: float, omega: float, half: bool) -> np.ndarray:
        """``s`` at the nodes (``half`` False: positions i) or the half nodes (i + 1/2)."""
        L = self.thickness
        pos = np.arange(n) + (0.5 if half else 0.0)
        if L == 0:
            return np.ones(n, complex)
        depth = np.maximum(np.maximum(L - pos, pos - (n - 1 - L)), 0.0) / L
        sigma_max = -(self.order + 1) * np.log(self.R) / (2 * L * dx)
        return 1 + 1j * sigma_max * depth**self.order / omega


@dataclass(frozen=True)
class UPML(SCPML):
    """Uniaxial PML (the FDFD paper's choice), 3-D only: the same grading as :class:`SCPML`
    put into anisotropic material tensors ``eps_t = eps diag(s_y s_z / s_x, ...)``,
    ``mu_t = diag(s_y s_z / s_x, ...)`` with unstretched differences. The fields outside the
    PML equal SC-PML's; inside they differ by the factors ``s``. Stretched coordinates give
    Krylov solvers a better-conditioned matrix (Shin & Fan 2012; measured in
    tests/fdfd/test_maxwell3d.py)."""


def _diff_1d(n: int, dx: float, forward: bool) -> sp.csr_matrix:
    if forward:  # at i + 1/2 from i, i + 1 (the last row sees a zero beyond the end)
        return sp.diags([-np.ones(n), np.ones(n - 1)], [0, 1], shape=(n, n), format="csr") / dx
    return sp.diags([np.ones(n), -np.ones(n - 1)], [0, -1], shape=(n, n), format="csr") / dx


def derivatives(shape, dx: float, omega: float, pml: SCPML | None) -> dict:
    """``{"xf", "xb", "yf", "yb"}``: sparse forward/backward differences along x and y on a
    2-D grid of ``shape = (nx, ny)`` nodes (C order: the index is ``i * ny + j``), each scaled
    by the PML's ``1 / s`` at its own positions."""
    nx, ny = (require_int("shape[0]", shape[0], 2), require_int("shape[1]", shape[1], 2))
    require_positive("dx", dx)
    require_positive("omega", omega)
    pml = pml or SCPML(0)
    if 2 * pml.thickness >= min(nx, ny):
        raise ConfigError(f"SCPML.thickness {pml.thickness} leaves no interior in a {nx} x {ny} grid")
    out = {}
    for name, n, other, along_x in (("x", nx, ny, True), ("y", ny, nx, False)):
        for kind, forward in (("f", True), ("b", False)):
            d = sp.diags(1 / pml.stretch(n, dx, omega, half=forward)) @ _diff_1d(n, dx, forward)
            eye = sp.identity(other, format="csr")
            out[name + kind] = (sp.kron(d, eye) if along_x else sp.kron(eye, d)).tocsr()
    return out
