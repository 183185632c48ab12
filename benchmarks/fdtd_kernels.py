"""FDTD: the XLA step and the blocked CUDA kernel side by side in one process, one JSON row
per (case, path): grid size, precision, boundary (PEC walls, or a 10-cell CPML on one axis
or all), material (vacuum, a dielectric block: a per-cell cb array, or "dielectric3": the
block with eps per component, three cb arrays, as ``averaging="diagonal"`` gives), the
per-cell coefficients read through the kernel's shared-memory ring or not (``--ring``),
source (a point dipole, or a TF/SF plane wave: its 1-D grid advanced per pass and the box's
face corrections in the kernel), TH and tiles.

PYTHONPATH=src python3 benchmarks/fdtd_kernels.py --out results/gpu-fdtd-kernels.jsonl
PYTHONPATH=src python3 benchmarks/fdtd_kernels.py --n 512 --boundary pec cpml --configs 4,24,2 3,26,2
PYTHONPATH=src python3 benchmarks/fdtd_kernels.py --n 512 --boundary cpml --source dipole tfsf
PYTHONPATH=src python3 benchmarks/fdtd_kernels.py --n 512 --material dielectric dielectric3 \
    --configs 4,24,2 --ring on off
PYTHONPATH=src python3 benchmarks/fdtd_kernels.py --n 512 --boundary cpml --configs 4,24,2 \
    --cpml-block bulk 16x16 16x24

Each row: ``cells_per_s`` (a second call of ``steps`` steps; the first, ``compile_s``,
compiles), ``bytes_per_update`` (the model: XLA 18 values per update plus the coefficient
array; blocked: windows read once, tiles written once, per TH steps), ``bandwidth_fraction``
against ``--bandwidth`` (bytes/s, default 3.35e12: an H100 SXM's HBM3) and ``rel_err`` of
the blocked fields against the XLA step's after the same steps.
"""

from __future__ import annotations

import argparse
import json
import time

import jax
import jax.numpy as jnp
import numpy as np

from emjax import fdtd
from emjax.backend import device_description
from emjax.bench import git_commit
from emjax.fdtd import blocked
from emjax.fdtd import step as engine
from emjax.fdtd.blocked import cuda as cuda_kernel
from emjax.fdtd.grid import CPML, PEC
from emjax.scattering import PlaneWave


def _cpml_block(text: str):
    """--cpml-block's value as split.CPML_BLOCK takes it."""
    if text in ("bulk", "auto"):
        return "bulk" if text == "bulk" else None
    return tuple(int(v) for v in text.split("x"))


BOUNDARIES = {
    "pec": PEC(),
    "cpml": CPML(10),
    "cpml-x": (CPML(10), PEC(), PEC()),
    "cpml-y": (PEC(), CPML(10), PEC()),
    "cpml-z": (PEC(), PEC(), CPML(10)),
    # 1-cell slabs: the CPML's code with almost no cells in it
    "cpml1": CPML(1),
    "cpml1-x": (CPML(1), PEC(), PEC()),
    "cpml1-z": (PEC(), PEC(), CPML(1)),
}


# the CPML kernels' arrangement: (GROUP_BY_AXES, CHAINS_IN_SMEM) of blocked.split,
# SKIP_COVERED of blocked.bulk, UNROLL_SMEM_CHAINS of blocked.cuda, BALANCE_TAIL (blocked.bulk),
# X_SLABS_APART, ALIGNED,
# X_ENDS_APART and X_ENDS_VIRTUAL of blocked.split
CPML_KERNELS = {
    "default": (False, True, True, True, True, False, None, False, False),  # the package's
    "one": (False, False, False, False, False, False, False, False, False),
    "one+skip": (False, False, True, False, False, False, False, False, False),
    "one+skip+tail": (False, False, True, False, True, False, False, False, False),
    "one+skip+tail+xslabs": (False, True, True, True, True, True, False, False, False),
    "one+skip+tail+xends": (False, True, True, True, True, False, False, True, False),
    "aligned": (False, True, True, True, True, False, True, False, False),
    "grouped+smem+skip": (True, True, True, False, False, False, False, False, False),
    "grouped+smem+skip+tail": (True, True, True, False, True, False, False, False, False),
    "grouped+smem+skip+tail+unroll": (True, True, True, True, True, False, False, False, False),
    "one+skip+tail+xvirtual": (False, True, True, True, True, False, False, False, True),
    "one+skip+tail+xends+xvirtual": (False, True, True, True, True, False, False, True, True),
}


