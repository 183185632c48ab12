"""The blocked pass as a CUDA kernel (``yee_blocked.cu``) compiled at run time with NVRTC and
launched from XLA, so that it runs inside ``jax.jit`` like any other operation.

* **Source**: :func:`source` writes a header of ``#define`` s for one :class:`Spec` (grid,
  tile, TH, dtype, which coefficients are arrays, the CPML's axes, walls, point sources and
  probes as code) in front of ``yee_blocked.cu``; the kernel's design is in that file.
* **Compile**: NVRTC (``libnvrtc``, from the ``nvidia-cuda-nvrtc`` wheel that JAX's CUDA
  extras install, or the CUDA toolkit) turns it into PTX for the device's architecture;
  XLA's own ``ptxas`` assembles it (the path Pallas's Triton kernels take).
* **Launch**: the custom call ``triton_kernel_call_ffi`` that jaxlib's CUDA plugin
  registers for Triton kernels: it takes PTX, a grid, a block of ``32 num_warps``
  threads, dynamic shared memory, and the call's buffers as the kernel's pointer
  parameters (inputs, then outputs).
* **Host emulation** (:mod:`.emulation`): the same source compiled by the host's C++
  compiler, so that CI checks the kernel's logic without a GPU.
"""

from __future__ import annotations

import re
import zlib
from pathlib import Path

import numpy as np

from .kernel_spec import MAX_THREADS, RING_SMEM_LIMIT, Spec, fit_rows, threads_of  # noqa: F401  (cuda.Spec, ...)
from .nvrtc import compile_ptx, nvrtc, smem_optin  # noqa: F401  (choice asks cuda.nvrtc(); tests replace it)

HERE = Path(__file__).parent
FIELDS = ("ex", "ey", "ez", "hx", "hy", "hz")
# psi arrays per CPML axis: (kind, differentiated component), in the kernel's names
PSI = {
    0: (("H", 1), ("H", 2), ("E", 1), ("E", 2)),
    1: (("H", 0), ("H", 2), ("E", 0), ("E", 2)),
    2: (("H", 0), ("H", 1), ("E", 0), ("E", 1)),
}


#: per-cell coefficients (ca, cb, PEC masks) staged plane by plane in shared memory, each
#: thread copying its own cells' values of the plane its first level takes next (cp.async),
#: instead of every level reading them from global memory
COEF_RING = True


def smem_limit() -> int:
    """Shared memory (bytes) a CTA may take on the first GPU: its opt-in maximum less 1 KB, at
    most :data:`RING_SMEM_LIMIT` (no GPU: the latter, for the host emulation)."""
    optin = smem_optin()
    return RING_SMEM_LIMIT if optin is None else min(optin - 1024, RING_SMEM_LIMIT)


def ring_setting() -> tuple:
    """(:data:`COEF_RING`, :func:`smem_limit`): resolved by the drivers outside ``jax.jit``
    and passed in as a static argument, so that changing either compiles another kernel."""
    return bool(COEF_RING), smem_limit()


#: each level leaves out the window rows whose values no own cell needs (2 s - 1 rows at
#: level s, a row per side and step: 16 of the 128 row-levels at TH = 4 with windows of 32).
#: None: by the precision (:data:`SKIP_SPENT_DEFAULT`, keyed on the item size); True or False
#: for every precision.
SKIP_SPENT_ROWS = None
#: measured at 512^3 with a CPML: float64 (TH = 3, tiles of 16) on an H100 35.35 G cell/s
#: against 34.60, on an H200 36.9 against 36.0; float32 (TH = 4, tiles of 24) on an H100
#: 60.8 against 61.5 (with a PEC 95.4 against 98.0)
SKIP_SPENT_DEFAULT = {8: True}
#: the x-march unrolled twice also where the CPML's chains live in shared memory
UNROLL_SMEM_CHAINS = True
#: the face rows' kernels (windows at the walls, fewer threads: registers to spare) hold each
#: thread's y and z CPML profiles in registers instead of reading them at every level
PROFILE_REGS = True

#: array indices in 32-bit integers where every array a kernel indexes holds fewer than 2^31
#: values (:func:`index_type`): sm_90, float32 at 512^3 with a CPML, the face kernels' march
#: loops 4335 / 4407 -> 4090 / 4122 instructions, the x-CPML kernel's spills 52 / 72 B -> none
INDEX_INT32 = True


