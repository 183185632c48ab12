"""2-D TM frequency-domain problem: E_z on the Yee grid's nodes (H_x, H_y between them).

With fields ~ exp(-i omega t), mu = 1, c = 1: ``H_x = -(1 / i omega) dE_z/dy``,
``H_y = (1 / i omega) dE_z/dx`` (forward differences) and Ampere's law (backward ones) give

    (D_xb D_xf + D_yb D_yf + omega^2 eps) E_z = i omega J_z,

SC-PML stretching every difference (operators.py). A line current I at a node is ``J_z =
I / dx^2``; in vacuum its field is ``E_z = (omega I / 4) H0^(1)(k rho)``. A plane wave is
solved for the scattered field: ``A E_s = -omega^2 (eps - eps_bg) E_inc`` with the analytic
``E_inc = exp(i k (x cos phi + y sin phi))``, so the PML sees outgoing waves only.

The scene (2-D shapes: geometry.Disk, Rectangle, Polygon, invariant along z) is rasterized
at the E_z nodes; with subpixel averaging an interface node takes the arithmetic mean
``f eps_own + (1 - f) eps_other`` (E_z is tangential to every interface of a z-invariant
scene: Kottke's rule reduces to it, exactly, and complex eps is allowed).

Perfect conductors (``scene.PEC``) are boundary conditions (pec2d.py): TM nodes inside one
hold eps = inf in the result, TE edges 1/eps = 0 (times their open fraction).

Stencils (``stencil``). ``"yee"``: the five-point operator above, whose phase error
(k_num / k - 1 = (k h)^2 (cos^4 + sin^4) / 24, 0.2-0.4% at 20 cells per wavelength) piles up
across a scatterer several wavelengths wide and dominates the error of a dielectric
cylinder (eps = 4, radius 1 wavelength: 2.4 dB at 40 cells per vacuum wavelength).
``"compact"`` (the default): the same Yee unknowns and first differences, with the second
difference along x averaged over the rows j - 1, j, j + 1 (weights 1/12, 5/6, 1/12; along y
likewise) and the mass term omega^2 eps u spread as (2/3) u_ij + (1/12) (its four axis
neighbours), symmetrized (M E + E M) / 2 for a varying eps. These weights make the
bulk dispersion fourth order and isotropic (the classical compact "Mehrstellen" choice:
|k_num / k - 1| < 3.3e-4 at 10 cells per wavelength, 2.1e-5 at 20, any direction, against
1.6e-2 / 4.1e-3 for "yee"). The interfaces (subpixel averaging) keep the scheme second
order overall, with a constant ~20 times smaller on the cylinders of tests/fdfd. Line
sources are spread by the same mass weights. Rows whose 3 x 3 footprint touches a
conductor keep the Yee row (the Shortley-Weller / Dey-Mittra conformal rows are
five-point).

TE's subpixel averaging uses Kottke's full in-plane tensor: besides the diagonal entries
at the E_x and E_y edges, the off-diagonal ``n_x n_y (<1/eps> - 1 / <eps>)`` at interface
edges couples each flux to the other component's gradient, averaged over the four nearest
edges of the other kind (symmetrically: half from the E_x edges' value, half from the E_y
edges'). With the diagonal only, TE stalls at first order on curved interfaces.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..errors import ConfigError, ConvergenceError, require_finite, require_positive
from .operators import SCPML, UPML, derivatives
from .pec2d import pec_index, te_open_fractions, tm_rows
from .specs2d import LineSource, PlaneWave2D, TMResult

STENCILS = ("compact", "yee")
_W = 1.0 / 12.0  # the compact stencil's neighbour weight (module docstring)


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


def _second_difference_1d(n: int, dx: float, omega: float, pml) -> sp.csr_matrix:
    """``(1/s) D_b (1/s) D_f`` along one axis of ``n`` nodes (the 1-D factor of D_xb D_xf)."""
    from .operators import _diff_1d

    inv_node = sp.diags(1 / pml.stretch(n, dx, omega, half=False))
    inv_half = sp.diags(1 / pml.stretch(n, dx, omega, half=True))
    return (inv_node @ _diff_1d(n, dx, False) @ inv_half @ _diff_1d(n, dx, True)).tocsr()


def _average_1d(n: int) -> sp.csr_matrix:
    return sp.diags(
        [np.full(n - 1, _W), np.full(n, 1 - 2 * _W), np.full(n - 1, _W)], [-1, 0, 1], format="csr"
    )


def _compact_parts(shape) -> tuple:
    """``(Ax, Ay, M)``: the averages over neighbouring nodes along x and along y (weights 1/12,
    5/6, 1/12) and the mass spreading ``Ax + Ay - I`` (2/3 at the node, 1/12 at each axis
    neighbour) of the compact stencil."""
    nx, ny = shape
    Ax = sp.kron(_average_1d(nx), sp.identity(ny), format="csr")
    Ay = sp.kron(sp.identity(nx), _average_1d(ny), format="csr")
    return Ax, Ay, (Ax + Ay - sp.identity(nx * ny)).tocsr()


# the 3 x 3 footprint of a node, in the column order of its matrix row (x offset major)
OFFSETS = tuple((a, b) for a in (-1, 0, 1) for b in (-1, 0, 1))


def _bands(T: sp.spmatrix) -> np.ndarray:
    """(3, n): the sub-, main and super-diagonal of a tridiagonal (n, n) matrix by row (row i:
    ``T[i, i - 1], T[i, i], T[i, i + 1]``; zero where the column lies outside)."""
    n = T.shape[0]
    out = np.zeros((3, n), complex)
    out[0, 1:] = T.diagonal(-1)
    out[1] = T.diagonal(0)
    out[2, :-1] = T.diagonal(1)
    return out


def _average_bands(n: int) -> np.ndarray:
    """The bands (3, n) of :func:`_average_1d`."""
    out = np.zeros((3, n))
    out[0, 1:] = out[2, :-1] = _W
    out[1] = 1 - 2 * _W
    return out


def _mass_center() -> float:
    """The compact mass spreading's weight at the node, evaluated as ``Ax + Ay - I`` is."""
    return (1 - 2 * _W) + (1 - 2 * _W) - 1.0


