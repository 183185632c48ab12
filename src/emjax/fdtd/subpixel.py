"""Anisotropic (subpixel-averaged) permittivity in the FDTD update, as a sparse correction.

Subpixel averaging (Farjadpour et al., Opt. Lett. 31, 2972 (2006); Kottke et al., PRE 77,
036611 (2008)) gives each E node crossed by an interface a tensor ``eps_inv``. Row ``c`` of
it, at E_c's nodes, turns Ampere's law into
``E_c += dt * (eps_inv[c, c] curlH_c + sum_{j != c} eps_inv[c, j] avg_cj(curlH_j))``,
where ``avg_cj`` averages the four E_j nodes around the E_c node (the off-diagonal terms
couple staggered components, as in Meep), here symmetrized so that the scheme conserves
energy (see :func:`coefficients`).

Only the interface nodes differ from the plain isotropic update. The :class:`SubpixelBox`
describes them as dense tensors on the objects' bounding box; the step uses node lists:
the curl of H at the interface nodes and their neighbours (gathers), the correction at each
interface node, scattered into the E update. The bulk keeps its one coefficient array (no
per-component arrays, no full tensors), and the work scales with the interface, not with
the box. Dispersive (one-pole) media at an interface are two pole media, along and across
it (:func:`mixed_poles`), with their polarizations kept per interface node
(:func:`pole_step`).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

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
    ``1 / eps`` (the box must hold no lossy, bulk-dispersive or PEC node). ``poles``: the
    one-pole interface nodes, ``{"normal": (3, 3, box), "par": (2, 3, box), "perp": (2, 3,
    box), "c2": float}`` (per component: the unit normal, and the tangential and normal
    poles' ``(c1, c3)`` as :func:`interface_poles` returns them; zero where no pole); their
    ``eps_inv`` rows are the inverse eps_inf tensors. Stored densely for the set-up; the step
    runs on node lists (:func:`coefficients`).
    """

    lo: tuple
    eps_inv: np.ndarray
    active: np.ndarray | None = None  # (3, bx, by, bz) bool: nodes the tensor replaces (default all)
    poles: dict | None = None  # anisotropic dispersive interface nodes (see :func:`interface_poles`)

    def __post_init__(self):
        if _is_tracer(self.eps_inv):  # a traced raster (jax.grad over scene parameters)
            self._check_traced()
            return
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

    def _check_traced(self):
        """A box whose ``eps_inv`` is a JAX tracer: shapes only (values unknown); the node
        structure (``active``) must be concrete, and no dispersive poles."""
        shape = tuple(np.shape(self.eps_inv))
        if len(shape) != 5 or shape[:2] != (3, 3):
            raise ConfigError(f"SubpixelBox.eps_inv must have shape (3, 3, bx, by, bz), got {shape}")
        if self.active is None or _is_tracer(self.active) or self.poles is not None:
            raise ConfigError("a traced SubpixelBox.eps_inv needs a concrete active mask and no poles")
        act = np.asarray(self.active, bool)
        if act.shape != (3,) + shape[2:]:
            raise ConfigError(f"SubpixelBox.active must have shape {(3,) + shape[2:]}, got {act.shape}")
        object.__setattr__(self, "active", act)
        object.__setattr__(self, "lo", tuple(int(v) for v in self.lo))

    @property
    def traced(self) -> bool:
        """Whether ``eps_inv`` is a JAX tracer (a differentiated scene raster)."""
        return _is_tracer(self.eps_inv)

    @property
    def active_mask(self) -> np.ndarray:
        """(3, bx, by, bz) bool: the nodes whose update the tensor replaces."""
        if self.active is None:
            return np.ones((3,) + self.eps_inv.shape[2:], bool)
        return self.active

    @property
    def shape(self) -> tuple:
        return tuple(np.shape(self.eps_inv)[2:])

    @property
    def slices(self) -> tuple:
        return tuple(slice(lo, lo + n) for lo, n in zip(self.lo, self.shape))

    def check(self, grid_shape, pml, periodic=(False, False, False), bare_lo=(False, False, False)) -> None:
        """The box and a two-node margin (the four-point averages of the curl, and the curl's
        own stencil) lie inside the grid and outside the CPML, or the box spans a periodic
        axis whole (its margins then wrap around); ``bare_lo``: axes whose low face is a PEC
        wall without a CPML in front, where the box may start at the wall (i = 0)."""
        for ax, (lo, n, N, L) in enumerate(zip(self.lo, self.shape, grid_shape, pml)):
            if N == 1:  # 2-D grids: the invariant axis
                if n != 1 or lo != 0:
                    raise ConfigError(f"SubpixelBox along the invariant axis {ax} must be lo 0, size 1")
                continue
            if periodic[ax] and lo == 0 and n == N:
                continue
            if lo < (0 if bare_lo[ax] else 2 + L) or lo + n > N - 2 - L:
                raise ConfigError(
                    f"SubpixelBox along axis {ax} spans cells {lo}..{lo + n}; it must lie within "
                    f"{2 + L}..{N - 2 - L} (inside the grid, outside the CPML, two cells margin), or span "
                    "a periodic axis whole"
                )


