"""Result of :func:`emjax.dda.average`: orientation-averaged and per-orientation quantities."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..scattering import OrientationAverage
from .solve import DDAProblem, Efficiencies


@dataclass(frozen=True, eq=False)
class AveragedResult(Efficiencies):
    """Orientation-averaged DDA result and the per-orientation results it came from.

    Per-orientation arrays run over the solved (beta, gamma) nodes (alpha = 0) and have a
    last axis of 2 for the X and Y incident polarizations. ``mueller`` (n_theta, 4, 4) is the
    average (independent of the scattering plane for random orientation);
    ``mueller_orientations`` (n, n_theta, 4, 4) is each node's Mueller matrix in the yz plane.
    ``error`` holds the refinement's estimates (relative to Cext) per dimension.
    """

    problem: DDAProblem
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
        return bool(np.all(self.converged))

    def summary(self) -> dict:
        return {
            **self._summary_common(),
            "orient": "avg",
            "n_orientations": self.n_orientations,
            "n_alpha": self.quadrature.n_alpha,
            "levels": {"beta": self.levels[0], "gamma": self.levels[1]},
            "error_estimate": self.error,
            "iterations_max": int(np.max(self.iterations)),
            "converged": self.all_converged,
            "batch_size": self.batch_size,
            "seconds": self.seconds,
        }

    def to_xarray(self):
        from ..io import averaged_to_xarray

        return averaged_to_xarray(self)

    def save(self, path):
        from ..io import save_dataset

        return save_dataset(self.to_xarray(), path)
