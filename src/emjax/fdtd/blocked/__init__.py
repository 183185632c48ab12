"""Temporal blocking of the FDTD step: each pass over global memory advances the grid ``TH``
steps, tile by tile, with the tile's cells in fast memory.

What this package computes is :func:`emjax.fdtd.step.advance`'s result to rounding (the
same arithmetic per cell; tests compare them in float64 to 1e-12), for the 2nd-order Yee
update with per-cell ``ca``/``cb`` (eps, sigma), per-cell PEC, PEC walls, the CPML on any
face, point dipoles and probes (the CUDA kernel: DFT planes and TF/SF boxes along an axis
too, :mod:`.records`, :mod:`.incidence`). Anything else :func:`unsupported` names, and the caller
keeps the XLA step.

Traversal: overlapped tiles with TH-deep halos
----------------------------------------------
The grid is cut into tiles of ``bx x by x bz`` cells (an axis whose tile size is at
least its length stays whole). A pass gives each tile a window: its cells plus ``TH``
halo planes on each face of each tiled axis (wrapped modulo the grid, as the XLA step's
differences wrap; walls and CPML act through per-index masks and profiles). The tile
runs ``TH`` full steps on the window; every step spoils one plane at each face (the H
update reads E at ``i + 1``, the E update H at ``i - 1``), so the tile's own cells are
exact after ``TH`` steps and are written back. The halo is recomputed by the neighbours
(redundant work, no communication between tiles within a pass): independent tiles, one
program each, in any order. ``TH`` that does not divide the step count ends with one
shorter pass. Sources act on every copy of their cell in any window; a probe is recorded
by the one tile that owns its cell, at every step of the pass. The CPML's psi lives in the
same windows (zero outside the slabs), so edge tiles and CPML tiles are not special cases.

This is the calculation window of :mod:`emjax.fdtd.window` one level down (host ->
device there, device memory -> shared memory / registers here) and the seed paper's
DiamondTorre idea (a region advanced TH steps per load). Diamond (skewed) tiles avoid the
redundant halo work, but each tile then depends on its neighbours' results within the
pass: a dependency order (wavefronts of CTAs) that one Pallas call cannot express (its
programs are independent; a call per wavefront pays a launch and a pass each) and that
costs synchronisation. The overlapped tile is the one
Pallas can write as one ``pallas_call`` and the one whose logic the CPU can check
(``interpret=True``); its cost is the halo's redundant updates, bounded below.

Bytes and work per cell update (the model)
------------------------------------------
The XLA step is two passes (H, then E), each reading six field components and writing
three: 18 values, 72 bytes per cell update in float32 (plus ``cb`` for a dielectric, ``ca``
for a lossy one); it runs at the copy bandwidth, ~36 G cell/s on an H100 (3.35 TB/s), ~40
on an H200. A blocked pass reads each window of the 6 components once (plus the
coefficients) and writes the tile's cells once, for ``TH`` steps:

    bytes/update = (6 s W/B + 6 s + s_coef W/B) / TH,    W/B = prod_a (b_a + 2 h_a) / b_a

``s``: bytes per value (4 or 8); ``s_coef``: coefficient bytes per cell (0 in vacuum, ``s``
with eps, ``2 s`` with eps and sigma); ``h_a`` = TH on a tiled axis, 0 on a whole one.
Every window cell is stepped every step, so the arithmetic per useful update is ``W/B``
times the XLA step's (~40 flops: 12 differences, their scalings, the two updates). With x
whole (marched inside the kernel, below) and by = bz = 32: TH = 4 gives W/B = 1.56 and
15.4 B/update in float32 (4.7x less than 72), TH = 8 gives W/B = 2.25 and 9.75 B/update.

What fits on chip decides. Marching along x (:mod:`.march`), time level ``t = 0 .. TH``
keeps a ring of 2 planes of each of the 6 components of its window (level ``t`` reads E
on planes ``p, p + 1`` and H on ``p - 1, p``; the tests fail with 1): ``12 (TH + 1)``
planes of ``(by + 2TH)(bz + 2TH)`` values per program. Float32 on an H100 (228 KB of
shared memory per SM):

* by = bz = 16, TH = 4: 24 x 24 window, 2.3 KB a plane, 60 planes = 138 KB (one program
  per SM); W/B = 2.25, 19.5 B/update, a global-memory limit of 3.35e12 / 19.5 = 172 G
  cell/s;
* by = bz = 16, TH = 3: 22 x 22, 48 planes = 93 KB (two programs per SM); W/B = 1.89,
  23.1 B/update, 145 G cell/s;
* by = bz = 32 needs 384 KB at TH = 4: too big.

The CPML's psi planes are better read and written straight from global memory at each
level than kept in rings (x-CPML psi in every tile would add 4 components, 92 KB at the
first setting): they exist on 2 x 10 of 512 planes. The arithmetic, 2.25 x ~40 = 90 flops
per useful update, allows 67e12 / 90 = 740 G cell/s (float32, no tensor cores): not the
limit. Shared-memory traffic (~18 accesses of 4 B per window cell and step, x 2.25 = 160
B per useful update) against ~33 TB/s (132 SMs x 128 B/clock x 1.98 GHz) allows ~200 G
cell/s: the same order as global memory. Expected: 100-150 G cell/s float32 in vacuum on
an H100 (70-85% of the 145-172 limits; 3-4x the XLA step), about half in float64 (bytes,
planes and shared memory double: TH = 3 or smaller tiles). A dielectric adds ``cb`` (+2.3
B/update, ~10%), a lossy one ``ca`` too.

What the GPU kernel must do (written here as the CPU-checked reference of the same passes)
-------------------------------------------------------------------------------------------
With ``march=False``, :func:`traversal.pass_pallas` holds a whole window as values: right
for ``interpret=True`` and for the logic, not for a GPU (a 512-plane column is far more
than an SM holds). With ``march=True`` (x whole and walled, or x tiled) each program
marches along x: it reads one plane of its window per iteration from global memory, keeps
rings of 2 planes per time level as loop-carried values and writes one plane of its cells
per iteration (:mod:`.march`; the tests compare it with the XLA step, in interpret mode).
That is the kernel to compile for the GPU first. What it must become there:

1. Program (CTA) per (y, z) tile; loop ``k = 0 .. nx + TH - 1`` over x planes, level
   ``t`` on plane ``k - 1 - t`` (:mod:`.march` has the order and its dependencies). The
   rings (2 planes of E, H per level, ``(TH + 1) x 2`` planes per component) must sit
   in shared memory (``plgpu.SMEM`` scratch, slot ``p % 2``) or registers, not in the
   loop carry as values if the compiler spills them to local memory. Along x no halo (no
   redundant work) when x is walled; a periodic x needs x tiles (windows with an x halo).
2. Per plane the window's y/z differences are shifts of a shared-memory plane by one
   (``pl.ds(1, ...)`` reads) and each level's update is elementwise over the plane:
   128-thread warpgroups (Mosaic GPU) or a (by + 2TH) x (bz + 2TH) block (Triton:
   power-of-two shapes, so by + 2TH and bz + 2TH of 16 or 32).
3. Coefficients (ca, cb, pec), CPML profiles and masks are read per plane from global
   memory (cb: one plane per level, through L2); psi planes only in CPML tiles; sources as
   a (TH, n_sources) table computed before the call; probes: the owning tile writes
   (TH, n_probes) records.
4. The x-march makes the pass's output the *same* buffer as its input impossible (a
   neighbour tile still reads the halo): ping-pong two copies of E and H (2x memory of
   the fields) or write only after all neighbours have read (not expressible across CTAs).

Pallas on a GPU (JAX 0.10): ``pl.pallas_call`` lowers to Mosaic GPU (Hopper and newer; a
Pallas "thread" is a warpgroup of 128 CUDA threads running array code in lockstep;
``plgpu.kernel(..., scratch_shapes=[plgpu.SMEM(shape, dtype)])`` for shared-memory
scratch, ``plgpu.emit_pipeline`` for GMEM -> SMEM pipelines, ``plgpu.load(ref, layout=)``
into registers) or, best effort only, to Triton (no explicit shared memory, power-of-two
block shapes, no slicing of values: shifts are loads at offset addresses). What is checked
here in interpret mode on the CPU: inputs and outputs in ``pl.ANY`` memory read and written
at dynamic windows (``ref[pl.ds(start, size), ...]``), a ``lax.fori_loop`` of steps inside
the kernel, per-program output blocks (``BlockSpec`` with ``None`` dimensions), and the
march's plane order (:mod:`.march`). ``jax.experimental.pallas.mosaic_gpu`` itself does not
import without ``absl`` (in JAX's CUDA extras), so the SMEM rings are not interpreted here.

The kernel for the GPU: Triton
------------------------------
``kernel="triton"`` (:mod:`.gpu`) is the x-march rewritten for Pallas's Triton lowering,
the one the march above does not pass (checked by lowering for "cuda" on a CPU, which
runs Pallas's GPU lowering without a GPU): its 16 + 2 x 4 = 24-cell windows are no power
of two, and with 16-cell windows it still needs ``slice`` of values (the rolls and the
ring slots), which the lowering lacks. What Triton imposed, in :mod:`.gpu`'s docstring:
y/z windows of a power of two (tile = window - 2 TH: 24 for 32 at TH 4; tiles overlap by
2 TH), differences as shifted masked loads, the rings in a per-program scratch in global
memory ordered by barriers (no shared-memory scratch in Pallas Triton), whole-window
stores under a mask into padded outputs, probes as scalars, and the backend named in the
call (the default is Mosaic GPU in some JAX versions). The tests compare it with the XLA
step in interpret mode and lower it for "cuda" (float32, float64, x tiled, PEC cells).
Lowering is not compiling: the Triton compile (to PTX) runs on the device, and the
scratch's traffic (about 12 plane reads and 7 plane writes of the scratch per level)
weighs on the bandwidth model above; its speed is to be measured.

The kernel for the GPU: CUDA
----------------------------
``kernel="cuda"`` (:mod:`.cuda`, :mod:`.cuda_advance`, the source ``yee_blocked.cu``) is
the x-march written as a CUDA kernel, compiled at run time by NVRTC and launched through
XLA's kernel call (inside ``jax.jit``): one thread per y-z window column, the TH levels
pipelined plane by plane with the y/z neighbours exchanged through shared memory (one
barrier per level) and the x neighbours kept in registers; the CPML's psi of the
intermediate levels in per-thread chains. ``kernel="emulate"`` runs the same source on
the host (threads and barriers; small grids), which is how the CPU tests check it. It
needs x walled (PEC or CPML). Measured on an H100 (BENCHMARKS.md): 1.7-2.2x the XLA step
with PEC walls, 0.96x (512^3) to 1.35x (1024^3) with a CPML on every face.

What the CPML costs, and the design it calls for: with 1-cell slabs (almost no cells in
them) the kernel already loses half its rate: the CPML's code takes registers and
scheduling from every cell's update, wherever it runs (a non-inlined CPML function and
per-case compiled copies of the levels were measured and dropped). So the CPML wants a
kernel of its own: the bulk kernel (no CPML code) advances every tile as if the walls were
plain PEC, which spoils the slabs and, after TH steps, TH cells beyond them; a CPML kernel
then recomputes the slabs plus that TH-cell margin from the same inputs (its windows: the
border tiles over the whole x range, and the interior tiles over the x slabs' planes plus
margins, a march that starts and ends inside the grid with an x halo like the y/z ones),
writing over the bulk's values there. Both write into the same aliased outputs, in order.

DFT planes: :mod:`.records` (the kernel writes each step's plane values; the running DFTs
take them after each pass). Several devices: :mod:`.shards` (x slabs whose TH-deep halos
are exchanged once per pass). The CPML as a kernel of its own: :mod:`.split`. TF/SF boxes
(axis-aligned incidence): :mod:`.incidence`. Drude and Lorentz poles: :mod:`.poles`. Not
yet: oblique TF/SF, plane sources, subpixel corrections, Bloch phases, the 4th-order
stencil (halo 2 planes per step), DFTField monitors.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ...errors import ConfigError
from ..sources import PointDipole
from ..tfsf import TFSF
from . import gpu, traversal
from .traversal import Tiling

__all__ = ["KERNELS", "BlockedStep", "TileConfig", "Tiling", "advance", "select", "unsupported"]


@dataclass(frozen=True)
class TileConfig:
    """What a tile's step needs to know statically (a jit key)."""

    dx: float
    dt: float
    pml: tuple  # per axis: CPML present
    pml_kappa: tuple
    walls: tuple
    has_pec: bool
    sources: tuple  # ((i, j, k), component) of the point dipoles, in plan order
    probes: tuple  # (field, component, (i, j, k)), in plan order


