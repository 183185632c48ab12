"""Total-field/scattered-field plane-wave source on a box, any direction of incidence.

The incident wave is the same :class:`emjax.scattering.PlaneWave` object DDA uses (the
polarization any real transverse vector). Along a coordinate axis (+ or -) it is computed in
lockstep on a 1-D auxiliary Yee grid with the same dx and dt, so it has exactly the 3-D
grid's numerical dispersion and the box leaks only at rounding level; for backward incidence
the 1-D grid is mirrored (aux coordinate s = c0 - x, its source 2 cells beyond ``hi``), so E
nodes map to E nodes and H nodes to H nodes exactly. Any other direction uses an analytic
incident field travelling at the grid's phase velocity along it (``analytic_fields``); the
box then leaks at the level of the grid's dispersion across the pulse's band.

With ``m`` the indicator of the total-field box (E and H nodes whose position, in cells, lies
in ``[lo, hi - 1]`` along every axis), the consistent updates add
``cb (m_E curl H_inc - curl(m_H H_inc))`` to E and ``-dt (m_H curl E_inc - curl(m_E E_inc))``
to H: zero away from the faces, the textbook corrections on them (edges and corners included).
The terms are built from separable 1-D masks and 1-D incident fields, so XLA fuses them into
the bulk update without extra full-size arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from ..errors import ConfigError, require_int
from ..scattering import PlaneWave
from .update import d_backward, d_forward


@dataclass(frozen=True, eq=False)
class TFSF:
    """Plane wave ``wave`` with time profile ``waveform`` inside the cell box [lo, hi).

    ``mirror``: per axis, whether the box continues through the PEC wall at ``i = 0`` as its
    mirror image (a mirror symmetry plane): there ``lo = -hi`` and the box has no low face
    (the masks cover the nodes at ``1/2 .. hi - 1``: not the E plane ``i = 0``, which is the
    PEC wall or, behind a PMC wall at ``i = 1/2``, outside the domain; the wrap-around terms
    the curl sees there fall on tangential E at ``i = 0`` or tangential H at ``i = 1/2``,
    which the walls zero after the update)."""

    lo: tuple
    hi: tuple
    wave: PlaneWave
    waveform: object
    mirror: tuple = (False, False, False)

    def __post_init__(self):
        if len(self.lo) != 3 or len(self.hi) != 3:
            raise ConfigError("TFSF.lo and TFSF.hi must be (i, j, k) cell indices")
        if not isinstance(self.wave, PlaneWave):
            raise ConfigError("TFSF.wave must be an emjax.scattering.PlaneWave")
        if np.any(np.abs(np.imag(self.wave.polarization)) > 0):
            raise ConfigError("TFSF: linear (real) polarization only")
        if not callable(self.waveform):
            raise ConfigError("TFSF.waveform must be GaussianPulse, Ricker or ContinuousWave")

    @property
    def axis(self) -> int:
        return int(np.argmax(np.abs(self.wave.direction)))

    @property
    def oblique(self) -> bool:
        """Not along a coordinate axis: the incident field is computed analytically (see
        ``analytic_fields``) instead of on the exact 1-D grid."""
        return not bool(np.isclose(abs(self.wave.direction[self.axis]), 1.0))

    @property
    def backward(self) -> bool:
        """Incidence along -axis (the 1-D grid is mirrored)."""
        return bool(self.wave.direction[self.axis] < 0)

    def check(self, shape):
        for ax in range(3):
            if self.mirror[ax]:
                require_int(f"TFSF.hi[{ax}]", self.hi[ax], 2, shape[ax] - 2)
                if self.lo[ax] != -self.hi[ax]:
                    raise ConfigError(f"TFSF.lo[{ax}] must be -hi[{ax}] on a mirror axis, got {self.lo[ax]}")
                continue
            require_int(f"TFSF.lo[{ax}]", self.lo[ax], 2, shape[ax] - 3)
            require_int(f"TFSF.hi[{ax}]", self.hi[ax], self.lo[ax] + 2, shape[ax] - 2)

    def _key(self) -> tuple:
        return (
            tuple(self.lo),
            tuple(self.hi),
            tuple(float(v) for v in self.wave.direction),
            tuple(float(v) for v in np.real(self.wave.polarization)),
            self.waveform,
            tuple(bool(m) for m in self.mirror),
        )

    def __hash__(self):
        return hash(self._key())

    def __eq__(self, other):  # by value, not by hash: a step's plan holding it keys the jit cache
        return isinstance(other, TFSF) and self._key() == other._key()


def aux_length(src: TFSF, shape, steps: int, courant: float) -> int:
    """1-D grid long enough that the wave never reaches its far end during ``steps``."""
    return shape[src.axis] + 4 + int(np.ceil(steps * courant)) + 8


def _aux_index(src: TFSF, n: int, kind: str) -> np.ndarray:
    """1-D grid index of each 3-D node along the axis (E nodes at i, H nodes at i + 1/2);
    the aux source (index 0) sits 2 cells before the entry face (lo, or hi when backward)."""
    i = np.arange(n)
    if not src.backward:
        return i + 2 - src.lo[src.axis]
    c0 = src.hi[src.axis] + 2  # s = c0 - x: E at x = i -> s = c0 - i; H at i + 1/2 -> c0 - i - 1
    return c0 - i - (1 if kind == "H" else 0)


def aux_step_h(src, e1, h1, courant):
    """h1[i] (at i + 1/2) from e1 (at i): dh/dt = -de/da (no wrap-around)."""
    de = jnp.concatenate([e1[1:] - e1[:-1], jnp.zeros(1, e1.dtype)])
    return h1 - courant * de


def aux_step_e(src, e1, h1, courant, t_next):
    """e1 from h1: de/dt = -dh/da, then the hard source at aux index 0 (far end: E = 0)."""
    dh = jnp.concatenate([jnp.zeros(1, h1.dtype), h1[1:] - h1[:-1]])
    e1 = e1 - courant * dh
    return e1.at[0].set(src.waveform(t_next).astype(e1.dtype)).at[-1].set(0)


def incident_spectrum(src: TFSF, frequencies, steps: int, dt: float) -> np.ndarray:
    """DFT of the incident E amplitude (as the monitors' DFT: samples at (n + 1) dt), which
    the lossless 1-D grid carries unchanged in magnitude to the box."""
    import jax

    t = (np.arange(steps) + 1) * dt
    with jax.ensure_compile_time_eval():  # a concrete waveform stays concrete under jax.jit
        w = src.waveform(jnp.asarray(t))
    xp = jnp if isinstance(w, jax.core.Tracer) else np  # a traced waveform parameter: JAX
    w = xp.asarray(w)
    f = np.asarray(frequencies, dtype=float)
    return (xp.exp(2j * np.pi * f[:, None] * t[None, :]) * w[None, :]).sum(axis=1) * dt


def _mask_1d(n, lo, hi, half, dtype):
    pos = jnp.arange(n, dtype=dtype) + (0.5 if half else 0.0)
    return ((pos >= lo) & (pos <= hi - 1)).astype(dtype)


def _broadcast(v, axis):
    shape = [1, 1, 1]
    shape[axis] = v.shape[0]
    return v.reshape(shape)


def incident_fields(src: TFSF, shape, e1, h1, kind: str):
    """Masked and unmasked incident field components on the 3-D grid (broadcastable).

    kind "E": E_inc at E nodes (e1 at integer positions along the axis);
    kind "H": H_inc at H nodes (h1 at half-integer positions).
    Returns (field, masked_field), tuples of 3 broadcastable arrays.
    """
    a = src.axis
    n = shape[a]
    dtype = e1.dtype
    idx = _aux_index(src, n, kind)  # grid nodes behind the aux source see no incident field
    src_line = e1 if kind == "E" else h1
    line = _broadcast(jnp.where(jnp.asarray(idx >= 0), src_line[np.clip(idx, 0, None)], 0), a)
    return _components(src, shape, kind, dtype, lambda c: line)


def _components(src: TFSF, shape, kind: str, dtype, profile):
    """(field, masked field) per component: ``vec[c] * profile(c)`` with ``vec`` the
    polarization (E) or d x polarization (H); None where ``vec[c]`` is zero."""
    pol = np.real(src.wave.polarization)
    vec = pol if kind == "E" else np.cross(src.wave.direction, pol)
    field, masked = [], []
    for c in range(3):
        if abs(vec[c]) < 1e-15:
            field.append(None)
            masked.append(None)
            continue
        f = float(vec[c]) * profile(c)
        field.append(f)
        masked.append(f * (e_mask if kind == "E" else h_mask)(src, shape, c, dtype))
    return tuple(field), tuple(masked)


def _curl_sparse(F, diff, inv_dx, shape):
    """Curl of a field whose components may be None (zero) or broadcastable arrays."""

    def d(f, axis):
        if f is None:
            return 0.0
        f = jnp.broadcast_to(f, shape)
        return diff(f, axis, inv_dx, 2)

    Fx, Fy, Fz = F
    return (d(Fz, 1) - d(Fy, 2), d(Fx, 2) - d(Fz, 0), d(Fy, 0) - d(Fx, 1))


def _box_mask(src: TFSF, shape, half_axes, dtype):
    m = None
    for ax in range(3):
        lo = 0.5 if src.mirror[ax] else src.lo[ax]  # through a mirror wall: from the domain's start
        mk = _broadcast(_mask_1d(shape[ax], lo, src.hi[ax], ax in half_axes, dtype), ax)
        m = mk if m is None else m * mk
    return m


def e_mask(src: TFSF, shape, c, dtype):
    """Total-field indicator at E_c nodes (half a cell along c)."""
    return _box_mask(src, shape, (c,), dtype)


def h_mask(src: TFSF, shape, c, dtype):
    """Total-field indicator at H_c nodes (half a cell along the two other axes)."""
    return _box_mask(src, shape, tuple(ax for ax in range(3) if ax != c), dtype)


def phase_velocity(src: TFSF, dx: float, dt: float) -> float:
    """The Yee grid's numerical phase velocity along the incidence direction at the
    waveform's frequency: sin^2(w dt/2)/dt^2 = sum_a sin^2(k d_a dx/2)/dx^2 solved for k."""
    w = 2 * np.pi * float(src.waveform.frequency)
    d = np.asarray(src.wave.direction, float)
    lhs = np.sin(w * dt / 2) ** 2 / dt**2
    lo, hi = 0.0, w * 1.5
    for _ in range(200):  # bisection: the right side grows with k up to pi/dx
        k = 0.5 * (lo + hi)
        if np.sum(np.sin(k * d * dx / 2) ** 2) / dx**2 < lhs:
            lo = k
        else:
            hi = k
    return w / (0.5 * (lo + hi))


def analytic_fields(src: TFSF, shape, kind: str, t, dx: float, dt: float, dtype):
    """Oblique incidence: E_inc = p w(t - tau(r)), H_inc = (d x p) w(t - tau(r)) at the E or H
    nodes, tau = (d.r - s0) / v with v the grid's phase velocity along d at the waveform's
    frequency and s0 two cells before the box's first corner. Unlike the 1-D grid this is
    not the discrete solution, so the box leaks at the level of the grid's dispersion
    across the pulse's band (measured in tests/fdtd/test_mie_sphere.py)."""
    d = np.asarray(src.wave.direction, float)
    v = phase_velocity(src, dx, dt)
    s0 = dx * sum(min(src.lo[ax] * d[ax], src.hi[ax] * d[ax]) for ax in range(3)) - 2 * dx
    # only the box and 2 cells around it matter (further out m = 0 under the whole stencil,
    # so m curl F_inc and curl(m F_inc) vanish): evaluate there, zero-pad the rest
    rng = [(max(src.lo[ax] - 2, 0), min(src.hi[ax] + 2, shape[ax])) for ax in range(3)]

    def profile(c):
        off = [0.5 if (ax == c) == (kind == "E") else 0.0 for ax in range(3)]  # node positions
        tau = sum(
            _broadcast(jnp.asarray((np.arange(a, b) + off[ax]) * (dx * d[ax] / v), dtype), ax)
            for ax, (a, b) in enumerate(rng)
        ) - (s0 / v)
        f = src.waveform(t - tau).astype(dtype)
        return jnp.pad(f, [(a, n - b) for (a, b), n in zip(rng, shape)])

    return _components(src, shape, kind, dtype, profile)


def correction_h(src, shape, e1, h1, inv_dx, dtype, t=None, dt=None):
    """(m_H curl E_inc - curl(m_E E_inc)) per H component (to be multiplied by -dt);
    ``t``: the time of E (oblique incidence only)."""
    if src.oblique:
        E_inc, mE_inc = analytic_fields(src, shape, "E", t, 1.0 / inv_dx, dt, dtype)
    else:
        E_inc, mE_inc = incident_fields(src, shape, e1, h1, "E")
    cE = _curl_sparse(E_inc, d_forward, inv_dx, shape)
    cmE = _curl_sparse(mE_inc, d_forward, inv_dx, shape)
    return tuple(h_mask(src, shape, c, dtype) * cE[c] - cmE[c] for c in range(3))


def correction_e(src, shape, e1, h1, inv_dx, dtype, t=None, dt=None):
    """(m_E curl H_inc - curl(m_H H_inc)) per E component (to be multiplied by cb); ``t``:
    the time of H (oblique incidence only)."""
    if src.oblique:
        H_inc, mH_inc = analytic_fields(src, shape, "H", t, 1.0 / inv_dx, dt, dtype)
    else:
        H_inc, mH_inc = incident_fields(src, shape, e1, h1, "H")
    cH = _curl_sparse(H_inc, d_backward, inv_dx, shape)
    cmH = _curl_sparse(mH_inc, d_backward, inv_dx, shape)
    return tuple(e_mask(src, shape, c, dtype) * cH[c] - cmH[c] for c in range(3))