def index_type(spec: Spec) -> str:
    """The kernel's index type: "int" where :data:`INDEX_INT32` and the largest array holds
    fewer than 2^31 values, else "long". Per cell the fields hold one value, per-component
    coefficients three, the poles' arrays up to three per pole; psi slabs and a coefficient
    box hold fewer cells than the fields."""
    p = spec.poles or (0, 0, 0, 0, 0)
    comp = "comp" in (spec.ca, spec.cb, spec.pec)
    per_cell = max(1, 3 * comp, 3 * max(p[0], p[3]))
    cells = int(np.prod(spec.ashape, dtype=np.int64))
    return "int" if INDEX_INT32 and per_cell * cells < 2**31 else "long"


#: the march's steady iterations (every level runs: no guards) compiled apart from the others;
#: per kind of kernel, by the item size: 2 (two at a time: the carried registers renamed,
#: the buffer set and the chains' slots known at compile time), 1, or 0 (none: one
#: iteration's code for the whole march, :func:`general_unroll` times unrolled).
#: ``STEADY["plain"]``: kernels with neither CPML code nor per-cell arrays (coefficients,
#: poles, a TF/SF box); ``STEADY["cpml"]``: the others, whose registers do not hold two steady
#: iterations (float32 at 512^3: 16-400 bytes a thread spilled, sm_90), so one at a time;
#: ``STEADY["between"]``: the bulk between the aligned face rows of a one-device pass;
#: ``STEADY["faces"]``: the CPML's face rows' kernels (:data:`.split.WALL_WINDOWS`);
#: ``STEADY["box"]``: kernels without CPML that read a coefficient box's arrays (the box's
#: own, or a bulk without a hole);
#: ``STEADY["tail"]``: the bulk's marches from a task table (:func:`.bulk.tail`), one at a
#: time in float32: a pair spilled 116 bytes a thread in the sphere's tail, whose task rows
#: hold more registers (the loop 27 local loads and stores), one at a time none (H200, 512^3,
#: float32, one lease: an eps 2.25 sphere 95.08 -> 98.22 G cell/s, vacuum 112.96 -> 112.99;
#: the box's own kernel in pairs 92.44 against 94.58; float64's tail, without aligned face
#: rows, is a "plain" kernel). By ptxas
#: (float32, 512^3, TH = 4, tiles of 24, sm_90), with the steady iterations in a loop of their
#: own (:data:`STEADY_LOOP`): the bulk between the face rows 864 instructions for a steady pair
#: against 1641 for two general iterations; the face rows one steady iteration 909 against
#: 1235; the x-CPML's rows 1178 against 1479; a sphere's box kernel 652 against 1078;
#: float64's CPML kernel (TH = 3, tiles of 16) 968 against 1144. Timed on an H200 at 512^3,
#: a dipole in a 10-cell CPML, in one lease (BENCHMARKS.md, 2026-11-28): none of these 90.6 G
#: cell/s, the loop alone 90.6, with the bulk's pairs 99.2, with the face rows' 102.1, with the
#: other CPML kernels' 103.7; an eps 2.25 sphere 79.4 -> 88.4; float64 42.0 -> 42.7.
STEADY = {
    "plain": {4: 2, 8: 2},
    "cpml": {4: 1, 8: 1},
    "between": {4: 2, 8: 2},
    "faces": {4: 1, 8: 1},
    "box": {4: 1, 8: 1},
    "tail": {4: 1, 8: 2},
}
#: per kind of kernel (as :data:`STEADY`; a bool: every kind), the steady iterations in a
#: loop of their own inside the march's (off: one loop whose turn is a steady pair or a
#: general iteration, so that the registers the pair carries must meet the general
#: iteration's at every turn: 1736 instructions for a pair and a general iteration where the
#: loop of their own takes 864 for a pair, ptxas as above). Off for "plain": the PEC walls'
#: kernel lost with it (H200, 512^3 float32, one lease: 118.5 against 152.6 G cell/s, though
#: by ptxas its pair takes 1289 instructions against 2232 for a pair and a general
#: iteration); with a CPML, off for the other kinds one at a time: between 103.2, faces
#: 102.6, cpml 101.4 against 102.3 (within a run's spread).
STEADY_LOOP = {"plain": False, "cpml": True, "between": True, "faces": True, "box": True, "tail": True}


