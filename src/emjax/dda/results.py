"""DDA result types: :class:`DDAResult` (one orientation, both polarizations, from
:func:`emjax.dda.solve`) and :class:`AveragedResult` (random orientation, from
:func:`emjax.dda.average`), with their efficiencies, summaries and files."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._repr import concise_repr
from ..scattering import OrientationAverage, degree_of_polarization
from .lattice import Lattice

__all__ = ["AveragedResult", "DDAResult", "Efficiencies"]


class Efficiencies:
    """Csca, a_eq and efficiencies ``Q = C / (pi a_eq^2)`` of a result with ``Cext``, ``Cabs``
    and ``lattice`` (shared by :class:`DDAResult` and the orientation-averaged result)."""

    @property
    def Csca(self) -> float:
        return self.Cext - self.Cabs

    @property
    def a_eq(self) -> float:
        return self.lattice.a_eq

    @property
    def geometric_cross_section(self) -> float:
        return math.pi * self.a_eq**2

    @property
    def Qext(self) -> float:
        return self.Cext / self.geometric_cross_section

    @property
    def Qabs(self) -> float:
        return self.Cabs / self.geometric_cross_section

    @property
    def Qsca(self) -> float:
        return self.Csca / self.geometric_cross_section

    def _summary_common(self) -> dict:
        """The summary entries both results share (cross sections, efficiencies, lattice)."""
        return {
            "Cext": self.Cext,
            "Cabs": self.Cabs,
            "Csca": self.Csca,
            "Csca_integrated": self.Csca_integrated,
            "Qext": self.Qext,
            "Qabs": self.Qabs,
            "Qsca": self.Qsca,
            "g": self.g,
            "a_eq": self.a_eq,
            "n_dipoles": self.lattice.n_dipoles,
            "grid": list(self.lattice.shape),
        }


@dataclass(frozen=True, eq=False)
class DDAResult(Efficiencies):
    """Result of :func:`solve` for one orientation and both incident polarizations.

    Per-polarization arrays have a leading axis of 2: index 0 is the incident field
    polarized along the lab x axis ("X", perpendicular to the yz plane), 1 along y ("Y").
    ``S`` has shape (n_phi, n_theta, 4) holding (S1, S2, S3, S4); ``mueller`` (n_phi,
    n_theta, 4, 4).
    """

    __repr__ = concise_repr

    problem: object  # the emjax.dda.DDAProblem solved (not imported: it imports this module)
    lattice: Lattice
    Cext_xy: np.ndarray
    Cabs_xy: np.ndarray
    Csca_int_xy: np.ndarray | None
    g_xy: np.ndarray | None
    theta: np.ndarray
    phi: np.ndarray
    S: np.ndarray
    mueller: np.ndarray
    forward_amplitude: np.ndarray  # F(a).e for X and Y
    iterations: tuple
    converged: tuple
    residual_history: tuple
    solver_messages: tuple
    alpha: np.ndarray  # (2, n_domains) polarizability used for X and Y
    seconds: float
    timings: dict
    polarization: tuple | None = None  # device arrays (3, nx, ny, nz) per X/Y if kept
    solver: object = None  # the Krylov method (with rtol, maxiter) that produced this
    # on a substrate: Csca over the upper hemisphere, and the lower one (lossless bottom
    # medium only), per polarization; Csca_int_xy is then their sum (or the upper alone)
    Csca_up_xy: np.ndarray | None = None
    Csca_down_xy: np.ndarray | None = None

    # unpolarized-incidence (average over X and Y) quantities
    @property
    def Cext(self) -> float:
        return float(np.mean(self.Cext_xy))

    @property
    def Cabs(self) -> float:
        return float(np.mean(self.Cabs_xy))

    @property
    def Csca_integrated(self) -> float | None:
        return None if self.Csca_int_xy is None else float(np.mean(self.Csca_int_xy))

    @property
    def g(self) -> float | None:
        if self.g_xy is None:
            return None
        return float(np.sum(self.g_xy * self.Csca_int_xy) / np.sum(self.Csca_int_xy))

    @property
    def Cext_optical_theorem(self) -> np.ndarray:
        """``(4 pi / k^2) Re(F(a) . e^*)`` for X and Y."""
        return 4 * math.pi / self.problem.k**2 * np.real(self.forward_amplitude)

    @property
    def degree_of_polarization(self) -> np.ndarray:
        return degree_of_polarization(self.mueller)

    @property
    def all_converged(self) -> bool:
        return all(self.converged)

    def summary(self) -> dict:
        return {
            **self._summary_common(),
            "dipoles_per_wavelength": self.problem.wavelength / self.lattice.d,
            "iterations": list(self.iterations),
            "converged": self.all_converged,
            "seconds": self.seconds,
        }

    def to_xarray(self):
        from .datasets import dda_to_xarray

        return dda_to_xarray(self)

    def save(self, path):
        from ..io import save_dataset

        return save_dataset(self.to_xarray(), path)


@dataclass(frozen=True, eq=False)
class AveragedResult(Efficiencies):
    """Orientation-averaged DDA result and the per-orientation results it came from.

    Per-orientation arrays run over the solved (beta, gamma) nodes (alpha = 0) and have a
    last axis of 2 for the X and Y incident polarizations. ``mueller`` (n_theta, 4, 4) is the
    average (independent of the scattering plane for random orientation);
    ``mueller_orientations`` (n, n_theta, 4, 4) is each node's Mueller matrix in the yz plane.
    ``error`` holds the refinement's estimates (relative to Cext) per dimension.
    """

    __repr__ = concise_repr

    problem: object  # the emjax.dda.DDAProblem solved (not imported: it imports this module)
    quadrature: OrientationAverage
    lattice: object
    beta: np.ndarray
    gamma: np.ndarray
    weights: np.ndarray
    Cext_xy: np.ndarray
    Cabs_xy: np.ndarray
    Csca_int_xy: np.ndarray | None
    g_xy: np.ndarray | None
    theta: np.ndarray
    mueller: np.ndarray
    mueller_orientations: np.ndarray
    iterations: np.ndarray
    converged: np.ndarray
    levels: tuple
    error: dict
    history: tuple
    batch_size: int
    seconds: float
    timings: dict

    def _avg(self, per_node) -> float:
        return float(np.sum(self.weights * np.mean(per_node, axis=-1)))

    @property
    def Cext(self) -> float:
        return self._avg(self.Cext_xy)

    @property
    def Cabs(self) -> float:
        return self._avg(self.Cabs_xy)

    @property
    def Csca_integrated(self) -> float | None:
        return None if self.Csca_int_xy is None else self._avg(self.Csca_int_xy)

    @property
    def g(self) -> float | None:
        if self.g_xy is None:
            return None
        return self._avg(self.g_xy * self.Csca_int_xy) / self.Csca_integrated

    @property
    def n_orientations(self) -> int:
        """Solved orientations (beta, gamma), each for two polarizations."""
        return int(self.beta.size)

    @property
    def all_converged(self) -> bool:
        """Every orientation's and polarization's Krylov solve converged."""
        return bool(np.all(self.converged))

    @property
    def accuracy_met(self) -> bool:
        """The averaging's error estimate (beta and gamma refinement) is within the
        quadrature's ``eps`` (False if refinement stopped at its maximum level short of it)."""
        eps = self.quadrature.eps
        err = max(float(self.error.get("beta") or 0.0), float(self.error.get("gamma") or 0.0))
        return eps == 0 or err <= eps

    def summary(self) -> dict:
        return {
            **self._summary_common(),
            "orient": "avg",
            "n_orientations": self.n_orientations,
            "n_alpha": self.quadrature.n_alpha,
            "levels": {"beta": self.levels[0], "gamma": self.levels[1]},
            "error_estimate": self.error,
            "iterations_max": int(np.max(self.iterations)),
            # every requested accuracy: the solves' rtol and the average's eps
            "converged": self.all_converged and self.accuracy_met,
            "solves_converged": self.all_converged,
            "average_accuracy_met": self.accuracy_met,
            "batch_size": self.batch_size,
            "seconds": self.seconds,
        }

    def to_xarray(self):
        from .datasets import averaged_to_xarray

        return averaged_to_xarray(self)

    def save(self, path):
        from ..io import save_dataset

        return save_dataset(self.to_xarray(), path)
