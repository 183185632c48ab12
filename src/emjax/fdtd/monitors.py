"""Frequency-domain monitors: running DFTs of the tangential fields on planes, and flux.

A :class:`DFTPlane` on the E plane ``index`` of axis ``axis`` accumulates, for every
frequency f (``1 / wavelength``, c = 1), ``sum_n F(t_n) exp(2 pi i f t_n) dt`` of the two
tangential E components (at ``t = (n + 1) dt``) and of the tangential H components averaged
over the two H planes around it (at ``t = (n + 1/2) dt``), so E and H are co-located in
space and their phases refer to the same time origin. The flux through the plane is
``(1/2) Re sum (E_t1 H_t2^* - E_t2 H_t1^*) dA`` with (t1, t2, axis) right-handed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from ..errors import ConfigError, require_int

TANGENTIAL = {0: (1, 2), 1: (2, 0), 2: (0, 1)}


@dataclass(frozen=True)
class DFTPlane:
    """DFT of the tangential fields on the E plane ``index`` normal to ``axis``."""

    axis: int
    index: int
    frequencies: tuple
    lo: tuple | None = None  # optional box (cell indices) limiting the plane's tangential extent
    hi: tuple | None = None

    def __post_init__(self):
        require_int("DFTPlane.axis", self.axis, 0, 2)
        f = tuple(float(x) for x in np.atleast_1d(self.frequencies))
        if not f or not all(np.isfinite(f)) or min(f) < 0:
            raise ConfigError("DFTPlane.frequencies must be finite and >= 0")
        object.__setattr__(self, "frequencies", f)

    def check(self, shape):
        require_int("DFTPlane.index", self.index, 1, shape[self.axis] - 1)


def _plane(f, axis, index, mon=None):
    idx = [slice(None)] * 3
    idx[axis] = index
    if mon is not None and mon.lo is not None:
        for ax in range(3):
            if ax != axis:
                idx[ax] = slice(mon.lo[ax], mon.hi[ax])
    return f[tuple(idx)]


def zeros(mon: DFTPlane, shape, cdtype):
    if mon.lo is not None:
        plane = [mon.hi[ax] - mon.lo[ax] for ax in range(3) if ax != mon.axis]
    else:
        plane = [n for ax, n in enumerate(shape) if ax != mon.axis]
    shape = (len(mon.frequencies), 2, *plane)
    return {"E": jnp.zeros(shape, cdtype), "H": jnp.zeros(shape, cdtype)}  # distinct buffers


def accumulate(mon: DFTPlane, acc, E, H, n, dt):
    """Add step n's contribution (E at (n+1) dt, H at (n+1/2) dt)."""
    f = jnp.asarray(mon.frequencies, E[0].dtype)
    t1, t2 = TANGENTIAL[mon.axis]
    e = jnp.stack([_plane(E[t1], mon.axis, mon.index, mon), _plane(E[t2], mon.axis, mon.index, mon)])
    h = jnp.stack(
        [
            0.5 * (_plane(H[c], mon.axis, mon.index, mon) + _plane(H[c], mon.axis, mon.index - 1, mon))
            for c in (t1, t2)
        ]
    )
    tE = (n + 1).astype(E[0].dtype) * dt
    tH = (n + 0.5).astype(E[0].dtype) * dt
    cdt = acc["E"].dtype
    pE = (jnp.exp(2j * math.pi * f * tE) * dt).astype(cdt)
    pH = (jnp.exp(2j * math.pi * f * tH) * dt).astype(cdt)
    return {
        "E": acc["E"] + pE[:, None, None, None] * e[None].astype(cdt),
        "H": acc["H"] + pH[:, None, None, None] * h[None].astype(cdt),
    }


def flux(E_dft, H_dft, dA: float) -> np.ndarray:
    """Flux spectrum through a plane from its DFT arrays (nf, 2, n1, n2) -> (nf,)."""
    E_dft, H_dft = np.asarray(E_dft), np.asarray(H_dft)
    s = E_dft[:, 0] * np.conj(H_dft[:, 1]) - E_dft[:, 1] * np.conj(H_dft[:, 0])
    return 0.5 * np.real(s.sum(axis=(1, 2))) * dA


def flux_box(lo, hi, frequencies) -> tuple:
    """Six DFT planes on the faces of the cell box [lo, hi] (indices of the face planes)."""
    planes = []
    for ax in range(3):
        for index in (lo[ax], hi[ax]):
            planes.append(DFTPlane(ax, index, tuple(frequencies), tuple(lo), tuple(hi)))
    return tuple(planes)


def box_flux(fluxes) -> np.ndarray:
    """Outward flux of a :func:`flux_box` from its six planes' fluxes (low faces count -)."""
    return sum(f if i % 2 else -f for i, f in enumerate(fluxes))