def unsupported(plan, monitors: bool = False, tfsf: bool = False, poles: bool = False) -> str | None:
    """Why the blocked kernel cannot run ``plan`` (a step.Plan), or None. ``monitors``: the
    kernel records DFT planes (the CUDA kernel does, :mod:`.records`); ``tfsf``: it carries
    a TF/SF source along an axis (the CUDA kernel does, :mod:`.incidence`); ``poles``: it
    carries Drude and Lorentz poles (the CUDA kernel does, :mod:`.poles`)."""
    if plan.order != 2:
        return "the 4th-order stencil"
    if any(getattr(plan, "pmc", ())):
        return "PMC walls"
    if any(p is not None for p in plan.bloch):
        return "Bloch-periodic boundaries"
    if (plan.n_poles or plan.n_lorentz) and not poles:
        return "Drude/Lorentz poles"
    if plan.subpixel is not None:
        # a physical Simulation's averaging="subpixel" (or a staircase's box of differing
        # nodes); averaging="diagonal" gives per-node eps the kernel takes
        return (
            'subpixel corrections (the sparse box; a Simulation with averaging="diagonal" '
            "runs on the blocked kernel)"
        )
    if any(not isinstance(s, (PointDipole, TFSF)) for s in plan.sources):
        return "sources other than point dipoles and TF/SF boxes (plane sources, current sheets)"
    if plan.aux_len or any(isinstance(s, TFSF) for s in plan.sources):
        if not tfsf:
            return "TF/SF sources (the CUDA kernel carries them)"
        from . import incidence

        why = incidence.unsupported(plan)
        if why is not None:
            return why
    if plan.monitors and not monitors:
        return "DFT/flux monitors"
    if plan.monitors:
        from . import records

        return records.unsupported(plan)
    if plan.layout is not None:
        return "several devices"
    return None