def _is_tracer(x) -> bool:
    import jax

    return isinstance(x, jax.core.Tracer)


def _neighbours(coords, offset, shape, bloch):
    """Flat indices of the nodes at ``coords + offset`` ((M, 3) cells) and the Bloch factor
    each carries (None when all are 1). Axes of one cell without a Bloch phase are invariant
    (the offset is dropped); elsewhere the offset wraps, times exp(i k L) per period crossed
    (on bounded axes the box's margin keeps it inside)."""
    q = np.asarray(coords) + np.asarray(offset)
    phase = np.ones(len(q), complex)
    for ax, n in enumerate(shape):
        if n == 1 and bloch[ax] is None:
            q[:, ax] = 0
            continue
        periods = np.floor_divide(q[:, ax], n)
        if bloch[ax] is not None:
            phase = phase * np.power(complex(bloch[ax]), periods)
        q[:, ax] -= periods * n
    flat = np.ravel_multi_index(tuple(q.T), shape)
    return flat, (None if np.allclose(phase, 1) else phase)


def _pairs():
    return [(c, j) for c in range(3) for j in range(3) if j != c]


#: the four E_j nodes around an E_c node (cell offsets): +0/+1 along c, 0/-1 along j
def _around(c, j):
    out = []
    for dc in (0, 1):
        for dj in (0, -1):
            o = [0, 0, 0]
            o[c] += dc
            o[j] += dj
            out.append(o)
    return out


def coefficients(box: SubpixelBox, cb, dt: float, dtype, shape, bloch=(None, None, None), walls=None) -> dict:
    """The box's active nodes as lists (flat indices per component) and their coefficients.

    ``Delta_c = d curlH_c + sum_j sum_(4 E_j nodes q) w_q curlH_j(q)`` with ``d = dt
    eps_inv[c, c] - cb`` (cb: the plain update's coefficient there) and the symmetrized
    off-diagonal weights ``w_q = (dt / 8) (eps_inv[c, j] at the E_c node + eps_inv[j, c] at
    E_j's node q)`` (times q's Bloch factor). The curls are computed only where needed: at
    the active nodes and their neighbours (``curl_nodes``), from six gathers of H each.
    ``walls``: per axis whether the plane i = 0 is a PEC wall; a curl there takes the
    tangential H below the wall as its PEC image (even), not the wrapped far side.

    A traced box or ``cb`` (a differentiated scene): the node lists from the active mask (every
    entry of an active node may vary), the weights ``sub_w`` as one jitted JAX function of
    ``eps_inv`` and ``cb``."""
    if not (box.traced or _is_tracer(cb)):
        return _coefficients(box, box.eps_inv, cb, dt, dtype, shape, bloch, structural=False, walls=walls)
    import jax

    args = (dt, dtype, shape, bloch)
    zeros = (np.zeros(np.shape(box.eps_inv)), np.zeros(np.shape(cb)))
    out = _coefficients(box, *zeros, *args, structural=True, walls=walls)
    # one compiled function per structure (an optimization's next step reuses it)
    key = (box.lo, box.active_mask.shape, box.active_mask.tobytes(), float(dt), str(np.dtype(dtype)))
    key += (tuple(shape), tuple(None if b is None else complex(b) for b in bloch), np.shape(cb), walls)
    weights = _WEIGHTS.pop(key, None)
    if weights is None:  # over a stand-in of the structure (the cache must hold no tracer)
        like = SubpixelBox(box.lo, np.ones(np.shape(box.eps_inv)), box.active_mask)
        weights = jax.jit(
            lambda inv, c: _coefficients(like, inv, c, *args, structural=True, walls=walls)["sub_w"]
        )
    _WEIGHTS[key] = weights
    while len(_WEIGHTS) > 8:
        _WEIGHTS.popitem(last=False)
    out["sub_w"] = weights(box.eps_inv, cb)
    return out