# the march's steady iterations (blocked.cuda.STEADY): "default" the package's; "none": one
# iteration's code for the whole march in every kernel; "cpml1" / "cpml2": one / two steady
# iterations at a time in the CPML kernels too; "plain64-0" / "plain64-2": none / two at a
# time in the float64 kernels without CPML code; "between2": two at a time also in the
# one-device bulk between the CPML's face rows (the default before 2026-11-28); "loop-...":
# the steady iterations in a loop of their own (cuda.STEADY_LOOP), with two at a time between
# the face rows ("loop-between2"), and one at a time in the face rows' kernels too
# ("loop-between2-faces1"); these turn the loop on for every kind, "plain" too (the default
# keeps it off there), the others off for every kind. "between" takes "plain"'s setting and
# "faces" "cpml"'s where a variant does not name them.
STEADY = {
    "default": None,
    "none": {"plain": {4: 0, 8: 0}, "cpml": {4: 0, 8: 0}},
    "cpml1": {"plain": {4: 2, 8: 1}, "cpml": {4: 1, 8: 1}},
    "cpml2": {"plain": {4: 2, 8: 1}, "cpml": {4: 2, 8: 2}},
    "plain64-0": {"plain": {4: 2, 8: 0}, "cpml": {4: 0, 8: 0}},
    "plain64-2": {"plain": {4: 2, 8: 2}, "cpml": {4: 0, 8: 0}},
    "between2": {"plain": {4: 2, 8: 2}, "cpml": {4: 0, 8: 0}, "between": {4: 2, 8: 2}},
    "loop": {"loop": True},
    "loop-between2": {"loop": True, "plain": {4: 2, 8: 2}, "cpml": {4: 0, 8: 0}, "between": {4: 2, 8: 2}},
    "loop-between2-faces1": {
        "loop": True,
        "plain": {4: 2, 8: 2},
        "cpml": {4: 0, 8: 0},
        "between": {4: 2, 8: 2},
        "faces": {4: 1, 8: 1},
    },
}
_STEADY0 = dict(cuda_kernel.STEADY)
_LOOP0 = cuda_kernel.STEADY_LOOP
for _s in STEADY.values():
    if _s is not None:
        if "plain" in _s:
            _s.setdefault("between", dict(_s["plain"]))
        if "cpml" in _s:
            _s.setdefault("faces", dict(_s["cpml"]))
        for _k, _v in _STEADY0.items():
            _s.setdefault(_k, dict(_v))


def steady(name):
    v = STEADY[name]
    cuda_kernel.STEADY = dict(_STEADY0) if v is None else {k: x for k, x in v.items() if k != "loop"}
    # the variants other than "loop-..." as they were written: one loop (cuda.STEADY_LOOP off)
    cuda_kernel.STEADY_LOOP = dict(_LOOP0) if v is None else dict.fromkeys(_LOOP0, v.get("loop", False))


def cpml_kernels(name):
    from emjax.fdtd.blocked import bulk
    from emjax.fdtd.blocked import split as cpml_split

    g, c, s, u, t, x, al, xe, xv = CPML_KERNELS[name]
    cpml_split.GROUP_BY_AXES, cpml_split.CHAINS_IN_SMEM, bulk.SKIP_COVERED = g, c, s
    bulk.BALANCE_TAIL, cpml_split.X_SLABS_APART, cpml_split.ALIGNED = t, x, al
    cpml_split.X_ENDS_APART, cpml_split.X_ENDS_VIRTUAL = xe, xv
    cuda_kernel.UNROLL_SMEM_CHAINS = u
    jax.clear_caches()