def _norm(index, shape):
    return tuple(int(i) % n for i, n in zip(index, shape))


def dipoles(plan) -> tuple:
    """The plan's point dipoles (its sources but the TF/SF box), in the order of the
    coefficients' ``src_cb``."""
    return tuple(s for s in plan.sources if not isinstance(s, TFSF))


def config(plan) -> TileConfig:
    sources = []
    for s in dipoles(plan):
        node = _norm(s.index, plan.shape)
        # a wall's tangential E takes no source (terms.source_term masks it)
        if any(ax != s.component and plan.walls[ax] and node[ax] == 0 for ax in range(3)):
            node = None
        sources.append((node, s.component))
    probes = tuple((p.field, p.component, _norm(p.index, plan.shape)) for p in plan.probes)
    return TileConfig(
        plan.dx,
        plan.dt,
        tuple(bool(L) for L in plan.pml),
        tuple(plan.pml_kappa),
        tuple(plan.walls),
        plan.has_pec,
        tuple(sources),
        probes,
    )


def coefficients(plan, arrays, dtype):
    """The tile inputs that do not change: (dict of arrays, dict of their kinds)."""
    out = {"ca": arrays["ca"], "cb": arrays["cb"]}
    if plan.has_pec:
        out["pec_keep"] = arrays["pec_keep"]
    for a, n in enumerate(plan.shape):
        out[f"index{a}"] = jnp.arange(n, dtype=jnp.int32)
        if plan.walls[a]:
            out[f"wall{a}"] = jnp.ones((n,), dtype).at[0].set(0)
        L = plan.pml[a]
        if not L:
            continue
        out[f"maskH{a}"] = jnp.ones((n,), dtype).at[n - 1].set(0)  # forward: plane n reads 0
        out[f"maskE{a}"] = jnp.ones((n,), dtype).at[0].set(0)  # backward: plane -1 reads 0
        for kind in "EH":
            prof = [jnp.zeros((n,), dtype) for _ in range(3)]
            for side, start in (("lo", 0), ("hi", n - L)):
                if side in plan.pml_faces[a]:
                    for q, v in enumerate(arrays[f"pml{kind}{a}{side}"]):
                        prof[q] = prof[q].at[start : start + L].set(jnp.reshape(v, (-1,)).astype(dtype))
            for q, v in zip("bck", prof):
                out[f"pml{kind}{a}{q}"] = v
    kinds = {k: traversal.kind_of(v, plan.shape, k) for k, v in out.items()}
    return out, kinds


