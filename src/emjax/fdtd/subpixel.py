"""Anisotropic (subpixel-averaged) permittivity in the FDTD update, as a box correction.

Subpixel averaging (Farjadpour et al., Opt. Lett. 31, 2972 (2006); Kottke et al., PRE 77,
036611 (2008)) gives each E node crossed by an interface a tensor ``eps_inv``. Row ``c`` of
it, at E_c's nodes, turns Ampere's law into
``E_c += dt * (eps_inv[c, c] curlH_c + sum_{j != c} eps_inv[c, j] avg_cj(curlH_j))``,
where ``avg_cj`` averages the four E_j nodes around the E_c node (the off-diagonal terms
couple staggered components, as in Meep).

Only the interface nodes differ from the plain isotropic update, and they lie inside the
objects' bounding box: the bulk keeps its one coefficient array (no per-component arrays,
no full tensors), and the correction ``Delta_c = d_c curlH_c + sum_j o_cj avg_cj(curlH_j)``
is computed on that box alone, from the curl of H recomputed there (2nd-order stencil), and
added to the E update (zero-padded into the fused pass on a GPU, in place on the CPU, like
the sources: see terms.py). The curl of the bulk pass is never read back.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import ConfigError


@dataclass(frozen=True, eq=False)
class SubpixelBox:
    """Inverse permittivity tensors on a box of E nodes (grid cells ``lo .. lo + box``).

    ``eps_inv``: ``(3, 3, bx, by, bz)``; ``eps_inv[c, :, i, j, k]`` is row ``c`` of the
    tensor at E_c's node of cell ``lo + (i, j, k)`` (E_x at ``(i + 1/2, j, k)`` and so on).
    Nodes not crossed by an interface hold ``diag(1 / eps_node)``. The cells' own ``eps``
    (and ``sigma``) still define the update outside the box; inside it the tensor replaces
    ``1 / eps`` (the box must hold no lossy, dispersive or PEC node: the tensor is for
    dielectrics).
    """

    lo: tuple
    eps_inv: np.ndarray
    active: np.ndarray | None = None  # (3, bx, by, bz) bool: nodes the tensor replaces (default all)
    poles: dict | None = None  # anisotropic dispersive interface nodes (see :func:`interface_poles`)

    def __post_init__(self):
        a = np.asarray(self.eps_inv, dtype=float)
        if a.ndim != 5 or a.shape[:2] != (3, 3):
            raise ConfigError(f"SubpixelBox.eps_inv must have shape (3, 3, bx, by, bz), got {a.shape}")
        if len(self.lo) != 3:
            raise ConfigError(f"SubpixelBox.lo must be (i, j, k), got {self.lo!r}")
        if not np.all(np.isfinite(a)):
            raise ConfigError("SubpixelBox.eps_inv must be finite")
        if self.active is not None:
            act = np.asarray(self.active, bool)
            if act.shape != (3,) + a.shape[2:]:
                raise ConfigError(f"SubpixelBox.active must have shape {(3,) + a.shape[2:]}, got {act.shape}")
            object.__setattr__(self, "active", act)
        diag = np.stack([a[c, c] for c in range(3)])[self.active_mask]
        if np.any(diag <= 0) or np.any(diag > 1 + 1e-12):
            raise ConfigError("SubpixelBox.eps_inv diagonal must lie in (0, 1] (eps >= 1 dielectrics)")
        object.__setattr__(self, "eps_inv", a)
        object.__setattr__(self, "lo", tuple(int(v) for v in self.lo))
        if self.poles is not None:
            want = {"normal": (3, 3) + a.shape[2:], "par": (2, 3) + a.shape[2:], "perp": (2, 3) + a.shape[2:]}
            for key, shape in want.items():
                if np.shape(self.poles.get(key)) != shape:
                    raise ConfigError(f"SubpixelBox.poles[{key!r}] must have shape {shape}")
            if not np.isfinite(self.poles.get("c2", np.nan)):
                raise ConfigError("SubpixelBox.poles['c2'] must be a finite number")

    @property
    def active_mask(self) -> np.ndarray:
        """(3, bx, by, bz) bool: the nodes whose update the tensor replaces."""
        if self.active is None:
            return np.ones((3,) + self.eps_inv.shape[2:], bool)
        return self.active

    @property
    def shape(self) -> tuple:
        return self.eps_inv.shape[2:]

    @property
    def slices(self) -> tuple:
        return tuple(slice(lo, lo + n) for lo, n in zip(self.lo, self.shape))

    def check(self, grid_shape, pml, periodic=(False, False, False)) -> None:
        """The box and a two-node margin (the four-point averages of the curl, and the curl's
        own stencil) lie inside the grid and outside the CPML, or the box spans a periodic
        axis whole (its margins then wrap around)."""
        for ax, (lo, n, N, L) in enumerate(zip(self.lo, self.shape, grid_shape, pml)):
            if N == 1:  # 2-D grids: the invariant axis
                if n != 1 or lo != 0:
                    raise ConfigError(f"SubpixelBox along the invariant axis {ax} must be lo 0, size 1")
                continue
            if periodic[ax] and lo == 0 and n == N:
                continue
            if lo < 2 + L or lo + n > N - 2 - L:
                raise ConfigError(
                    f"SubpixelBox along axis {ax} spans cells {lo}..{lo + n}; it must lie within "
                    f"{2 + L}..{N - 2 - L} (inside the grid, outside the CPML, two cells margin), or span "
                    "a periodic axis whole"
                )


def coefficients(box: SubpixelBox, cb, dt: float, dtype) -> dict:
    """The box's arrays for the step: ``d_c = dt eps_inv[c, c] - cb`` (cb: the plain update's
    coefficient on the box) and ``o_cj = dt eps_inv[c, j]`` (six arrays), zero on the nodes
    that are not active, as a dict."""
    cb = np.asarray(cb, dtype=float)

    def on_box(c):
        a = cb[c] if cb.ndim == 4 else cb
        return a[box.slices] if a.ndim == 3 else a

    act = box.active_mask
    d = tuple(jnp.asarray(np.where(act[c], dt * box.eps_inv[c, c] - on_box(c), 0.0), dtype) for c in range(3))
    o = tuple(
        jnp.asarray(np.where(act[c], dt * box.eps_inv[c, j], 0.0), dtype)
        for c in range(3)
        for j in range(3)
        if j != c
    )
    out = {"sub_d": d, "sub_o": o}
    if box.poles is not None:
        pol = box.poles
        on = np.abs(pol["par"][1]) + np.abs(pol["perp"][1]) > 0  # (3, box): the nodes with poles
        out["sub_pole"] = {
            "n": tuple(tuple(jnp.asarray(pol["normal"][c, k], dtype) for k in range(3)) for c in range(3)),
            "m": tuple(
                tuple(jnp.asarray(np.where(on[c], box.eps_inv[c, j], 0.0), dtype) for j in range(3))
                for c in range(3)
            ),
            "par": tuple(tuple(jnp.asarray(pol["par"][q, c], dtype) for q in range(2)) for c in range(3)),
            "perp": tuple(tuple(jnp.asarray(pol["perp"][q, c], dtype) for q in range(2)) for c in range(3)),
            "c2": jnp.asarray(pol["c2"], dtype),
        }
    return out


def mixed_poles(fill, eps_b, eps_inf, strength, omega_0) -> dict:
    """Kottke's two mixtures of a one-pole medium ``eps_m = eps_inf + s / (omega_0^2 - omega^2
    - i gamma omega)`` (a Drude pole: ``omega_0 = 0, s = omega_p^2``) filling ``fill`` of a
    node's dual cell, with a dielectric ``eps_b``: each is one pole again, with the same gamma
    (Deinega & John, Opt. Lett. 37, 112 (2012), for the Drude case).

    * along the interface, the arithmetic mean ``f eps_m + (1 - f) eps_b``:
      ``eps_inf_t = f eps_inf + (1 - f) eps_b``, strength ``f s``, resonance ``omega_0``;
    * along the normal, the harmonic mean ``1 / (f / eps_m + (1 - f) / eps_b)``: with
      ``a = f eps_b + (1 - f) eps_inf``, ``eps_inf_n = eps_b eps_inf / a``, strength
      ``f eps_b^2 s / a^2`` and ``omega_n^2 = omega_0^2 + (1 - f) s / a`` (a Drude metal's
      normal response is a Lorentz resonance).

    Returns ``{"t": (eps_inf, s, omega^2), "n": (...)}`` arrays shaped like ``fill``."""
    f = np.asarray(fill, float)
    a = f * eps_b + (1 - f) * eps_inf
    t = (f * eps_inf + (1 - f) * eps_b, f * strength, np.full_like(f, omega_0**2))
    n = (eps_b * eps_inf / a, f * eps_b**2 * strength / a**2, omega_0**2 + (1 - f) * strength / a)
    return {"t": t, "n": n}


def interface_poles(fill, normal, eps_b, eps_inf, strength, omega_0, gamma, dt):
    """The update of an interface node between a one-pole medium and a dielectric: the
    anisotropic medium ``eps_t (I - n n) + eps_n n n`` of :func:`mixed_poles`.

    Returns ``(eps_inv, par, perp, c2)``: the inverse eps_inf tensors ``(M, 3, 3)`` and the
    central-difference coefficients ``(c1, c3)`` (``P' = c1 P + c2 P_old + c3 E``, as the
    Lorentz update in dispersive.py) of the tangential and normal poles, each ``(2, M)``."""
    mix = mixed_poles(fill, eps_b, eps_inf, strength, omega_0)
    n = np.asarray(normal, float)
    n = n / np.linalg.norm(n, axis=-1, keepdims=True)
    nn = n[:, :, None] * n[:, None, :]
    (e_t, s_t, w2_t), (e_n, s_n, w2_n) = mix["t"], mix["n"]
    eps_inv = nn / e_n[:, None, None] + (np.eye(3) - nn) / e_t[:, None, None]
    damp = 1 + gamma * dt / 2
    par = np.stack([(2 - w2_t * dt**2) / damp, s_t * dt**2 / damp])
    perp = np.stack([(2 - w2_n * dt**2) / damp, s_n * dt**2 / damp])
    return eps_inv, par, perp, -(1 - gamma * dt / 2) / damp


def _shifted(box_slices, shifts):
    return tuple(slice(s.start + k, s.stop + k) for s, k in zip(box_slices, shifts))


def modes(box, shape, periodic, bloch) -> tuple:
    """Per axis, how the box's neighbourhood is read: ``"flat"`` (an invariant axis of a 2-D
    grid; a one-cell Bloch axis wraps instead: its neighbours carry the phase), ``None`` (the
    box lies inside the grid: slices), or the Bloch factor ``exp(i k L)``
    (1.0 when plainly periodic) when the box spans a periodic axis (the margins wrap)."""
    out = []
    for ax, ((a, b), n) in enumerate(zip(box, shape)):
        if n == 1 and bloch[ax] is None:
            out.append("flat")
        elif periodic[ax] and a == 0 and b == n:
            out.append(1.0 if bloch[ax] is None else bloch[ax])
        else:
            out.append(None)
    return tuple(out)


def _window(f, box, lo_m: int, hi_m: int, mode):
    """``f`` on the box with ``lo_m`` / ``hi_m`` nodes of margin per axis (none on flat axes;
    wrapped with the Bloch factor where the box spans a periodic axis)."""
    for ax in range(3):
        a, b = box[ax]
        idx = [slice(None)] * 3
        if mode[ax] == "flat":
            idx[ax] = slice(a, b)
            f = f[tuple(idx)]
        elif mode[ax] is None:
            idx[ax] = slice(a - lo_m, b + hi_m)
            f = f[tuple(idx)]
        else:
            f = _wrap_pad(f, ax, lo_m, hi_m, mode[ax])
    return f


def _wrap_pad(f, ax, lo_m, hi_m, phase):
    """Extend ``f`` along a periodic axis by ``lo_m`` nodes before and ``hi_m`` after, each
    the node one or more periods away times the Bloch factor per period crossed (a one-cell
    axis repeats its node)."""
    n = f.shape[ax]
    if lo_m <= n and hi_m <= n:
        parts = []
        if lo_m:
            lo = jax.lax.slice_in_dim(f, n - lo_m, n, axis=ax)
            parts.append(lo if phase == 1.0 else lo / phase)
        parts.append(f)
        if hi_m:
            hi = jax.lax.slice_in_dim(f, 0, hi_m, axis=ax)
            parts.append(hi if phase == 1.0 else hi * phase)
        return jnp.concatenate(parts, axis=ax)
    idx = np.arange(-lo_m, n + hi_m)
    out = jnp.take(f, idx % n, axis=ax)
    if phase != 1.0:
        shape = [1] * f.ndim
        shape[ax] = len(idx)
        out = out * jnp.asarray(np.power(complex(phase), idx // n)).reshape(shape).astype(f.dtype)
    return out


def _margins(mode, m=1):
    return tuple(0 if md == "flat" else m for md in mode)


def local_curl(H, box, inv_dx, mode):
    """curl H (2nd order) at the E nodes of the box and a one-node margin (none on flat axes)
    from H alone, so the full curl need not be materialized for the box (XLA keeps the bulk
    pass fused)."""
    Hw = [_window(h, box, 2, 1, mode) for h in H]  # H from box - 2 to box + 1
    margin = _margins(mode)
    base = tuple(slice(2 - m, 2 - m + (b - a) + 2 * m) for (a, b), m in zip(box, margin))
    base = tuple(slice(0, 1) if md == "flat" else sl for md, sl in zip(mode, base))

    def d(f, ax):
        if mode[ax] == "flat":
            return jnp.zeros_like(f[base])
        lower = tuple(slice(sl.start - 1, sl.stop - 1) if k == ax else sl for k, sl in enumerate(base))
        return (f[base] - f[lower]) * inv_dx

    Hx, Hy, Hz = Hw
    return (d(Hz, 1) - d(Hy, 2), d(Hx, 2) - d(Hz, 0), d(Hy, 0) - d(Hx, 1))


def _average(f, c, j, inner, mode):
    """The four E_j nodes' mean at each E_c node of ``inner`` (f given with a one-node margin)."""
    acc = 0.0
    for dc in (0, 1):
        for dj in (0, -1):
            sh = [0, 0, 0]
            sh[c] = 0 if mode[c] == "flat" else dc
            sh[j] = 0 if mode[j] == "flat" else dj
            acc = acc + f[_shifted(inner, sh)]
    return 0.25 * acc


