"""Frequency-domain monitors: running DFTs of the tangential fields on planes, and flux.

A :class:`DFTPlane` on the E plane ``index`` of axis ``axis`` accumulates, for every
frequency f (``1 / wavelength``, c = 1), ``sum_n F(t_n) exp(2 pi i f t_n) dt`` of the two
tangential E components (at ``t = (n + 1) dt``) and of the tangential H components averaged
over the two H planes around it (at ``t = (n + 1/2) dt``), so E and H are co-located in
space and their phases refer to the same time origin. The flux through the plane is
``(1/2) Re sum w (E_t1 H_t2^* - E_t2 H_t1^*) dA`` with (t1, t2, axis) right-handed.

A plane limited to cells ``lo .. hi`` stores the samples ``lo .. hi`` inclusive along each
tangential axis (``n + 1`` of them, wrapped at a periodic edge). The product E_t1 H_t2 lives
half a cell along t1 (samples ``lo .. hi - 1``, the midpoint rule) and on the nodes along t2,
where the weights ``w`` are the trapezoid rule's (1/2 at ``lo`` and ``hi``): the six faces of
a box then meet at its edges without the O(dx) bias of a one-sided sum (the lossless
sphere's net flux fell from 1% of Csca to below 1e-3).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import ConfigError, require_floats, require_int

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
        what = "a list of finite frequencies >= 0 (1 / wavelength)"
        a = require_floats("DFTPlane.frequencies", self.frequencies, what)
        f = tuple(float(x) for x in np.atleast_1d(a)) if a.ndim <= 1 else ()
        if not f or not all(np.isfinite(f)) or min(f) < 0:
            raise ConfigError(
                f"DFTPlane.frequencies must be finite and >= 0 ({what}), got {self.frequencies!r}"
            )
        object.__setattr__(self, "frequencies", f)

    def check(self, shape):
        require_int("DFTPlane.index", self.index, 1, shape[self.axis] - 1)


@dataclass(frozen=True)
class DFTField(DFTPlane):
    """DFT of all six field components around the E plane ``index`` normal to ``axis``
    (cells ``lo .. hi`` along the other two axes): :func:`field_on_nodes` turns it into E and
    H at the plane's nodes. ``bloch``: per axis the Bloch factor of the grid (or None), for
    samples that wrap around a periodic edge."""

    bloch: tuple = (None, None, None)


def _window_take(f, ax, start, stop, phase):
    """``f`` at indices ``start .. stop - 1`` along ``ax``, wrapped periodically with the
    Bloch factor per period crossed (``phase`` None: plain wrap)."""
    n = f.shape[ax]
    idx = np.arange(start, stop)
    if start >= 0 and stop <= n:
        return jax.lax.slice_in_dim(f, start, stop, axis=ax)
    out = jnp.take(f, idx % n, axis=ax)
    if phase is not None:
        shape = [1] * f.ndim
        shape[ax] = len(idx)
        out = out * jnp.asarray(np.power(complex(phase), idx // n)).reshape(shape).astype(out.dtype)
    return out


def _field_window(f, mon: DFTField):
    """The two planes ``index - 1, index`` and the tangential window ``lo - 1 .. hi + 1``."""
    out = _window_take(f, mon.axis, mon.index - 1, mon.index + 1, mon.bloch[mon.axis])
    for ax in range(3):
        if ax != mon.axis:
            lo, hi = _extent(mon, f.shape, ax)
            out = _window_take(out, ax, lo - 1, hi + 2, mon.bloch[ax])
    return jnp.moveaxis(out, mon.axis, 0)  # (2, n1 + 3, n2 + 3)


def field_on_nodes(dft, mon: DFTField):
    """E and H ``(nf, 3, n1 + 1, n2 + 1)`` at the plane's nodes (``lo .. hi`` along the
    tangential axes in increasing order, the plane ``index`` along the normal) from a
    :class:`DFTField`'s sums: each component averaged over its two samples along every axis
    it is staggered on (E_c along c; H_c along the other two), to second order."""

    def place(arr, staggered):  # arr (nf, 2, n1 + 3, n2 + 3)
        out = 0.5 * (arr[:, 0] + arr[:, 1]) if staggered[mon.axis] else arr[:, 1]
        tang = [ax for ax in range(3) if ax != mon.axis]
        for pos, ax in enumerate(tang):
            n = out.shape[1 + pos]
            lo = np.take(out, np.arange(0, n - 2), axis=1 + pos)
            mid = np.take(out, np.arange(1, n - 1), axis=1 + pos)
            out = 0.5 * (lo + mid) if staggered[ax] else mid
        return out

    e, h = np.asarray(dft["E"]), np.asarray(dft["H"])
    E = np.stack([place(e[:, c], [ax == c for ax in range(3)]) for c in range(3)], 1)
    H = np.stack([place(h[:, c], [ax != c for ax in range(3)]) for c in range(3)], 1)
    return E, H


def _extent(mon: DFTPlane, shape, ax: int) -> tuple:
    """(lo, hi) cells of the plane along tangential axis ``ax`` (the whole axis by default)."""
    if mon.lo is None:
        return 0, shape[ax]
    return mon.lo[ax], mon.hi[ax]


def _plane(f, axis, index, mon):
    """The plane's samples ``lo .. hi`` inclusive along both tangential axes (``hi`` wraps to
    0 at the grid's end: periodic; elsewhere the fields there are the CPML's or a wall's)."""
    shape = f.shape
    idx = [slice(None)] * 3
    idx[axis] = index
    gather = {}
    for ax in range(3):
        if ax != axis:
            lo, hi = _extent(mon, shape, ax)
            if hi < shape[ax]:
                idx[ax] = slice(lo, hi + 1)
            else:
                gather[ax] = np.arange(lo, hi + 1) % shape[ax]
    f = f[tuple(idx)]
    for ax, take in gather.items():
        f = jnp.take(f, take, axis=ax if ax < axis else ax - 1)
    return f