def tm_stencil(eps_rows, shape, dx, omega, pml, stencil, yee_rows=None) -> np.ndarray:
    """The TM matrix ``lap + mass(eps_rows)`` of :func:`solve_tm` (no conductor rows) as
    stencil coefficients ``C`` (nx, ny, 3, 3): ``C[i, j, a + 1, b + 1]`` multiplies the node
    (i + a, j + b) in the row of node (i, j) (zero where that node lies outside the grid);
    ``C.reshape(nx * ny, 9)`` holds the matrix rows' entries in their column order.

    Built from the 1-D second differences and averages with NumPy: the same floating-point
    operations, in the same order, as the sparse Kronecker-product assembly it replaces
    (tests/fdfd/test_assembly.py checks the two equal bit for bit). ``yee_rows`` (nx, ny):
    the rows that keep the five-point operator with the compact stencil."""
    nx, ny = shape
    lx, ly = (_bands(_second_difference_1d(n, dx, omega, pml)) for n in shape)
    mixed = stencil == "compact" and yee_rows is not None and bool(np.any(yee_rows))
    C = np.zeros((nx, ny, 3, 3), complex)
    if stencil == "compact":
        tx, ty = _average_bands(nx), _average_bands(ny)
        for a in range(3):
            for b in range(3):
                C[:, :, a, b] = lx[a][:, None] * ty[b][None, :] + tx[a][:, None] * ly[b][None, :]
    if stencil == "yee" or mixed:  # the five-point laplacian (all rows, or the Yee rows)
        five = np.zeros((nx, ny, 3, 3), complex)
        five[:, :, 0, 1] = lx[0][:, None]
        five[:, :, 2, 1] = lx[2][:, None]
        five[:, :, 1, 0] = ly[0][None, :]
        five[:, :, 1, 2] = ly[2][None, :]
        five[:, :, 1, 1] = lx[1][:, None] + ly[1][None, :]
        C = np.where(yee_rows[:, :, None, None], five, C) if mixed else five
    return _add_mass(C, eps_rows, omega, stencil, yee_rows if mixed else None)


def _add_mass(C, e, omega, stencil, yee_rows=None) -> np.ndarray:
    """``C += omega^2 mass(e)`` in place (the sparse ``(M E + E M) / 2`` of the compact
    stencil, ``E`` alone with "yee" and in the ``yee_rows``), the sums in the sparse
    assembly's order; returns C."""
    E = omega**2 * e
    if stencil == "yee":
        C[:, :, 1, 1] += E
        return C
    Mc = _mass_center()
    ctr = (Mc * E + E * Mc) / 2
    if yee_rows is not None:
        ctr = np.where(yee_rows, E, ctr)
    nx, ny = E.shape
    for a, b in ((-1, 0), (1, 0), (0, -1), (0, 1)):  # the four axis neighbours in the grid
        (xd, xs), (yd, ys) = _shift(a, nx), _shift(b, ny)
        v = (_W * E[xs, ys] + E[xd, yd] * _W) / 2
        if yee_rows is not None:
            v = np.where(yee_rows[xd, yd], 0.0, v)
        C[xd, yd, a + 1, b + 1] += v
    C[:, :, 1, 1] += ctr
    return C


