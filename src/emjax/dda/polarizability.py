"""Dipole polarizabilities (ADDA's formulas, Gaussian units: ``P = alpha E``).

With ``alpha_CM = (3 d**3 / 4 pi) (m**2 - 1) / (m**2 + 2)`` every prescription has the form
``alpha = alpha_CM / (1 - (alpha_CM / d**3) M)``:

* CM: ``M = 0``;
* RR (radiative reaction): ``M = (2/3) i (kd)**3``;
* LDR (Draine & Goodman 1993): ``M = (b1 + (b2 + b3 S) m**2) (kd)**2 + (2/3) i (kd)**3``,
  ``b1 = 1.8915316``, ``b2 = -0.1648469``, ``b3 = 1.7700004``, ``S = sum_mu (a_mu e_mu)**2``
  for incident direction ``a`` and polarization ``e`` (so alpha depends on both);
  ``LDR(average_polarization=True)`` uses ``S = (1 - sum_mu a_mu**4) / 2``;
* FCD (filtered coupled dipoles): ``M = (4/3)(kd)**2 + (2 / 3 pi) ln((pi - kd)/(pi + kd)) (kd)**3
  + (2/3) i (kd)**3``, used together with the filtered interaction term.

``m`` and ``d`` may be JAX arrays or tracers (``jax.grad`` with respect to the refractive
index or the size): the formulas then run in ``jax.numpy``; concrete Python/NumPy inputs
keep the NumPy path.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import ConfigError

LDR_B1 = 1.8915316529870796511106114030718259
LDR_B2 = -0.16484691508771947306079362778185226
LDR_B3 = 1.7700004019321371908592738404451742


def _xp(*values):
    """jax.numpy if any value is a JAX array (or tracer), else NumPy."""
    return jnp if any(isinstance(v, jax.Array) for v in values) else np


def _complex(m):
    xp = _xp(m)
    if xp is np:
        return np.asarray(m, dtype=complex)
    return jnp.asarray(m).astype(jnp.result_type(jnp.asarray(m).dtype, jnp.complex64))


def alpha_cm(m, d):
    eps = _complex(m) ** 2
    return 3 * d**3 / (4 * np.pi) * (eps - 1) / (eps + 2)


def _from_M(m, d, M):
    a = alpha_cm(m, d)
    return a / (1 - (a / d**3) * M)


@dataclass(frozen=True)
class CM:
    """Clausius-Mossotti."""

    name = "cm"
    interaction = "point"

    def __call__(self, m, d, k, direction=None, polarization=None):
        return alpha_cm(m, d)


@dataclass(frozen=True)
class RR:
    """Clausius-Mossotti with radiative reaction (ADDA's ``rrc``)."""

    name = "rr"
    interaction = "point"

    def __call__(self, m, d, k, direction=None, polarization=None):
        kd = k * d
        return _from_M(m, d, 2j / 3 * kd**3)


@dataclass(frozen=True)
class LDR:
    """Lattice dispersion relation (ADDA's default); depends on incidence and polarization."""

    average_polarization: bool = False
    name = "ldr"
    interaction = "point"

    def S(self, direction, polarization):
        a = np.asarray(direction, dtype=float)
        if self.average_polarization:
            return 0.5 * (1 - np.sum(a**4))
        e = np.asarray(polarization)
        return float(np.sum(np.abs(a * e) ** 2))

    def __call__(self, m, d, k, direction=(0, 0, 1), polarization=(1, 0, 0)):
        kd = k * d
        m2 = _complex(m) ** 2
        S = self.S(direction, polarization)
        M = (LDR_B1 + (LDR_B2 + LDR_B3 * S) * m2) * kd**2 + 2j / 3 * kd**3
        return _from_M(m, d, M)


@dataclass(frozen=True)
class FCD:
    """Filtered coupled dipoles (Piller; Yurkin, Min & Hoekstra 2010); needs kd < pi."""

    name = "fcd"
    interaction = "fcd"

    def __call__(self, m, d, k, direction=None, polarization=None):
        kd = k * d
        xp = _xp(kd)
        if xp is np and not kd < np.pi:
            raise ConfigError(f"FCD needs more than 2 dipoles per wavelength (k d = {kd:.3g} >= pi)")
        M = (4 / 3) * kd**2 + 2 / (3 * np.pi) * xp.log((np.pi - kd) / (np.pi + kd)) * kd**3
        return _from_M(m, d, M + 2j / 3 * kd**3)


POLARIZABILITIES = {"cm": CM, "rr": RR, "rrc": RR, "ldr": LDR, "fcd": FCD}
