"""``modes.solve``: the guided (or leaky) modes of a cross-section given as pixels of
permittivity, and the driver shared with the scene form."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..errors import (
    ConfigError,
    ResourceError,
    is_one_of,
    require_finite,
    require_floats,
    require_int,
    require_positive,
)
from ..tracing import is_traced
from .eigen import check_converged, eigenmodes, fields, left_vector, operator, section, to_centers, weights
from .grid import PML, WALLS, axis, node_permittivity
from .results import ModeResult

__all__ = ["solve"]

#: relative frequency step of the centred difference of the operator (group index)
GROUP_STEP = 1e-4
#: the shift sits this much (relative) above (k0 n_max)^2: a mode at exactly n_max (a TEM
#: mode between PMC walls) would make the shifted matrix singular
SHIFT_MARGIN = 1e-6


def _walls(boundary) -> tuple:
    if isinstance(boundary, str):
        boundary = (boundary,) * 4
    if isinstance(boundary, (tuple, list)) and len(boundary) == 4:
        if all(isinstance(b, str) and b.lower() in WALLS for b in boundary):
            return tuple(b.lower() for b in boundary)
    raise ConfigError(
        f"boundary must be 'pec', 'pmc' or four of them (x_low, x_high, y_low, y_high), got {boundary!r}"
    )


def _pixels(eps) -> np.ndarray:
    if is_traced(eps):
        raise ConfigError(
            "eps is a JAX tracer (jax.grad, jax.jit or jax.vmap): the mode solver works on the "
            "host (scipy's eigs) and is not differentiable; give it a concrete array"
        )
    a = require_floats("eps", eps, "an (nx, ny) or (3, nx, ny) array of relative permittivity", complex)
    if a.ndim == 2:
        a = np.broadcast_to(a, (3, *a.shape))
    if a.ndim != 3 or a.shape[0] != 3:
        raise ConfigError(f"eps must be an (nx, ny) or (3, nx, ny) array, got shape {np.shape(eps)}")
    if min(a.shape[1:]) < 3:
        raise ConfigError(f"eps must have at least 3 cells along each axis, got shape {a.shape[1:]}")
    if not np.all(np.isfinite(a)):
        raise ConfigError("eps must be finite everywhere (no NaN or Inf)")
    if np.any(a.imag < 0):
        raise ConfigError(
            "eps must have Im >= 0 everywhere (exp(-i omega t): absorption), got a negative imaginary part"
        )
    if np.any(a == 0):
        raise ConfigError("eps must be nonzero everywhere (E_z = D_z / eps_zz)")
    return np.array(a)


def check_options(shape, resolution, frequency, num_modes, boundary, pml, bend_radius, bend_axis, n_guess):
    """Validate the options shared by :func:`solve` and the scene form; returns the
    normalized ``(num_modes, walls, pml_sides, reflection, bend_radius, n_guess)``."""
    require_positive("resolution", resolution)
    require_positive("frequency", frequency)
    nx, ny = shape
    num_modes = require_int(
        "num_modes", num_modes, 1, 2 * nx * ny - 2 * (nx + ny) - 2, why="at most the unknowns - 2"
    )
    walls = _walls(boundary)
    if pml is None:
        sides, reflection = (0, 0, 0, 0), 1e-8
    elif isinstance(pml, PML):
        pml.check()
        sides, reflection = pml.sides(), pml.reflection
    else:
        raise ConfigError(f"pml must be None or an emjax.modes.PML, got {pml!r}")
    for (lo, hi), n, name in (((sides[0], sides[1]), nx, "x"), ((sides[2], sides[3]), ny, "y")):
        if lo + hi > n - 2:
            raise ConfigError(
                f"PML.thickness along {name} ({lo} + {hi} cells) must leave >= 2 of the {n} cells"
            )
    if not is_one_of(bend_axis, (0, 1)):
        raise ConfigError(f"bend_axis must be 0 (x) or 1 (y), got {bend_axis!r}")
    if bend_radius is not None:
        r = require_finite("bend_radius", bend_radius)
        half = (shape[bend_axis] / resolution) / 2
        if abs(r) <= half:
            raise ConfigError(
                f"bend_radius must be None or a number with |R| > {half:g} (half the section along "
                f"bend_axis), got {bend_radius!r}"
            )
        bend_radius = r
    if n_guess is not None:
        n_guess = require_positive("n_guess", n_guess)
    return num_modes, walls, sides, reflection, bend_radius, n_guess


def check_memory(shape, num_modes: int) -> None:
    """Refuse (:class:`ResourceError`) a section whose sparse LU would not fit the host's
    available memory, before anything is assembled. The model: about 5.5 log2(N) nonzeros of
    fill per unknown (measured 77 per unknown at N = 15820 with the minimum-degree ordering,
    nested-dissection growth), 24 bytes each, twice for the work space, plus the operators
    (~40 nonzeros per row in all) and the Arnoldi basis."""
    from ..hostinfo import host_available_bytes

    n = 2 * shape[0] * shape[1]
    ncv = max(2 * num_modes + 1, 20)
    need = int(2 * 24 * 5.5 * math.log2(max(n, 2)) * n + 24 * 40 * n + 16 * n * (ncv + 2 * num_modes))
    have = host_available_bytes()
    if need > 0.9 * have:
        raise ResourceError(
            f"modes: the section of {shape[0]} x {shape[1]} cells ({n} unknowns) needs about "
            f"{need / 2**30:.1f} GiB of host memory for its sparse LU; {have / 2**30:.1f} GiB "
            "available (a coarser resolution or a smaller section)"
        )


def _bend(eps_nodes, shape, d, bend_radius, bend_axis):
    """Conformal map of a bend of radius R about an axis at distance R from the section's
    centre: eps -> eps (1 + u / R)^2, u the coordinate along ``bend_axis`` from the centre."""
    if bend_radius is None:
        return eps_nodes
    n = shape[bend_axis]
    ints = (np.arange(n + 1) - n / 2) * d
    halves = (np.arange(n) + 0.5 - n / 2) * d
    out = []
    for c, e in enumerate(eps_nodes):
        # along x: E_x nodes at half positions, E_y and E_z at integer ones; along y alike
        u = halves if c == bend_axis else ints
        f = (1.0 + u / bend_radius) ** 2
        out.append(e * (f[:, None] if bend_axis == 0 else f[None, :]))
    return tuple(out)


def run(
    shape: tuple,
    resolution: float,
    frequency: float,
    eps_nodes_at: Callable,
    num_modes: int,
    walls: tuple,
    sides: tuple,
    reflection: float,
    bend_radius,
    bend_axis: int,
    n_guess,
    group_index: bool,
    origin=(0.0, 0.0),
) -> ModeResult:
    """Solve the section whose node permittivities (E_x, E_y, E_z full grids) at angular
    frequency ``omega`` are ``eps_nodes_at(omega)``."""
    check_memory(shape, num_modes)
    d = 1.0 / resolution
    k0 = 2 * np.pi * frequency
    nodes = _bend(eps_nodes_at(k0), shape, d, bend_radius, bend_axis)
    n_max = max(float(np.max(np.sqrt(e.astype(complex)).real)) for e in nodes)
    n_pml = max(n_max, 1.0)
    ax = axis(shape[0], d, walls[:2], sides[:2], k0, n_pml, reflection)
    ay = axis(shape[1], d, walls[2:], sides[2:], k0, n_pml, reflection)
    sec = section(ax, ay, nodes)
    n_shift = n_guess if n_guess is not None else n_max * (1 + SHIFT_MARGIN)
    beta, vec, ops, P = eigenmodes(sec, k0, num_modes, (k0 * n_shift) ** 2)
    check_converged(beta, f"frequency {frequency:g}")
    # by Re n_eff (to 1e-12: rounding does not reorder), evanescent ones by their decay
    order = np.lexsort((np.abs(beta.imag), -np.round(beta.real / k0, 12)))
    beta, vec = beta[order], vec[:, order]
    w_ex, w_ey = weights(ax, ay)
    E_yee, H_yee, Ec, Hc = [], [], [], []
    te, area = [], []
    for m in range(len(beta)):
        f = fields(sec, k0, beta[m], vec[:, m], ops, P)
        E_yee.append(f["E"])
        H_yee.append(f["H"])
        ec, hc = to_centers(f["E"], f["H"])
        Ec.append(ec)
        Hc.append(hc)
        px, py = np.sum(w_ex * abs(f["E"][0]) ** 2), np.sum(w_ey * abs(f["E"][1]) ** 2)
        te.append(px / (px + py))
        i2 = np.sum(abs(ec) ** 2, axis=0)
        area.append(np.sum(i2) ** 2 / np.sum(i2**2) * d * d)
    n_eff = beta / k0
    ng = np.full(len(beta), np.nan)
    if group_index:
        ng = _group_index(shape, d, k0, eps_nodes_at, bend_radius, bend_axis, ax, ay, beta, vec, P)
    x = origin[0] + (np.arange(shape[0]) + 0.5) * d
    y = origin[1] + (np.arange(shape[1]) + 0.5) * d
    return ModeResult(
        n_eff=n_eff,
        group_index=ng,
        te_fraction=np.array(te),
        effective_area=np.array(area),
        E=np.array(Ec),
        H=np.array(Hc),
        x=x,
        y=y,
        E_yee=tuple(np.array([e[c] for e in E_yee]) for c in range(3)),
        H_yee=tuple(np.array([h[c] for h in H_yee]) for c in range(3)),
        eps_yee=tuple(np.array(e) for e in nodes),
        frequency=float(frequency),
        resolution=float(resolution),
        origin=(float(origin[0]), float(origin[1])),
        boundary=walls,
        pml=sides,
        bend_radius=bend_radius,
        bend_axis=bend_axis,
    )


def _group_index(shape, d, k0, eps_nodes_at, bend_radius, bend_axis, ax, ay, beta, vec, P):
    """``n_g = Re d beta / d k0`` by first-order perturbation of ``A e = beta^2 e``:
    ``d beta^2 / d k0 = y^T A' e / y^T e`` with the left eigenvector ``y`` from the mode's H
    (:func:`emjax.modes.eigen.left_vector`, exact for the Yee system, PML and losses included)
    and ``A'`` the centred difference of the matrix over a relative step :data:`GROUP_STEP`
    (the permittivities re-evaluated there: a dispersive material's dispersion enters; the
    PML stretch stays that of ``k0``). No further eigen solve."""
    mats = []
    for sgn in (-1.0, 1.0):
        k = k0 * (1 + sgn * GROUP_STEP)
        sec = section(ax, ay, _bend(eps_nodes_at(k), shape, d, bend_radius, bend_axis))
        mats.append(operator(sec, k)[0])
    dA = (mats[1] - mats[0]) / (2 * k0 * GROUP_STEP)
    sec0 = section(ax, ay, _bend(eps_nodes_at(k0), shape, d, bend_radius, bend_axis))
    out = []
    for m in range(len(beta)):
        e = vec[:, m]
        y = left_vector(sec0, (P @ e) / beta[m])
        out.append(((y @ (dA @ e)) / (y @ e)) / (2 * beta[m]))
    return np.real(np.array(out))


def solve(
    eps,
    resolution: float,
    frequency: float,
    num_modes: int = 1,
    *,
    boundary="pec",
    pml: PML | None = None,
    bend_radius: float | None = None,
    bend_axis: int = 0,
    n_guess: float | None = None,
    group_index: bool = True,
) -> ModeResult:
    """Full-vector eigenmodes of a waveguide cross-section on the Yee grid.

    Parameters
    ----------
    eps : (nx, ny) or (3, nx, ny) array
        Relative permittivity of each cell (complex allowed, ``Im >= 0``); ``(3, nx, ny)``
        gives the diagonal entries ``(eps_xx, eps_yy, eps_zz)`` of an anisotropic medium.
        Cell ``(i, j)`` covers ``[i, i + 1] x [j, j + 1] / resolution``; z is the propagation
        axis.
    resolution : float
        Cells per unit length.
    frequency : float
        ``c / wavelength`` in 1 / (the length unit) (natural units, c = 1).
    num_modes : int
        How many modes: those of largest ``Re n_eff`` (nearest ``n_guess``, if given).
    boundary : 'pec', 'pmc' or (x_low, x_high, y_low, y_high)
        The walls on the section's edges (behind the PML if there is one).
    pml : emjax.modes.PML or None
        An absorbing layer over the outermost cells (open, leaky and radiating modes).
    bend_radius, bend_axis : float or None, 0 or 1
        A bend of radius R (measured to the section's centre, positive: the bend's centre on
        the low side of ``bend_axis``) by the conformal map ``eps (1 + u / R)^2``; ``n_eff``
        then refers to the arc at radius R.
    n_guess : float or None
        Look for modes near this effective index instead of the section's largest index.
    group_index : bool
        Compute the group index ``d beta / d k0`` (two more eigen solves; NaN if False).

    Returns
    -------
    ModeResult
        Modes in order of decreasing ``Re n_eff``: complex ``n_eff``, ``group_index``,
        ``te_fraction``, ``effective_area``, ``E`` and ``H`` (natural units: H times the
        impedance of free space) on the cell centres, normalized to unit power
        ``(1/2) Re int (E x H*) . z dA = 1``, and the same fields on their Yee nodes.
    """
    pixels = _pixels(eps)
    shape = pixels.shape[1:]
    num_modes, walls, sides, reflection, bend_radius, n_guess = check_options(
        shape, resolution, frequency, num_modes, boundary, pml, bend_radius, bend_axis, n_guess
    )
    nodes = node_permittivity(pixels)
    return run(
        shape,
        float(resolution),
        float(frequency),
        lambda omega: nodes,
        num_modes,
        walls,
        sides,
        reflection,
        bend_radius,
        bend_axis,
        n_guess,
        bool(group_index),
    )