def stencil_csr(C: np.ndarray) -> sp.csr_matrix:
    """The CSR matrix (N x N, N = nx ny, node (i, j) at i ny + j) of stencil coefficients
    ``C`` (nx, ny, 3, 3) (see :func:`tm_stencil`): canonical (sorted columns, no duplicates,
    no stored zeros), built directly from the arrays."""
    nx, ny = C.shape[:2]
    N = nx * ny
    # entries reaching past the grid's edge must be zero (they would wrap into another row)
    if np.any(C[0, :, 0]) or np.any(C[-1, :, 2]) or np.any(C[:, 0, :, 0]) or np.any(C[:, -1, :, 2]):
        raise ValueError("stencil coefficient beyond the grid's edge")
    V = C.reshape(N, 9)  # each row's entries in column order
    mask = V != 0
    idx = np.int32 if N * 9 < 2**31 else np.int64
    step = np.array([a * ny + b for a, b in OFFSETS], idx)
    cols = (np.arange(N, dtype=idx)[:, None] + step[None, :])[mask]
    indptr = np.zeros(N + 1, idx)
    np.cumsum(mask.sum(1), out=indptr[1:])
    A = sp.csr_matrix((V[mask], cols, indptr), shape=(N, N))
    A.has_sorted_indices = True
    A.has_canonical_format = True
    return A


def _shift(a: int, n: int) -> tuple:
    """(destination, source) slices along an axis of n nodes: node i reads node i + a."""
    if a == 1:
        return slice(0, n - 1), slice(1, n)
    if a == -1:
        return slice(1, n), slice(0, n - 1)
    return slice(0, n), slice(0, n)


def transpose_stencil(C: np.ndarray) -> np.ndarray:
    """The stencil of the transposed matrix: ``A^T``'s row of node (i, j) holds ``A[(i + a,
    j + b), (i, j)] = C[i + a, j + b, 1 - a, 1 - b]``."""
    nx, ny = C.shape[:2]
    T = np.zeros_like(C)
    for a, b in OFFSETS:
        (xd, xs), (yd, ys) = _shift(a, nx), _shift(b, ny)
        T[xd, yd, a + 1, b + 1] = C[xs, ys, 1 - a, 1 - b]
    return T


def apply_stencil(C: np.ndarray, u: np.ndarray) -> np.ndarray:
    """``A u`` for the stencil ``C`` (nx, ny, 3, 3) and node values ``u`` (nx, ny), summed in
    the matrix rows' column order."""
    nx, ny = u.shape
    out = np.zeros(u.shape, np.result_type(C, u))
    for a, b in OFFSETS:
        (xd, xs), (yd, ys) = _shift(a, nx), _shift(b, ny)
        out[xd, yd] += C[xd, yd, a + 1, b + 1] * u[xs, ys]
    return out


def _scene_rhs(eps_rows, waves, omega, stencil, yee_rows) -> np.ndarray:
    """The scattered-field right sides ``-(mass(eps - 1)) E_inc`` (N, K), evaluated on the
    box around the nodes where eps differs from 1 (the rest is zero)."""
    shape = eps_rows.shape
    b = np.zeros((shape[0] * shape[1], len(waves)), complex)
    d = eps_rows - 1.0
    hit = np.nonzero(d)
    if not len(hit[0]):
        return b
    box = tuple(slice(max(h.min() - 2, 0), min(h.max() + 3, n)) for h, n in zip(hit, shape))
    sub = None if yee_rows is None else yee_rows[box]
    K = _add_mass(np.zeros(d[box].shape + (3, 3), complex), d[box], omega, stencil, sub)
    idx = np.arange(b.shape[0]).reshape(shape)[box].ravel()
    for k, e in enumerate(waves):
        b[idx, k] = -apply_stencil(K, e[box]).ravel()
    return b


