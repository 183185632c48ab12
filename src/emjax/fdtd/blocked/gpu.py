"""The blocked pass as a kernel Pallas lowers to Triton: the x-march of :mod:`.march` with
every in-kernel array of a power-of-two shape and no operation Triton's lowering lacks.

What Triton (through Pallas) imposed, and how the kernel meets it:

* **Every array value has a power-of-two size.** A window is ``W = b + 2 TH`` cells along y
  and z with ``W`` a power of two (16, 32); the tile's own cells, ``b = W - 2 TH``, are no
  array of their own: the output is written as the whole window under a mask (cells
  ``[TH, W - TH)``), and the tiles, ``ceil(n / b)`` per axis, the last slid back inside the
  grid, overlap by ``2 TH`` cells (the shared cells get the same values twice). y and z
  must both be tiled (a whole axis of 12 cells would be a 12-wide array). x is no array
  axis at all: it is the march's loop, so ``W_x`` is any length (the whole axis, walled,
  or x tiles with their halos). Probe records are scalars (``TH x n_probes`` of them,
  loop-carried) stored one by one; ``(3,)``-shaped coefficients are read a scalar at a time.
* **No slicing, rolling, concatenating or dynamic indexing of values** (the lowering has
  no ``slice``/``dynamic_slice``/``dynamic_update_slice``/``pad``, and ``concatenate``
  only of ``[..., 1]`` pairs). The y/z differences are loads at addresses shifted by one
  (``ref.at[pl.ds(1 + d, W)]`` with a mask, zero outside the window: that, like the XLA
  tile's wrap-around, only spoils halo cells). Planes made inside the kernel must
  therefore be in memory before their shifted reads: the rings of 2 planes per level
  live in a per-program scratch in global memory (an extra output of the call, read back
  through L1/L2), with slots 0/1 (planes ``p % 2``), 2 (plane 0, the x wrap of a walled
  axis) and 3 (the level's new H, staged for the E update's shifted reads); a
  ``debug_barrier`` (``bar.sync``) orders each store before the CTA's next reads, and
  ``num_stages=1`` keeps the compiler from hoisting loads of the next iteration above it.
  Triton has no shared-memory scratch in Pallas; the scratch's traffic is the price
  (the next step on the speed side: Mosaic GPU's ``plgpu.SMEM`` rings).
* **No out-of-bounds windows.** ``pl.ds`` windows stay inside their arrays (interpret
  mode clamps a start that runs over, which would shift the data): the scratch has one
  cell of padding on each y/z side, and the outputs are the inputs' padded shape (the
  caller slices the grid out; a program never writes where another reads in the same
  call).
* The backend is named (``compiler_params=pltriton.CompilerParams``): JAX picks Mosaic
  GPU by default in some versions, whose rules differ.

On the CPU the same kernel runs with ``interpret=True`` (no barriers: programs run one
after another); the tests compare it with the XLA step and check that it lowers for
"cuda" (cross-platform lowering emits the ``__gpu$xla.gpu.triton`` custom call with the
kernel's Triton IR, with no GPU present).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as pltriton

from .tile import CURL
from .traversal import wrap_pad

SLOTS = 4  # 0, 1: ring planes p % 2; 2: plane 0 (E, the x wrap); 3: the level's new H


def is_pow2(n: int) -> bool:
    return n >= 1 and (n & (n - 1)) == 0


def compiler_params(window, dtype):
    """Triton's launch settings: about 4 values of a plane per thread (a 32 x 32 float32
    window: 8 warps), the ~30 planes in flight per level kept in registers; no software
    pipelining (``num_stages=1``: no load hoisted above a barrier)."""
    size = window[1] * window[2] * jnp.dtype(dtype).itemsize
    return pltriton.CompilerParams(num_warps=min(8, max(1, size // 512)), num_stages=1)


def pass_triton(cfg, tiling, th, coefs, kinds, E, H, psi, src_values, steps, interpret: bool):
    """One pass of ``th`` steps (``steps`` <= th, traced) as one Triton-shaped Pallas call."""
    W, h, shape = tiling.window, tiling.halo, tiling.shape
    dtype = E[0].dtype
    psi_keys = tuple(sorted(psi))
    n_f = 6 + len(psi_keys)
    counts = tiling.counts
    pad = lambda x: wrap_pad(x, tiling, (0, 1, 2))  # noqa: E731
    fields = [pad(x) for x in (*E, *H, *(psi[k] for k in psi_keys))]
    coef_keys = tuple(sorted(coefs))
    n_src = src_values.shape[1]
    sv = src_values if n_src else jnp.zeros((th, 1), dtype)
    ins = (*fields, *(coefs[k] for k in coef_keys), sv, jnp.reshape(steps, (1,)).astype(jnp.int32))
    n_probe = len(cfg.probes)
    out_shape = [jax.ShapeDtypeStruct(f.shape, dtype) for f in fields]
    out_shape.append(jax.ShapeDtypeStruct((*counts, max(th * n_probe, 1)), dtype))
    out_shape.append(jax.ShapeDtypeStruct((*counts, th + 1, SLOTS, n_f, W[1] + 2, W[2] + 2), dtype))

    def kernel(*refs):
        in_refs, out_refs = refs[: len(ins)], refs[len(ins) :]
        _kernel(cfg, tiling, th, kinds, coef_keys, psi_keys, in_refs, out_refs, interpret)

    outs = pl.pallas_call(
        kernel,
        out_shape=tuple(out_shape),
        grid=counts,
        compiler_params=compiler_params(W, dtype),
        interpret=interpret,
    )(*ins)
    grid = tuple(slice(hh, hh + n) for hh, n in zip(h, shape))
    new = [o[grid] for o in outs[:n_f]]
    rec = jnp.sum(outs[n_f].reshape((-1, outs[n_f].shape[-1])), axis=0)
    rec = rec[: th * n_probe].reshape((th, n_probe))
    return tuple(new[:3]), tuple(new[3:6]), dict(zip(psi_keys, new[6:])), rec


def _kernel(cfg, tiling, th, kinds, coef_keys, psi_keys, in_refs, out_refs, interpret):
    W, h, b, n = tiling.window, tiling.halo, tiling.block, tiling.shape
    n_f = 6 + len(psi_keys)
    idx = tuple(pl.program_id(a) for a in range(3))
    s = [tiling.start(a, idx[a]) for a in range(3)]
    field_refs, coef = in_refs[:n_f], dict(zip(coef_keys, in_refs[n_f:-2]))
    sv_ref, steps = in_refs[-2], in_refs[-1][0]
    out_fields, rec_ref, scr = out_refs[:n_f], out_refs[n_f], out_refs[n_f + 1]
    dtype = rec_ref.dtype
    zero = jnp.zeros((), dtype)
    inv_dx = 1.0 / cfg.dx
    iy = jax.lax.broadcasted_iota(jnp.int32, (W[1], W[2]), 0)
    iz = jax.lax.broadcasted_iota(jnp.int32, (W[1], W[2]), 1)
    yz = (pl.ds(s[1], W[1]), pl.ds(s[2], W[2]))

    def barrier():
        if not interpret:
            pltriton.debug_barrier()

    def rd(level, slot, c, dy=0, dz=0):
        """Component ``c`` of a scratch plane, shifted by (dy, dz), zero off the window."""
        i32 = lambda v: jnp.asarray(v, jnp.int32)  # noqa: E731 (a masked load's indices: arrays)
        at = (*idx, i32(level), i32(slot), i32(c), pl.ds(1 + dy, W[1]), pl.ds(1 + dz, W[2]))
        if dy == 0 and dz == 0:
            return scr[at]
        ref = scr.at[at]  # one indexer (Triton's lowering takes no chain of them)
        m = (iy + dy >= 0) & (iy + dy < W[1]) & (iz + dz >= 0) & (iz + dz < W[2])
        return pltriton.load(ref, mask=m, other=0.0)

    def wr(level, slot, c, x):
        scr[(*idx, level, slot, c, pl.ds(1, W[1]), pl.ds(1, W[2]))] = x

    def line(key, axis, p):
        """A per-index input along ``axis`` at window plane ``p`` (x: a scalar; y, z: a
        line shaped to broadcast over the plane)."""
        r = coef[key]
        if axis == 0:
            return r[s[0] + p]
        v = r[yz[axis - 1]]
        return v.reshape((W[1], 1)) if axis == 1 else v.reshape((1, W[2]))

    lines = {}
    for k in coef_keys:
        kind = kinds[k]
        if kind in (("line", 1), ("line", 2)):
            lines[k] = line(k, kind[1], None)

    def coef_at(key, c, p):
        """ca, cb, pec_keep component ``c`` at plane ``p``: a plane or a scalar."""
        r, kind = coef[key], kinds[key]
        if kind == "grid":
            return r[(s[0] + p, *yz)]
        if kind == "comp":
            return r[(c, s[0] + p, *yz)]
        if r.ndim == 0:
            return r[...]
        return r[c] if r.shape[0] == 3 else r[0]

    def lv(key, axis, p):
        return line(key, 0, p) if axis == 0 else lines[key]

    def own(axis, i, pos_w):
        pos = pos_w - h[axis] + s[axis]
        return (pos >= i * b[axis]) & (pos < jnp.minimum((i + 1) * b[axis], n[axis]))

    own12 = own(1, idx[1], iy) & own(2, idx[2], iz)

    def level(t, k, rec):
        p = k - 1 - t
        valid = (p >= 0) & (p < W[0])
        active = valid & (t < steps)
        pc = jnp.clip(p, 0, W[0] - 1)
        cur, prev = _rem2(pc), _rem2(pc + 1)  # planes pc and pc +- 1
        nxt = jnp.where(pc + 1 >= W[0], 2, prev)
        E_p = [rd(t, cur, c) for c in range(3)]
        H_old = [rd(t, cur, 3 + c) for c in range(3)]
        # psi planes are read where used (and read again for a level past ``steps``), not
        # held in registers across the level: 12 of them in a CPML on every face
        psi_old = lambda key: rd(t, cur, 6 + psi_keys.index(key))  # noqa: E731
        # H update: forward differences of E (x: the next plane; y, z: shifted reads)
        cE = [0.0, 0.0, 0.0]
        new_psi = {}
        for out, axis, comp, sign in CURL:
            f = E_p[comp]
            if axis == 0:
                g = rd(t, nxt, comp)
            else:
                g = rd(t, cur, comp, int(axis == 1), int(axis == 2))
            v = (g - f) * inv_dx
            if cfg.pml[axis]:
                vs = (g * lv(f"maskH{axis}", axis, pc) - f) * inv_dx
                key = f"H{axis}{comp}"
                pb, pcc, km1 = (lv(f"pmlH{axis}{q}", axis, pc) for q in "bck")
                ps = pb * psi_old(key) + pcc * vs
                new_psi[key] = ps
                v = v + (km1 * vs + ps if cfg.pml_kappa[axis] else ps)
            cE[out] = cE[out] + sign * v
        H_new = [ho - cfg.dt * c for ho, c in zip(H_old, cE)]
        for c in range(3):
            wr(t + 1, 3, 3 + c, H_new[c])
        barrier()
        # E update: backward differences of the new H (x: the plane before, made by this
        # level last iteration; y, z: shifted reads of the staged plane)
        not_first = pc >= 1
        cH = [0.0, 0.0, 0.0]
        for out, axis, comp, sign in CURL:
            f = H_new[comp]
            if axis == 0:
                g = jnp.where(not_first, rd(t + 1, prev, 3 + comp), zero)
            else:
                g = rd(t + 1, 3, 3 + comp, -int(axis == 1), -int(axis == 2))
            v = (f - g) * inv_dx
            if cfg.pml[axis]:
                vs = (f - g * lv(f"maskE{axis}", axis, pc)) * inv_dx
                key = f"E{axis}{comp}"
                pb, pcc, km1 = (lv(f"pmlE{axis}{q}", axis, pc) for q in "bck")
                ps = pb * psi_old(key) + pcc * vs
                new_psi[key] = ps
                v = v + (km1 * vs + ps if cfg.pml_kappa[axis] else ps)
            cH[out] = cH[out] + sign * v
        E_new = [coef_at("ca", c, pc) * E_p[c] + coef_at("cb", c, pc) * cH[c] for c in range(3)]
        for c in range(3):
            for ax in range(3):
                if ax != c and cfg.walls[ax]:
                    E_new[c] = E_new[c] * lv(f"wall{ax}", ax, pc)
        if cfg.has_pec:
            E_new = [e * coef_at("pec_keep", c, pc) for c, e in enumerate(E_new)]
        gidx = (line("index0", 0, pc), lines["index1"], lines["index2"])

        def at(node):
            return (gidx[0] == node[0]) & (gidx[1] == node[1]) & (gidx[2] == node[2])

        for si, (node, comp) in enumerate(cfg.sources):
            if node is not None:
                E_new[comp] = E_new[comp] + jnp.where(at(node), sv_ref[t, si], zero)
        own_all = own12 & own(0, idx[0], pc)
        rec = list(rec)
        for pi, (field, comp, node) in enumerate(cfg.probes):
            f = (E_new if field == "E" else H_new)[comp]
            val = jnp.sum(jnp.where(at(node) & own_all, f, zero))
            rec[t * len(cfg.probes) + pi] = rec[t * len(cfg.probes) + pi] + jnp.where(active, val, zero)
        # a level past ``steps`` (the last, shorter pass) passes its plane on unchanged
        E_out = [jnp.where(active, x, o) for x, o in zip(E_new, E_p)]
        H_out = [jnp.where(active, x, o) for x, o in zip(H_new, H_old)]
        P_out = [
            jnp.where(active, new_psi[key], psi_old(key)) if key in new_psi else psi_old(key)
            for key in psi_keys
        ]
        planes = (*E_out, *H_out, *P_out)

        @pl.when(valid)
        def _():
            for c, x in enumerate(planes):
                wr(t + 1, cur, c, x)

        @pl.when(valid & (pc == 0))
        def _():
            for c in range(3):
                wr(t + 1, 2, c, E_out[c])

        if t == th - 1:
            inside = (iy >= h[1]) & (iy < W[1] - h[1]) & (iz >= h[2]) & (iz < W[2] - h[2])

            @pl.when(valid & (pc >= h[0]) & (pc < W[0] - h[0]))
            def _():
                for ref, x in zip(out_fields, planes):
                    pltriton.store(ref.at[(s[0] + pc, *yz)], x, mask=inside)

        barrier()
        return tuple(rec)

    def iteration(k, rec):
        q = jnp.minimum(k, W[0] - 1)

        @pl.when(k < W[0])
        def _():
            for c, r in enumerate(field_refs):
                wr(0, _rem2(k), c, r[(s[0] + q, *yz)])

        @pl.when(k == 0)
        def _():
            for c in range(3):
                wr(0, 2, c, field_refs[c][(s[0], *yz)])

        barrier()
        for t in range(th):
            rec = level(t, k, rec)
        return rec

    rec0 = tuple(zero for _ in range(max(th * len(cfg.probes), 1)))
    rec = jax.lax.fori_loop(jnp.int32(0), jnp.int32(W[0] + th), iteration, rec0)
    for i, r in enumerate(rec):
        rec_ref[(*idx, i)] = r


def _rem2(x):
    """``x % 2`` for ``x >= 0`` (``jnp.remainder``'s sign fix-up does not lower to Triton)."""
    return jax.lax.rem(x, jnp.int32(2))


def check_window(tiling) -> str | None:
    """Why ``tiling`` does not suit the Triton kernel, or None."""
    W, t = tiling.window, tiling.tiled
    if not (t[1] and t[2]):
        return "y and z must be tiled (tile < the axis's cells)"
    if not (is_pow2(W[1]) and is_pow2(W[2])):
        return f"the y/z windows tile + 2 th = {W[1]}, {W[2]} must be powers of two (Triton)"
    return None
