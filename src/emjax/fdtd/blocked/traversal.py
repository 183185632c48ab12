"""The blocked traversal: tiles, their TH-deep halos, the inputs a tile reads, and two
drivers of the same passes: a Pallas kernel (:func:`pass_pallas`, one program per tile;
``interpret=True`` runs it on the CPU) and plain JAX (:func:`pass_xla`, a loop over the
tiles with dynamic slices). Both call :func:`emjax.fdtd.blocked.tile.advance`.

Geometry, per axis ``a`` of ``n`` cells with tile size ``b``: ``b >= n`` leaves the axis
whole (one tile, no halo). Otherwise there are ``ceil(n / b)`` tiles; tile ``i`` owns the
cells ``[i b, min((i + 1) b, n))`` and computes the ``b`` cells from ``s_i = min(i b, n -
b)`` (the last tile slides back inside the grid, so every tile has the same shape; the
cells it shares with its neighbour get the same arithmetic and the same values). Its
window is ``[s_i - TH, s_i + b + TH)``, wrapped modulo ``n`` (the XLA step's differences
wrap; walls and the CPML act through the per-index masks and profiles): the inputs are
padded by ``TH`` wrapped planes once per pass, so window ``i`` starts at padded index
``s_i``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl

from . import march as march_mod
from . import tile as tile_mod


@dataclass(frozen=True)
class Tiling:
    """Static tiling of a grid of ``shape`` for passes of ``th`` steps (``tile``: cells per
    tile along x, y, z; an entry >= the axis's length leaves that axis whole; ``march``:
    each tile updated plane by plane along x in the GPU kernel's order, :mod:`.march`)."""

    shape: tuple
    tile: tuple
    th: int
    march: bool = False

    @property
    def tiled(self) -> tuple:
        return tuple(b < n for b, n in zip(self.tile, self.shape))

    @property
    def block(self) -> tuple:
        """Cells each tile computes, per axis."""
        return tuple(min(b, n) for b, n in zip(self.tile, self.shape))

    @property
    def halo(self) -> tuple:
        return tuple(self.th if t else 0 for t in self.tiled)

    @property
    def window(self) -> tuple:
        return tuple(b + 2 * h for b, h in zip(self.block, self.halo))

    @property
    def counts(self) -> tuple:
        return tuple(math.ceil(n / b) for b, n in zip(self.block, self.shape))

    def start(self, axis: int, i):
        """First computed cell of tile ``i`` (also its window's start in padded indices)."""
        b, n = self.block[axis], self.shape[axis]
        return jnp.minimum(i * b, n - b)

    def own(self, axis: int, i):
        """Mask over the window: the cells tile ``i`` owns (writes back, reports probes of)."""
        b, n, h = self.block[axis], self.shape[axis], self.halo[axis]
        pos = jnp.arange(self.window[axis]) - h + self.start(axis, i)
        return (pos >= i * b) & (pos < jnp.minimum((i + 1) * b, n))


def wrap_pad(x, tiling: Tiling, axes: tuple):
    """``x`` padded by TH wrapped planes on each tiled axis; ``axes``: for each dimension of
    ``x``, the grid axis it runs along (or None)."""
    widths = [(tiling.halo[a], tiling.halo[a]) if a is not None else (0, 0) for a in axes]
    if not any(w[0] for w in widths):
        return x
    return jnp.pad(x, widths, mode="wrap")


# leaf kinds: "grid" (nx, ny, nz), "comp" (3, nx, ny, nz), ("line", a) (n_a,), "whole"
def kind_of(x, shape, key: str):
    s = np.shape(x)
    if key.startswith(("mask", "pml", "wall", "index")):
        return ("line", int(key[-1]) if key[-1].isdigit() else int(key[-2]))
    if s == tuple(shape):
        return "grid"
    if len(s) == 4 and s[0] == 3 and s[1:] == tuple(shape):
        return "comp"
    return "whole"


def _axes(kind):
    if kind == "grid":
        return (0, 1, 2)
    if kind == "comp":
        return (None, 0, 1, 2)
    if kind == "whole":
        return None
    return (kind[1],)


def pad_inputs(tree: dict, kinds: dict, tiling: Tiling) -> dict:
    return {
        k: v if _axes(kinds[k]) is None else wrap_pad(v, tiling, _axes(kinds[k])) for k, v in tree.items()
    }


def window_of(x, kind, tiling: Tiling, idx):
    """Tile ``idx``'s window of the padded array ``x`` (a value or a Pallas ref)."""
    if kind == "whole":
        return x[...]
    sl = {a: pl.ds(tiling.start(a, idx[a]), tiling.window[a]) for a in range(3)}
    axes = _axes(kind)
    return x[tuple(slice(None) if a is None else sl[a] for a in axes)]


def _run_tile(cfg, tiling, th, w, state_w, src_values, idx, steps):
    w = dict(w)
    for a in range(3):
        w[f"own{a}"] = tiling.own(a, idx[a])
    E, H, psi = state_w
    fn = march_mod.advance if tiling.march else tile_mod.advance
    return fn(cfg, w, E, H, psi, src_values, th, steps)


def _interior(x, tiling: Tiling):
    h, b = tiling.halo, tiling.block
    return x[h[0] : h[0] + b[0], h[1] : h[1] + b[1], h[2] : h[2] + b[2]]


def pass_xla(cfg, tiling: Tiling, th: int, coefs: dict, kinds: dict, E, H, psi, src_values, steps):
    """One pass of ``th`` steps over all tiles in plain JAX (a loop over the tiles with
    dynamic slices): the reference of the Pallas kernel's traversal, and a fallback."""
    grid_axes = (0, 1, 2)
    pE = tuple(wrap_pad(e, tiling, grid_axes) for e in E)
    pH = tuple(wrap_pad(h, tiling, grid_axes) for h in H)
    ppsi = {k: wrap_pad(v, tiling, grid_axes) for k, v in psi.items()}
    counts = tiling.counts
    n_tiles = math.prod(counts)
    rec0 = jnp.zeros((th, len(cfg.probes)), E[0].dtype)

    def body(t, carry):
        outE, outH, outpsi, rec = carry
        idx = (t // (counts[1] * counts[2]), (t // counts[2]) % counts[1], t % counts[2])
        w = {k: window_of(v, kinds[k], tiling, idx) for k, v in coefs.items()}
        win = lambda x: window_of(x, "grid", tiling, idx)  # noqa: E731
        sw = (tuple(map(win, pE)), tuple(map(win, pH)), {k: win(v) for k, v in ppsi.items()})
        nE, nH, npsi, r = _run_tile(cfg, tiling, th, w, sw, src_values, idx, steps)
        at = tuple(tiling.start(a, idx[a]) for a in range(3))
        put = lambda dst, x: jax.lax.dynamic_update_slice(dst, _interior(x, tiling), at)  # noqa: E731
        outE = tuple(put(d, x) for d, x in zip(outE, nE))
        outH = tuple(put(d, x) for d, x in zip(outH, nH))
        outpsi = {k: put(outpsi[k], npsi[k]) for k in outpsi}
        return outE, outH, outpsi, rec + r

    init = (tuple(E), tuple(H), dict(psi), rec0)
    return jax.lax.fori_loop(0, n_tiles, body, init)


def _march_kernel(cfg, tiling, th, kinds, coef_keys, psi_keys, in_refs, out_refs, idx):
    """A program's body with the x-march (:func:`march.march`): planes read from and written
    to global memory one at a time, rings of 2 planes per level in between."""
    n_f = 6 + len(psi_keys)
    s = [tiling.start(a, idx[a]) for a in range(3)]
    W, h, b = tiling.window, tiling.halo, tiling.block
    yz = (pl.ds(s[1], W[1]), pl.ds(s[2], W[2]))
    field_refs = in_refs[:n_f]
    coef_refs = dict(zip(coef_keys, in_refs[n_f:-2]))
    sv = in_refs[-2][...]
    k_steps = in_refs[-1][0]
    own = [tiling.own(a, idx[a]) for a in range(3)]
    fixed = {
        k: window_of(r, kinds[k], tiling, idx)
        for k, r in coef_refs.items()
        if kinds[k] in (("line", 1), ("line", 2), "whole")
    }
    fixed.update(own1=own[1], own2=own[2])

    def load(q):
        planes = [r[(pl.ds(s[0] + q, 1), *yz)] for r in field_refs]
        return tuple(planes[:3]), tuple(planes[3:6]), dict(zip(psi_keys, planes[6:]))

    def coef_at(p):
        w = dict(fixed)
        two = lambda x, ax=0: jnp.concatenate([x, x], axis=ax)  # noqa: E731
        for k, r in coef_refs.items():
            kind = kinds[k]
            if kind == ("line", 0):
                w[k] = two(r[pl.ds(s[0] + p, 1)])
            elif kind == "grid":
                w[k] = two(r[(pl.ds(s[0] + p, 1), *yz)])
            elif kind == "comp":
                w[k] = two(r[(slice(None), pl.ds(s[0] + p, 1), *yz)], 1)
        w["own0"] = two(jax.lax.dynamic_slice_in_dim(own[0], p, 1))
        return w

    def store(out, p, valid, E_p, H_p, P_p):
        inside = valid & (p >= h[0]) & (p < h[0] + b[0])

        @pl.when(inside)
        def _():
            at = (pl.ds(s[0] + p - h[0], 1), pl.ds(s[1], b[1]), pl.ds(s[2], b[2]))
            for ref, x in zip(out_refs[:n_f], (*E_p, *H_p, *(P_p[k] for k in psi_keys))):
                ref[at] = x[:, h[1] : h[1] + b[1], h[2] : h[2] + b[2]]

        return out

    dtype = out_refs[0].dtype
    _, rec = march_mod.march(
        cfg, th, k_steps, W[0], (W[1], W[2]), dtype, psi_keys, load, coef_at, store, (), sv
    )
    if cfg.probes:
        out_refs[-1][...] = rec


def pass_pallas(
    cfg, tiling: Tiling, th: int, coefs: dict, kinds: dict, E, H, psi, src_values, steps, interpret: bool
):
    """One pass of ``th`` steps as one Pallas call: a program per tile reads its windows
    (inputs padded by TH wrapped planes) from global memory, advances them ``th`` steps and
    writes the cells it computes; the probe records come out per tile and are summed (each
    probe has one owner)."""
    grid_axes = (0, 1, 2)
    pE = tuple(wrap_pad(e, tiling, grid_axes) for e in E)
    pH = tuple(wrap_pad(h, tiling, grid_axes) for h in H)
    psi_keys = tuple(sorted(psi))
    ppsi = tuple(wrap_pad(psi[k], tiling, grid_axes) for k in psi_keys)
    coef_keys = tuple(sorted(coefs))
    ins = (*pE, *pH, *ppsi, *(coefs[k] for k in coef_keys), src_values, jnp.reshape(steps, (1,)))
    n_f = 6 + len(psi_keys)
    counts = tiling.counts
    n_probe = len(cfg.probes)
    dtype = E[0].dtype

    def kernel(*refs):
        in_refs, out_refs = refs[: len(ins)], refs[len(ins) :]
        idx = tuple(pl.program_id(a) for a in range(3))
        if tiling.march:
            return _march_kernel(cfg, tiling, th, kinds, coef_keys, psi_keys, in_refs, out_refs, idx)
        win = lambda r: window_of(r, "grid", tiling, idx)  # noqa: E731
        fields = [win(r) for r in in_refs[:n_f]]
        w = {k: window_of(r, kinds[k], tiling, idx) for k, r in zip(coef_keys, in_refs[n_f:-2])}
        sv = in_refs[-2][...]
        k_steps = in_refs[-1][0]
        sw = (tuple(fields[:3]), tuple(fields[3:6]), dict(zip(psi_keys, fields[6:])))
        nE, nH, npsi, r = _run_tile(cfg, tiling, th, w, sw, sv, idx, k_steps)
        at = tuple(pl.ds(tiling.start(a, idx[a]), tiling.block[a]) for a in range(3))
        for ref, x in zip(out_refs[:n_f], (*nE, *nH, *(npsi[k] for k in psi_keys))):
            ref[at] = _interior(x, tiling)
        if n_probe:
            out_refs[-1][...] = r

    any_spec = pl.BlockSpec(memory_space=pl.ANY)
    out_shape = [jax.ShapeDtypeStruct(x.shape, x.dtype) for x in (*E, *H, *(psi[k] for k in psi_keys))]
    out_specs = [any_spec] * n_f
    if n_probe:
        out_shape.append(jax.ShapeDtypeStruct((*counts, th, n_probe), dtype))
        out_specs.append(pl.BlockSpec((None, None, None, th, n_probe), lambda i, j, k: (i, j, k, 0, 0)))
    outs = pl.pallas_call(
        kernel,
        out_shape=tuple(out_shape),
        grid=counts,
        in_specs=[any_spec] * len(ins),
        out_specs=tuple(out_specs),
        interpret=interpret,
    )(*ins)
    nE, nH = tuple(outs[:3]), tuple(outs[3:6])
    npsi = dict(zip(psi_keys, outs[6:n_f]))
    rec = jnp.sum(outs[-1], axis=(0, 1, 2)) if n_probe else jnp.zeros((th, 0), dtype)
    return nE, nH, npsi, rec