def stencil_csc(C: np.ndarray) -> sp.csc_matrix:
    """The matrix of :func:`stencil_csr` in CSC (SuperLU's format), built as the CSR of its
    transpose (no conversion): the same arrays as ``stencil_csr(C).tocsc()``."""
    return stencil_csr(transpose_stencil(C)).T


def sparse_stencil(S: sp.spmatrix, shape) -> np.ndarray:
    """The inverse of :func:`stencil_csr` for a sparse matrix whose rows reach no farther than
    the 3 x 3 footprint (a ValueError otherwise); duplicates summed."""
    nx, ny = shape
    S = sp.csr_matrix(S)
    S.sum_duplicates()
    coo = S.tocoo()
    i, j = np.divmod(coo.row.astype(np.int64), ny)
    ci, cj = np.divmod(coo.col.astype(np.int64), ny)
    a, b = ci - i, cj - j
    if np.any(np.abs(a) > 1) or np.any(np.abs(b) > 1):
        raise ValueError("the matrix reaches beyond the 3 x 3 footprint of its nodes")
    C = np.zeros((nx, ny, 3, 3), complex)
    C[i, j, a + 1, b + 1] = coo.data
    return C


def _spread_point(b: np.ndarray, i: int, j: int) -> np.ndarray:
    """The compact mass spreading ``M b`` of a right side ``b`` (nx, ny) that is nonzero at
    the node (i, j) only: its weight at the node, 1/12 at the axis neighbours in the grid."""
    v, out = b[i, j], np.zeros_like(b)
    out[i, j] = _mass_center() * v
    for a, c in ((i - 1, j), (i, j - 1), (i, j + 1), (i + 1, j)):
        if 0 <= a < b.shape[0] and 0 <= c < b.shape[1]:
            out[a, c] = _W * v
    return out


def _near(mask: np.ndarray) -> np.ndarray:
    """The nodes whose 3 x 3 footprint meets ``mask`` (``mask`` included)."""
    p = np.pad(mask, 1)
    nx, ny = mask.shape
    return np.any([p[a : a + nx, b : b + ny] for a in range(3) for b in range(3)], axis=0)


def _rows(keep: np.ndarray, A_keep, A_other):
    """The rows of ``A_keep`` where ``keep`` (flattened), of ``A_other`` elsewhere."""
    k = keep.ravel().astype(float)
    return (sp.diags(k) @ A_keep + sp.diags(1 - k) @ A_other).tocsr()


def _check_stencil(stencil):
    if stencil not in STENCILS:
        raise ConfigError(f"stencil must be one of {', '.join(STENCILS)}, got {stencil!r}")


def _plane_waves(source) -> list:
    """The plane waves of ``source`` (one, or a list: one factorization, many right sides)."""
    waves = list(source) if isinstance(source, (list, tuple)) else [source]
    return waves if waves and all(isinstance(w, PlaneWave2D) for w in waves) else []


def _incident(wave, omega, X, Y):
    phi = math.radians(wave.angle)
    return np.exp(1j * omega * (X * math.cos(phi) + Y * math.sin(phi)))


def _inner(shape, L) -> np.ndarray:
    inner = np.zeros(shape, bool)
    inner[L : shape[0] - L, L : shape[1] - L] = True
    return inner


@dataclass(frozen=True)
class _Grid:
    """The 2-D grid of a solve: nodes ``x``, ``y`` of the solved field, PML, frequency."""

    pml: SCPML
    frequency: float
    omega: float
    dx: float
    shape: tuple
    origin: tuple
    x: np.ndarray
    y: np.ndarray


def _grid(size, resolution, frequency, pml, center, averaging, half: bool) -> _Grid:
    """Checks the inputs and lays out the grid (``half``: the field at the cell centres)."""
    pml = SCPML() if pml is None else pml
    if not isinstance(pml, SCPML):
        raise ConfigError(f"pml must be an emjax.fdfd.SCPML, got {pml!r}")
    if isinstance(pml, UPML):
        raise ConfigError("pml: UPML is available in 3-D only (solve_3d); use SCPML in 2-D")
    res = require_positive("resolution", resolution)
    f = require_positive("frequency", frequency)
    if averaging not in ("subpixel", "staircase"):
        raise ConfigError(f"averaging must be subpixel or staircase, got {averaging!r}")
    if isinstance(size, str) or np.ndim(size) != 1 or len(size) != 2:
        raise ConfigError(f"size must be two positive lengths (sx, sy), got {size!r}")
    sx, sy = (require_positive(f"size[{k}]", v) for k, v in enumerate(size))
    if isinstance(center, str) or np.ndim(center) != 1 or len(center) != 2:
        raise ConfigError(f"center must be two finite numbers (x, y), got {center!r}")
    center = tuple(require_finite(f"center[{k}]", v) for k, v in enumerate(center))
    dx = 1.0 / res
    L = pml.thickness
    shape = (int(round(sx * res)) + 1 + 2 * L, int(round(sy * res)) + 1 + 2 * L)
    if shape[0] * shape[1] > 4e7:
        raise ConfigError(f"FDFD grid {shape[0]} x {shape[1]} is too large for the direct solver here")
    origin = (center[0] - (shape[0] - 1) / 2 * dx, center[1] - (shape[1] - 1) / 2 * dx)
    shift = 0.5 if half else 0.0
    x = origin[0] + (np.arange(shape[0]) + shift) * dx
    y = origin[1] + (np.arange(shape[1]) + shift) * dx
    return _Grid(pml, f, 2 * math.pi * f, dx, shape, origin, x, y)