#: the jitted weights of traced boxes by structure (lo, active nodes, grid, dtype)
_WEIGHTS: OrderedDict = OrderedDict()


def _coefficients(box: SubpixelBox, inv, cb, dt, dtype, shape, bloch, structural: bool, walls=None) -> dict:
    """:func:`coefficients` with the tensors ``inv`` (``box.eps_inv`` or a stand-in);
    ``structural``: which off-diagonal entries may be nonzero is the active mask's (else
    ``inv``'s values)."""
    traced = _is_tracer(inv) or _is_tracer(cb)
    xp = jnp if traced else np  # inside the weights' jit: JAX
    # traced: in the run's dtype (the backward pass runs after fdtd.run's 64-bit scope: a
    # float32 run must hold no float64 operation to transpose)
    cb = jnp.asarray(cb, dtype=dtype) if traced else np.asarray(cb, dtype=float)
    if traced:
        inv = jnp.asarray(inv, dtype=dtype)
    act = box.active_mask
    lo = np.asarray(box.lo)
    # a zero entry (an axis-aligned normal) of a traced tensor still has a derivative
    pattern = np.broadcast_to(act[:, None], (3, 3) + act.shape[1:]) if structural else inv
    complex_w = any(b is not None for b in bloch)
    wdtype = jnp.result_type(dtype, jnp.complex64) if complex_w else dtype

    def cb_at(c, cells):
        a = cb[c] if cb.ndim == 4 else cb
        return a[tuple(cells.T)] if np.ndim(a) == 3 else xp.full(len(cells), a)

    def pick(a, b, ok):
        """``a[b]`` where ``ok``, 0 elsewhere (``b`` (M, 3) box positions)."""
        if not traced:
            out = np.zeros(len(b))
            out[ok] = a[tuple(b[ok].T)]
            return out
        safe = np.where(ok[:, None], b, 0)
        return jnp.where(ok, jnp.asarray(a)[tuple(safe.T)], 0.0)

    box_shape = np.asarray(box.shape)

    def in_box(cells_, c):
        """The tensor entries' box position and whether an active node of E_c lies there."""
        b = cells_ - lo
        ok = np.all((b >= 0) & (b < box_shape), axis=1)
        ok[ok] = act[c][tuple(b[ok].T)]
        return b, ok

    # the E_c nodes to correct: the active ones, and those next to an active E_j node whose
    # row couples back to E_c (the symmetrized term reaches them)
    # components with off-diagonal coupling (staircased boxes have none: then no neighbours)
    coupled = [
        any(
            np.any(pattern[c, j][act[c]] != 0) or np.any(pattern[j, c][act[j]] != 0)
            for j in range(3)
            if j != c
        )
        for c in range(3)
    ]
    cells = []
    for c in range(3):
        cand = [np.argwhere(act[c]) + lo]
        for j in range(3):
            if j == c:
                continue
            q = np.argwhere(act[j] & (pattern[j, c] != 0)) + lo
            cand += [q - np.asarray(off) for off in _around(c, j)]
        flat, _ = _neighbours(np.concatenate(cand), (0, 0, 0), shape, bloch)
        cells.append(np.array(np.unravel_index(np.unique(flat), shape)).T.reshape(-1, 3))
    # the E_j nodes whose curl is needed: own active ones and the neighbours of the others
    need = [list(cells[j]) for j in range(3)]
    nbr = {}
    for c, j in _pairs():
        if not coupled[c]:
            continue
        for off in _around(c, j):
            q = cells[c] + np.asarray(off)
            nbr[(c, j, tuple(off))] = q
            need[j].extend(q)
    curl_nodes, pos = [], []
    for j in range(3):
        q = np.asarray(need[j], int).reshape(-1, 3)
        # keep neighbours' raw coordinates (they may wrap): index by their wrapped flat index
        flat, _ = _neighbours(q, (0, 0, 0), shape, bloch)
        uniq = np.unique(flat)
        curl_nodes.append(uniq)
        pos.append(uniq)  # a node's place in the curl list: np.searchsorted(uniq, flat)
    own = []
    weights = []
    gather = []
    for c in range(3):
        flat_c, _ = _neighbours(cells[c], (0, 0, 0), shape, bloch)
        own.append(np.searchsorted(pos[c], flat_c).astype(np.int32))
        w_c, g_c = [], []
        bc, on_c = in_box(cells[c], c)
        for j in range(3):
            if j == c or not coupled[c]:
                continue
            o_cj = pick(inv[c, j], bc, on_c)
            for off in _around(c, j):
                q = nbr[(c, j, tuple(off))]
                flat_q, ph = _neighbours(q, (0, 0, 0), shape, bloch)
                # the neighbour's E_j tensor row (at its wrapped node), if it lies in the box (else 0)
                qb, on_j = in_box(np.array(np.unravel_index(flat_q, shape)).T.reshape(-1, 3), j)
                o_jc = pick(inv[j, c], qb, on_j)
                w = dt / 8 * (o_cj + o_jc)
                if ph is not None:
                    w = w * ph
                w_c.append(w)
                g_c.append(np.searchsorted(pos[j], flat_q).astype(np.int32))
        safe = np.where(on_c[:, None], cells[c], cells[c][:1] if len(cells[c]) else 0)
        d_c = xp.where(on_c, dt * pick(inv[c, c], bc, on_c) - cb_at(c, safe), 0.0)
        weights.append((jnp.asarray(d_c, dtype), jnp.asarray(xp.stack(w_c), wdtype) if w_c else None))
        gather.append(jnp.asarray(np.stack(g_c)) if g_c else None)
    # curl_j = (H_b[q] - H_b[q - e_a]) - (H_a[q] - H_a[q - e_b]) with a = j + 1, b = j + 2
    curl_idx = []
    for j in range(3):
        a_, b_ = (j + 1) % 3, (j + 2) % 3
        q = np.array(np.unravel_index(curl_nodes[j], shape)).T
        e_a, e_b = -np.eye(3, dtype=int)[a_], -np.eye(3, dtype=int)[b_]
        ia, pa = _neighbours(q, e_a, shape, bloch)
        ib, pb = _neighbours(q, e_b, shape, bloch)
        if walls is not None:  # at a wall node the image of tangential H below it is even
            for ax, idx in ((a_, ia), (b_, ib)):
                if walls[ax]:
                    at = q[:, ax] == 0
                    idx[at] = curl_nodes[j][at]
        ph = lambda p: None if p is None else jnp.asarray(p, wdtype)  # noqa: E731
        curl_idx.append((jnp.asarray(curl_nodes[j]), jnp.asarray(ia), ph(pa), jnp.asarray(ib), ph(pb)))
    flat_nodes = [_neighbours(cells[c], (0, 0, 0), shape, bloch)[0] for c in range(3)]
    # the region the corrections are placed in (the box and a one-node margin, or the whole
    # of a periodic axis it spans) and the nodes' flat indices within it
    allc = np.concatenate(cells)
    whole = box_shape == np.asarray(shape)
    plo = np.where(whole, 0, np.minimum(lo - 1, allc.min(axis=0)))
    phi = np.where(whole, shape, np.maximum(lo + box_shape + 1, allc.max(axis=0) + 1))
    plo, phi = np.maximum(plo, 0), np.minimum(phi, shape)
    local = [np.ravel_multi_index(tuple((cells[c] - plo).T), tuple(phi - plo)) for c in range(3)]
    out = {
        "sub_nodes": tuple(jnp.asarray(f) for f in flat_nodes),
        "sub_local": tuple(jnp.asarray(v) for v in local),
        "sub_region": tuple((int(a), int(b)) for a, b in zip(plo, phi)),
        "sub_own": tuple(jnp.asarray(o) for o in own),
        "sub_w": tuple(weights),
        "sub_gather": tuple(gather),
        "sub_curl": tuple(curl_idx),
        # all nodes two cells inside the grid, no Bloch factors: the neighbours' flat indices
        # are the node's plus constants (correction_inline: one gather fusion, one scatter)
        "sub_inline": bool(
            not complex_w
            and all(
                np.all((cells[c][:, ax] >= 2) & (cells[c][:, ax] < n - 2)) if n > 1 else True
                for c in range(3)
                for ax, n in enumerate(shape)
            )
        ),
        "sub_local_all": jnp.asarray(
            np.concatenate([c * int(np.prod(phi - plo)) + local[c] for c in range(3)]).astype(np.int32)
        ),
    }
    if box.poles is not None:
        out["sub_pole"] = _pole_arrays(box, dtype, shape, bloch, plo, phi)
    return out


