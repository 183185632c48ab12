"""Steps of the FDTD in passes of the CUDA blocked kernel (:mod:`.cuda`): the state of
:mod:`emjax.fdtd.step` in, the same state out. On a GPU the passes run inside one
``jax.jit`` (:func:`advance_gpu`); on the host the same kernel text runs emulated
(:func:`advance_emulated`, NumPy, for tests).

The CPML's psi slabs travel packed, one array per (kind, axis, differentiated component)
holding the low slab's ``L`` planes and then the high slab's (zeros for a face without a
CPML), converted once per call. TH that does not divide the step count ends with a pass
of a kernel compiled for the rest.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ...errors import ConfigError
from . import coef_box, cuda, emulation, incidence, poles, records, split, xvirtual
from .cuda import PSI, Spec


def _kind(v, shape):
    if isinstance(v, (float, int, np.floating, np.integer)) or (isinstance(v, np.ndarray) and v.ndim == 0):
        return float(v)
    s = np.shape(v)
    if s == tuple(shape):
        return "grid"
    if s == (3,) + tuple(shape):
        return "comp"
    if s == ():
        return "array"
    raise ConfigError(f"the blocked kernel cannot take a coefficient of shape {s}")


def unsupported(plan) -> str | None:
    """Why the CUDA kernel cannot run ``plan`` beyond :func:`emjax.fdtd.blocked.unsupported`."""
    if not plan.walls[0]:
        return "a periodic x axis (the kernel marches along a walled x: PEC or CPML)"
    return None


def make_spec(plan, arrays, dtype, th: int, block: tuple, ring: tuple | None = None, cbox=None) -> Spec:
    """``block``: (BY, BZ) cells of a tile, or (BY, BZ, RY) with RY window rows per thread
    (default: 2 where the window's rows are even, else 1). ``ring``: (coefficient ring on,
    shared memory limit), default :func:`emjax.fdtd.blocked.cuda.ring_setting`. ``cbox``:
    :func:`.coef_box.find`'s (box, backgrounds) of the per-cell coefficients, or
    :func:`.coef_box.find_slabs`'s (box, backgrounds, True) (None: whole)."""
    ring = cuda.ring_setting() if ring is None else ring
    from . import config

    cfg = config(plan)
    shape = tuple(plan.shape)
    by, bz = (min(int(b), n) for b, n in zip(block[:2], shape[1:]))
    wy, wz = by + 2 * th, bz + 2 * th
    ry = int(block[2]) if len(block) > 2 else (2 if wy % 2 == 0 else 1)
    if (by + 2 * th) % ry:
        raise ConfigError(f"rows per thread {ry} must divide the window's {by + 2 * th} rows (tile + 2 th)")
    if len(block) <= 2:  # more rows a thread where the window's cells would ask for more threads
        ry = cuda.fit_rows((wy, wz), ry)
    elif cuda.threads_of((wy, wz), ry) > cuda.MAX_THREADS:
        need = f"a window of {wy} x {wz} cells needs {cuda.threads_of((wy, wz), ry)} threads"
        raise ConfigError(f"rows per thread {ry}: {need}, more than the {cuda.MAX_THREADS} a CTA holds")
    pec = None
    if plan.has_pec:
        pec = "grid" if np.shape(arrays["pec_keep"]) == shape else "comp"
    return Spec(
        np.dtype(dtype).name,
        shape,
        int(th),
        (by, bz),
        float(plan.dx),
        float(plan.dt),
        _kind(arrays["ca"], shape),
        _kind(arrays["cb"], shape),
        pec,
        tuple(bool(w) for w in plan.walls),
        tuple(int(L) for L in plan.pml),
        tuple(bool(k) for k in plan.pml_kappa),
        cfg.sources,
        cfg.probes,
        ry,
        boxes=records.boxes(plan),
        tfsf=incidence.spec_entry(plan),
        poles=poles.spec_entry(plan, arrays),
        coef_ring=bool(ring[0]),
        smem_limit=int(ring[1]),
        psi_pref=bool(cuda.PSI_PREFETCH),
        cbox=None if cbox is None else cbox[0],
        cbg=() if cbox is None else cbox[1],
        cbox_slabs=cbox is not None and len(cbox) > 2 and bool(cbox[2]),
    )