def psi_to_full(plan, psi):
    """The step's psi slabs -> one grid-sized array per (kind, axis, component)."""
    out = {}
    for key, v in psi.items():
        kind, a, c, side = key[0], int(key[1]), int(key[2]), key[3:]
        name = f"{kind}{a}{c}"
        if name not in out:
            out[name] = jnp.zeros(plan.shape, v.dtype)
        start = 0 if side == "lo" else plan.shape[a] - plan.pml[a]
        out[name] = jax.lax.dynamic_update_slice_in_dim(out[name], v, start, axis=a)
    return out


def psi_from_full(plan, full, like):
    out = {}
    for key in like:
        kind, a, c, side = key[0], int(key[1]), int(key[2]), key[3:]
        L = plan.pml[a]
        start = 0 if side == "lo" else plan.shape[a] - L
        out[key] = jax.lax.slice_in_dim(full[f"{kind}{a}{c}"], start, start + L, axis=a)
    return out


def _source_values(plan, arrays, n, th, dtype):
    """(th, n_sources): each point dipole's added E at steps n .. n + th - 1 (step.step's
    expression)."""
    cols = []
    srcs = dipoles(plan)
    for s_i, src in enumerate(srcs):
        vals = []
        for t in range(th):
            tt = ((n + t).astype(dtype) + 0.5) * plan.dt
            vals.append(-arrays["src_cb"][s_i] * src.waveform(tt).astype(dtype))
        cols.append(jnp.stack(vals))
    if not cols:
        return jnp.zeros((th, 0), dtype)
    return jnp.stack(cols, axis=1).astype(dtype)