def simulation(n, boundary, precision, material, monitors=False, source="dipole"):
    g = fdtd.Grid((n,) * 3, 1.0, boundary=BOUNDARIES[boundary], precision=precision)
    eps = 1.0
    if material in ("dielectric", "dielectric3"):
        eps = np.ones((n,) * 3, np.float32)
        eps[n // 4 : 3 * n // 4, n // 4 : 3 * n // 4, n // 4 : 3 * n // 4] = 2.25
    if material == "dielectric3":  # per component, each a half cell's shift of the block
        eps = np.stack([eps, np.roll(eps, 1, 0), np.roll(eps, 1, 1)])
    pulse = fdtd.GaussianPulse(frequency=0.05, bandwidth=0.5)
    if source == "tfsf":  # a plane wave along +z, x-polarized, in a box of the middle 3/4
        lo, hi = (n // 8,) * 3, (n - n // 8,) * 3
        src = fdtd.TFSF(lo, hi, PlaneWave((0, 0, 1), (1, 0, 0)), pulse)
    else:
        src = fdtd.PointDipole((n // 2,) * 3, 2, pulse)
    mons = ()
    if monitors:  # a flux box around the middle half, 3 frequencies
        lo, hi = (n // 4,) * 3, (3 * n // 4,) * 3
        mons = fdtd.flux_box(lo, hi, (0.04, 0.05, 0.06))
    return fdtd.GridSimulation(
        g, eps=eps, sources=(src,), probes=(fdtd.Probe((n // 2 + 3, n // 2, n // 2), 2),), monitors=mons
    )


def _fresh(sim, steps, dtype):
    arrays, pml = engine.coefficients(sim, dtype)
    plan = engine.make_plan(sim, steps, dtype, arrays, pml)
    return plan, arrays, engine.initial_state(sim, plan, dtype, None)


def _timed(fn, sim, steps, dtype):
    plan, arrays, state = _fresh(sim, steps, dtype)
    t0 = time.perf_counter()
    jax.block_until_ready(fn(plan, arrays, state, steps))
    compile_s = time.perf_counter() - t0
    plan, arrays, state = _fresh(sim, steps, dtype)
    t0 = time.perf_counter()
    out = fn(plan, arrays, state, steps)
    jax.block_until_ready(out)
    return (
        compile_s,
        time.perf_counter() - t0,
        np.stack([np.asarray(e[:, :, e.shape[2] // 2]) for e in out[0]["E"]]),
    )


def parse_config(cfg: str) -> tuple:
    """(TH, (y tile, z tile), rows per thread) of "TH,TILE,RY", TILE one size ("16") or
    "YxZ" ("10x26")."""
    th, tile, ry = cfg.split(",")
    by, _, bz = tile.partition("x")
    return int(th), (int(by), int(bz or by)), int(ry)


def bytes_model(n, th, tile, itemsize, coef):
    if th is None:
        return (18 + coef) * itemsize
    ratio = np.prod([(b + 2 * th) / b for b in tile])
    return (6 * itemsize * ratio + 6 * itemsize + coef * itemsize * ratio) / th


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, nargs="+", default=[256, 512])
    ap.add_argument("--steps", type=int, default=48)
    ap.add_argument("--boundary", nargs="+", default=["pec", "cpml-x", "cpml-y", "cpml-z", "cpml"])
    ap.add_argument("--precision", nargs="+", default=["single"])
    ap.add_argument("--material", nargs="+", default=["vacuum"])
    ap.add_argument(
        "--configs",
        nargs="+",
        default=["4,24,2", "3,26,2", "2,28,2"],
        help="TH,tile,rows per thread (tile: N or YxZ)",
    )
    ap.add_argument(
        "--split", nargs="+", default=["on"], choices=["on", "off"], help="the CPML as a kernel of its own"
    )
    ap.add_argument(
        "--cpml-kernels",
        nargs="+",
        default=["default"],
        choices=list(CPML_KERNELS),
        help="default: the package's choice (aligned face rows in float32, one CPML kernel in "
        "float64); one: a single CPML kernel (chains in local memory) after a bulk kernel over every tile; "
        "grouped: a CPML kernel per set of axes a task reaches; +smem: one axis's chains in shared "
        "memory; +skip: the bulk leaves out the tiles the CPML kernels recompute; +tail: the bulk's last "
        "wave in x pieces; +unroll: the x-march unrolled twice where the chains are in shared memory; "
        "+xslabs: the rows that reach the x-CPML alone in a kernel of their own; +xends: the faces' "
        "marches cut at the x-CPML's ends, those between in a kernel per axis (split.X_ENDS_APART); "
        "+xvirtual: the x-CPML's cells no y or z window covers marched along y on a small grid "
        "(split.X_ENDS_VIRTUAL); "
        "aligned: the bulk over "
        "the interior, the CPML's face rows owning exactly L + TH cells (split.ALIGNED)",
    )
    ap.add_argument(
        "--ring",
        nargs="+",
        default=["on"],
        choices=["on", "off"],
        help="per-cell coefficients through the kernel's shared-memory ring (on) or read from global memory",
    )
    ap.add_argument(
        "--cpml-block",
        nargs="+",
        default=["auto"],
        help="the CPML kernel's own cells per window, 'YxZ' (e.g. 16x16), 'bulk' (the bulk's tile) or "
        "'auto' (split.CPML_BLOCK_DEFAULT by precision and TH)",
    )
    ap.add_argument(
        "--chain-axes",
        nargs="+",
        default=["off"],
        choices=["off", "apart"],
        help="apart: where a CPML kernel's psi chains do not all fit in shared memory, those of the "
        "axes that fit there (split.CHAIN_AXES_APART); off: all in local memory",
    )
    ap.add_argument(
        "--skip-rows",
        nargs="+",
        default=["auto"],
        choices=["auto", "off", "on"],
        help="on: each level leaves out the window rows no own cell needs (cuda.SKIP_SPENT_ROWS); "
        "auto: as the package chooses by precision",
    )
    ap.add_argument(
        "--steady",
        nargs="+",
        default=["default"],
        choices=sorted(STEADY),
        help="the march's steady iterations compiled apart (cuda.STEADY): see STEADY above",
    )
    ap.add_argument(
        "--face-rows",
        nargs="+",
        default=["default"],
        choices=["default", "bulk", "1", "2"],
        help="window rows per thread of the CPML's face rows' kernels (split.FACE_ROWS_PER_THREAD; "
        "default: the module's, bulk: the bulk kernel's)",
    )
    ap.add_argument("--monitors", action="store_true", help="a flux box (6 DFT planes, 3 frequencies)")
    ap.add_argument(
        "--source",
        nargs="+",
        default=["dipole"],
        choices=["dipole", "tfsf"],
        help="a point dipole in the middle, or a TF/SF plane wave (along +z) in a box of the middle 3/4",
    )
    ap.add_argument("--commit", default=None, help="the commit to record (default: git's)")
    ap.add_argument("--bandwidth", type=float, default=3.35e12)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    if "double" in a.precision:
        jax.config.update("jax_enable_x64", True)  # else float64 arrays silently stay float32
    labels = {
        "device": device_description(),
        "date": time.strftime("%Y-%m-%d"),
        "commit": a.commit or git_commit(),
    }

    def emit(row):
        print(json.dumps(row), flush=True)
        if a.out:
            with open(a.out, "a") as f:
                f.write(json.dumps(row) + "\n")

    for n in a.n:
        for precision in a.precision:
            dtype = jnp.float32 if precision == "single" else jnp.float64
            item = np.dtype(dtype).itemsize
            for material in a.material:
                coef = {"dielectric": 1, "dielectric3": 3}.get(material, 0)
                for boundary, source in [(b, so) for b in a.boundary for so in a.source]:
                    sim = simulation(n, boundary, precision, material, a.monitors, source)
                    case = {
                        **labels,
                        "n": n,
                        "precision": precision,
                        "material": material,
                        "boundary": boundary,
                        "source": source,
                        "monitors": "flux box" if a.monitors else None,
                    }
                    try:
                        c, s, ref = _timed(engine.advance, sim, a.steps, dtype)
                    except Exception as e:  # noqa: BLE001
                        emit({**case, "path": "xla", "error": str(e).splitlines()[0][:300]})
                        continue
                    bpu = bytes_model(n, None, None, item, coef)
                    rate = n**3 * a.steps / s
                    emit(
                        {
                            **case,
                            "path": "xla",
                            "compile_s": round(c, 2),
                            "cells_per_s": rate,
                            "bytes_per_update": bpu,
                            "bandwidth_fraction": rate * bpu / a.bandwidth,
                        }
                    )
                    combos = [
                        (c, sp, ck, r, cb, ch, sk, st, fr)
                        for c in a.configs
                        for sp in a.split
                        for ck in a.cpml_kernels
                        for r in a.ring
                        for cb in a.cpml_block
                        for ch in a.chain_axes
                        for sk in a.skip_rows
                        for st in a.steady
                        for fr in a.face_rows
                    ]
                    from emjax.fdtd.blocked import split as cpml_split

                    face_rows0 = cpml_split.FACE_ROWS_PER_THREAD  # the module's default
                    for cfg, split, ck, ring, cb, chains, skip, stdy, frows in combos:
                        if split == "off" and boundary == "pec":
                            continue
                        if split == "off" and (ck != a.cpml_kernels[0] or cb != a.cpml_block[0]):
                            continue
                        from emjax.fdtd.blocked import split as cpml_split

                        cpml_split.CPML_BLOCK = _cpml_block(cb)
                        cpml_split.CHAIN_AXES_APART = chains == "apart"
                        cuda_kernel.SKIP_SPENT_ROWS = None if skip == "auto" else skip == "on"
                        cpml_kernels(ck)  # (clears JAX's caches: the split is read while tracing)
                        steady(stdy)
                        rows_of = {"default": face_rows0, "bulk": None}
                        cpml_split.FACE_ROWS_PER_THREAD = rows_of[frows] if frows in rows_of else int(frows)
                        cuda_kernel.COEF_RING = ring == "on"  # a static argument of the driver
                        th, (by, bz), ry = parse_config(cfg)
                        row = {
                            **case,
                            "path": "blocked-cuda",
                            "th": th,
                            "tile": [by, bz],
                            "rows_per_thread": ry,
                            "split_cpml": split == "on",
                            "cpml_kernels": ck if split == "on" else None,
                            "coef_ring": ring == "on",
                            "cpml_block": cb,
                            "chain_axes": chains,
                            "skip_rows": skip,
                            "steady": stdy,
                            "face_rows": frows,
                        }
                        fn = lambda p, ar, st, k, th=th, by=by, bz=bz, ry=ry, n=n, sp=split: blocked.advance(  # noqa: E731
                            p,
                            ar,
                            st,
                            k,
                            th=th,
                            tile=(n, by, bz),
                            kernel="cuda",
                            rows_per_thread=ry,
                            split_cpml=sp == "on",
                        )
                        try:
                            c, s, got = _timed(fn, sim, a.steps, dtype)
                        except Exception as e:  # noqa: BLE001
                            emit({**row, "error": str(e).splitlines()[0][:300]})
                            continue
                        bpu = bytes_model(n, th, (by, bz), item, coef)
                        rate = n**3 * a.steps / s
                        rel = float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30))
                        emit(
                            {
                                **row,
                                "compile_s": round(c, 2),
                                "cells_per_s": rate,
                                "bytes_per_update": bpu,
                                "bandwidth_fraction": rate * bpu / a.bandwidth,
                                "rel_err": rel,
                            }
                        )


if __name__ == "__main__":
    main()
