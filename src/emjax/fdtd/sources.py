"""Time profiles and soft point sources.

A point source is a current ``J(t)`` on one E node: the E update there becomes
``E -= dt / eps * J(t + dt/2)`` (a "soft" source: it adds to, never overwrites, the field).
Frequencies are ``1 / wavelength`` (c = 1), times in units of length / c.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from ..errors import (
    ConfigError,
    require_finite,
    require_floats,
    require_int,
    require_length,
    require_positive,
)
from ..tracing import is_traced


@dataclass(frozen=True)
class GaussianPulse:
    """``exp(-(t - t0)^2 / (2 tau^2)) sin(2 pi f (t - t0))``, ``tau = 1 / (2 pi bandwidth)``,
    ``t0 = cutoff * tau`` (the pulse starts smoothly at t = 0)."""

    frequency: float
    bandwidth: float
    cutoff: float = 5.0

    def __post_init__(self):
        # f = 0 would be sin(0): a source that emits nothing (a silent zero result); a
        # traced frequency (jax.grad through the waveform) has no value to check here
        if not is_traced(self.frequency):
            require_positive("GaussianPulse.frequency", self.frequency)
        require_positive("GaussianPulse.bandwidth", self.bandwidth)
        require_positive("GaussianPulse.cutoff", self.cutoff)

    def __call__(self, t):
        tau = 1 / (2 * math.pi * self.bandwidth)
        s = t - self.cutoff * tau
        return jnp.exp(-(s**2) / (2 * tau**2)) * jnp.sin(2 * math.pi * self.frequency * s)


@dataclass(frozen=True)
class Ricker:
    """Ricker wavelet of peak frequency ``frequency``, centred at ``delay`` (default 1.5/f)."""

    frequency: float
    delay: float | None = None

    def __post_init__(self):
        require_positive("Ricker.frequency", self.frequency)

    def __call__(self, t):
        t0 = 1.5 / self.frequency if self.delay is None else self.delay
        a = (math.pi * self.frequency * (t - t0)) ** 2
        return (1 - 2 * a) * jnp.exp(-a)


@dataclass(frozen=True)
class ContinuousWave:
    """``sin(2 pi f t)`` switched on smoothly over ``ramp`` time units."""

    frequency: float
    ramp: float = 10.0

    def __post_init__(self):
        require_positive("ContinuousWave.frequency", self.frequency)
        require_positive("ContinuousWave.ramp", self.ramp)

    def __call__(self, t):
        x = jnp.clip(t / self.ramp, 0.0, 1.0)
        envelope = x * x * (3 - 2 * x)  # smoothstep
        return envelope * jnp.sin(2 * math.pi * self.frequency * t)


@dataclass(frozen=True)
class PointDipole:
    """A soft current source ``amplitude * waveform(t)`` on component ``component`` (0, 1, 2
    for x, y, z) of the E node with integer index ``index`` = (i, j, k)."""

    index: tuple
    component: int
    waveform: object
    amplitude: float = 1.0

    def __post_init__(self):
        require_length("PointDipole.index", self.index, 3, "(i, j, k)")
        require_int("PointDipole.component", self.component, 0, 2)
        require_finite("PointDipole.amplitude", self.amplitude)
        if not callable(self.waveform):
            raise ConfigError("PointDipole.waveform must be GaussianPulse, Ricker or ContinuousWave")

    def check(self, shape):
        for ax, (i, n) in enumerate(zip(self.index, shape)):
            require_int(f"PointDipole.index[{ax}]", i, 0, n - 1)


@dataclass(frozen=True)
class PlaneSource:
    """A soft current sheet on the whole E plane ``index`` normal to ``axis``, driving E
    component ``component`` (tangential) with ``amplitude * waveform(t)``: with periodic
    transverse boundaries it launches plane waves both ways along ``axis``."""

    axis: int
    index: int
    component: int
    waveform: object
    amplitude: float = 1.0
    k: tuple | None = None  # in-plane wavevector (rad / length): amplitude x exp(i k . r)

    def __post_init__(self):
        require_int("PlaneSource.axis", self.axis, 0, 2)
        if self.k is not None:
            k = require_floats("PlaneSource.k", self.k, "three finite numbers (kx, ky, kz)")
            if k.shape != (3,) or not np.all(np.isfinite(k)):
                raise ConfigError(f"PlaneSource.k must be three finite numbers (kx, ky, kz), got {self.k!r}")
            object.__setattr__(self, "k", tuple(float(v) for v in self.k))
        require_int("PlaneSource.component", self.component, 0, 2)
        if self.component == self.axis:
            raise ConfigError("PlaneSource.component must be tangential to the plane")
        require_finite("PlaneSource.amplitude", self.amplitude)
        if not callable(self.waveform):
            raise ConfigError("PlaneSource.waveform must be GaussianPulse, Ricker or ContinuousWave")

    def check(self, shape):
        require_int("PlaneSource.index", self.index, 0, shape[self.axis] - 1)

    @property
    def slices(self):
        idx = [slice(None)] * 3
        idx[self.axis] = self.index
        return tuple(idx)

    def profile(self, grid):
        """``exp(i k . r)`` at the driven component's nodes of the plane, or None (k not set):
        the phase a plane wave of in-plane wavevector k has there (Bloch-periodic cells)."""
        if self.k is None or not any(self.k):
            return None
        r = grid.coords(self.component)
        phase = 1.0
        for ax in range(3):
            if ax == self.axis:
                continue
            shape = [1, 1, 1]
            shape[ax] = grid.shape[ax]
            phase = phase * np.exp(1j * self.k[ax] * r[ax]).reshape(shape)
        return np.squeeze(np.broadcast_to(phase, grid.shape)[self.slices])
