"""The modes of a cross-section, as :func:`emjax.modes.solve` returns them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._repr import concise_repr

__all__ = ["ModeResult"]


@dataclass(frozen=True, eq=False)
class ModeResult:
    """Modes of a cross-section in order of decreasing ``Re n_eff`` (M of them; equal ones,
    as evanescent modes, by increasing ``|Im n_eff|``).

    Natural units (eps0 = mu0 = c = 1): ``H`` is the magnetic field times the impedance of
    free space. Fields go as ``exp(i beta z - i omega t)`` with ``beta = 2 pi f n_eff``,
    z the propagation axis (the plane's normal in the scene form), x and y the section's
    first and second axes.

    Attributes
    ----------
    n_eff : (M,) complex
        Effective indices (``Im > 0``: the mode decays along +z).
    group_index : (M,)
        ``d beta / d k0`` (NaN where not computed).
    te_fraction : (M,)
        ``int |E_x|^2 / int (|E_x|^2 + |E_y|^2)``: 1 for a mode polarized along x.
    effective_area : (M,)
        ``(int |E|^2 dA)^2 / int |E|^4 dA`` in length^2.
    E, H : (M, 3, nx, ny) complex
        All six components averaged onto the cell centres ``(x, y)``, normalized to unit
        power ``(1/2) Re int (E x H*) . z dA = 1`` and phased so that the largest transverse
        E value on the Yee grid is real and positive.
    x, y : (nx,), (ny,)
        The cell centres' coordinates.
    E_yee, H_yee : tuples of three (M, ...) arrays
        The same fields on their Yee nodes (``E_x``, ``H_y``: (nx, ny + 1) at ``(i + 1/2, j)``;
        ``E_y``, ``H_x``: (nx + 1, ny) at ``(i, j + 1/2)``; ``E_z``: (nx + 1, ny + 1) at
        ``(i, j)``; ``H_z``: (nx, ny) at ``(i + 1/2, j + 1/2)``, in cells from ``origin``).
    eps_yee : tuple of three arrays
        The permittivity the solve used at the E_x, E_y, E_z nodes (bend map included).
    """

    n_eff: np.ndarray
    group_index: np.ndarray
    te_fraction: np.ndarray
    effective_area: np.ndarray
    E: np.ndarray
    H: np.ndarray
    x: np.ndarray
    y: np.ndarray
    E_yee: tuple
    H_yee: tuple
    eps_yee: tuple
    frequency: float
    resolution: float
    origin: tuple
    boundary: tuple
    pml: tuple
    bend_radius: float | None
    bend_axis: int

    __repr__ = concise_repr

    def __len__(self) -> int:
        return len(self.n_eff)

    @property
    def wavelength(self) -> float:
        """The vacuum wavelength ``1 / frequency``."""
        return 1.0 / self.frequency

    @property
    def beta(self) -> np.ndarray:
        """Propagation constants ``2 pi f n_eff`` (1 / length)."""
        return 2 * np.pi * self.frequency * self.n_eff

    def overlap(self, m: int, n: int) -> complex:
        """``(1/2) int (E_m x H_n*) . z dA`` on the Yee grid: 1 for ``m == n`` (the
        normalization); about 0 between two modes of a lossless section."""
        d = 1.0 / self.resolution
        wx, wy = self._weights()
        s = np.sum(wx * self.E_yee[0][m] * self.H_yee[1][n].conj()) - np.sum(
            wy * self.E_yee[1][m] * self.H_yee[0][n].conj()
        )
        return complex(0.5 * s * d * d)

    def _weights(self):
        nx, ny = len(self.x), len(self.y)
        wx, wy = np.ones(nx + 1), np.ones(ny + 1)
        for w, lo, hi in ((wx, self.boundary[0], self.boundary[1]), (wy, self.boundary[2], self.boundary[3])):
            w[0] = 0.5 if lo == "pmc" else 0.0
            w[-1] = 0.5 if hi == "pmc" else 0.0
        return np.ones(nx)[:, None] * wy[None, :], wx[:, None] * np.ones(ny)[None, :]

    def to_xarray(self):
        """An ``xarray.Dataset`` (dims mode, component, x, y) with units in the attributes
        (the fields in the unit-power normalization; ``group_index`` left out where it was
        not computed)."""
        import xarray as xr

        field = "1 (unit mode power, natural units)"
        dims4 = ("mode", "component", "x", "y")
        data = {
            "n_eff_real": ("mode", self.n_eff.real, {"units": "1", "long_name": "Re n_eff"}),
            "n_eff_imag": ("mode", self.n_eff.imag, {"units": "1", "long_name": "Im n_eff"}),
            "te_fraction": ("mode", self.te_fraction, {"units": "1"}),
            "effective_area": ("mode", self.effective_area, {"units": "length^2"}),
            "E_real": (dims4, self.E.real, {"units": field}),
            "E_imag": (dims4, self.E.imag, {"units": field}),
            "H_real": (dims4, self.H.real, {"units": field, "long_name": "Z0 H"}),
            "H_imag": (dims4, self.H.imag, {"units": field, "long_name": "Z0 H"}),
        }
        if not np.all(np.isnan(self.group_index)):
            data["group_index"] = ("mode", self.group_index, {"units": "1"})
        coords = {
            "mode": ("mode", np.arange(len(self)), {"units": "1"}),
            "component": ("component", ["x", "y", "z"], {"units": "1"}),
            "x": ("x", self.x, {"units": "length"}),
            "y": ("y", self.y, {"units": "length"}),
        }
        attrs = {
            "frequency": self.frequency,
            "resolution": self.resolution,
            "boundary": ",".join(self.boundary),
        }
        return xr.Dataset(data, coords=coords, attrs=attrs)

    def save(self, path) -> None:
        """:meth:`to_xarray` to ``path`` (.nc, .h5: :func:`emjax.io.save_dataset`)."""
        from ..io import save_dataset

        save_dataset(self.to_xarray(), path)