def steady_kind(spec: Spec) -> str:
    """The kind of ``spec``'s kernel in :data:`STEADY` and :data:`STEADY_LOOP`."""
    arrays = spec.pec is not None or any(getattr(spec, k) in ("grid", "comp") for k in ("ca", "cb"))
    extra = any(spec.pml) or (arrays and not spec.cbox_bg) or spec.tfsf is not None or spec.poles is not None
    if extra:  # the CPML's face rows (windows that end at a wall) apart from the other kernels
        if spec.wall and any(spec.pml):
            return "faces"
        plain_box = spec.cbox is not None and spec.tfsf is None and spec.poles is None
        return "box" if plain_box and not any(spec.pml) else "cpml"
    between = spec.span is not None and spec.nxa is None
    if between:
        return "tail" if spec.ntask else "between"
    return "plain"


def steady_n(spec: Spec) -> int:
    """STEADY_N of ``spec``'s kernel (:data:`STEADY`)."""
    return STEADY[steady_kind(spec)][spec.itemsize]


def steady_loop(spec: Spec) -> bool:
    """Whether ``spec``'s kernel runs its steady iterations in a loop of their own
    (:data:`STEADY_LOOP`)."""
    return STEADY_LOOP if isinstance(STEADY_LOOP, bool) else STEADY_LOOP[steady_kind(spec)]


def general_unroll(spec: Spec, all_smem: bool) -> int:
    """How many times a march without steady iterations is unrolled: twice renames the
    carried registers instead of moving them (measured on an H100, float32: 72.9 -> 92.9 G
    cell/s at 512^3, four times 85.0; slower with the CPML's code inside, 42.8 -> 33.6,
    unless the CPML's chains are all in shared memory, and in float64, 18.7 -> 16.8)."""
    if spec.itemsize == 4 and (not any(spec.pml) or (all_smem and UNROLL_SMEM_CHAINS)):
        return 2
    return 1


def steady_free(spec: Spec) -> str:
    """An expression of planes ``lo``, ``hi``: whether none of [lo, hi] holds a point source,
    a recorded probe or a monitor box's cells (steady iterations leave out their code)."""
    spans = [(node[0], node[0]) for node, _ in spec.sources if node is not None]
    kept = range(len(spec.probes)) if spec.record is None else spec.record
    spans += [(spec.probes[m][2][0],) * 2 for m in kept]
    spans += [(lo[0], lo[0] + cnt[0] - 1) for _, _, lo, cnt in spec.boxes]
    if any(b >= spec.shape[0] for _, b in spans):  # a box that wraps around x: every plane
        return "false"
    return " && ".join(f"((hi) < {a} || (lo) > {b})" for a, b in sorted(set(spans))) or "true"


#: the level at whose start each iteration reads the next plane's fields (1: the first; later
#: levels keep them in registers for less of the iteration), by bytes per value (an int: every
#: precision). float32: 3 (H100, 512^3, a CPML: the bulk 3.461 ms a pass against 3.510 at 1;
#: PEC walls 113.4 G cell/s against 98.4). float64, TH = 3 (H200, 512^3, G cell/s at 3 / 2 /
#: 1): a CPML 42.7 / 45.5 / 46.4, an eps sphere 40.3 / 42.3 / 42.2, PEC walls 55.4 / 61.4 / 42.3.
#: ``PREFETCH_OPEN``: by bytes per value, the level of kernels without CPML code or walls (a
#: CPML run's bulk), where given. float64 at 1 (H200, 512^3, a CPML): 48.7 G cell/s against
#: 45.5; float32 at 2 or 4 with the bulk inside x: 112.3 / 112.4 against 112.6 at 3
PREFETCH_LEVEL, PREFETCH_OPEN = {4: 3, 8: 2}, {8: 1}


def prefetch_level(spec: Spec) -> int:
    """The level whose start reads the next plane in ``spec``'s kernel (:data:`PREFETCH_LEVEL`)."""
    lv = PREFETCH_LEVEL if isinstance(PREFETCH_LEVEL, int) else PREFETCH_LEVEL[spec.itemsize]
    if steady_kind(spec) in ("plain", "between", "tail") and not any(spec.walls):
        lv = PREFETCH_OPEN.get(spec.itemsize, lv)
    return min(lv, spec.th)


