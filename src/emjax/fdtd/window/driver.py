"""The window's driver, :func:`run_window`: the passes over ``steps`` steps, the host-memory
path taken, and the checkpoints (written in :func:`emjax.fdtd.run`'s format)."""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jax
import numpy as np

from ...backend import precision, precision_scope
from ...errors import ConfigError, ResourceError, require_int
from .. import checkpoint as checkpoint_mod
from ..results import FDTDResult
from ..spec import GridSimulation
from .hoststate import _Chunks, _pinned_fits, host_memory_path
from .kernel import check_ghosts, check_kernel
from .kernel import choose as choose_kernel
from .passes import _pass_numpy, _pass_pinned
from .planning import (
    _check,
    _global_setup,
    bytes_per_cell,
    checkpoint_every,
    choose_th,
    default_rate,
    slab_for_budget,
)
from .slabs import _x_split, ghost, rings
from .subgrid import _Slot, _sub_problem


class _Gathered:
    """A leaf in pinned chunks, assembled into one NumPy array when NumPy asks for it (a
    checkpoint writes one leaf at a time)."""

    def __init__(self, store: _Chunks, name):
        self.store, self.name = store, name

    def __array__(self, dtype=None, copy=None):
        parts = [np.asarray(x) for x in self.store.data[self.name] if x is not None]
        x = np.concatenate(parts, axis=self.store.axes[self.name])
        return x if dtype is None else x.astype(dtype)


def _save_checkpoint(path, host, store, probes, fp) -> None:
    """The window's state in :func:`emjax.fdtd.checkpoint.save`'s format (the in-memory
    state's leaves in its order), each chunked leaf gathered only while it is written."""
    state = dict(host)
    state["dft"] = tuple(host["dft"])
    leaves = jax.tree_util.tree_leaves(state)
    leaves = [_Gathered(store, x.name) if isinstance(x, _Slot) else np.asarray(x) for x in leaves]
    checkpoint_mod.save_leaves(path, leaves, probes, fp)