def static_inputs(plan, arrays, spec: Spec, xp=jnp):
    """The inputs that do not change between passes: coefficients and CPML profiles."""
    from . import coefficients

    out = []
    box = (lambda a: a) if spec.cbox is None else (lambda a: coef_box.crop(a, coef_box.held(spec)))
    for key in ("ca", "cb"):
        if isinstance(getattr(spec, key), str):
            a = xp.asarray(arrays[key], spec.dtype)
            out.append(xp.reshape(a, (-1,)) if np.ndim(a) == 0 else box(a))
    if spec.pec is not None:
        out.append(box(xp.asarray(arrays["pec_keep"], spec.dtype)))
    out += poles.coefficient_inputs(plan, arrays, spec, xp)
    prof = []
    if any(spec.pml):
        coefs, _ = coefficients(plan, arrays, spec.dtype)
        for a, L in enumerate(spec.pml):
            if L:
                for kind in "EH":
                    prof.append(
                        xp.concatenate([xp.asarray(coefs[f"pml{kind}{a}{q}"], spec.dtype) for q in "bck"])
                    )
    return out, prof


def pack_psi(plan, psi: dict, spec: Spec, xp=jnp) -> list:
    out = []
    for a, L in enumerate(spec.pml):
        if not L:
            continue
        for kind, c in PSI[a]:
            parts = []
            for side in ("lo", "hi"):
                v = psi.get(f"{kind}{a}{c}{side}")
                if v is None:
                    shp = list(spec.shape)
                    shp[a] = L
                    v = xp.zeros(shp, spec.dtype)
                parts.append(v)
            out.append(xp.concatenate(parts, axis=a))
    return out


def unpack_psi(plan, packed: list, like: dict, spec: Spec) -> dict:
    full = {}
    i = 0
    for a, L in enumerate(spec.pml):
        if not L:
            continue
        for kind, c in PSI[a]:
            full[f"{kind}{a}{c}"] = packed[i]
            i += 1
    out = {}
    for key in like:
        kind, a, c, side = key[0], int(key[1]), int(key[2]), key[3:]
        L = spec.pml[a]
        start = 0 if side == "lo" else L
        idx = [slice(None)] * 3
        idx[a] = slice(start, start + L)
        out[key] = full[f"{kind}{a}{c}"][tuple(idx)]
    return out


def poles_flat(J) -> tuple:
    """The state's pole arrays (Drude currents per pole and component, then the Lorentz
    poles' polarization now and before per component) as one flat tuple."""
    return tuple(jax.tree_util.tree_leaves(J))


def poles_nested(flat, like) -> tuple:
    """:func:`poles_flat` undone, in the structure of ``like``."""
    return jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(like), list(flat))


def _sv(plan, arrays, n, th, dtype):
    from . import _source_values

    return jnp.reshape(_source_values(plan, arrays, n, th, dtype), (-1,))