#: the psi that level 1 takes copied (cp.async) into its chain's slot in shared memory an
#: iteration ahead, beside the coefficient ring's copies, instead of read from memory at level
#: 1 and used at once (a global load's latency in each iteration's first level); chains in
#: shared memory then hold TH + 1 planes (:attr:`.kernel_spec.Spec.psi_pref`). H200, 512^3, a
#: 10-cell CPML, one lease: float32 114.36 -> 121.07, then 114.34 -> 121.12 G cell/s (the face
#: rows' chains in 180 KB of shared memory, 150 before); float64 49.22 -> 49.53 (x's chains go
#: to local memory); an eps 2.25 sphere 102.81, 102.84 (99.26-99.37 without, another lease)
PSI_PREFETCH = True

#: the window's outermost y rows of the fields that no own cell's cone of TH steps reaches
#: left unread (``LOAD_NEXT`` in yee_march.cuh): of a window's 6 WY row loads a plane, 5 fewer
#: (float64's windows of 16 rows: 5.2%); not in the y faces' windows that end at a wall. By
#: ptxas float64's bulk loop grows 468 -> 490 instructions (the kept values' moves). H200,
#: 512^3, a CPML, one lease: float32 121.49 against 120.74 G cell/s, float64 49.03 against
#: 56.59 (not yet profiled: no spills by ptxas; by nvdisasm the steady loop's loads, 12 in one
#: group without it, come in two groups with their predicates). "clamp": those loads read the
#: next row in the window instead (their own where the window wraps around y), unconditionally
#: (one group again); another H200, one lease: float32 123.62 against 122.87, float64 54.70,
#: 54.84 against 56.64, 56.52. Fewer reads from L2 do not help float64's bulk. Off
HALO_TRIM = False

#: in kernels whose curl is the differences alone (:func:`fold_dx`), 1/dx multiplies dt and
#: cb (literals where those are) instead of each difference: by ptxas (sm_90, float32, 512^3,
#: a 10-cell CPML, dx = 0.05) the bulk's steady loop takes 996 instructions without it (8
#: bytes spilled), against 867 at dx = 1, where the multiplication drops out either way
FOLD_DX = True


def fold_dx(spec: Spec) -> bool:
    """Whether ``spec``'s kernel adds nothing to its differences: no CPML, TF/SF or poles."""
    return not any(spec.pml) and spec.tfsf is None and spec.poles is None


#: inputs of int32 (the rest are of the spec's dtype)
INTS = ("xr", "tasks")


def inputs(spec: Spec) -> list[tuple[str, tuple]]:
    """The kernel's input buffers, in order: (name, shape)."""
    from . import coef_box, poles

    n = spec.ashape
    out = [(f, n) for f in FIELDS] + [(f"jin{i}", n) for i in range(poles.n_j(spec))]
    cn = n if spec.cbox is None else coef_box.array_shape(spec)  # the coefficients' cells
    for key in ("ca", "cb"):
        kind = getattr(spec, key)
        if kind == "grid":
            out.append((key, cn))
        elif kind == "comp":
            out.append((key, (3,) + cn))
        elif kind == "array":
            out.append((key, (1,)))
    if spec.pec is not None:
        out.append(("pec", cn if spec.pec == "grid" else (3,) + cn))
    out += poles.inputs(spec)
    if spec.sources:
        out.append(("sv", (spec.th * len(spec.sources),)))
    if spec.tfsf is not None:
        out.append(("tinc", (spec.th * 2 * spec.tfsf[1],)))
    for a, L in enumerate(spec.pml):
        if L:
            out += [(f"pE{a}", (3 * spec.shape[a],)), (f"pH{a}", (3 * spec.shape[a],))]
    for a, L in enumerate(spec.pml):
        if L:
            out += [(f"pin_{k}{a}_{c}", psi_shape(spec, a)) for k, c in PSI[a]]
    out.append(("xr", (5,)))
    if spec.ntask:
        out.append(("tasks", (spec.ntask, 10)))
    return out