def _source_node(source: LineSource, g: _Grid) -> tuple:
    """The node (i, j) nearest a line source; it must lie outside the PML."""
    i = int(round((source.position[0] - g.x[0]) / g.dx))
    j = int(round((source.position[1] - g.y[0]) / g.dx))
    L = g.pml.thickness
    if not (L <= i < g.shape[0] - L and L <= j < g.shape[1] - L):
        raise ConfigError(f"LineSource.position {source.position} lies outside the region (the PML excluded)")
    return i, j


SOLVERS = ("auto", "superlu", "pardiso", "device")


def _accelerator_plugin_installed() -> bool:
    """Whether a JAX accelerator plugin (CUDA, ROCm: the ``jax_plugins`` namespace or entry
    points) or libtpu is installed: without one, JAX's default device is the CPU."""
    import importlib.metadata
    import importlib.util
    import pkgutil

    spec = importlib.util.find_spec("jax_plugins")
    if spec is not None and any(pkgutil.iter_modules(spec.submodule_search_locations or [])):
        return True
    if importlib.util.find_spec("libtpu") is not None:
        return True
    return bool(importlib.metadata.entry_points(group="jax_plugins"))


def jax_default_platform() -> str:
    """JAX's default platform. "cpu" without starting JAX's runtime when JAX_PLATFORMS names
    the CPU first or no accelerator plugin is installed: creating the CPU client took 0.3-1.4
    s of a 400^2 solve here, for nothing when the host solver is used."""
    import os

    platforms = os.environ.get("JAX_PLATFORMS", "").strip()
    if platforms.split(",")[0].strip() == "cpu" or (not platforms and not _accelerator_plugin_installed()):
        return "cpu"
    from ..backend import default_device

    return default_device().platform


def _check_solver(solver):
    if solver not in SOLVERS:
        raise ConfigError(f"solver must be one of {', '.join(SOLVERS)} (2-D), got {solver!r}")
    if solver == "pardiso":
        from .direct import resolve

        resolve("pardiso")  # a ConfigError when the package is missing


def _host_format(solver) -> str:
    """The sparse format to assemble in: the host direct solver's own ("csc" for SuperLU,
    "csr" for PARDISO; the device solver only multiplies with it)."""
    from .direct import preferred_format

    if solver == "device":
        return "csr"
    return preferred_format(solver if solver in ("superlu", "pardiso") else "auto")


