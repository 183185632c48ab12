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

import dataclasses
import time

import numpy as np
import scipy.sparse as sp

from ..errors import ConfigError
from .grid2d import _bad_source, _grid, _incident, _incident_waves, _inner, _plane_waves, _source_node
from .modes2d import ModeSource2D, mode_rhs
from .operators import SCPML, derivatives
from .pec2d import pec_index, te_open_fractions, tm_rows
from .permittivity2d import _inplane_inverse, node_permittivity, traced_scene
from .scene_traced import solve_te_traced, solve_tm_traced
from .solve2d import _check_memory, _check_solver, _host_format, _solve
from .specs2d import LineSource, PlaneWave2D, TMResult
from .stencil2d import (
    _check_stencil,
    _compact_parts,
    _near,
    _rows,
    _scene_rhs,
    _spread_point,
    sparse_stencil,
    stencil_csc,
    stencil_csr,
    tm_stencil,
)

__all__ = ["LineSource", "PlaneWave2D", "TMResult", "solve_te", "solve_tm"]


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
    symmetry=(0, 0),
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
    pec2d.py. ``eps`` in the result is inf at the nodes inside.

    ``symmetry = (sx, sy)``: mirror planes through ``center`` (0 none, -1 odd: a PEC plane,
    +1 even: a PMC plane; E_z has the value's parity); the solve runs on the upper half per
    plane and the field comes back on the whole grid (:mod:`emjax.fdfd.symmetry`)."""
    _check_stencil(stencil)
    _check_solver(solver)
    g = _grid(size, resolution, frequency, pml, center, averaging, half=False)
    _check_memory(g.shape, solver, source)
    fd = _fold(g, symmetry, False, scene)
    if traced_scene(scene):  # jax.grad over a material: JAX arrays, the adjoint solve
        return solve_tm_traced(g, source, scene, averaging, stencil, solver)
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
    elif isinstance(source, ModeSource2D):  # a waveguide mode, one way (modes2d.py)
        b = mode_rhs(C, g, source).reshape(-1, 1)
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
    _check_parity(fd, b, Einc)
    result = _solve(A, b, g, t0, at, source, Einc, eps, solver, stencil=C, progress=progress, fold=fd)
    if isinstance(source, ModeSource2D):  # kept for modes2d.mode_amplitudes
        result = dataclasses.replace(result, stencil=C)
    return result


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
    symmetry=(0, 0),
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
    ``symmetry`` as :func:`solve_tm`'s (the value is E's parity: H_z takes its opposite).

    Perfect conductors: with ``averaging="subpixel"`` the Dey-Mittra conformal cells (1/eps
    times the open length of each edge, omega^2 times the open area of each cell), with
    ``"staircase"`` 1/eps = 0 on the edges inside (pec2d.py)."""
    _check_stencil(stencil)
    _check_solver(solver)
    g = _grid(size, resolution, frequency, pml, center, averaging, half=True)
    _check_memory(g.shape, solver, source)
    fd = _fold(g, symmetry, True, scene)
    if traced_scene(scene):  # jax.grad over a material: JAX arrays, the adjoint solve
        return solve_te_traced(g, source, scene, averaging, stencil, solver)
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
    _check_parity(fd, b, Hinc)
    return _solve(A, b, g, t0, at, source, Hinc, inv_x, solver, progress=progress, fold=fd)


def _fold(g, symmetry, te, scene):
    """The mirror fold of the grid (None without symmetry; emjax.fdfd.symmetry)."""
    from .symmetry import check_values, fold

    if not any(check_values(symmetry)):
        return None
    if traced_scene(scene):
        raise ConfigError("symmetry: not available with a traced scene (jax.grad); set symmetry = (0, 0)")
    return fold(g, symmetry, te, scene)


def _check_parity(fd, b, incident) -> None:
    if fd is not None:
        fd.check_sources(None if incident is None else [w.ravel() for w in incident], b)
