"""The parts of a physical-units FDTD problem (:mod:`emjax.fdtd.physical`): its sources
(plane wave, dipole, plane current) and monitors (flux box and plane, field plane, cross
sections), checked as they are made. :mod:`.physical`, the mode sources and monitors and
the mirror symmetries build on them."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError, is_one_of, require_floats
from ..scattering import PlaneWave

AXIS = {"x": 0, "y": 1, "z": 2, 0: 0, 1: 1, 2: 2}


def _vec3(name: str, value, positive: bool = False, allow_zero: bool = False) -> tuple:
    try:
        v = tuple(float(x) for x in value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be three numbers, got {value!r}") from None
    if len(v) != 3 or not all(math.isfinite(x) for x in v):
        raise ConfigError(f"{name} must be three finite numbers, got {value!r}")
    if positive and any(x < 0 or (x == 0 and not allow_zero) for x in v):
        raise ConfigError(f"{name} must be > 0{' (or 0)' if allow_zero else ''} on every axis, got {v}")
    return v


@dataclass(frozen=True)
class PlaneWaveSource:
    """A plane wave filling the total-field box ``center, size`` (TF/SF): along ``direction``,
    E along ``polarization`` (real, unit amplitude), time profile ``waveform``. Objects must
    lie inside the box; outside it only their scattered field remains."""

    center: tuple
    size: tuple
    direction: tuple = (0.0, 0.0, 1.0)
    polarization: tuple = (1.0, 0.0, 0.0)
    waveform: object = None

    def __post_init__(self):
        object.__setattr__(self, "center", _vec3("PlaneWaveSource.center", self.center))
        object.__setattr__(self, "size", _vec3("PlaneWaveSource.size", self.size, positive=True))
        try:
            wave = PlaneWave(self.direction, self.polarization)
        except ValueError as exc:
            raise ConfigError(f"PlaneWaveSource: {exc}") from exc
        object.__setattr__(self, "direction", tuple(float(x) for x in wave.direction))
        object.__setattr__(self, "polarization", tuple(float(np.real(x)) for x in wave.polarization))
        if not callable(self.waveform):
            raise ConfigError("PlaneWaveSource.waveform must be GaussianPulse, Ricker or ContinuousWave")


@dataclass(frozen=True)
class Dipole:
    """A point current ``amplitude * waveform(t)`` along ``component`` ("x", "y", "z") at
    ``position`` (snapped to the nearest node of that E component)."""

    position: tuple
    component: object = "z"
    waveform: object = None
    amplitude: float = 1.0

    def __post_init__(self):
        object.__setattr__(self, "position", _vec3("Dipole.position", self.position))
        if not is_one_of(self.component, AXIS):
            raise ConfigError(f"Dipole.component must be x, y or z, got {self.component!r}")
        if not callable(self.waveform):
            raise ConfigError("Dipole.waveform must be GaussianPulse, Ricker or ContinuousWave")


@dataclass(frozen=True)
class PlaneCurrent:
    """A current sheet filling the plane ``axis = position`` of a periodic or Bloch cell,
    along ``polarization`` (its tangential part is driven), time profile ``waveform``: plane
    waves both ways along the axis. Under ``Bloch(k)`` transverse boundaries the sheet carries
    ``exp(i k . r)``, so it launches the oblique wave of in-plane wavevector k (at frequency f
    the angle is asin(|k| / 2 pi f)). Normalize by a run without the structure
    (:meth:`Result.flux_difference` for the reflected power)."""

    position: float
    axis: object = "z"
    polarization: tuple = (1.0, 0.0, 0.0)
    waveform: object = None
    amplitude: float = 1.0

    def __post_init__(self):
        if not is_one_of(self.axis, AXIS):
            raise ConfigError(f"PlaneCurrent.axis must be x, y or z, got {self.axis!r}")
        p = _vec3("PlaneCurrent.polarization", self.polarization)
        a = AXIS[self.axis]
        if all(abs(v) == 0 for i, v in enumerate(p) if i != a):
            raise ConfigError("PlaneCurrent.polarization needs a component along the plane")
        object.__setattr__(self, "polarization", p)
        if not callable(self.waveform):
            raise ConfigError("PlaneCurrent.waveform must be GaussianPulse, Ricker or ContinuousWave")


@dataclass(frozen=True)
class FluxBox:
    """Outward flux spectra through the closed box ``center, size`` at ``frequencies``
    (1 / wavelength). Around a TF/SF source: enclosing its box, the scattered power; inside
    it, minus the absorbed power."""

    center: tuple
    size: tuple
    frequencies: tuple
    name: str = "box"

    def __post_init__(self):
        object.__setattr__(self, "center", _vec3("FluxBox.center", self.center))
        object.__setattr__(self, "size", _vec3("FluxBox.size", self.size, positive=True))
        object.__setattr__(self, "frequencies", _frequencies("FluxBox.frequencies", self.frequencies))


@dataclass(frozen=True)
class FluxPlane:
    """Flux spectra (towards +axis) through the rectangle ``center, size`` (one size 0: the
    plane's normal) at ``frequencies``."""

    center: tuple
    size: tuple
    frequencies: tuple
    name: str = "plane"

    def __post_init__(self):
        object.__setattr__(self, "center", _vec3("FluxPlane.center", self.center))
        size = _vec3("FluxPlane.size", self.size, positive=True, allow_zero=True)
        if sum(s == 0 for s in size) != 1:
            raise ConfigError(f"FluxPlane.size must be 0 along exactly one axis (the normal), got {size}")
        object.__setattr__(self, "size", size)
        object.__setattr__(self, "frequencies", _frequencies("FluxPlane.frequencies", self.frequencies))

    @property
    def axis(self) -> int:
        return self.size.index(0.0)


@dataclass(frozen=True)
class FieldPlane(FluxPlane):
    """The complex amplitudes of all six field components on the rectangle ``center, size``
    (one size 0: the plane's normal) at ``frequencies``, at the grid's nodes in it (each
    component averaged to the node from its Yee positions): :meth:`Result.field_plane`.
    Under a :class:`PlaneWaveSource` the field is the total one inside its box and the
    scattered one outside."""

    name: str = "fields"


@dataclass(frozen=True)
class CrossSections:
    """Csca, Cabs and Cext spectra of what a :class:`PlaneWaveSource` lights: two flux boxes
    are placed for you, ``gap_out`` cells outside the TF/SF box (scattered power) and
    ``gap_in`` cells inside it (absorbed power), and normalized by the incident intensity."""

    frequencies: tuple
    gap_out: int = 3
    gap_in: int = 2

    def __post_init__(self):
        object.__setattr__(self, "frequencies", _frequencies("CrossSections.frequencies", self.frequencies))
        # the inner box one cell inside the TF/SF surface reads the fields the surface's
        # correction acts on (an empty scene "absorbed" 20% of the incident power): >= 2
        for name, low in (("gap_out", 1), ("gap_in", 2)):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < low:
                raise ConfigError(f"CrossSections.{name} must be an integer >= {low} (cells)")


def _frequencies(name, value) -> tuple:
    a = require_floats(name, value, "finite frequencies > 0 (1 / wavelength)")
    f = tuple(float(x) for x in np.atleast_1d(a)) if a.ndim <= 1 else ()
    if not f or not all(math.isfinite(x) and x > 0 for x in f):
        raise ConfigError(f"{name} must be finite frequencies > 0 (1 / wavelength), got {value!r}")
    return f


def _check_box_vs_tfsf(lo, hi, tf, what: str) -> None:
    """A flux box either encloses the TF/SF box or lies inside it: never crosses it."""
    inside = all(tf.lo[a] < lo[a] and hi[a] < tf.hi[a] for a in range(3))
    outside = all(lo[a] < tf.lo[a] and tf.hi[a] < hi[a] for a in range(3))
    if not (inside or outside):
        raise ConfigError(
            f"{what} (cells {lo}..{hi}) crosses the PlaneWaveSource's TF/SF surface (cells {tf.lo}.."
            f"{tf.hi}): put it entirely inside (absorbed power) or entirely around it (scattered power)"
        )
