"""Materials: relative permittivity as a function of frequency.

emjax's frequency is ``f = 1 / wavelength`` (c = 1; the vacuum wavelength in the length unit
of the problem), as in every solver's ``frequency`` argument. The pole models take their
frequencies by keyword in either unit, exactly one of each pair: ``f_p``, ``f_0`` in that
convention (1/length), or ``omega_p``, ``omega_0`` as angular frequencies in rad per unit
time (``omega = 2 pi f``, time in length / c); a damping ``gamma`` is in the unit of the
frequency it comes with. :meth:`Material.permittivity` itself takes the angular frequency
``omega = 2 pi f`` (what the pole formulas use). Time dependence ``exp(-i omega t)``, so lossy
media have ``Im eps > 0`` and ``m = sqrt(eps)`` with ``Im m >= 0``.

Every material has ``permittivity(omega)`` and ``refractive_index(wavelength)``;
frequency-domain solvers (DDA, FDFD, layered) call these, FDTD reads the pole parameters
of :class:`Drude` and :class:`Lorentz` terms.

:func:`library` gives published models by name (Rakić's metals, Sellmeier dielectrics,
tabulated data) with their sources and valid ranges; :func:`fit` fits a passive, causal
Drude-Lorentz model to measured ``n, k``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import ConfigError, require_finite, require_floats, require_positive
from ..tracing import is_traced  # noqa: F401  (re-exported: the slices' material checks use it)


def _as_complex(name: str, value) -> complex:
    try:
        z = complex(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{name} must be a complex number, got {value!r}") from exc
    if not (np.isfinite(z.real) and np.isfinite(z.imag)):
        raise ConfigError(f"{name} must be finite, got {value!r}")
    return z


def has_tracer(material) -> bool:
    """True if a material's parameters (a number, a Constant's ``m``, a pole model's
    ``eps_inf`` and pole parameters, a Debye's) hold a JAX tracer: the solvers then build
    their permittivity arrays as JAX functions of them (``jax.grad`` flows to them)."""
    if is_traced(material):
        return True
    if isinstance(material, Constant):
        return is_traced(material.m)
    if isinstance(material, Dispersive):
        poles = (v for p in material.poles for v in vars(p).values())
        return is_traced(material.eps_inf) or any(is_traced(v) for v in poles)
    if isinstance(material, Debye):
        return any(is_traced(v) for v in (material.eps_inf, material.delta_eps, material.tau))
    if isinstance(material, DiagonalAnisotropic):
        return any(has_tracer(v) for v in (material.xx, material.yy, material.zz))
    return False


def _checked(check, name: str, value):
    """``check(name, value)`` for a concrete value; a tracer passes unchecked (DESIGN 3b)."""
    return value if is_traced(value) else check(name, value)


def check_refractive_index(name: str, m):
    """Validate a complex refractive index ``n + i k`` with ``k >= 0`` (exp(-i omega t)).

    A JAX tracer (``m`` under ``jax.grad``/``jit``) is returned as it is, unchecked: its
    value is not known when the function is traced (DESIGN.md 3b)."""
    if is_traced(m):
        return m
    z = _as_complex(name, m)
    if z.imag < 0:
        raise ConfigError(
            f"{name} = {z} has a negative imaginary part; with emjax's exp(-i omega t) "
            "convention absorption is Im(m) >= 0 (write m = n + i k with k >= 0)"
        )
    if z == 1:
        raise ConfigError(f"{name} = 1 is the vacuum: nothing scatters")
    if z == 0:
        raise ConfigError(f"{name} = 0 is not a refractive index (n + i k with n > 0 or k > 0)")
    return z


class Material:
    """Base class: subclasses implement :meth:`permittivity`."""

    def permittivity(self, omega):
        raise NotImplementedError

    def refractive_index(self, wavelength):
        """Complex refractive index at vacuum ``wavelength`` (Im >= 0 branch)."""
        omega = 2 * np.pi / np.asarray(wavelength, dtype=float)
        eps = np.asarray(self.permittivity(omega), dtype=complex)
        m = np.sqrt(eps)
        return np.where(m.imag < 0, -m, m)


@dataclass(frozen=True)
class Constant(Material):
    """A non-dispersive medium, given by its refractive index ``m`` (or ``eps = m**2``)."""

    m: complex

    def __post_init__(self):
        object.__setattr__(self, "m", check_refractive_index("m", self.m))

    @classmethod
    def from_permittivity(cls, eps) -> Constant:
        """The medium of permittivity ``eps``; a JAX tracer (real or complex, Im eps >= 0)
        is kept traced: ``m = sqrt(eps)`` (the principal root, Im m >= 0)."""
        if is_traced(eps):
            import jax.numpy as jnp

            return cls(jnp.sqrt(eps))
        e = _as_complex("eps", eps)
        m = np.sqrt(e)
        return cls(-m if m.imag < 0 else m)

    def permittivity(self, omega):
        if is_traced(self.m):
            import jax.numpy as jnp

            return jnp.full(np.shape(omega), self.m**2)
        return np.full(np.shape(omega), self.m**2, dtype=complex)


@dataclass(frozen=True)
class DrudePole:
    """``-omega_p**2 / (omega**2 + i gamma omega)``."""

    omega_p: float
    gamma: float

    def __call__(self, omega):
        omega = np.asarray(omega, dtype=float)
        return -(self.omega_p**2) / (omega**2 + 1j * self.gamma * omega)


@dataclass(frozen=True)
class LorentzPole:
    """``delta_eps omega_0**2 / (omega_0**2 - omega**2 - i gamma omega)``."""

    delta_eps: float
    omega_0: float
    gamma: float

    def __call__(self, omega):
        omega = np.asarray(omega, dtype=float)
        return self.delta_eps * self.omega_0**2 / (self.omega_0**2 - omega**2 - 1j * self.gamma * omega)


@dataclass(frozen=True)
class Dispersive(Material):
    """``eps_inf + sum(poles)`` with Drude and Lorentz poles (the Drude-Lorentz model)."""

    eps_inf: float = 1.0
    poles: tuple = field(default_factory=tuple)

    def __post_init__(self):
        _checked(require_finite, "eps_inf", self.eps_inf)  # tracers (jax.grad) pass unchecked
        for i, p in enumerate(self.poles):
            if not isinstance(p, (DrudePole, LorentzPole)):
                raise ConfigError(f"poles[{i}] must be a DrudePole or LorentzPole, got {p!r}")
            if isinstance(p, DrudePole):
                _checked(require_positive, f"poles[{i}].omega_p", p.omega_p)
            else:
                _checked(require_finite, f"poles[{i}].delta_eps", p.delta_eps)
                _checked(require_positive, f"poles[{i}].omega_0", p.omega_0)
            if not is_traced(p.gamma) and require_finite(f"poles[{i}].gamma", p.gamma) < 0:
                raise ConfigError(f"poles[{i}].gamma must be >= 0, got {p.gamma}")

    def permittivity(self, omega):
        omega = np.asarray(omega, dtype=float)
        if has_tracer(self):
            import jax.numpy as jnp

            eps = jnp.full(omega.shape, self.eps_inf) + 0j
            for p in self.poles:
                eps = eps + p(omega)
            return eps
        eps = np.full(omega.shape, self.eps_inf, dtype=complex)
        for p in self.poles:
            eps = eps + p(omega)
        return eps


_TWO_PI = 2 * np.pi


def _angular(model: str, name_f: str, name_omega: str, f, omega, gamma) -> tuple:
    """``(omega, gamma)`` in rad per unit time from exactly one of ``f`` (1/length: the
    damping ``gamma`` in 1/length too) or ``omega`` (rad per unit time, ``gamma`` likewise)."""
    if (f is None) == (omega is None):
        raise ConfigError(
            f"{model}: give exactly one of {name_f}= (frequency in 1/length, c/wavelength: emjax's "
            f"frequency convention) or {name_omega}= (angular frequency in rad per unit time, "
            f"2*pi*{name_f}); got {'both' if f is not None else 'neither'}"
        )
    if gamma is None:
        unit = name_f if f is not None else name_omega
        raise ConfigError(f"{model}: gamma= (the damping, in the unit of {unit}) is required")
    if f is not None:
        _checked(require_positive, f"{model}.{name_f}", f)
        return _TWO_PI * f, _TWO_PI * _checked(require_finite, f"{model}.gamma", gamma)
    _checked(require_positive, f"{model}.{name_omega}", omega)
    return omega, _checked(require_finite, f"{model}.gamma", gamma)


def _no_positional(model: str, args: tuple, keywords: str) -> None:
    if args:
        raise ConfigError(
            f"{model}: a frequency given by position is ambiguous (1/length or rad per unit time?); "
            f"pass it by keyword: {keywords}"
        )


def Drude(eps_inf: float = 1.0, *args, f_p=None, omega_p=None, gamma=None) -> Dispersive:
    """A Drude metal ``eps = eps_inf - f_p**2 / (f**2 + i gamma f)``.

    Give the plasma frequency by keyword, exactly one of

    * ``f_p``: in emjax's frequency convention, 1/length (``c / wavelength`` with c = 1, the
      unit of every solver's ``frequency``), the damping ``gamma`` in 1/length as well;
    * ``omega_p``: the angular plasma frequency in rad per unit time (``omega_p = 2 pi f_p``,
      time in length / c), ``gamma`` in rad per unit time: ``eps = eps_inf - omega_p**2 /
      (omega**2 + i gamma omega)``.

    The two describe the same metal when ``omega_p = 2 pi f_p`` and ``gamma_omega = 2 pi
    gamma_f``; the poles are stored in the angular form (what FDTD steps). Positional
    plasma frequencies are refused (ambiguous): ``Drude(1.0, 9.4, 0.5)`` is written
    ``Drude(1.0, omega_p=9.4, gamma=0.5)`` or ``Drude(1.0, f_p=1.5, gamma=0.5 / (2 pi))``.
    """
    _no_positional(
        "Drude", args, "Drude(eps_inf, f_p=..., gamma=...) or Drude(eps_inf, omega_p=..., gamma=...)"
    )
    w, g = _angular("Drude", "f_p", "omega_p", f_p, omega_p, gamma)
    return Dispersive(eps_inf, (DrudePole(w, g),))


def Lorentz(
    eps_inf: float = 1.0, delta_eps: float | None = None, *args, f_0=None, omega_0=None, gamma=None
) -> Dispersive:
    """A single Lorentz oscillator ``eps = eps_inf + delta_eps f_0**2 / (f_0**2 - f**2 - i
    gamma f)``.

    ``delta_eps`` (dimensionless) is the oscillator's strength; the resonance by keyword,
    exactly one of ``f_0`` (1/length, emjax's frequency convention; ``gamma`` in 1/length) or
    ``omega_0`` (rad per unit time, ``omega_0 = 2 pi f_0``; ``gamma`` in rad per unit time).
    A positional resonance frequency is refused (ambiguous): ``Lorentz(1.5, 2.0, omega_0=5.0,
    gamma=0.1)`` or ``Lorentz(1.5, 2.0, f_0=0.8, gamma=0.016)``.
    """
    _no_positional(
        "Lorentz",
        args,
        "Lorentz(eps_inf, delta_eps, f_0=..., gamma=...) or Lorentz(eps_inf, delta_eps, "
        "omega_0=..., gamma=...)",
    )
    if delta_eps is None:
        raise ConfigError("Lorentz: delta_eps= (the oscillator strength, dimensionless) is required")
    w, g = _angular("Lorentz", "f_0", "omega_0", f_0, omega_0, gamma)
    return Dispersive(eps_inf, (LorentzPole(_checked(require_finite, "Lorentz.delta_eps", delta_eps), w, g),))


@dataclass(frozen=True)
class Debye(Material):
    """``eps_inf + delta_eps / (1 - i omega tau)`` with the relaxation time ``tau`` in units
    of length / c (emjax's time; ``omega tau = 2 pi f tau`` with ``f`` in 1/length): a time,
    so there is no frequency convention to choose."""

    eps_inf: float
    delta_eps: float
    tau: float

    def __post_init__(self):
        if is_traced(self.eps_inf) or is_traced(self.delta_eps) or is_traced(self.tau):
            return
        require_finite("Debye.eps_inf", self.eps_inf)
        require_finite("Debye.delta_eps", self.delta_eps)
        if require_finite("Debye.tau", self.tau) < 0:
            raise ConfigError(f"Debye.tau must be >= 0, got {self.tau!r}")

    def permittivity(self, omega):
        omega = np.asarray(omega, dtype=float)
        return self.eps_inf + self.delta_eps / (1 - 1j * omega * self.tau)


@dataclass(frozen=True)
class Tabulated(Material):
    """Measured ``n, k`` at vacuum wavelengths, linearly interpolated in wavelength.

    Outside the table a :class:`ConfigError` is raised (no silent extrapolation).
    """

    wavelength: tuple
    n: tuple
    k: tuple

    def __post_init__(self):
        wl, n, k = (
            require_floats(f"Tabulated.{name}", getattr(self, name), "a list of real numbers")
            for name in ("wavelength", "n", "k")
        )
        if wl.ndim != 1 or wl.size < 2 or n.shape != wl.shape or k.shape != wl.shape:
            raise ConfigError("Tabulated needs 1-D wavelength, n, k of equal length >= 2")
        if not (np.all(np.isfinite(n)) and np.all(np.isfinite(k))):
            raise ConfigError("Tabulated.n and Tabulated.k must be finite")
        if not np.all(np.isfinite(wl)) or not np.all(np.diff(wl) > 0):
            raise ConfigError("Tabulated.wavelength must be finite and strictly increasing")
        if np.any(k < 0):
            raise ConfigError("Tabulated.k must be >= 0 (exp(-i omega t): k >= 0 absorbs)")
        object.__setattr__(self, "wavelength", tuple(wl))
        object.__setattr__(self, "n", tuple(n))
        object.__setattr__(self, "k", tuple(k))

    @classmethod
    def from_file(cls, path) -> Tabulated:
        """Read three whitespace-separated columns: wavelength, n, k (``#`` comments)."""
        data = np.loadtxt(path, comments="#", ndmin=2)
        if data.shape[1] < 3:
            raise ConfigError(f"{path}: need three columns (wavelength, n, k)")
        return cls(tuple(data[:, 0]), tuple(data[:, 1]), tuple(data[:, 2]))

    def refractive_index(self, wavelength):
        wl = np.asarray(wavelength, dtype=float)
        lo, hi = self.wavelength[0], self.wavelength[-1]
        if np.any(wl < lo) or np.any(wl > hi):
            raise ConfigError(f"wavelength {wavelength} is outside the table [{lo}, {hi}]")
        return np.interp(wl, self.wavelength, self.n) + 1j * np.interp(wl, self.wavelength, self.k)

    def permittivity(self, omega):
        return self.refractive_index(2 * np.pi / np.asarray(omega, dtype=float)) ** 2


def _component(name: str, v):
    if isinstance(v, Material):
        if isinstance(v, DiagonalAnisotropic):
            raise ConfigError(f"{name} must be isotropic (a number or a material), got {v!r}")
        return v
    if isinstance(v, bool):
        raise ConfigError(f"{name} must be a permittivity (number) or a material, got {v!r}")
    z = _as_complex(name, v)
    if z.imag < 0:
        raise ConfigError(f"{name} = {z}: Im eps must be >= 0 (exp(-i omega t): absorption)")
    return z


@dataclass(frozen=True)
class DiagonalAnisotropic(Material):
    """A medium with the permittivity tensor ``diag(xx, yy, zz)`` along the laboratory axes
    (an object's ``rotation`` turns its shape, not this tensor). Each entry is a number or an
    isotropic material (dispersive allowed). Accepted by :mod:`emjax.fdfd` (2-D TM sees
    ``zz``; TE ``xx`` at the E_x edges and ``yy`` at the E_y edges; 3-D each E component its
    own entry); solvers that need a scalar permittivity refuse it through
    :meth:`permittivity`."""

    xx: object
    yy: object
    zz: object

    def __post_init__(self):
        for k in ("xx", "yy", "zz"):
            object.__setattr__(self, k, _component(f"DiagonalAnisotropic.{k}", getattr(self, k)))

    def components(self, omega) -> np.ndarray:
        """``(eps_xx, eps_yy, eps_zz)`` at the angular frequency ``omega`` (a scalar)."""
        out = []
        for v in (self.xx, self.yy, self.zz):
            out.append(complex(np.asarray(v.permittivity(omega))) if isinstance(v, Material) else complex(v))
        return np.array(out)

    def permittivity(self, omega):
        raise ConfigError(
            "DiagonalAnisotropic: this solver needs a scalar permittivity; anisotropic media "
            "are supported by emjax.fdfd only"
        )


# The library and the fitter build on the classes above.
from .catalog import LibraryMaterial, MaterialRangeWarning, library, names  # noqa: E402
from .fitting import DispersionFit, fit  # noqa: E402
