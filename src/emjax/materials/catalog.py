"""The material library: published dispersion models by name, in the problem's length unit.

``library("Au", unit="nm")`` is a :class:`LibraryMaterial`, a :class:`Dispersive` that every
solver takes: frequency-domain solvers (DDA, FDFD, layered) call its ``permittivity`` (the
source's own formula or table), the FDTD steps its ``eps_inf`` and ``poles``:

* metals: Rakić's Lorentz-Drude model, exactly (one Drude and four or five Lorentz poles);
* Sellmeier media: ``B lambda**2 / (lambda**2 - C)`` is exactly a lossless Lorentz pole
  (``delta_eps = B``, ``omega_0 = 2 pi / sqrt(C)``), so the poles are the formula itself;
* tabulated media: the table, linearly interpolated; the poles are a Drude-Lorentz fit to it
  (:func:`emjax.materials.fit`, made on first use), with its error in ``rms_error``.

Outside a source's valid wavelength range a :class:`MaterialRangeWarning` names the material
and the range, and the model (the pole model, for a table) is extrapolated.
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass, field

import numpy as np

from ..errors import ConfigError, require_positive
from ..tracing import is_traced
from . import Dispersive, DrudePole, LorentzPole
from .catalog_data import DIELECTRICS, HC_EV_UM, METALS, TABLES

#: length units and their size in micrometres
UNITS = {"nm": 1e-3, "um": 1.0, "mm": 1e3, "cm": 1e4, "m": 1e6}


class MaterialRangeWarning(UserWarning):
    """A library material used outside its source's valid wavelength range."""


@dataclass(frozen=True)
class LibraryMaterial(Dispersive):
    """A library material: a :class:`Dispersive` (``eps_inf``, ``poles``: what the FDTD
    steps, frequencies in rad per unit time of ``unit``) with its provenance.

    ``name``, ``citation``, ``note`` (conditions: temperature, film, ray); ``model`` one of
    "Lorentz-Drude", "Sellmeier", "tabulated"; ``wavelength_range`` (min, max) in ``unit``;
    ``rms_error``: RMS error in ``n + i k`` of the poles against the source over its range (0
    where the poles are the source's own formula); ``table``: ``(wavelength, n, k)`` in
    ``unit`` for a tabulated material, which :meth:`permittivity` interpolates.
    """

    name: str = ""
    citation: str = field(default="", repr=False)
    note: str = field(default="", repr=False)
    model: str = ""
    wavelength_range: tuple = (0.0, math.inf)
    unit: str = "um"
    rms_error: float = 0.0
    table: tuple | None = field(default=None, repr=False)

    def _check_range(self, omega) -> None:
        if is_traced(omega):
            return
        w = np.asarray(omega, dtype=float)
        with np.errstate(divide="ignore"):
            wl = 2 * np.pi / w
        lo, hi = self.wavelength_range
        outside = (wl < lo * (1 - 1e-9)) | (wl > hi * (1 + 1e-9))
        if np.any(outside):
            bad = wl[outside]
            warnings.warn(
                f"material {self.name!r}: wavelength {bad.min():.4g}"
                f"{'' if bad.size == 1 else f' to {bad.max():.4g}'} {self.unit} is outside its "
                f"source's valid range [{lo:.4g}, {hi:.4g}] {self.unit}; the model is extrapolated",
                MaterialRangeWarning,
                stacklevel=3,
            )

    def permittivity(self, omega):
        """``eps`` at the angular frequency ``omega`` (rad per unit time of ``unit``): the
        source's formula, or its table interpolated (the pole fit outside the table)."""
        self._check_range(omega)
        eps = Dispersive.permittivity(self, omega)
        if self.table is None:
            return eps
        wl_t, n_t, k_t = (np.asarray(v) for v in self.table)
        wl = 2 * np.pi / np.asarray(omega, dtype=float)
        inside = (wl >= wl_t[0]) & (wl <= wl_t[-1])
        m = np.interp(wl, wl_t, n_t) + 1j * np.interp(wl, wl_t, k_t)
        return np.where(inside, m**2, eps)

    def pole_model(self) -> Dispersive:
        """The plain :class:`Dispersive` of this material's poles (what the FDTD steps)."""
        return Dispersive(self.eps_inf, self.poles)

    def max_real_permittivity(self) -> float:
        """The largest ``Re eps`` over the valid range (for resolution checks)."""
        lo, hi = self.wavelength_range
        wl = np.geomspace(lo, min(hi, 1e6 * lo), 400)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MaterialRangeWarning)
            return float(np.max(self.permittivity(2 * np.pi / wl).real))

    def refit(self, wavelength_min: float, wavelength_max: float, poles: int = 3, drude=None):
        """A Drude-Lorentz fit of this material over ``[wavelength_min, wavelength_max]``
        (in ``unit``; 200 samples): fewer, lower poles for an FDTD run on a coarse grid in a
        narrow band. Returns :class:`emjax.materials.DispersionFit`."""
        from .fitting import fit

        lo = require_positive("refit.wavelength_min", wavelength_min)
        hi = require_positive("refit.wavelength_max", wavelength_max)
        if not lo < hi:
            raise ConfigError(f"refit: wavelength_min = {lo} must be below wavelength_max = {hi}")
        wl = np.geomspace(lo, hi, 200)
        m = self.refractive_index(wl)
        return fit(wl, m.real, m.imag, poles, drude=drude, unit=self.unit)