def _solve(A, b, g, t0, at, source, incident, field_eps, solver="auto", stencil=None, progress=True):
    """Solve ``A`` for the right sides ``b`` (N, K): a direct solver on the host
    (emjax.fdfd.direct: SuperLU, or PARDISO when installed), or the block
    Thomas algorithm on JAX's device (blocksolve.py; ``"auto"`` takes it when the default
    device is a GPU and the blocks fit its memory); the result(s) with the statistics.
    ``stencil``: A's coefficients (nx, ny, 3, 3) (:func:`tm_stencil`), handed to the device
    solver as its blocks (None: it reads them out of A)."""
    from .direct import factor_solve

    t_assembled = time.perf_counter()
    B = b.reshape(g.shape[0] * g.shape[1], -1)
    use_device = solver == "device" or (solver == "auto" and jax_default_platform() != "cpu")
    note = None
    if use_device:
        from .blocksolve import BlockMemoryError, solve_block_tridiagonal  # imports JAX (~1 s)

        try:
            sol, info = solve_block_tridiagonal(A, g.shape, B, method="thomas", stencil=stencil)
            residual, factor_s, solve_s = float(info["residual"]), info["extract_s"], info["seconds"]
            name = f"block Thomas on {info['device']} (emjax.fdfd.blocksolve)"
        except BlockMemoryError as exc:
            if solver == "device":
                raise
            use_device, note = False, f"device solver skipped: {exc}"
    if not use_device:
        backend = solver if solver in ("superlu", "pardiso") else "auto"
        sol, residual, factor_s, solve_s, name = factor_solve(A, B, backend, announce=bool(progress))
    if not residual < 1e-6:
        raise ConvergenceError(
            f"FDFD: the direct solve is inaccurate (relative residual {residual:.2e}); "
            "refine the grid or report this case"
        )
    stats = {
        "residual": residual,
        "unknowns": int(A.shape[0]),
        "nnz": int(A.nnz),
        "assemble_s": t_assembled - t0,
        "factor_s": factor_s,  # the device solver: the host-side block extraction
        "solve_s": solve_s,
        "solver": name,
        "source_node": at,  # a line source's position snapped to the node it drives
    }
    if note:
        stats["note"] = note
    args = (g.x, g.y, g.frequency)
    if incident is None:
        return TMResult(*args, sol[:, 0].reshape(g.shape), None, field_eps, stats, g.pml.thickness)
    out = [
        TMResult(*args, s_.reshape(g.shape) + inc, s_.reshape(g.shape), field_eps, stats, g.pml.thickness)
        for s_, inc in zip(sol.T, incident)
    ]
    return out if isinstance(source, (list, tuple)) else out[0]


def _check_memory(shape, solver, source) -> None:
    """A grid too big for the host's direct solve refused before anything is assembled."""
    if solver == "device" or (solver == "auto" and jax_default_platform() != "cpu"):
        return  # the device solver checks its own memory (and falls back only when it fits)
    from .direct import check_host_memory

    check_host_memory(shape, len(source) if isinstance(source, (list, tuple)) else 1)


def _incident_waves(source, g: _Grid) -> list:
    X, Y = np.meshgrid(g.x, g.y, indexing="ij")
    return [_incident(w, g.omega, X, Y) for w in _plane_waves(source)]


def _bad_source(source):
    return ConfigError(f"source must be LineSource or PlaneWave2D (or a list of them), got {source!r}")