def _one_pass(
    spec,
    static,
    sv,
    prof,
    E,
    H,
    psi,
    run,
    dest=None,
    split_cpml=True,
    xr=None,
    table=None,
    pieces=None,
    devices=1,
    inc=None,
    J=(),
    after_bulk=None,
    before_last=None,
):
    """One pass from (E, H, psi) -> (E, H, psi, probe records, monitor records, J); ``J``:
    the poles' state (:mod:`.poles`; it travels next to the fields, ``dest[3]`` its
    buffers); ``sv``: the point sources' values (None without); ``inc``: the TF/SF incident lines
    (:func:`.incidence.lines`; None without); ``dest``: the buffers the GPU writes the results
    into (a state of the same shapes, overwritten; None on the host). ``split_cpml``: a CPML
    runs as a kernel of its own after a bulk kernel without CPML code (:mod:`.split`).
    ``xr``, ``table``: where along x (a shard's slab) and the task rows of
    :func:`.split.split` (with ``pieces`` and ``devices``) clipped to it (default: the whole grid).
    Monitor records start from zeros (each device writes its own cells); the CPML kernel
    writes over the bulk's in its cells. ``after_bulk(fields) -> fields``: called with the
    fields (and the poles' currents) once the bulk kernel and its tail have written them,
    before the CPML kernels (a split pass only): what it returns goes on to them.
    ``before_last(fields, psi) -> (fields, psi)``: the same before the last CPML kernel."""
    nf = 6 + len(J)  # the fields and the poles' currents, in and out
    args = list(E) + list(H) + list(J) + list(static)
    if spec.sources:
        args.append(sv)
    if spec.tfsf is not None:
        args.append(inc)
    nx = spec.shape[0]
    if xr is None:
        xr = np.array([0, 0, nx, 0, nx], np.int32)
    mdest = [jnp.zeros((spec.th * spec.box_cells,), spec.dtype)] if spec.boxes and dest is not None else []
    fdest = None if dest is None else [*dest[0], *dest[1], *(dest[3] if len(dest) > 3 else ())]
    parts = split.split(spec, pieces, devices) if split_cpml else None
    if parts is None:
        outs = run(
            spec,
            args + list(prof) + list(psi) + [xr],
            None if dest is None else [*fdest, *dest[2], *mdest],
        )
    else:
        bulk, tail, fixes, rows = parts
        if table is None:
            table = np.array(rows, np.int32).reshape(-1, 10)
        first = run(bulk, args + [xr], None if dest is None else [*fdest, *mdest])
        if tail is not None:  # the bulk's last wave, in x pieces
            brec = first[-1]
            first = run(
                tail, args + [xr, table[len(rows) - tail.ntask :]], list(first[: nf + bool(spec.boxes)])
            )
            if spec.probes:
                first = list(first[:-1]) + [first[-1] + brec]
        # the CPML kernels write over the bulk's fields; every psi is theirs (NaN on the host
        # before they run, so a cell they missed shows)
        cur_psi = [np.full(np.shape(v), np.nan, spec.dtype) for v in psi] if dest is None else list(dest[2])
        axes = [a for a, L in enumerate(spec.pml) if L]
        fields, mrec, rec = list(first[:nf]), list(first[nf : nf + 1] if spec.boxes else []), first[-1]
        if after_bulk is not None:
            fields = list(after_bulk(fields))
        for g, (fix, idx) in enumerate(fixes):
            last = g == len(fixes) - 1
            if last and before_last is not None:
                fields, cur_psi = (list(v) for v in before_last(fields, cur_psi))
            mine = [j for j, a in enumerate(axes) if fix.pml[a]]
            pro = [v for j in mine for v in prof[2 * j : 2 * j + 2]]
            pin = [v for j in mine for v in psi[4 * j : 4 * j + 4]]
            pout = [v for j in mine for v in cur_psi[4 * j : 4 * j + 4]]
            tab = table[np.asarray(idx)]
            outs = run(fix, args + pro + pin + [xr, tab], fields + pout + mrec)
            fields = list(outs[:nf])
            for n_, j in enumerate(mine):
                cur_psi[4 * j : 4 * j + 4] = outs[nf + 4 * n_ : nf + 4 + 4 * n_]
            k = nf + 4 * len(mine)
            mrec = list(outs[k : k + 1]) if spec.boxes else []
            if spec.probes:
                rec = rec + outs[-1]
        xv = split.virtual(spec)
        if xv is not None:  # the x-CPML's cells no window covers: a small grid's march
            fields[:6], cur_psi[:4] = xvirtual.run(
                xv, spec, run, E, H, static, prof[:2], psi[:4], fields[:6], cur_psi[:4], run is cuda.gpu_pass
            )
        outs = fields + cur_psi + mrec + ([rec] if spec.probes else [])
    E, H, J = tuple(outs[:3]), tuple(outs[3:6]), tuple(outs[6:nf])
    npsi = len(psi)
    psi = list(outs[nf : nf + npsi])
    mrec = outs[nf + npsi] if spec.boxes else None
    rec = outs[nf + npsi + bool(spec.boxes)] if spec.probes else None
    return E, H, psi, rec, mrec, J


def advance_gpu(plan, arrays, state, steps: int, th: int, block: tuple, split_cpml: bool = True, crop=True):
    """``steps`` steps in passes of the kernel on the GPU (one jitted program per plan,
    step count, tiling, :func:`emjax.fdtd.blocked.cuda.ring_setting` and the coefficients'
    box and backgrounds, :func:`.coef_box.find`; ``crop=False``: the arrays whole, e.g. for the
    window's slabs, whose boxes would differ and each cost a compilation)."""
    cbox = coef_box.find(plan, arrays) if crop else None
    return _advance_gpu(plan, arrays, state, steps, th, block, split_cpml, cuda.ring_setting(), cbox)