def names() -> tuple:
    """The library's material names."""
    return tuple(METALS) + tuple(DIELECTRICS) + tuple(TABLES)


def _canonical(name) -> str:
    if isinstance(name, str):
        for known in names():
            if known.lower() == name.strip().lower():
                return known
    raise ConfigError(f"unknown material {name!r}; known: {', '.join(names())}")


def _unit_scale(unit) -> float:
    if not isinstance(unit, str) or unit not in UNITS:
        raise ConfigError(f"unit must be one of {', '.join(UNITS)}, got {unit!r}")
    return UNITS[unit]


def library(name: str, unit: str = "um") -> LibraryMaterial:
    """The library material ``name`` (see :func:`names`) for lengths in ``unit`` ("nm", "um",
    "mm", "cm", "m"): the same length unit as the problem's geometry and wavelengths.

    Metals (Rakić et al. 1998, Lorentz-Drude): Ag, Al, Au, Cr, Cu, Ni, Pt, Ti, W.
    Dielectrics (Sellmeier fits): Si, Ge, GaAs, InP, SiO2, Si3N4, Al2O3, TiO2, water,
    ice_150K. Tabulated: ITO, ice (266 K). Names are matched without regard to case. Each material carries its
    ``citation``, ``note`` and ``wavelength_range``; use outside the range warns."""
    _unit_scale(unit)
    return _build(_canonical(name), unit)


@functools.cache
def _build(name: str, unit: str) -> LibraryMaterial:
    s = UNITS[unit]
    if name in METALS:
        e = METALS[name]
        w = 2 * np.pi / HC_EV_UM * s  # eV -> rad per unit time of `unit`
        poles = [DrudePole(math.sqrt(e.f0) * e.omega_p * w, e.gamma0 * w)]
        for f, g, w0 in e.oscillators:
            poles.append(LorentzPole(f * e.omega_p**2 / w0**2, w0 * w, g * w))
        rng = (HC_EV_UM / e.range_ev[1] / s, HC_EV_UM / e.range_ev[0] / s)
        return LibraryMaterial(1.0, tuple(poles), name, e.citation, e.note, "Lorentz-Drude", rng, unit)
    if name in DIELECTRICS:
        e = DIELECTRICS[name]
        poles = []
        for b, c in e.terms:
            lam0_um = c if e.c_is_wavelength else math.sqrt(c)
            poles.append(LorentzPole(b, 2 * np.pi * s / lam0_um, 0.0))
        rng = (e.range_um[0] / s, e.range_um[1] / s)
        return LibraryMaterial(e.eps_inf, tuple(poles), name, e.citation, e.note, "Sellmeier", rng, unit)
    e = TABLES[name]
    from .catalog_tables import TABLES as DATA
    from .fitting import fit

    rows = np.array([[float(v) for v in line.split()] for line in DATA[e.table].strip().splitlines()])
    wl, n, k = rows[:, 0] / s, rows[:, 1], rows[:, 2]
    result = fit(wl, n, k, e.poles, drude=e.drude, unit=unit)
    model = result.model
    table = (tuple(wl), tuple(n), tuple(k))
    rng = (float(wl[0]), float(wl[-1]))
    return LibraryMaterial(
        model.eps_inf, model.poles, name, e.citation, e.note, "tabulated", rng, unit, result.rms_error, table
    )


def from_config(value, where: str, unit, extra: tuple = ()) -> LibraryMaterial:
    """A TOML ``material = "Au"``: the library material, in the config's length ``unit``
    (None: not given, refused, since the poles depend on it); one ConfigError line naming
    ``where`` and the known names (``extra``: the config's own, listed first) otherwise."""
    known = ", ".join(extra + names())
    if not isinstance(value, str):
        raise ConfigError(f"{where}.material must be a material name, one of {known}; got {value!r}")
    try:
        name = _canonical(value)
    except ConfigError:
        raise ConfigError(f"{where}.material: unknown material {value!r}; known: {known}") from None
    if unit is None:
        raise ConfigError(
            f'{where}.material = "{value}" needs the length unit of the config: add unit = "um" '
            f"(or {', '.join(u for u in UNITS if u != 'um')})"
        )
    return library(name, unit)