def solve_tm(
    size,
    resolution: float,
    frequency: float,
    source,
    scene=None,
    pml: SCPML | None = None,
    center=(0.0, 0.0),
    averaging: str = "subpixel",
    stencil: str = "compact",
    solver: str = "auto",
    progress: bool = True,
) -> TMResult:
    """Solve the 2-D TM problem on the region ``size = (sx, sy)`` (PML outside it) at
    ``resolution`` cells per unit length and ``frequency`` (1 / wavelength), driven by a
    :class:`LineSource` or a :class:`PlaneWave2D` (vacuum background), with a sparse direct
    solver. A list of plane waves (incidence angles) shares one factorization and returns a
    list. ``stencil``: "compact" (default; fourth-order bulk dispersion) or "yee" (the
    five-point operator); see the module docstring. ``solver``: "superlu" (host, SciPy),
    "pardiso" (host, oneMKL PARDISO: the optional package py-mkl-pardiso; emjax.fdfd.direct),
    "device" (the block Thomas algorithm on JAX's default device, emjax.fdfd.blocksolve:
    400^2 in 0.5 s on an H100) or "auto" (the device when it is a GPU and the blocks fit,
    else PARDISO when installed, else SuperLU). ``progress`` (default True): a host
    factorization that takes over a second says so on stderr (:mod:`emjax.progress`).

    Perfect conductors (``scene.PEC``): total E_z = 0 at the nodes inside; with
    ``averaging="subpixel"`` the nodes next to one take the Shortley-Weller difference to
    the surface (second order), with ``"staircase"`` nothing more (first order); see
    pec2d.py. ``eps`` in the result is inf at the nodes inside."""
    _check_stencil(stencil)
    _check_solver(solver)
    g = _grid(size, resolution, frequency, pml, center, averaging, half=False)
    _check_memory(g.shape, solver, source)
    omega, shape = g.omega, g.shape
    t0 = time.perf_counter()
    eps = node_permittivity(scene, shape, g.dx, g.origin, omega, averaging)
    inside = np.isinf(eps)  # nodes in a perfect conductor
    eps_rows = np.where(inside, 1.0, eps)  # their rows are replaced below
    yee_rows = _near(inside)  # the conductor's conformal rows are five-point
    mixed = yee_rows if yee_rows.any() else None
    # the matrix as stencil coefficients (nx, ny, 3, 3), built with NumPy from the 1-D
    # operators (the PML's stretch depends on one coordinate each); CSR straight from them
    C = tm_stencil(eps_rows, shape, g.dx, omega, g.pml, stencil, mixed)
    Einc = at = None
    if isinstance(source, LineSource):
        i, j = _source_node(source, g)
        b = np.zeros(shape, complex)
        b[i, j] = 1j * omega * complex(source.current) / g.dx**2
        if stencil == "compact" and not yee_rows[i, j]:
            b = _spread_point(b, i, j)
        b = b.reshape(-1, 1)
        at = (float(g.x[i]), float(g.y[j]))
    elif _plane_waves(source):
        Einc = _incident_waves(source, g)
        if np.any(eps[~_inner(shape, g.pml.thickness)] != 1):
            raise ConfigError("FDFD: the scene reaches the PML; enlarge size or move the objects")
        # what the scene adds to the vacuum operator: nonzero on the scene's nodes only
        b = _scene_rhs(eps_rows, Einc, omega, stencil, mixed)
    else:
        raise _bad_source(source)
    if inside.any():
        waves = _plane_waves(source)

        def boundary(X, Y):  # the scattered field on the conductor: total E_z = 0
            if not waves:
                return np.zeros((np.size(X), 1), complex)
            return np.stack([-_incident(w, omega, X, Y) for w in waves], -1)

        stretch = [(g.pml.stretch(n, g.dx, omega, False), g.pml.stretch(n, g.dx, omega, True)) for n in shape]
        subpixel = averaging == "subpixel"
        rows, _, near, rhs = tm_rows(
            inside, g.x, g.y, g.dx, scene, pec_index(scene), boundary, subpixel, stretch
        )
        taken = inside | near  # their rows: the conductor's (plus omega^2 eps at the near nodes)
        C = np.where(taken[:, :, None, None], 0.0, C) + sparse_stencil(rows, shape)
        C[:, :, 1, 1] += omega**2 * (eps_rows * near)
        b = np.where(inside.reshape(-1, 1), rhs, b + rhs)
    A = stencil_csc(C) if _host_format(solver) == "csc" else stencil_csr(C)
    return _solve(A, b, g, t0, at, source, Einc, eps, solver, stencil=C, progress=progress)