def _pole_arrays(box, dtype, shape, bloch, plo, phi):
    """Node lists and coefficients of the dispersive interface nodes (see :func:`pole_step`)."""
    pol = box.poles
    lo = np.asarray(box.lo)
    on = np.abs(pol["par"][1]) + np.abs(pol["perp"][1]) > 0  # (3, box)
    cdt = jnp.result_type(dtype, jnp.complex64) if any(b is not None for b in bloch) else dtype
    res = []
    for c in range(3):
        nodes = np.argwhere(on[c])
        cells = nodes + lo
        at = tuple(nodes.T)
        flat, _ = _neighbours(cells, (0, 0, 0), shape, bloch)
        nb = {}
        for j in range(3):
            if j == c:
                continue
            idx, phs = [], []
            for off in _around(c, j):
                f, ph = _neighbours(cells, off, shape, bloch)
                idx.append(f)
                phs.append(np.ones(len(f)) if ph is None else ph)
            ph = np.stack(phs) / 4
            nb[j] = (jnp.asarray(np.stack(idx)), jnp.asarray(ph if cdt != dtype else ph.real, cdt))
        res.append(
            {
                "nodes": jnp.asarray(flat),
                "local": jnp.asarray(np.ravel_multi_index(tuple((cells - plo).T), tuple(phi - plo))),
                "nbr": nb,
                "n": tuple(jnp.asarray(pol["normal"][c, k][at], dtype) for k in range(3)),
                "m": tuple(jnp.asarray(box.eps_inv[c, k][at], dtype) for k in range(3)),
                "par": tuple(jnp.asarray(pol["par"][q, c][at], dtype) for q in range(2)),
                "perp": tuple(jnp.asarray(pol["perp"][q, c][at], dtype) for q in range(2)),
            }
        )
    return {"comp": tuple(res), "c2": jnp.asarray(pol["c2"], dtype)}