def outputs(spec: Spec) -> list[tuple[str, tuple]]:
    from . import poles

    out = [(f + "_out", spec.ashape) for f in FIELDS] + [
        (f"jout{i}", spec.ashape) for i in range(poles.n_j(spec))
    ]
    for a, L in enumerate(spec.pml):
        if L:
            out += [(f"pout_{k}{a}_{c}", psi_shape(spec, a)) for k, c in PSI[a]]
    if spec.boxes:
        out.append(("mrec", (spec.th * spec.box_cells,)))
    if spec.probes:
        out.append(("rec", (spec.th * len(spec.probes),)))
    return out


def aliased(spec: Spec) -> list[tuple[str, tuple]]:
    """The outputs passed in as operands too (all but the probe records)."""
    return [(n, s) for n, s in outputs(spec) if n != "rec"]


def psi_shape(spec: Spec, a: int) -> tuple:
    s = list(spec.shape if a == 0 else spec.ashape)
    s[a] = 2 * spec.pml[a]
    return tuple(s)


def _literal(v) -> str:
    return repr(float(v))


def source(spec: Spec, nthreads: int | None = None) -> str:
    """The kernel's full source for ``spec``: generated header + ``yee_blocked.cu``
    (``nthreads``: a CTA's threads where a launch of several kernels takes more than this
    one's; :func:`merged_source` where ``spec`` is such a launch)."""
    if spec.merged:
        return merged_source(spec)
    real = "float" if spec.dtype == "float32" else "double"
    nx, ny, nz = spec.shape
    span = spec.span or ((0, ny), (0, nz))
    kinds = {"array": 0, "grid": 1, "comp": 2}
    all_smem = any(spec.smem_chains) and spec.smem_chains == tuple(bool(L) for L in spec.pml)
    d = {
        "REAL": real,
        "NX": nx,
        "NY": ny,
        "NZ": nz,
        "TH": spec.th,
        "BY": spec.block[0],
        "BZ": spec.block[1],
        "WY": spec.window[0],
        "WZ": spec.window[1],
        "NTHREADS": nthreads or spec.threads,
        "MIN_CTAS": spec.min_ctas,
        "RY": spec.ry,
        "INV_DX": _literal(1.0 / spec.dx),
        "DT": _literal(spec.dt),
        "FOLD_DX": int(FOLD_DX and fold_dx(spec)),
        "NSRC": len(spec.sources),
        "NPROBE": len(spec.probes),
        "NXA": spec.ashape[0],
        "XR_STATIC": int(spec.nxa is None),
        **dict(zip(("XM_X0", "XM_NXW", "XM_OX0", "XM_OX1"), spec.xmarch or (0, spec.shape[0]) * 2)),
        "XR_WHOLE": int(spec.nxa is not None and not any(spec.pml)),
        "XH": spec.xhalo,
        "XIN": spec.xin,
        "TY_OFF": span[0][0],
        "TY_LEN": span[0][1],
        "TZ_OFF": span[1][0],
        "TZ_LEN": span[1][1],
        "STEADY_N": steady_n(spec),
        "STEADY_LOOP": int(steady_loop(spec)),
        "GENERAL_UNROLL": general_unroll(spec, all_smem),
        "PREFETCH_LEVEL": prefetch_level(spec),
        "NTASK": spec.ntask,
        "IDXT": index_type(spec),
    }
    for key in ("ca", "cb"):
        v = getattr(spec, key)
        d[f"{key.upper()}_KIND"] = kinds.get(v, 3) if isinstance(v, str) else 3
        if not isinstance(v, str):
            d[f"{key.upper()}_VALUE"] = _literal(v)
    if spec.pec is not None:
        d["PEC_KIND"] = kinds[spec.pec]
    from . import coef_box, poles
    from .incidence import defines

    d.update(defines(spec.tfsf, _literal))
    d.update(poles.defines(spec))
    d.update(coef_box.defines(spec, _literal))
    d["CHAIN_SMEM"] = int(any(spec.smem_chains))
    d["PSI_PREF"] = int(bool(spec.psi_pref) and any(spec.smem_chains))
    d["CH_SLOTS"] = spec.th + d["PSI_PREF"]
    skip = SKIP_SPENT_ROWS if SKIP_SPENT_ROWS is not None else SKIP_SPENT_DEFAULT.get(spec.itemsize, False)
    d["SKIP_SPENT"] = int(skip and not spec.wall)  # (its spent rows assume halos on both sides)
    d["WALLWIN"] = spec.wall
    d["HALO_TRIM"] = (2 if HALO_TRIM == "clamp" else 1) if HALO_TRIM and spec.wall != 1 else 0
    d["PROFILE_REGS"] = int(PROFILE_REGS and spec.wall != 0)
    ring = dict(spec.ring)
    d["NRING"] = sum(ring.values())
    d["RING_OFF"] = 12 + spec.chains
    off = 0
    for key in ("ca", "cb", "pec"):
        d[f"RING_{key.upper()}"] = off if key in ring else -1
        off += ring.get(key, 0)
    if spec.tiles is not None:
        d["TILES"] = ", ".join(map(str, spec.tiles))
    for a in range(3):
        d[f"CH_AXIS{a}"] = sum(spec.smem_chains[:a])  # its block among those in shared memory
        d[f"CHAIN_SMEM{a}"] = int(spec.smem_chains[a])
        d[f"WALL{a}"] = int(spec.walls[a])
        d[f"PML{a}"] = int(bool(spec.pml[a]))
        d[f"L{a}"] = int(spec.pml[a])
        d[f"KAPPA{a}"] = int(bool(spec.kappa[a]))
    src = []
    for m, (node, comp) in enumerate(spec.sources):
        if node is not None:
            i, j, k = node
            src.append(f"if (p == {i} && gyk == {j} && gz == {k}) en[k][{comp}] += sv[(s - 1) * NSRC + {m}];")
    prb = []
    for m, (field, comp, (i, j, k)) in enumerate(spec.probes):
        if spec.record is not None and m not in spec.record:
            continue
        val = f"en[k][{comp}]" if field == "E" else f"hc[k][{comp}]"
        prb.append(f"if (p == {i} && gyk == {j} && gz == {k}) rec[(s - 1) * NPROBE + {m}] = {val};")
    d["STEADY_FREE(lo, hi)"] = steady_free(spec)
    d["SOURCES"] = " ".join(src) or ";"
    d["PROBES"] = " ".join(prb) or ";"
    d["NBOX"] = len(spec.boxes)
    if spec.boxes:
        rows, xmask, off = [], [0] * nx, 0
        for b, (field, comp, lo, cnt) in enumerate(spec.boxes):
            rows.append((*lo, *cnt, off, comp + (3 if field == "H" else 0)))
            for p in range(lo[0], lo[0] + cnt[0]):
                xmask[p] |= 1 << b
            off += spec.th * int(np.prod(cnt))
        d["BOX_TABLE"] = ", ".join("{" + ", ".join(f"{v}L" for v in r) + "}" for r in rows)
        d["XMASK_TABLE"] = ", ".join(f"{m}ull" for m in xmask)
    d["PARAMS"] = ", ".join(kernel_params(spec))
    head = "\n".join(f"#define {k} {v}" for k, v in d.items())
    helpers = (HERE / "yee_helpers.cuh").read_text()  # TF/SF and Drude device code
    cpml = (HERE / "yee_cpml.cuh").read_text()  # the CPML's psi indices, chains, correction
    march = (HERE / "yee_march.cuh").read_text()  # boxes, asynchronous copies, iteration kinds
    return head + "\n" + helpers + cpml + march + (HERE / "yee_blocked.cu").read_text()