def zeros(mon: DFTPlane, shape, cdtype):
    if isinstance(mon, DFTField):
        plane = [np.subtract(*_extent(mon, shape, ax)[::-1]) + 3 for ax in range(3) if ax != mon.axis]
        full = (len(mon.frequencies), 3, 2, *plane)
        return {"E": jnp.zeros(full, cdtype), "H": jnp.zeros(full, cdtype)}
    plane = [np.subtract(*_extent(mon, shape, ax)[::-1]) + 1 for ax in range(3) if ax != mon.axis]
    shape = (len(mon.frequencies), 2, *plane)
    return {"E": jnp.zeros(shape, cdtype), "H": jnp.zeros(shape, cdtype)}  # distinct buffers


def weights(shape, axis: int) -> tuple:
    """Quadrature weights ``(w1, w2)`` on a plane's samples (``shape``: the (n1 + 1, n2 + 1)
    samples of its two tangential axes in increasing order) for the products E_t1 H_t2 and
    E_t2 H_t1 (see the module docstring); (t1, t2) = ``TANGENTIAL[axis]``."""
    mid = lambda m: np.r_[np.ones(m - 1), 0.0]
    trap = lambda m: np.r_[0.5, np.ones(m - 2), 0.5] if m > 1 else np.ones(1)
    t1, t2 = TANGENTIAL[axis]
    dims = sorted((t1, t2))

    def w(half_axis):
        r = [mid(n) if ax == half_axis else trap(n) for ax, n in zip(dims, shape)]
        return np.outer(r[0], r[1])

    return w(t1), w(t2)


def phase(f, t, dt, cdt):
    """The running DFT's weight ``exp(2 pi i f t) dt`` (broadcast over ``f`` and ``t``)."""
    return (jnp.exp(2j * math.pi * f * t) * dt).astype(cdt)


def accumulate(mon: DFTPlane, acc, E, H, n, dt):
    """Add step n's contribution (E at (n+1) dt, H at (n+1/2) dt)."""
    f = jnp.asarray(mon.frequencies, jnp.finfo(E[0].dtype).dtype)
    tE = (n + 1).astype(f.dtype) * dt
    tH = (n + 0.5).astype(f.dtype) * dt
    cdt = acc["E"].dtype
    pE = phase(f, tE, dt, cdt)
    pH = phase(f, tH, dt, cdt)
    if isinstance(mon, DFTField):
        e = jnp.stack([_field_window(c, mon) for c in E]).astype(cdt)
        h = jnp.stack([_field_window(c, mon) for c in H]).astype(cdt)
        return {
            "E": acc["E"] + pE[:, None, None, None, None] * e[None],
            "H": acc["H"] + pH[:, None, None, None, None] * h[None],
        }
    t1, t2 = TANGENTIAL[mon.axis]
    e = jnp.stack([_plane(E[t1], mon.axis, mon.index, mon), _plane(E[t2], mon.axis, mon.index, mon)])
    h = jnp.stack(
        [
            0.5 * (_plane(H[c], mon.axis, mon.index, mon) + _plane(H[c], mon.axis, mon.index - 1, mon))
            for c in (t1, t2)
        ]
    )
    return {
        "E": acc["E"] + pE[:, None, None, None] * e[None].astype(cdt),
        "H": acc["H"] + pH[:, None, None, None] * h[None].astype(cdt),
    }