def _pass(plan, cfg, tiling, kernel, interpret, arrays, pc, kinds, carry, k):
    """One pass of ``k`` (<= TH, traced) steps."""
    E, H, psi, n = carry
    dtype = E[0].dtype
    sv = _source_values(plan, arrays, n, tiling.th, dtype)
    if kernel == "triton":
        E, H, psi, rec = gpu.pass_triton(cfg, tiling, tiling.th, pc, kinds, E, H, psi, sv, k, interpret)
    elif kernel == "pallas":
        E, H, psi, rec = traversal.pass_pallas(cfg, tiling, tiling.th, pc, kinds, E, H, psi, sv, k, interpret)
    else:
        E, H, psi, rec = traversal.pass_xla(cfg, tiling, tiling.th, pc, kinds, E, H, psi, sv, k)
    return (E, H, psi, n + k), rec


@partial(
    jax.jit,
    static_argnames=("plan", "steps", "th", "tile", "kernel", "interpret", "march"),
    donate_argnames=("state",),
)
def _advance(plan, arrays, state, steps, th, tile, kernel, interpret, march):
    cfg = config(plan)
    dtype = state["E"][0].dtype
    coefs, kinds = coefficients(plan, arrays, dtype)
    carry = (tuple(state["E"]), tuple(state["H"]), psi_to_full(plan, state["psi"]), state["n"])
    n_pass, rest = divmod(steps, th)
    # every pass the same program (one trace, one kernel): the last one, if TH does not
    # divide the steps, runs ``rest`` steps with the TH-deep halo (more than it needs)
    per_pass = jnp.asarray([th] * n_pass + ([rest] if rest else []), jnp.int32)
    tiling = Tiling(plan.shape, tile, th, march)
    pc = traversal.pad_inputs(coefs, kinds, tiling)
    body = lambda c, k: _pass(plan, cfg, tiling, kernel, interpret, arrays, pc, kinds, c, k)  # noqa: E731
    carry, rec = jax.lax.scan(body, carry, per_pass)
    rec = rec.reshape((rec.shape[0] * rec.shape[1],) + rec.shape[2:])[:steps]
    E, H, psi, n = carry
    new = {**state, "E": E, "H": H, "psi": psi_from_full(plan, psi, state["psi"]), "n": n}
    finite = jnp.all(jnp.stack([jnp.all(jnp.isfinite(f)) for f in E + H]))
    return new, rec, finite