def _inner(box, mode):
    return tuple(slice(m, m + (b - a)) for (a, b), m in zip(box, _margins(mode)))


def pole_zeros(box_shape, dtype) -> tuple:
    """Polarization state of the dispersive interface nodes: per component c, the tangential
    pole's vector (P, P_old: 3 + 3 arrays) and the normal pole's amplitude (p, p_old)."""
    z = lambda: jnp.zeros(box_shape, dtype)
    return tuple((tuple(z() for _ in range(3)), tuple(z() for _ in range(3)), z(), z()) for _ in range(3))


def pole_step(box, arrays, E, state, mode):
    """Advance the interface nodes' polarizations from E at step n (E_c at its node, the other
    components averaged there from their four nearest nodes); returns (the E correction
    ``-M (P^(n+1) - P^n)`` per component, the new state)."""
    pol = arrays["sub_pole"]
    inner = _inner(box, mode)
    Er = [_window(e, box, 1, 1, mode) for e in E]
    c2 = pol["c2"]
    out, new = [], []
    for c in range(3):
        ev = [Er[c][inner] if j == c else _average(Er[j], c, j, inner, mode) for j in range(3)]
        n = pol["n"][c]
        en = n[0] * ev[0] + n[1] * ev[1] + n[2] * ev[2]
        P, P_old, p, p_old = state[c]
        (c1t, c3t), (c1n, c3n) = pol["par"][c], pol["perp"][c]
        P_new = tuple(c1t * P[k] + c2 * P_old[k] + c3t * (ev[k] - n[k] * en) for k in range(3))
        p_new = c1n * p + c2 * p_old + c3n * en
        dP = [P_new[k] - P[k] + n[k] * (p_new - p) for k in range(3)]
        m = pol["m"][c]
        out.append(-(m[0] * dP[0] + m[1] * dP[1] + m[2] * dP[2]))
        new.append((P_new, P, p_new, p))
    return out, tuple(new)


