"""Waveguide modes of the 2-D TM FDFD: a one-way mode source and mode amplitudes.

The modes are the discrete operator's own. Write the rows of the TM operator ``A`` (the
stencil of :func:`emjax.fdfd.solve_tm`, "yee" or "compact") on a line of nodes ``i``
across the guide, which is uniform along the propagation axis there, as ``C_1 E_(i-1) +
C_0 E_i + C_1 E_(i+1) = 0`` (``C_0``, ``C_1`` banded matrices over the transverse nodes of
the line's window, zero beyond it: PEC walls). A wave ``E_i = e lambda^i`` solves it when
``C_0 e = -(lambda + 1 / lambda) C_1 e``, a generalized eigenproblem in ``mu = lambda + 1 /
lambda = 2 cos(beta dx)``; the modes are ordered by decreasing ``Re beta`` (the best
guided first), ``lambda = exp(i beta dx)`` for the one going towards +axis.

**Source** (:class:`ModeSource2D`). The mode is the incident field of a total-field /
scattered-field line: with ``x`` the incident wave (``e`` on the source line, ``e /
lambda`` one node behind it) and ``Q`` the total-field side, the right side is ``b = A Q x
- Q A x``, nonzero on the two lines around the source. Behind it the field is exactly zero
for the operator's own mode (to the mode's decay at the window's edges), ahead of it the
mode has amplitude ``amplitude``.

**Amplitudes** (:func:`mode_amplitudes`). The field on the lines ``i`` and ``i + 1``,
projected onto each mode with ``C_1`` (the modes are ``C_1``-orthogonal), gives ``a^+ +
a^-`` and ``a^+ lambda + a^- / lambda``. The modes are normalized to unit power: the flux of
the discrete scheme between two lines, ``P = Im(E_i^H C_1 E_(i+1)) dx^2 / (2 omega)``
(the same on every pair of lines of a lossless uniform guide; for the Yee stencil
``C_1 = 1 / dx^2`` and it is the midpoint Poynting flux ``-(1/2) Re sum E_z H_y^* dx``), so
``|a|^2`` is the power a mode carries (per unit length along z).

**Gradients.** :func:`emjax.fdfd.solve_tm` of a scene holding JAX tracers (a design region's
permittivities, a polygon's vertices) with a :class:`ModeSource2D` is differentiable, and so
are :func:`mode_amplitudes` of its result: the source's right side and the lines' modes are
those of the scene's values, held fixed (no derivative), which is exact where the design
does not reach the lines; a traced object within two nodes of a source's or monitor's line
is refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla

from ..errors import ConfigError, require_finite, require_int

AXES = {"x": 0, "y": 1}


@dataclass(frozen=True)
class ModeSource2D:
    """Mode ``mode`` (0: the best guided) of the guide crossing the line through ``center``
    (x, y) normal to ``axis`` ("x" or "y": the propagation axis), ``size`` long (the
    window: the field is 0 beyond it), launched towards ``direction`` ("+" or "-") with
    complex ``amplitude`` (unit power for 1) by :func:`emjax.fdfd.solve_tm`."""

    center: tuple
    size: float
    axis: str = "x"
    direction: str = "+"
    mode: int = 0
    amplitude: complex = 1.0

    def __post_init__(self):
        try:
            c = tuple(float(v) for v in self.center)
        except (TypeError, ValueError):
            c = ()
        if len(c) != 2 or not all(math.isfinite(v) for v in c):
            raise ConfigError(f"ModeSource2D.center must be two finite numbers (x, y), got {self.center!r}")
        object.__setattr__(self, "center", c)
        if not require_finite("ModeSource2D.size", self.size) > 0:
            raise ConfigError(f"ModeSource2D.size must be > 0, got {self.size!r}")
        if self.axis not in AXES:
            raise ConfigError(f"ModeSource2D.axis must be 'x' or 'y', got {self.axis!r}")
        if self.direction not in ("+", "-"):
            raise ConfigError(f"ModeSource2D.direction must be '+' or '-', got {self.direction!r}")
        require_int("ModeSource2D.mode", self.mode, 0, 999)
        a = complex(self.amplitude)
        if not (math.isfinite(a.real) and math.isfinite(a.imag)) or a == 0:
            raise ConfigError(f"ModeSource2D.amplitude must be finite and nonzero, got {self.amplitude!r}")


def _view(C, axis: int):
    """The stencil (n_axis, n_other, 3, 3) with the propagation axis first."""
    return C if axis == 0 else np.transpose(C, (1, 0, 3, 2))


def _line(x, y, dx, center, size, axis: int, what: str) -> tuple:
    """``(i, lo, hi)``: the node line nearest ``center`` normal to ``axis`` and its window
    of transverse nodes ``lo .. hi - 1``."""
    along, across = (x, y) if axis == 0 else (y, x)
    c_al, c_ac = center[axis], center[1 - axis]
    i = int(np.argmin(np.abs(along - c_al)))
    if abs(along[i] - c_al) > dx or i < 2 or i > len(along) - 3:
        raise ConfigError(f"{what}: the line at {'xy'[axis]} = {c_al:g} is outside the grid (or on its edge)")
    inside = np.nonzero(np.abs(across - c_ac) <= size / 2 + 1e-9 * dx)[0]
    if len(inside) < 3:
        raise ConfigError(f"{what}: size {size:g} spans fewer than 3 nodes")
    return i, int(inside[0]), int(inside[-1]) + 1


def _blocks(Cv, i: int, lo: int, hi: int):
    """``(C_m, C_0, C_p)``: row line ``i``'s couplings to lines ``i - 1``, ``i``, ``i + 1``
    over the window (dense; couplings beyond it dropped)."""
    n = hi - lo
    out = []
    for di in range(3):
        M = np.zeros((n, n), complex)
        for dj in range(3):
            k = np.arange(n)
            col = k + dj - 1
            ok = (col >= 0) & (col < n)
            M[k[ok], col[ok]] = Cv[i, lo + k[ok], di, dj]
        out.append(M)
    return out


def line_modes(Cv, i, lo, hi, dx, omega, num_modes, what):
    """``(e (M, n), lam (M,))``: the operator's modes on line ``i`` (module docstring), unit
    power, towards +axis, by decreasing ``Re beta``."""
    Cm, C0, Cp = _blocks(Cv, i, lo, hi)
    scale = max(np.abs(Cp).max(), 1e-300)
    Cm2, C02, Cp2 = _blocks(Cv, i + 1, lo, hi)
    same = [np.allclose(a, b, atol=1e-9 * scale) for a, b in ((Cm, Cp), (Cm2, Cm), (C02, C0))]
    if not all(same):
        raise ConfigError(
            f"{what}: the guide must be uniform along the propagation axis within a cell of the "
            "line (and the line outside the PML along that axis)"
        )
    mu, vec = sla.eig(C0, -Cp)
    beta = np.arccos(np.asarray(mu, complex) / 2) / dx
    beta = np.where(beta.real < 0, -beta, beta)
    # beta dx near pi: the grid's sawtooth (no mode of the guide at any sane resolution)
    keep = np.nonzero(np.isfinite(beta) & (beta.real * dx < 0.5 * math.pi))[0]
    order = keep[np.argsort(-beta.real[keep])][:num_modes]
    if len(order) < num_modes:
        raise ConfigError(f"{what}: the window has fewer than {num_modes} modes")
    lam = np.exp(1j * beta[order] * dx)
    e = vec[:, order].T.astype(complex)
    for m in range(len(e)):
        e[m] /= e[m][np.argmax(np.abs(e[m]))] / abs(e[m]).max()  # largest value real, positive
        p = np.imag(e[m].conj() @ Cp @ (lam[m] * e[m])) * dx * dx / (2 * omega)
        if not p > 0:
            raise ConfigError(f"{what}: mode {m} carries no power along the axis (not guided)")
        e[m] /= math.sqrt(p)
    return e, lam


def _check_fixed(traced, i: int, lo: int, hi: int, axis: int, what: str, coord: float) -> None:
    """Refuse a line whose mode is held fixed (a traced solve) where a traced object comes
    within two nodes of it (``traced``: :func:`emjax.fdfd.scene_traced.traced_nodes`)."""
    if traced is None:
        return
    t = traced if axis == 0 else traced.T
    if np.any(t[max(i - 2, 0) : i + 3, lo:hi]):
        raise ConfigError(
            f"{what}: the line at {'xy'[axis]} = {coord:g} is within two nodes of an object with "
            "traced parameters (jax.grad), but the mode profile there is held fixed (no "
            "derivative): keep the design region away from mode sources and monitors"
        )


def mode_rhs(C, g, src: ModeSource2D, traced=None) -> np.ndarray:
    """The right side (nx, ny) of :func:`emjax.fdfd.solve_tm` for ``src`` (module docstring).
    ``traced``: the nodes a traced solve differentiates (the line must keep off them)."""
    axis = AXES[src.axis]
    i, lo, hi = _line(g.x, g.y, g.dx, src.center, src.size, axis, "ModeSource2D")
    _check_fixed(traced, i, lo, hi, axis, "ModeSource2D", src.center[axis])
    Cv = _view(C, axis)
    e, lam = line_modes(Cv, i, lo, hi, g.dx, g.omega, src.mode + 1, "ModeSource2D")
    e, lam = e[src.mode] * complex(src.amplitude), lam[src.mode]
    Cm, _, Cp = _blocks(Cv, i, lo, hi)
    b = np.zeros(Cv.shape[:2], complex)
    s = 1 if src.direction == "+" else -1
    behind = i - s  # the scattered-field line next to the source: x there is e / lam
    # row i (total field) loses its coupling to the scattered side, row i - s gains one
    b[i, lo:hi] = -(Cm if s > 0 else Cp) @ (e / lam)
    Cb_m, _, Cb_p = _blocks(Cv, behind, lo, hi)
    b[behind, lo:hi] = (Cb_p if s > 0 else Cb_m) @ e
    return b if axis == 0 else b.T


def mode_amplitudes(result, center, size: float, axis: str = "x", modes=(0,)):
    """``(n_modes, 2)`` complex amplitudes (towards +axis, towards -axis) of the modes
    ``modes`` on the line through ``center`` normal to ``axis`` in a
    :func:`emjax.fdfd.solve_tm` result driven by a :class:`ModeSource2D` (it keeps the
    operator); ``|a|^2`` is power (module docstring).

    A NumPy array, or a JAX array where the solve was differentiated (a scene with traced
    parameters under ``jax.grad``): the amplitudes are then JAX functions of ``Ez`` with the
    line's modes held fixed (those of the scene's values), exact where no traced object
    comes within two nodes of the line (else a ConfigError)."""
    from ..tracing import is_traced

    if getattr(result, "stencil", None) is None:
        raise ConfigError(
            "mode_amplitudes needs a solve_tm result driven by a ModeSource2D (it keeps the operator)"
        )
    if axis not in AXES:
        raise ConfigError(f"axis must be 'x' or 'y', got {axis!r}")
    try:
        idx = [int(m) for m in modes]
    except (TypeError, ValueError):
        idx = [-1]
    if not idx or min(idx) < 0:
        raise ConfigError(f"modes must be mode indices >= 0, got {modes!r}")
    ax = AXES[axis]
    dx = float(result.x[1] - result.x[0])
    omega = 2 * math.pi * result.frequency
    i, lo, hi = _line(result.x, result.y, dx, tuple(center), float(size), ax, "mode_amplitudes")
    _check_fixed((result.stats or {}).get("traced_nodes"), i, lo, hi, ax, "mode_amplitudes", center[ax])
    Cv = _view(result.stencil, ax)
    if is_traced(result.Ez):
        import jax.numpy as xp
    else:
        xp = np
    E = xp.asarray(result.Ez)
    E = E if ax == 0 else E.T
    e, lam = line_modes(Cv, i, lo, hi, dx, omega, max(idx) + 1, "mode_amplitudes")
    _, _, Cp = _blocks(Cv, i, lo, hi)
    out = []
    for m in idx:
        row = e[m] @ Cp / (e[m] @ Cp @ e[m])
        c0 = xp.asarray(row) @ E[i, lo:hi]
        c1 = xp.asarray(row) @ E[i + 1, lo:hi]
        # a+ + a- = c0, a+ lam + a- / lam = c1
        lm = lam[m]
        a_plus = (c1 - c0 / lm) / (lm - 1 / lm)
        out.append(xp.stack([a_plus, c0 - a_plus]))
    return xp.stack(out)