def solve_te(
    size,
    resolution: float,
    frequency: float,
    source,
    scene=None,
    pml: SCPML | None = None,
    center=(0.0, 0.0),
    averaging: str = "subpixel",
    stencil: str = "compact",
    solver: str = "auto",
    progress: bool = True,
) -> TMResult:
    """The 2-D TE problem (H_z at the cell centres, E_x and E_y on the edges):

        (D_xf (eps^-1 grad)_y + D_yf (eps^-1 grad)_x + omega^2) H_z = -i omega M_z

    (grad = (D_xb H_z on the E_y edges, D_yb H_z on the E_x edges); eps^-1 is Kottke's
    in-plane tensor, see the module docstring) with a magnetic line current M
    (:class:`LineSource`'s ``current``; in vacuum ``H_z = -(omega M / 4) H0^(1)(k rho)``) or
    a plane wave H_z = exp(i k.r) (scattered field: the right side is ``-(A - A_vacuum)
    H_inc``). ``stencil``, ``solver`` and ``progress`` as :func:`solve_tm`. Returns the same record as
    :func:`solve_tm` with ``Ez``/``Es`` holding H_z (at the cell centres: ``x``, ``y`` are
    their coordinates) and ``eps`` the E_x nodes' 1/eps.

    Perfect conductors: with ``averaging="subpixel"`` the Dey-Mittra conformal cells (1/eps
    times the open length of each edge, omega^2 times the open area of each cell), with
    ``"staircase"`` 1/eps = 0 on the edges inside (pec2d.py)."""
    _check_stencil(stencil)
    _check_solver(solver)
    g = _grid(size, resolution, frequency, pml, center, averaging, half=True)
    _check_memory(g.shape, solver, source)
    omega, shape = g.omega, g.shape
    nx, ny = shape
    t0 = time.perf_counter()
    inv_x, inv_y, off_x, off_y = _inplane_inverse(scene, shape, g.dx, g.origin, omega, averaging)
    area = np.ones(shape)  # open area fractions of the H_z cells (conformal PEC)
    pec = pec_index(scene)
    if pec is not None and averaging == "subpixel":
        lx, ly, area = te_open_fractions(scene, pec, shape, g.dx, g.origin)
        inv_x, inv_y = inv_x * lx, inv_y * ly
    # cells touching a conductor (a closed edge or a partly closed cell) keep five-point rows
    closed_x, closed_y = np.abs(inv_x) == 0, np.abs(inv_y) == 0
    if pec is not None and averaging == "subpixel":
        closed_x, closed_y = closed_x | (lx < 1), closed_y | (ly < 1)
    touch = (area < 1) | closed_x | closed_y
    touch[:, :-1] |= closed_x[:, 1:]  # the E_x edge (i, j) also borders the cell (i, j - 1)
    touch[:-1, :] |= closed_y[1:, :]  # the E_y edge (i, j) also borders the cell (i - 1, j)
    yee_rows = _near(touch)
    D = derivatives(shape, g.dx, omega, g.pml)
    # the four E_x edges around each E_y edge: (i - 1, j), (i, j), (i - 1, j + 1), (i, j + 1)
    P = (
        sp.kron(
            sp.diags([np.ones(nx), np.ones(nx - 1)], [0, -1]),
            sp.diags([np.ones(ny), np.ones(ny - 1)], [0, 1]),
        )
        / 4
    )

    def operator(ix, iy, ox, oy, cell_area):
        Kx = D["xf"] @ sp.diags(iy.ravel()) @ D["xb"]
        Ky = D["yf"] @ sp.diags(ix.ravel()) @ D["yb"]
        if np.any(ox) or np.any(oy):  # Kottke's off-diagonal: E_y from dH/dy, E_x from dH/dx
            C = (P @ sp.diags(ox.ravel()) + sp.diags(oy.ravel()) @ P) / 2  # E_x edges -> E_y edges
            Kx = Kx - D["xf"] @ C @ D["yb"]
            Ky = Ky - D["yf"] @ C.T @ D["xb"]
        # Faraday's law on the open part of each cell: the rows are multiplied by its area
        yee = (Kx + Ky + omega**2 * sp.diags(cell_area.ravel())).tocsr()
        if stencil == "yee":
            return yee
        Ax, Ay, M = _compact_parts(shape)
        return _rows(yee_rows, yee, Ay @ Kx + Ax @ Ky + omega**2 * M)

    A = operator(inv_x, inv_y, off_x, off_y, area)
    Hinc = at = None
    if isinstance(source, LineSource):
        i, j = _source_node(source, g)
        b = np.zeros(shape, complex)
        b[i, j] = -1j * omega * complex(source.current) / g.dx**2
        if stencil == "compact" and not yee_rows[i, j]:
            b = (_compact_parts(shape)[2] @ b.ravel()).reshape(shape)
        b = b.reshape(-1, 1)
        at = (float(g.x[i]), float(g.y[j]))
    elif _plane_waves(source):
        Hinc = _incident_waves(source, g)
        inner = _inner(shape, g.pml.thickness)
        if np.any((inv_x != 1) & ~inner) or np.any((inv_y != 1) & ~inner):
            raise ConfigError("FDFD: the scene reaches the PML; enlarge size or move the objects")
        # what the scene adds to the vacuum operator (for which H_inc is the source-free
        # field), each row of the vacuum operator scaled by its cell's open area as A's are
        one, zero = np.ones(shape), np.zeros(shape)
        K = A - sp.diags(area.ravel()) @ operator(one, one, zero, zero, one)
        b = np.stack([-(K @ h.ravel()) for h in Hinc], 1)
    else:
        raise _bad_source(source)
    if pec is not None:  # cells closed on all four edges (or the grid edge): total H_z = 0
        pad_x = np.pad(inv_x, ((0, 0), (0, 1)), constant_values=0)
        pad_y = np.pad(inv_y, ((0, 1), (0, 0)), constant_values=0)
        dead = ((pad_x[:, :-1] == 0) & (pad_x[:, 1:] == 0) & (pad_y[:-1] == 0) & (pad_y[1:] == 0)).ravel()
        if dead.any():
            A = sp.diags((~dead).astype(float)) @ A + sp.diags(dead.astype(float))
            inc = np.stack([h.ravel() for h in Hinc], 1) if Hinc is not None else 0.0
            b = np.where(dead[:, None], -inc, b)
    return _solve(A, b, g, t0, at, source, Hinc, inv_x, solver, progress=progress)