def correction(box, arrays, H, inv_dx, mode):
    """``Delta_c`` (3 arrays shaped like the box, ``box`` its (start, stop) per axis) from the
    curl of H on the box and a one-node margin (``mode``: see :func:`modes`).

    The off-diagonal term is symmetrized, ``(1/2) (o_cj avg_cj(curlH_j) + avg_cj(o_jc curlH_j))``
    with ``o_jc`` at E_j's own nodes: the four-point average from E_j's to E_c's nodes is the
    transpose of the one back, so the discrete operator ``curlH -> E`` is symmetric like the
    tensor, and the scheme conserves a discrete energy (a lossless object absorbs nothing; the
    one-sided form ``o_cj avg_cj(curlH_j)``, as in Meep, leaks ~1e-4 of Csca at a sphere)."""
    curl_h = local_curl(H, box, inv_dx, mode)
    inner = _inner(box, mode)
    margin = _margins(mode)
    pairs = [(c, j) for c in range(3) for j in range(3) if j != c]
    o = dict(zip(pairs, arrays["sub_o"]))

    def around(x):  # a box array with the margin: zeros off the box, wrapped on periodic axes
        for ax, (md, m) in enumerate(zip(mode, margin)):
            if m == 0:
                continue
            if md is None:
                x = jnp.pad(x, [(m, m) if k == ax else (0, 0) for k in range(3)])
            else:
                x = _wrap_pad(x, ax, m, m, 1.0)  # coefficients are periodic (no Bloch factor)
        return x

    out = []
    for c in range(3):
        v = arrays["sub_d"][c] * curl_h[c][inner]
        for j in range(3):
            if j == c:
                continue
            at_j = around(o[(j, c)]) * curl_h[j]  # o_jc curlH_j at E_j's nodes
            one_sided = o[(c, j)] * _average(curl_h[j], c, j, inner, mode)
            v = v + 0.5 * (one_sided + _average(at_j, c, j, inner, mode))
        out.append(v)
    return out
