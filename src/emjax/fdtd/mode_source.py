"""A unidirectional waveguide-mode source for the physical-unit FDTD.

The mode ``(e, h)`` of the source plane (:mod:`emjax.fdtd.mode_plane`, solved at the
waveform's centre frequency) is launched as the incident field of a total-field /
scattered-field plane: with the source on E plane ``i`` launching along ``s * axis``
(``s = +1`` or ``-1``), the field ``E_inc(i, t) = e w(t)``, ``H_inc(i - s/2, t) = s h w(t
+ tau)`` (the H plane half a cell behind, reached ``tau = beta_d dx / (2 omega_0)``
earlier) enters through

* an electric current ``J = (n x H_inc) / dx`` on the E plane ``i`` at ``t = (n + 1/2) dt``,
* a magnetic current ``M = -(n x E_inc) / dx`` on the H plane ``i - s/2`` at ``t = n dt``,

``n = s * axis``: the discrete surface currents ``n x H`` and ``-n x E`` that cancel the
wave behind the plane and launch it ahead. The cancellation is exact for the grid's own
mode at the centre frequency; away from it the delay ``tau`` stands for the phase
``beta_d(omega) dx / 2`` (dispersion within the band leaves a backward wave of relative
amplitude about ``|beta_d(omega) - omega tau * 2 / dx| dx / 4``: 6e-3 at +-10% on a
silicon strip at 16 cells per um). The launched mode has amplitude ``W(f)`` at the centre
frequency (unit-power mode normalization): power ``|W(f)|^2`` with ``W(f) = sum_n w((n +
1) dt) exp(2 pi i f (n + 1) dt) dt``, the DFT of the waveform as the monitors take it
(:func:`source_spectrum`); away from it the centre's profile and J/M balance launch a
little more or less (+1.8% / -2.1% in power at -10% / +10% on that strip), so spectra are
normalized by a measured incident amplitude (:func:`emjax.fdtd.s_matrix` does).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError, require_finite, require_int
from .mode_plane import plane_cells, solve
from .monitors import TANGENTIAL
from .sheets import CurrentSheet, Delayed

DIRECTIONS = ("+", "-")


def _vec3(name, value, zero_ok=False):
    from .physical_parts import _vec3 as vec3

    return vec3(name, value, positive=zero_ok, allow_zero=zero_ok)


@dataclass(frozen=True)
class ModeSource:
    """Waveguide mode ``mode`` (0: the best guided, by decreasing ``Re n_eff``) of the
    rectangle ``center, size`` (one size 0: the normal), launched along ``direction`` ("+"
    or "-": towards increasing or decreasing coordinate along the normal) with time profile
    ``waveform`` (a :class:`~emjax.fdtd.GaussianPulse`: the mode is solved at its
    ``frequency``) times ``amplitude``. Unit amplitude carries power ``|W(f)|^2`` in the mode
    (see :mod:`emjax.fdtd.mode_source`)."""

    center: tuple
    size: tuple
    direction: str = "+"
    mode: int = 0
    waveform: object = None
    amplitude: float = 1.0

    def __post_init__(self):
        object.__setattr__(self, "center", _vec3("ModeSource.center", self.center))
        size = _vec3("ModeSource.size", self.size, zero_ok=True)
        if sum(s == 0 for s in size) != 1:
            raise ConfigError(f"ModeSource.size must be 0 along exactly one axis (the normal), got {size}")
        object.__setattr__(self, "size", size)
        if self.direction not in DIRECTIONS:
            raise ConfigError(f"ModeSource.direction must be '+' or '-', got {self.direction!r}")
        require_int("ModeSource.mode", self.mode, 0, 99)
        require_finite("ModeSource.amplitude", self.amplitude)
        if not callable(self.waveform) or not hasattr(self.waveform, "frequency"):
            raise ConfigError(
                "ModeSource.waveform must be a GaussianPulse (or another waveform with a frequency)"
            )

    @property
    def axis(self) -> int:
        return self.size.index(0.0)


def sheets(sim, src: ModeSource) -> list:
    """The four :class:`CurrentSheet` of ``src`` on ``sim``'s grid (module docstring)."""
    axis, index, lo, hi = plane_cells(sim, src.center, src.size, "ModeSource")
    f0 = float(src.waveform.frequency)
    modes = solve(sim, axis, lo, hi, index, f0, src.mode + 1)
    m = src.mode
    e, h = modes.e[m].real, modes.h[m].real  # a lossless guide's transverse fields are real
    s = 1 if src.direction == "+" else -1
    dx = sim.dx
    tau = float(modes.beta_d[m]) * dx / (2 * 2 * math.pi * f0)
    shape = sim.grid.shape
    # the sheet's nodes: lo .. hi inclusive across the plane (one node on a 2-D grid's axis)
    blo = list(lo)
    bhi = [min(hi[t] + 1, shape[t]) if t != axis else index + 1 for t in range(3)]
    blo[axis] = index
    t1, t2 = TANGENTIAL[axis]
    first, second = sorted((t1, t2))

    def block(a):  # (n1 + 1, n2 + 1) in increasing axis order -> the 3-D block
        a = a[: bhi[first] - blo[first], : bhi[second] - blo[second]]
        return np.expand_dims(a, axis) * src.amplitude

    h_index = index - 1 if s > 0 else index
    if not 0 <= h_index < shape[axis]:
        raise ConfigError("ModeSource: the plane is on the grid's edge")
    # n x h with n = s a_hat: (a x h)_t1 = -h_t2, (a x h)_t2 = h_t1; H_inc = s h, so J = (a x h) / dx
    J = {t1: -h[1] / dx, t2: h[0] / dx}
    # M = -(n x E_inc) / dx = -s (a x e) / dx: M_t1 = s e_t2 / dx, M_t2 = -s e_t1 / dx
    M = {t1: s * e[1] / dx, t2: -s * e[0] / dx}
    wf_h = Delayed(src.waveform, tau)
    out = []
    for c in (t1, t2):
        out.append(CurrentSheet(axis, index, c, "E", tuple(blo), tuple(bhi), wf_h, block(J[c])))
    for c in (t1, t2):
        out.append(CurrentSheet(axis, h_index, c, "H", tuple(blo), tuple(bhi), src.waveform, block(M[c])))
    return out


def source_spectrum(waveform, dt: float, steps: int, frequencies) -> np.ndarray:
    """``W(f) = sum_n w((n + 1) dt) exp(2 pi i f (n + 1) dt) dt`` over the run's ``steps``:
    a unit-amplitude :class:`ModeSource`'s mode amplitude at each frequency."""
    import jax

    t = (np.arange(steps) + 1.0) * dt
    with jax.enable_x64(True):
        w = np.asarray(waveform(jax.numpy.asarray(t)), float)
    f = np.asarray(frequencies, float)
    return np.exp(2j * np.pi * f[:, None] * t[None, :]) @ w * dt
