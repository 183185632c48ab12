"""Current sheets with a profile: electric (J on an E plane) or magnetic (M on an H plane).

A :class:`CurrentSheet` drives one tangential component on a rectangle of a grid plane
with ``values * waveform(t + delay)``, values given per node. An electric sheet is a
current density J (per unit volume) on the E plane ``index``: the E update there becomes
``E -= dt / eps * J(t + dt / 2)``, as for the other current sources. A magnetic sheet is a
magnetic current density M on the H plane ``index`` (the tangential H nodes half a cell
above E plane ``index`` along ``axis``): ``dH / dt = -curl E - M``, so the H update becomes
``H -= dt * M(t)`` (H advanced from ``t - dt / 2`` to ``t + dt / 2``). A pair of each is the
discrete equivalent of the surface currents ``J = n x H``, ``M = -n x E`` of a wave that
should appear on one side of the plane only (:mod:`emjax.fdtd.mode_source`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import ConfigError, require_int


@dataclass(frozen=True)
class Delayed:
    """``waveform(t + delay)``: the waveform ``delay`` earlier."""

    waveform: object
    delay: float = 0.0

    def __call__(self, t):
        return self.waveform(t + self.delay)


@dataclass(frozen=True)
class CurrentSheet:
    """``values * waveform(t)`` on component ``component`` (tangential to ``axis``) of the
    ``field`` ("E": electric current J; "H": magnetic current M) nodes of plane ``index``,
    over the tangential node ranges ``lo .. hi - 1`` (per axis; the entry along ``axis`` is
    ignored). ``values`` has the shape of that block (1 along ``axis``); it is excluded
    from equality and hashing (the step's static plan holds the sheet, its values travel
    as coefficient arrays)."""

    axis: int
    index: int
    component: int
    field: str
    lo: tuple
    hi: tuple
    waveform: object
    values: np.ndarray = field(default=None, compare=False, hash=False, repr=False)
    amplitude: float = 1.0

    def __post_init__(self):
        require_int("CurrentSheet.axis", self.axis, 0, 2)
        require_int("CurrentSheet.component", self.component, 0, 2)
        if self.component == self.axis:
            raise ConfigError("CurrentSheet.component must be tangential to the plane")
        if self.field not in ("E", "H"):
            raise ConfigError(f"CurrentSheet.field must be 'E' or 'H', got {self.field!r}")
        if not callable(self.waveform):
            raise ConfigError("CurrentSheet.waveform must be a function of time")
        for name in ("lo", "hi"):
            v = getattr(self, name)
            if not (isinstance(v, tuple) and len(v) == 3 and all(isinstance(x, int) for x in v)):
                raise ConfigError(f"CurrentSheet.{name} must be three node indices, got {v!r}")
        try:
            v = np.asarray(self.values, dtype=float)
        except (TypeError, ValueError):
            raise ConfigError("CurrentSheet.values must be an array of real numbers") from None
        shape = tuple(1 if ax == self.axis else self.hi[ax] - self.lo[ax] for ax in range(3))
        if v.shape != shape or not np.all(np.isfinite(v)):
            raise ConfigError(f"CurrentSheet.values must be finite with shape {shape}, got {v.shape}")
        object.__setattr__(self, "values", v)

    def check(self, shape):
        require_int("CurrentSheet.index", self.index, 0, shape[self.axis] - 1)
        for ax in range(3):
            if ax != self.axis and not 0 <= self.lo[ax] < self.hi[ax] <= shape[ax]:
                raise ConfigError(f"CurrentSheet: nodes {self.lo[ax]}..{self.hi[ax]} outside axis {ax}")

    @property
    def slices(self):
        return tuple(
            slice(self.index, self.index + 1) if ax == self.axis else slice(self.lo[ax], self.hi[ax])
            for ax in range(3)
        )

    def profile(self, grid):
        return self.values