@partial(
    jax.jit,
    static_argnames=("plan", "steps", "th", "block", "split_cpml", "ring", "cbox"),
    donate_argnames=("state",),
)
def _advance_gpu(plan, arrays, state, steps: int, th: int, block: tuple, split_cpml: bool, ring: tuple, cbox):
    dtype = state["E"][0].dtype
    spec = make_spec(plan, arrays, dtype, th, block, ring, cbox)
    static, prof = static_inputs(plan, arrays, spec)
    psi = pack_psi(plan, state["psi"], spec)
    E, H, n = tuple(state["E"]), tuple(state["H"]), state["n"]
    J = poles_flat(state["J"])
    n_pass, rest = divmod(steps, th)
    nprobe = len(spec.probes)
    recs = []
    # the other copy of the state: each pass reads one and writes the other
    other = (
        tuple(jnp.empty_like(f) for f in E),
        tuple(jnp.empty_like(f) for f in H),
        [jnp.empty_like(v) for v in psi],
        tuple(jnp.empty_like(f) for f in J),
    )

    def run(sp, cur, dst, n, acc):  # acc: the running DFTs and the TF/SF 1-D grid
        dft, aux = acc
        sv = _sv(plan, arrays, n, sp.th, sp.dtype) if sp.sources else None
        inc = None
        if sp.tfsf is not None:
            aux, inc = incidence.lines(plan, aux, n, sp.th, dtype)
        E, H, psi, rec, mrec, J = _one_pass(
            sp, static, sv, prof, *cur[:3], cuda.gpu_pass, dst, split_cpml, inc=inc, J=cur[3]
        )
        rec = rec.reshape(sp.th, nprobe) if nprobe else jnp.zeros((sp.th, 0), dtype)
        if sp.boxes:
            dft = records.accumulate(plan, dft, mrec, sp, n, plan.dt)
        return (E, H, psi, J), rec, (dft, aux)

    def body(carry, _):  # two passes: A -> B -> A, so the loop carries no copies
        a, b, n, acc = carry
        b, rec1, acc = run(spec, a, b, n, acc)
        a, rec2, acc = run(spec, b, a, n + th, acc)
        return (a, b, n + 2 * th, acc), jnp.concatenate([rec1, rec2])

    cur, acc = (E, H, psi, J), (tuple(state["dft"]), tuple(state["aux"]))
    if n_pass // 2:
        (cur, other, n, acc), rec = jax.lax.scan(body, (cur, other, n, acc), None, length=n_pass // 2)
        recs.append(rec.reshape(2 * th * (n_pass // 2), nprobe))
    for sp in ([spec] if n_pass % 2 else []) + (
        [make_spec(plan, arrays, dtype, rest, block, ring, cbox)] if rest else []
    ):
        new, rec, acc = run(sp, cur, other, n, acc)
        cur, other = new, cur
        recs.append(rec)
        n = n + sp.th
    E, H, psi, J = cur
    rec = jnp.concatenate(recs) if recs else jnp.zeros((0, nprobe), dtype)
    psi = unpack_psi(plan, psi, state["psi"], spec)
    new = {
        **state,
        "E": E,
        "H": H,
        "psi": psi,
        "J": poles_nested(J, state["J"]),
        "n": n,
        "dft": acc[0],
        "aux": acc[1],
    }
    finite = jnp.all(jnp.stack([jnp.all(jnp.isfinite(f)) for f in E + H]))
    return new, rec, finite


def advance_emulated(
    plan, arrays, state, steps: int, th: int, block: tuple, split_cpml: bool = True, crop=True
):
    """The same passes with the kernel compiled for the host (NumPy; small grids)."""
    dtype = np.dtype(state["E"][0].dtype)
    cbox = coef_box.find(plan, arrays) if crop else None
    spec = make_spec(plan, arrays, dtype, th, block, cbox=cbox)
    static, prof = static_inputs(plan, arrays, spec)
    static = [np.asarray(v) for v in static]
    prof = [np.asarray(v) for v in prof]
    psi = [np.asarray(v) for v in pack_psi(plan, state["psi"], spec)]
    E = tuple(np.asarray(v) for v in state["E"])
    H = tuple(np.asarray(v) for v in state["H"])
    J = tuple(np.asarray(v) for v in poles_flat(state["J"]))
    n = int(state["n"])
    recs = []
    done = 0
    dft, aux = tuple(state["dft"]), tuple(state["aux"])
    while done < steps:
        k = min(th, steps - done)
        sp = spec if k == th else make_spec(plan, arrays, dtype, k, block, cbox=cbox)
        sv = _sv(plan, arrays, jnp.int32(n), sp.th, sp.dtype) if sp.sources else None
        inc = None
        if sp.tfsf is not None:
            aux, inc = _lines(plan, aux, jnp.int32(n), sp.th, dtype)
            inc = np.asarray(inc)
        E, H, psi, rec, mrec, J = _one_pass(
            sp, static, sv, prof, E, H, psi, _emulated_run, None, split_cpml, inc=inc, J=J
        )
        recs.append(rec.reshape(k, -1) if sp.probes else np.zeros((k, 0), dtype))
        if sp.boxes:
            dft = records.accumulate(plan, dft, jnp.asarray(mrec), sp, jnp.int32(n), plan.dt)
        n += k
        done += k
    rec = np.concatenate(recs)
    new = {
        **state,
        "E": tuple(jnp.asarray(v) for v in E),
        "H": tuple(jnp.asarray(v) for v in H),
        "J": poles_nested([jnp.asarray(v) for v in J], state["J"]),
        "dft": dft,
        "aux": aux,
        "psi": {k: jnp.asarray(v) for k, v in unpack_psi(plan, psi, state["psi"], spec).items()},
        "n": jnp.int32(n),
    }
    return new, jnp.asarray(rec), bool(all(np.all(np.isfinite(f)) for f in E + H))


_lines = jax.jit(incidence.lines, static_argnums=(0, 3, 4))


def _emulated_run(spec, args, dest=None):
    return emulation.emulate_pass(spec, [np.asarray(a) for a in args], dest)