def flux(E_dft, H_dft, dA: float, axis: int) -> np.ndarray:
    """Flux spectrum through a plane normal to ``axis`` from its DFT arrays
    (nf, 2, n1 + 1, n2 + 1) -> (nf,). JAX arrays in (a traced run's sums), a JAX array out
    (differentiable); NumPy otherwise."""
    xp = jnp if isinstance(E_dft, jax.Array) or isinstance(H_dft, jax.Array) else np
    if xp is np:
        E_dft, H_dft = np.asarray(E_dft), np.asarray(H_dft)
    w1, w2 = weights(E_dft.shape[2:], axis)
    s = w1 * E_dft[:, 0] * xp.conj(H_dft[:, 1]) - w2 * E_dft[:, 1] * xp.conj(H_dft[:, 0])
    return 0.5 * xp.real(s.sum(axis=(1, 2))) * dA


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


def far_field(dfts, planes, dx: float, frequency_index: int, theta_deg, phi_deg):
    """Near-to-far-field transform of a closed :func:`flux_box` (its six planes' DFTs).

    Surface currents ``J = n x H`` and ``M = -n x E`` on the faces (outward n) radiate
    ``N = sum J exp(-i k r.r') dS`` and ``L = sum M exp(-i k r.r') dS``; with exp(-i omega t),
    eps0 = mu0 = c = 1, the far field is ``E = exp(ikr)/r (F_theta theta + F_phi phi)``,
    ``F_theta = (ik/4pi)(N_theta + L_phi)``, ``F_phi = (ik/4pi)(N_phi - L_theta)``.
    Returns (F_theta, F_phi) for angles broadcast from ``theta_deg``, ``phi_deg``;
    ``|F|^2 / |E_inc|^2`` is the differential scattering cross section.
    """
    th = np.deg2rad(np.asarray(theta_deg, float))
    ph = np.deg2rad(np.asarray(phi_deg, float))
    th, ph = np.broadcast_arrays(th, ph)
    st, ct, sp, cp = np.sin(th), np.cos(th), np.sin(ph), np.cos(ph)
    rhat = np.stack([st * cp, st * sp, ct], -1)
    that = np.stack([ct * cp, ct * sp, -st], -1)
    phat = np.stack([-sp, cp, np.zeros_like(ph)], -1)
    k = 2 * np.pi * planes[0].frequencies[frequency_index]
    N = np.zeros(th.shape + (3,), complex)
    L = np.zeros(th.shape + (3,), complex)
    for face, (mon, d) in enumerate(zip(planes, dfts)):
        a = mon.axis
        t1, t2 = TANGENTIAL[a]
        sign = 1.0 if face % 2 else -1.0  # flux_box order: low face, high face per axis
        E = np.asarray(d["E"])[frequency_index]
        H = np.asarray(d["H"])[frequency_index]
        coords = {a: np.array([mon.index * dx])}
        for t in (t1, t2):
            coords[t] = np.arange(mon.lo[t], mon.hi[t] + 1) * dx
        # plane arrays are indexed by the two tangential axes in increasing axis order
        X = np.meshgrid(coords[0], coords[1], coords[2], indexing="ij")
        pos = np.stack([x.squeeze(axis=a) for x in X], -1)  # (n_lo, n_hi, 3)
        phase = np.exp(-1j * k * np.einsum("...c,ijc->...ij", rhat, pos)) * dx * dx
        w1, w2 = weights(E.shape[1:], a)  # the quadrature of the products each sample enters
        e1, e2, h1, h2 = w1 * E[0], w2 * E[1], w2 * H[0], w1 * H[1]

        def shift(axis):  # Yee offset of a sample by half a cell along ``axis``
            return np.exp(-1j * k * rhat[..., axis] * dx / 2)[..., None]

        def add(acc, comp, values, offset_axis, phase=phase):
            acc[..., comp] += shift(offset_axis)[..., 0] * np.einsum("...ij,ij->...", phase, values)

        # J = n x H, M = -n x E with n = sign * a_hat and (t1, t2, a) right-handed.
        # E_t1 sits half a cell along t1, E_t2 along t2; H_t1 along t2, H_t2 along t1.
        add(N, t2, sign * h1, t2)
        add(N, t1, -sign * h2, t1)
        add(L, t2, -sign * e1, t1)
        add(L, t1, sign * e2, t2)
    dot = lambda v, u: np.sum(v * u, -1)
    F_theta = 1j * k / (4 * np.pi) * (dot(N, that) + dot(L, phat))
    F_phi = 1j * k / (4 * np.pi) * (dot(N, phat) - dot(L, that))
    return F_theta, F_phi