def mixed_poles(fill, eps_b, eps_inf, strength, omega_0) -> dict:
    """Kottke's two mixtures of a one-pole medium ``eps_m = eps_inf + s / (omega_0^2 - omega^2
    - i gamma omega)`` (a Drude pole: ``omega_0 = 0, s = omega_p^2``) filling ``fill`` of a
    node's dual cell, with a dielectric ``eps_b``: each is one pole again, with the same gamma
    (the local-frame rule of J. Liu, M. Brio, J. V. Moloney, Opt. Lett. 37, 4802 (2012); a
    split-field form: A. Deinega, I. Valuev, Opt. Lett. 32, 3429 (2007)).

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


def pole_counts(box: SubpixelBox) -> tuple:
    """Number of dispersive interface nodes per component."""
    on = np.abs(box.poles["par"][1]) + np.abs(box.poles["perp"][1]) > 0
    return tuple(int(on[c].sum()) for c in range(3))


def pole_zeros(counts, dtype) -> tuple:
    """Polarization state of the dispersive interface nodes: per component c, the tangential
    pole's vector (P, P_old: 3 + 3 node lists) and the normal pole's amplitude (p, p_old)."""
    out = []
    for m in counts:
        vec = tuple(jnp.zeros((m,), dtype) for _ in range(6))
        out.append((vec[:3], vec[3:], jnp.zeros((m,), dtype), jnp.zeros((m,), dtype)))
    return tuple(out)


def pole_step(arrays, E, state):
    """Advance the interface nodes' polarizations from E at step n (E_c at its node, the other
    components averaged there from their four nearest nodes); returns (per component, the
    nodes and the E correction ``-M (P^(n+1) - P^n)`` there; the new state)."""
    pol = arrays["sub_pole"]
    flat = [e.reshape(-1) for e in E]
    c2 = pol["c2"]
    out, new = [], []
    for c, comp in enumerate(pol["comp"]):
        ev = []
        for j in range(3):
            if j == c:
                ev.append(flat[c][comp["nodes"]])
            else:
                idx, w = comp["nbr"][j]
                ev.append(jnp.sum(flat[j][idx] * w, axis=0))
        n = comp["n"]
        en = n[0] * ev[0] + n[1] * ev[1] + n[2] * ev[2]
        P, P_old, p, p_old = state[c]
        (c1t, c3t), (c1n, c3n) = comp["par"], comp["perp"]
        P_new = tuple(c1t * P[k] + c2 * P_old[k] + c3t * (ev[k] - n[k] * en) for k in range(3))
        p_new = c1n * p + c2 * p_old + c3n * en
        dP = [P_new[k] - P[k] + n[k] * (p_new - p) for k in range(3)]
        m = comp["m"]
        out.append((comp["nodes"], comp["local"], -(m[0] * dP[0] + m[1] * dP[1] + m[2] * dP[2])))
        new.append((P_new, P, p_new, p))
    return out, tuple(new)


def correction_inline(arrays, H, inv_dx, shape):
    """:func:`correction` for boxes inside the grid without Bloch factors: each neighbour's
    H is read at the node's flat index plus a constant, so the three components' corrections
    are one expression (one fused kernel of gathers) instead of curl lists and their
    gathers: between the H and the E pass the step runs two small kernels, not eight.
    Returns the corrections of all three components' nodes, concatenated."""
    strides = [0 if n == 1 else int(np.prod(shape[ax + 1 :])) for ax, n in enumerate(shape)]
    flat = [h.reshape(-1) for h in H]

    def curl(j, idx):
        a_, b_ = (j + 1) % 3, (j + 2) % 3
        return (
            (flat[b_][idx] - flat[b_][idx - strides[a_]]) - (flat[a_][idx] - flat[a_][idx - strides[b_]])
        ) * inv_dx

    outs = []
    for c in range(3):
        t = arrays["sub_nodes"][c]
        d, w = arrays["sub_w"][c]
        v = d * curl(c, t)
        if w is not None:
            k = 0
            for j in range(3):
                if j == c:
                    continue
                for off in _around(c, j):
                    shift = sum(o * st for o, st in zip(off, strides))
                    v = v + w[k] * curl(j, t + shift)
                    k += 1
        outs.append(v)
    return jnp.concatenate(outs)