def kernel_params(spec: Spec) -> list:
    """The kernel's parameters, "type name": inputs, the outputs' buffers (which also come in
    as operands: XLA aliases them to the results, so a loop of passes ping-pongs between two
    copies of the state without copying), then the outputs."""
    real = "float" if spec.dtype == "float32" else "double"
    params = [f"const {'int' if name in INTS else real} *__restrict__ {name}" for name, _ in inputs(spec)]
    params += [f"{real} *__restrict__ alias_{name}" for name, _ in aliased(spec)]
    return params + [f"{real} *__restrict__ {name}" for name, _ in outputs(spec)]


_ENTRY = 'extern "C" __global__ void __launch_bounds__(NTHREADS, MIN_CTAS) yee_blocked(PARAMS) {'


def merged_source(spec: Spec) -> str:
    """One kernel that runs each of ``spec.merged``'s kernels on its own rows of the launch's
    table (CTAs in the table's order): each kernel's source in a namespace of its own as a
    device function, its macros undefined after it, and an entry that picks one by the CTA's
    index. The kernels take the same parameters (checked)."""
    out, cases, first = [], [], 0
    for j, part in enumerate(spec.merged):
        if kernel_params(part) != kernel_params(spec.merged[0]):
            raise ValueError("kernels of one launch must take the same parameters")
        text = source(part, nthreads=spec.threads)
        if _ENTRY not in text:
            raise AssertionError("yee_blocked.cu's kernel line changed")
        text = text.replace(_ENTRY, "__device__ __forceinline__ void yee_part(PARAMS) {")
        macros = sorted(set(re.findall(r"^\s*#\s*define\s+(\w+)", text, re.M)))
        out.append(f"namespace emjax_part{j} {{\n{text}\n}}\n" + "".join(f"#undef {m}\n" for m in macros))
        first += part.ntask
        cases.append(f"if (blockIdx.x < {first}) emjax_part{j}::yee_part(ARGS); else")
    names = [p.rsplit(" ", 1)[1] for p in kernel_params(spec)]
    entry = (
        f"#define ARGS {', '.join(names)}\n"
        f'extern "C" __global__ void __launch_bounds__({spec.threads}, {spec.merged[0].min_ctas}) '
        f"yee_blocked({', '.join(kernel_params(spec))}) {{\n  " + "\n  ".join(cases) + " {}\n}\n#undef ARGS\n"
    )
    return "".join(out) + entry


