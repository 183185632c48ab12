"""Results of emjax.layered: :class:`GreenResult` (Green tensors) and :class:`DipoleFields`
(E and H of a dipole), and the fields as a labelled ``xarray.Dataset`` (xarray imported
inside)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._repr import concise_repr
from ..io import version
from .stack import Stack

__all__ = ["DipoleFields", "GreenResult", "layered_to_xarray"]


@dataclass(frozen=True, eq=False)
class GreenResult:
    """Electric and magnetic Green tensors (N, 3, 3) at the points, with error estimates.

    ``error``: per point, the Gauss-Kronrod estimate of the absolute error of the integrated
    (scattered/transmitted) part, as a fraction of the norm of that part's tensor.
    """

    __repr__ = concise_repr

    points: np.ndarray
    G: np.ndarray | None
    GH: np.ndarray | None
    error: np.ndarray
    n_nodes: int
    part: str
    stats: tuple = ()  # per group of points: medium, points, nodes, rounds, times
    E: np.ndarray | None = None  # k0^2 G p when a moment p was given
    H: np.ndarray | None = None
    # wall seconds per stage: setup (checks, grouping, compilations started), refine (the
    # groups' quadratures), integrate (the points, each chunk finished on its device),
    # second_pass (groups refined and integrated again), total; device_wait: per device,
    # the seconds its host thread waited for results (small: the host was the bottleneck)
    timings: dict = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class DipoleFields:
    """E and H (N, 3) of a dipole ``p`` at ``source`` (units: see the module docstring)."""

    __repr__ = concise_repr

    stack: Stack
    wavelength: float
    source: np.ndarray
    p: np.ndarray
    points: np.ndarray
    E: np.ndarray
    H: np.ndarray
    error: np.ndarray
    part: str
    seconds: float = 0.0
    stats: tuple = ()  # quadrature per group of points (see GreenResult)
    timings: dict = field(default_factory=dict)  # wall seconds per stage (see GreenResult)

    def to_xarray(self):
        return layered_to_xarray(self)

    def save(self, path) -> None:
        from ..io import save_dataset

        save_dataset(self.to_xarray(), path)


def layered_to_xarray(result, shape=None, axes=None):
    """Dipole fields in a stack -> Dataset with E, H (point, component) complex (a field that
    was not computed, all NaN, is left out; attribute ``fields`` names those present).

    ``shape = (n1, n2)`` and ``axes = ("x", "z")``: the points are a plane map in C order
    (index 1 slowest); E and H then get dims (axes[0], axes[1], component) with coordinates.
    """
    import xarray as xr

    pts = np.asarray(result.points)
    comp = ["x", "y", "z"]
    units = {
        "E": {"units": "p / (eps0 length^3)", "long_name": "electric field, E = k0^2 G p"},
        "H": {"units": "p / (eps0 length^3)", "long_name": "Z0 H (H times the impedance of free space)"},
    }
    attrs = {
        "emjax_version": version(),
        "wavelength": result.wavelength,
        "source": list(map(float, result.source)),
        "p_real": list(map(float, np.real(result.p))),
        "p_imag": list(map(float, np.imag(result.p))),
        "part": result.part,
        "stack_eps": [str(e) for e in result.stack.eps],
        "stack_thickness": list(result.stack.thickness),
        "stack_z_top": result.stack.z_top,
        "seconds": result.seconds,
        "convention": "exp(-i omega t); E = k0^2 G p with curl curl G - k0^2 eps G = I delta",
    }
    # a field not computed (dipole_fields(fields="E") or "H") is all NaN: left out
    fields = {k: np.asarray(getattr(result, k)) for k in ("E", "H")}
    fields = {k: v for k, v in fields.items() if not np.all(np.isnan(v))}
    attrs["fields"] = "".join(fields)
    error = {"units": "1", "long_name": "estimated error of the integrated part, relative to its norm"}
    length = {"units": "length"}
    component = ("component", comp, {"units": "1", "long_name": "Cartesian component"})
    if shape is None:
        dims = ("point", "component")
        data = {k: (dims, v, units[k]) for k, v in fields.items()}
        data["error_estimate"] = (("point",), np.asarray(result.error), error)
        coords = {
            "component": component,
            "x": ("point", pts[:, 0], length),
            "y": ("point", pts[:, 1], length),
            "z": ("point", pts[:, 2], length),
        }
    else:
        n1, n2 = shape
        a1, a2 = axes
        idx = {"x": 0, "y": 1, "z": 2}
        grid = pts.reshape(n1, n2, 3)
        dims = (a1, a2, "component")
        data = {k: (dims, v.reshape(n1, n2, 3), units[k]) for k, v in fields.items()}
        data["error_estimate"] = ((a1, a2), np.asarray(result.error).reshape(n1, n2), error)
        coords = {
            "component": component,
            a1: (a1, grid[:, 0, idx[a1]], length),
            a2: (a2, grid[0, :, idx[a2]], length),
        }
    return xr.Dataset(
        {k: xr.Variable(*v) for k, v in data.items()},
        coords={k: xr.Variable(*v) for k, v in coords.items()},
        attrs=attrs,
    )