def correction(arrays, H, inv_dx):
    """Per component c, (the E_c nodes' flat indices in the grid and in the placement region,
    ``Delta_c`` there): the curls at
    the needed nodes from gathers of H, then the node's own and its neighbours' curls
    weighted as :func:`coefficients` says. Work and memory scale with the interface nodes,
    not with the box."""
    flat = [h.reshape(-1) for h in H]
    curls = []
    for j, (nodes, ia, pa, ib, pb) in enumerate(arrays["sub_curl"]):
        a_, b_ = (j + 1) % 3, (j + 2) % 3
        hb_lo = flat[b_][ia] if pa is None else flat[b_][ia] * pa
        ha_lo = flat[a_][ib] if pb is None else flat[a_][ib] * pb
        curls.append(((flat[b_][nodes] - hb_lo) - (flat[a_][nodes] - ha_lo)) * inv_dx)
    out = []
    for c in range(3):
        d, w = arrays["sub_w"][c]
        g = arrays["sub_gather"][c]
        others = [j for j in range(3) if j != c]
        v = d * curls[c][arrays["sub_own"][c]]
        if g is not None:  # off-diagonal coupling
            v = v + jnp.sum(w[:4] * curls[others[0]][g[:4]], axis=0)
            v = v + jnp.sum(w[4:] * curls[others[1]][g[4:]], axis=0)
        out.append((arrays["sub_nodes"][c], arrays["sub_local"][c], v))
    return out