def advance(
    plan,
    arrays,
    state,
    steps: int,
    *,
    th: int = 4,
    tile=(64, 16, 16),
    kernel="pallas",
    interpret=None,
    march: bool = False,
    rows_per_thread: int | None = None,
    split_cpml: bool = True,
    crop: bool = True,
):
    """``steps`` steps of ``state`` (as :func:`emjax.fdtd.step.advance`: the same state,
    records ``(steps, n_probes)`` and finiteness flag) in passes of ``th`` steps over tiles
    of ``tile`` cells (x, y, z; an entry >= the axis's length leaves it whole).

    ``kernel``: "pallas" (one ``pallas_call`` per pass; ``interpret`` None: interpret mode
    on the CPU), "triton" (the x-march as the kernel Pallas lowers to Triton for a GPU,
    :mod:`.gpu`: y and z tiled with ``tile + 2 th`` a power of two, e.g. tile 24 and th 4)
    or "xla" (the same passes in plain JAX: a loop over tiles). ``march``: each
    tile updated plane by plane along x in the order the GPU kernel must follow
    (:mod:`emjax.fdtd.blocked.march`; x tiled, or walled). ``crop`` (the CUDA kernel): per-cell
    coefficients read only in the box where they differ from a background
    (:mod:`.coef_box`)."""
    cu = kernel in ("cuda", "emulate")
    why = unsupported(plan, monitors=cu, tfsf=cu, poles=cu)
    if why is not None:
        raise ConfigError(f"the blocked FDTD kernel does not support {why}; use the XLA step")
    if isinstance(th, bool) or not isinstance(th, (int, np.integer)) or th < 1:
        raise ConfigError(f"th must be an integer >= 1 (steps per pass), got {th!r}")
    if (
        np.ndim(tile) != 1
        or len(tile) != 3
        or not all(isinstance(b, (int, np.integer)) and b >= 1 for b in tile)
    ):
        raise ConfigError(f"tile must be three integers >= 1 (cells along x, y, z), got {tile!r}")
    if kernel not in ("pallas", "xla", "triton", "cuda", "emulate"):
        raise ConfigError(f"kernel must be 'cuda', 'emulate', 'pallas', 'xla' or 'triton', got {kernel!r}")
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise ConfigError(f"steps must be an integer >= 1, got {steps!r}")
    if kernel in ("cuda", "emulate"):
        from . import cuda_advance

        why = cuda_advance.unsupported(plan)
        if why is not None:
            raise ConfigError(f"the CUDA blocked kernel does not support {why}; use the XLA step")
        block = (int(tile[1]), int(tile[2])) + ((int(rows_per_thread),) if rows_per_thread else ())
        if kernel == "cuda" and jax.default_backend() != "gpu":
            raise ConfigError("kernel='cuda' needs a GPU; kernel='emulate' runs the same kernel on the host")
        if kernel == "emulate":
            return cuda_advance.advance_emulated(
                plan, arrays, state, int(steps), int(th), block, bool(split_cpml), bool(crop)
            )
        return cuda_advance.advance_gpu(
            plan, arrays, state, int(steps), int(th), block, bool(split_cpml), bool(crop)
        )
    if kernel == "triton":
        march = True  # the Triton kernel is the x-march
        why = gpu.check_window(Tiling(plan.shape, tuple(int(b) for b in tile), int(th), True))
        if why is not None:
            raise ConfigError(f"kernel='triton' with tile={tuple(tile)!r}, th={th}: {why}")
    if march and tile[0] >= plan.shape[0] and not plan.walls[0]:
        raise ConfigError(
            "march=True needs x tiled (tile[0] < nx) or walled (PEC or CPML along x): a periodic "
            "x axis wraps the planes before the first into the march"
        )
    if interpret is None:
        interpret = jax.default_backend() == "cpu"
    tile = tuple(int(b) for b in tile)
    return _advance(plan, arrays, state, int(steps), int(th), tile, kernel, bool(interpret), bool(march))


from .choice import KERNELS, BlockedStep, check_kernel, select, why_not  # noqa: E402