def run_window(
    sim: GridSimulation,
    steps: int,
    *,
    th: int | None = None,
    slab: int | None = None,
    device_bytes: float | None = None,
    initial=None,
    progress: Callable[[int, int], None] | None = None,
    host_memory: str | None = None,
    stats: dict | None = None,
    chunk: int | None = None,
    checkpoint=None,
    kernel: str = "auto",
) -> FDTDResult:
    """Advance ``steps`` steps with the state in host memory, slab by slab (see the module
    docstring): the same :class:`FDTDResult` as :func:`emjax.fdtd.run` (bit for bit on the
    CPU). ``th``: steps per pass (temporal blocking), or None: the rate model's best
    (:func:`choose_th` with :func:`default_rate`, for ``device_bytes`` or the device's
    memory; the grid is set up on the host once for it and the run); ``slab``: planes along x per slab,
    or chosen from ``device_bytes`` (:func:`slab_for_budget`) when None (a budget smaller
    than the grid forces the window; neither given: the whole grid is one slab).
    ``progress(done, steps)`` after each pass. ``host_memory``: None (pinned where the
    device offers it), ``"pinned"`` or ``"numpy"`` (:func:`host_memory_path`). ``stats``: a
    dict, filled with the path taken, the bytes moved per pass each way, the chunk count
    and the seconds the host waited for the device (pinned path). ``checkpoint``: a file
    written atomically every ``chunk`` steps (a pass ends there) in the format of
    :func:`emjax.fdtd.run`'s (either run resumes the other's); if it exists, the run resumes
    from it. ``kernel``: the slabs' step, "auto", "xla" or "blocked" as in
    :func:`emjax.fdtd.run` (the blocked kernel with each slab's seams walled,
    :mod:`emjax.fdtd.window.kernel`), or "emulate" (the blocked kernel's text on the host:
    tests); the result's ``kernel`` says which ran and why. Returns E, H as NumPy arrays."""
    check_kernel(kernel)
    _check(sim, th)
    steps = require_int("steps", steps, 1)
    th = None if th is None else require_int("th", th, 1)
    nx = sim.grid.shape[0]
    slab = None if slab is None else require_int("slab", slab, 1, nx)
    if checkpoint is not None:
        from ...io import check_output_file

        checkpoint = Path(checkpoint)
        check_output_file(checkpoint, "checkpoint", create_folder=False)  # before any step
        chunk = None if chunk is None else require_int("chunk", chunk, 1)
    device = jax.devices()[0]
    path = host_memory_path(host_memory, device)
    with precision_scope():
        g = sim.grid
        dtype = precision(g.precision).real
        plan, arrays, host = _global_setup(sim, steps, dtype, initial)
        per_cell = bytes_per_cell(sim, setup=(plan, arrays, host))
        if th is None:
            from ...backend import device_memory_bytes

            budget = device_bytes if device_bytes is not None else device_memory_bytes()
            th = choose_th(sim, budget, default_rate(sim, kernel, plan), 5e10, per_cell=per_cell)[0]
        if slab is None:
            slab = slab_for_budget(sim, th, device_bytes, per_cell) if device_bytes is not None else nx
        if checkpoint is not None and chunk is None:
            chunk = checkpoint_every(steps, sim.grid.n_cells, th)
        fp = None if checkpoint is None else checkpoint_mod.Fingerprint(plan, arrays, initial)
        resumed = None
        if checkpoint is not None and checkpoint.exists():  # into the host state, leaf by leaf
            resumed = checkpoint_mod.load_into(checkpoint, jax.tree_util.tree_leaves(host), fp)
            if int(host["n"]) > steps:
                at = int(host["n"])
                raise ConfigError(f"checkpoint {checkpoint} is at step {at}, beyond steps = {steps}")
        host["dft"] = list(host["dft"])
        field_dtype = host["E"][0].dtype
        walled = g.bloch_phases[0] is not None or plan.walls[0]
        L = plan.pml[0]
        w_lo = max(L if "lo" in plan.pml_faces[0] else 0, 2) if walled else 0
        w_hi = max(L if "hi" in plan.pml_faces[0] else 0, 2) if walled else 0
        why = None
        if path == "pinned":  # the pool must hold the chunks (+ ~3 slabs in flight)
            leaves = jax.tree_util.tree_leaves((host["E"], host["H"], host["psi"], host["J"], arrays))
            need = sum(x.nbytes for x in leaves if _x_split(x, nx))
            need += 3 * need * min(slab, nx) // nx
            why = _pinned_fits(need, sum(x.nbytes for x in host["E"] + host["H"]), device)
            if why is not None and host_memory == "pinned":
                raise ResourceError(f"run_window: host_memory='pinned': {why}")
            if why is not None:
                warnings.warn(
                    f"run_window: the NumPy host path instead of pinned memory: {why}", stacklevel=2
                )
                path = "numpy"
        subs = [
            _sub_problem(sim, plan, arrays, r, slots=path == "pinned")
            for r in rings(nx, slab, ghost(g.order, th), walled, w_lo, w_hi)
        ]
        check_ghosts(subs, th, g.order)
        kernel_name, kernel_why = choose_kernel(plan, dtype, kernel, subs, th)
        # the last slab (of this pass) that reads each slab's owned planes
        last_reader = []
        for k, s in enumerate(subs):
            own = set(range(s.ring.lo, s.ring.hi))
            readers = [j for j, t in enumerate(subs) if j != k and own & set(t.ring.planes.tolist())]
            last_reader.append(max(readers, default=-1))
        probes = np.zeros((steps, len(sim.probes)), field_dtype)
        if resumed is not None and resumed.size:
            probes[: len(resumed)] = resumed
        done, compile_s, t_run, timed, seen = int(host["n"]), 0.0, 0.0, 0, set()
        store, dev_arrays, wait = None, None, [0.0, 0.0, 0.0]
        if path == "pinned":
            store = _Chunks(subs, host, arrays, nx, device, zero_state=initial is None and resumed is None)
            store.slots(host)
        elif len(subs) == 1:
            dev_arrays = [jax.device_put(subs[0].arrays, device)]
        del arrays
        if stats is not None:
            stats.update(host_memory=path, slabs=len(subs), slab=slab, th=th, fallback=why)
            stats["kernel"] = kernel_name
            if store is not None:
                kind = store.data[("E", 0)][0].sharding.memory_kind  # where the chunks are
                stats.update(
                    chunks=len(store.cuts) - 1,
                    bytes_up=store.bytes_up,
                    bytes_down=store.bytes_down,
                    memory_kind=kind,
                    ahead=store.ahead,
                )
        # the workers write into host: none may outlive the run, whatever ends it
        with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
            first = None  # the pinned path: the next pass's first ring, already on its way up
            while done < steps:
                n = min(th, steps - done)
                saving = False
                if checkpoint is not None:  # a pass ends at each checkpoint
                    n = min(n, (done // chunk + 1) * chunk - done)
                    saving = (done + n) % chunk == 0 or done + n == steps
                t0 = time.perf_counter()
                if store is not None:
                    ahead = store.ahead and done + n < steps and not saving
                    finite, last, first = _pass_pinned(
                        subs, store, host, plan, n, probes, done, pool, last_reader, wait, first, ahead
                    )
                else:
                    finite, last = _pass_numpy(
                        subs, host, plan, n, probes, done, pool, last_reader, device, dev_arrays
                    )
                host["aux"] = tuple(np.asarray(x) for x in last["aux"])
                host["n"] = np.asarray(last["n"])
                done += n
                elapsed = time.perf_counter() - t0
                if n in seen:
                    t_run += elapsed
                    timed += n
                else:
                    compile_s += elapsed
                    seen.add(n)
                if not finite:
                    raise FloatingPointError(
                        f"FDTD fields became NaN/Inf by step {done} (window run); the last checkpoint, "
                        "if any, holds the state before this pass"
                    )
                if saving:
                    _save_checkpoint(checkpoint, host, store, probes[:done], fp)
                if progress is not None:
                    progress(done, steps)
        if stats is not None:
            stats["wait_s"] = wait[0]
            stats["upload_issue_s"], stats["dispatch_s"] = wait[1], wait[2]
        if store is not None:
            E = store.gather("E", g.shape, field_dtype)
            H = store.gather("H", g.shape, field_dtype)
        else:
            E = host["E"][0].base if host["E"][0].base is not None else np.stack(host["E"])
            H = host["H"][0].base if host["H"][0].base is not None else np.stack(host["H"])
        return FDTDResult(
            sim,
            probes,
            (np.arange(steps) + 1) * g.dt,
            E,
            H,
            timed if timed else steps,
            t_run if timed else compile_s,
            compile_s,
            tuple({k: np.asarray(v) for k, v in d.items()} for d in host["dft"]),
            int(host["n"]),
            kernel=f"{kernel_name} ({kernel_why})",
        )
