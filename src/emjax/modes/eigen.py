"""The transverse-E eigenproblem of a cross-section and the fields of its modes.

Natural units (eps0 = mu0 = c = 1, H the field times the impedance of free space), fields
``~ exp(i beta z - i omega t)``, ``k0 = omega = 2 pi f``. Maxwell's curl equations with
``d/dz = i beta`` give, on the Yee grid of :mod:`emjax.modes.grid`,

* ``H_z = (d_x E_y - d_y E_x) / (i k0)`` and ``E_z = i (d_x H_y - d_y H_x) / (k0 eps_zz)``;
* ``beta h = P e`` with ``e = (E_x, E_y)``, ``h = (H_x, H_y)``:
  ``beta H_x = -k0 eps_yy E_y - i d_x H_z``, ``beta H_y = k0 eps_xx E_x - i d_y H_z``;
* ``beta e = Q h``: ``beta E_x = k0 H_y - i d_x E_z``, ``beta E_y = -k0 H_x - i d_y E_z``;

so ``Q P e = beta^2 e``: the transverse-E formulation (as in Zhu and Brown, Opt. Express 10,
853 (2002), written here from Maxwell's equations). Its eigenvalues nearest the shift
``(k0 n_max)^2`` are the best-guided modes (shift-invert Arnoldi, scipy's ``eigs``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, eigs, splu

from ..errors import ConvergenceError
from .grid import Axis, curl_operators


@dataclass(frozen=True)
class Section:
    """A cross-section ready for the eigen solve: its axes and the permittivity at the kept
    E_x, E_y, E_z nodes (flattened, C order)."""

    ax: Axis
    ay: Axis
    eps_x: np.ndarray
    eps_y: np.ndarray
    eps_z: np.ndarray


def section(ax: Axis, ay: Axis, eps_nodes: tuple) -> Section:
    """Restrict the node permittivities (full grids, shapes of :mod:`emjax.modes.grid`) to the
    kept nodes of ``ax``, ``ay``."""
    ex, ey, ez = eps_nodes
    return Section(
        ax,
        ay,
        np.asarray(ex[:, ay.keep], complex).ravel(),
        np.asarray(ey[ax.keep, :], complex).ravel(),
        np.asarray(ez[np.ix_(ax.keep, ay.keep)], complex).ravel(),
    )


def _blocks(sec: Section, k0: float):
    ops = curl_operators(sec.ax, sec.ay)
    inv_ez = sp.diags(1.0 / sec.eps_z)
    # P: e -> beta h (rows H_x, H_y; columns E_x, E_y)
    P = sp.bmat(
        [
            [ops.Cx @ ops.Gy / k0, -(k0 * sp.diags(sec.eps_y) + ops.Cx @ ops.Gx / k0)],
            [k0 * sp.diags(sec.eps_x) + ops.Cy @ ops.Gy / k0, -(ops.Cy @ ops.Gx) / k0],
        ],
        format="csr",
    )
    # Q: h -> beta e (rows E_x, E_y; columns H_x, H_y)
    nx_ex = len(sec.eps_x)
    n_hx = len(sec.eps_y)
    Q = sp.bmat(
        [
            [-(ops.Kx @ inv_ez @ ops.Fy) / k0, k0 * sp.identity(nx_ex) + ops.Kx @ inv_ez @ ops.Fx / k0],
            [-(k0 * sp.identity(n_hx) + ops.Ky @ inv_ez @ ops.Fy / k0), ops.Ky @ inv_ez @ ops.Fx / k0],
        ],
        format="csr",
    )
    return ops, P, Q


def operator(sec: Section, k0: float):
    """``(A, ops, P)`` with ``A = Q P`` (sparse): ``A e = beta^2 e``."""
    ops, P, Q = _blocks(sec, k0)
    return (Q @ P).tocsc(), ops, P


def eigenmodes(sec: Section, k0: float, num_modes: int, shift: complex):
    """``(beta, e, ops, P)``: the ``num_modes`` propagation constants nearest ``sqrt(shift)``
    (the forward ones: ``Re beta >= 0``, and ``Im beta > 0`` where ``Re beta = 0``) and their
    transverse E vectors (columns), by shift-invert Arnoldi on ``A - shift`` (one sparse LU,
    minimum-degree ordering of ``A^T + A``: it fills about half as much as scipy's default
    here)."""
    A, ops, P = operator(sec, k0)
    n = A.shape[0]
    v0 = np.random.default_rng(0).standard_normal(n) + 0j
    try:
        lu = splu((A - shift * sp.identity(n, format="csc")).tocsc(), permc_spec="MMD_AT_PLUS_A")
        op = LinearOperator((n, n), matvec=lu.solve, dtype=complex)
        mu, vec = eigs(op, k=num_modes, which="LM", v0=v0, ncv=min(n - 1, max(2 * num_modes + 1, 20)))
    except Exception as exc:  # ARPACK's no-convergence and a singular shift alike
        raise ConvergenceError(f"modes: the eigen solve failed ({type(exc).__name__}: {exc})") from None
    # the principal root: Re beta >= 0 (forward), an evanescent mode's Im beta > 0
    beta = np.sqrt(shift + 1.0 / mu)
    return beta, vec, ops, P


def left_vector(sec: Section, h: np.ndarray) -> np.ndarray:
    """The left eigenvector of ``A`` (``y^T A = beta^2 y^T``) of the mode whose transverse H
    is ``h = (H_x, H_y)`` (kept nodes): ``(w H_y, -w H_x)`` with ``w`` the stretched dual
    areas. Reciprocity: the unconjugated ``int (E_m x H_n) . z`` vanishes between modes."""
    ax, ay = sec.ax, sec.ay
    w_ex = np.outer(ax.s_half, ay.s_int[ay.keep] * ay.weight).ravel()
    w_ey = np.outer(ax.s_int[ax.keep] * ax.weight, ay.s_half).ravel()
    n_hx = len(sec.eps_y)
    return np.concatenate([w_ex * h[n_hx:], -w_ey * h[:n_hx]])


def fields(sec: Section, k0: float, beta: complex, e: np.ndarray, ops, P) -> dict:
    """All six components of one mode on their full Yee grids (PEC wall nodes 0), normalized
    to ``(1/2) Re sum (E x H*) . z dA = 1`` and phased so that the largest transverse E entry
    is real and positive."""
    ax, ay = sec.ax, sec.ay
    nex = len(sec.eps_x)
    ex, ey = e[:nex], e[nex:]
    h = (P @ e) / beta
    hx, hy = h[: len(sec.eps_y)], h[len(sec.eps_y) :]
    hz = (ops.Gx @ ey - ops.Gy @ ex) / (1j * k0)
    ez = 1j * (ops.Fx @ hy - ops.Fy @ hx) / (k0 * sec.eps_z)
    nx, ny, kx, ky = ax.n, ay.n, ax.keep, ay.keep

    def full(v, shape, rows, cols):
        out = np.zeros(shape, complex)
        out[np.ix_(rows, cols)] = v.reshape(len(rows), len(cols))
        return out

    xs, ys = np.arange(nx), np.arange(ny)
    E = [full(ex, (nx, ny + 1), xs, ky), full(ey, (nx + 1, ny), kx, ys), full(ez, (nx + 1, ny + 1), kx, ky)]
    H = [full(hx, (nx + 1, ny), kx, ys), full(hy, (nx, ny + 1), xs, ky), hz.reshape(nx, ny)]
    w_ex, w_ey = weights(ax, ay)
    area = ax.d * ay.d
    power = 0.5 * area * np.real(np.sum(w_ex * E[0] * H[1].conj()) - np.sum(w_ey * E[1] * H[0].conj()))
    scale = 1.0 / np.sqrt(abs(power)) if power != 0 else 1.0
    big = np.concatenate([E[0].ravel(), E[1].ravel()])
    k = int(np.argmax(np.abs(big)))
    phase = np.conj(big[k]) / abs(big[k]) if big[k] != 0 else 1.0
    f = scale * phase
    return {"E": [c * f for c in E], "H": [c * f for c in H]}


def weights(ax: Axis, ay: Axis):
    """Dual-cell weights (units of d^2) on the full E_x / H_y and E_y / H_x grids (0 on PEC wall
    nodes, 1/2 on PMC wall nodes)."""
    wx = np.zeros(ax.n + 1)
    wx[ax.keep] = ax.weight
    wy = np.zeros(ay.n + 1)
    wy[ay.keep] = ay.weight
    return np.ones(ax.n)[:, None] * wy[None, :], wx[:, None] * np.ones(ay.n)[None, :]


def to_centers(E: list, H: list):
    """The six components averaged onto the cell centres: ``(3, nx, ny)`` each of E and H."""

    def ax0(a):
        return 0.5 * (a[:-1] + a[1:])

    def ax1(a):
        return 0.5 * (a[:, :-1] + a[:, 1:])

    Ec = np.stack([ax1(E[0]), ax0(E[1]), ax0(ax1(E[2]))])
    Hc = np.stack([ax0(H[0]), ax1(H[1]), H[2]])
    return Ec, Hc


def check_converged(beta: np.ndarray, what: str) -> None:
    if not np.all(np.isfinite(beta)):
        raise ConvergenceError(f"modes: the eigen solve returned non-finite values ({what})")