# ----------------------------------------------------------------- the XLA custom call


def _primitive():
    from jax.extend.core import Primitive

    p = Primitive("emjax_yee_blocked")
    p.multiple_results = True
    return p


_call_p = None


def _register():
    global _call_p
    if _call_p is not None:
        return _call_p
    import jax
    from jax._src.interpreters import mlir

    p = _primitive()

    def abstract(*args, spec):  # noqa: ARG001
        dt = np.dtype(spec.dtype)
        return [jax.core.ShapedArray(s, dt) for _, s in outputs(spec)]

    def lowering(ctx, *args, spec):
        from jax._src.lib import gpu_triton as lib
        from jax._src.lib.mlir import ir

        dev = jax.devices("gpu")[0]
        arch = int(str(dev.compute_capability).replace(".", ""))
        ptx = compile_ptx(source(spec), arch)
        kernel = lib.TritonKernel("yee_blocked", spec.threads // 32, 1, spec.smem_bytes, ptx, "", arch)
        params = [lib.create_array_parameter(0, 0) for _ in inputs(spec) + aliased(spec)]
        rec_bytes = spec.th * len(spec.probes) * spec.itemsize
        for name, _ in outputs(spec):
            params.append(lib.create_array_parameter(rec_bytes if name == "rec" else 0, 0))
        call = lib.TritonKernelCall(kernel, *spec.grid, params)
        opaque = zlib.compress(call.to_proto("emjax_yee_blocked", b""))
        try:  # JAX >= 0.11 takes the module context first
            out_types = [mlir.aval_to_ir_type(ctx.module_context, a) for a in ctx.avals_out]
        except TypeError:
            out_types = [mlir.aval_to_ir_type(a) for a in ctx.avals_out]
        layouts = lambda avals: [tuple(range(len(a.shape) - 1, -1, -1)) for a in avals]  # noqa: E731
        return mlir.custom_call(
            call_target_name="triton_kernel_call_ffi",
            result_types=out_types,
            operands=list(args),
            backend_config=dict(
                name=ir.StringAttr.get("emjax_yee_blocked"), opaque=ir.StringAttr.get(opaque)
            ),
            operand_layouts=layouts(ctx.avals_in),
            result_layouts=layouts(ctx.avals_out),
            operand_output_aliases={len(inputs(spec)) + j: j for j in range(len(aliased(spec)))},
        ).results

    p.def_abstract_eval(abstract)
    mlir.register_lowering(p, lowering, platform="cuda")
    _call_p = p
    return p


def gpu_pass(spec: Spec, args: list, dest: list) -> list:
    """One pass on the GPU: ``args`` the arrays of :func:`inputs`, ``dest`` those of
    :func:`aliased` (overwritten: the results live in their buffers); returns the arrays of
    :func:`outputs` (traceable: runs inside jit)."""
    return _register().bind(*args, *dest, spec=spec)
