"""The FDTD run: the time loop in chunks of ``lax.scan`` on the device (the step itself is
:mod:`emjax.fdtd.step`), the traced (differentiated), several-device and out-of-core runs."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from functools import partial
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from .. import progress as progress_bars
from ..backend import check_memory, precision, precision_scope
from ..errors import ConfigError, ResourceError, require_int, require_positive
from ..layout import as_layout
from . import blocked, sharded, subpixel_slabs
from . import checkpoint as checkpoint_mod
from . import step as engine
from .chunks import run_chunks
from .results import FDTDResult
from .spec import GridSimulation, check_run_arguments, is_traced, traced_inputs

# Reverse mode of traced runs: "custom" (emjax.fdtd.adjoint, where it applies) or "autodiff"
# (JAX's through the checkpointed scan); tests and benchmarks compare them.
ADJOINT = os.environ.get("EMJAX_FDTD_ADJOINT", "custom")


def default_chunk(steps: int, n_cells: int, devices: int = 1) -> int:
    """Steps per device call of a concrete run (progress and checkpoints come between
    calls): ~5% of the run, at least 50 steps and ~0.5 s of work at a typical rate per
    device (3e10 cell updates/s on a GPU, 2e8 on a CPU), but no more than ~2 s at a
    conservative one (1e10 on a GPU), so a long run on a big grid reports every few seconds
    and a call's fixed cost stays small (measured on 2 x H200 at 512^3 with the blocked
    kernel: about 2 ms per call, 3% of a 50-step call); one chunk length (plus the last)
    keeps it at one or two compilations."""
    cpu = jax.default_backend() == "cpu"
    typical, slow = (2e8, 2e8) if cpu else (3e10, 1e10)
    n = max(n_cells, 1) / max(devices, 1)
    floor, cap = int(0.5 * typical / n), max(1, int(2.0 * slow / n))
    return max(1, min(steps, max(steps // 20, 50, floor), cap))


def remat_segment(steps: int) -> int:
    """Default steps per rematerialized segment of a traced run: ``round(sqrt(steps))``.

    Reverse mode keeps the state at each segment's start (``steps / K`` copies of the whole
    state: 6 field arrays, CPML psi, monitor sums) and, while it differentiates one segment,
    that segment's ``K`` steps' residuals (a few field arrays per step), recomputing the
    segment's forward pass once: memory ``O(steps / K + K)`` state-sized arrays, smallest
    at ``K ~ sqrt(steps)``, for one extra forward pass (the gradient costs ~ 2 forward passes
    + the backward one instead of 1 + 1)."""
    return max(1, int(round(math.sqrt(steps))))


def default_remat(steps: int, n_cells: int, itemsize: int) -> int:
    """``remat`` of a traced run when none is given: 0 (every step's residuals kept, no
    recomputation: a gradient costs ~3.8x a forward run on an H100 against ~4.9x with
    segments) where those ``3 steps n_cells`` values fit in a third of the device's free
    memory, else :func:`remat_segment`."""
    from ..backend import device_memory_bytes

    if 3 * steps * n_cells * itemsize <= device_memory_bytes() / 3:
        return 0
    return remat_segment(steps)


def _scan_steps(plan, arrays, state, steps: int, remat: bool):
    one = partial(engine.step, plan, arrays)
    body = lambda s: jax.lax.scan(one, s, None, length=steps)
    return jax.checkpoint(body, prevent_cse=False)(state) if remat else body(state)


@partial(jax.jit, static_argnames=("plan", "steps", "segment"))
def _advance_traced(plan, arrays, state, steps: int, segment: int):
    """``steps`` steps as one traced computation: an outer ``lax.scan`` over segments of
    ``segment`` steps, each segment a ``jax.checkpoint``-ed inner ``lax.scan`` (remat), then
    the remaining ``steps % segment`` steps as one more checkpointed segment. ``segment =
    0``: one plain scan (reverse mode stores every step's residuals: memory O(steps))."""
    if segment <= 0 or segment >= steps:
        return _scan_steps(plan, arrays, state, steps, remat=segment > 0)
    n_seg, rest = divmod(steps, segment)
    outer = lambda s, _: _scan_steps(plan, arrays, s, segment, remat=True)
    state, rec = jax.lax.scan(outer, state, None, length=n_seg)
    rec = rec.reshape((n_seg * segment,) + rec.shape[2:])
    if rest:
        state, tail = _scan_steps(plan, arrays, state, rest, remat=True)
        rec = jnp.concatenate([rec, tail])
    return state, rec


def run(
    sim: GridSimulation,
    steps: int | None = None,
    *,
    until: float | None = None,
    chunk: int | None = None,
    initial=None,
    progress: bool | Callable[[int, int], None] = True,
    checkpoint: str | Path | None = None,
    remat: int | None = None,
    layout=None,
    out_of_core=None,
    kernel: str = "auto",
) -> FDTDResult:
    """Advance ``steps`` time steps (or ``until`` a time, length / c) on the default device,
    or on several (``layout``).

    ``sim``: a physical-unit :class:`emjax.fdtd.Simulation` (returns its
    :class:`~emjax.fdtd.physical.Result`, monitors by name and normalized spectra) or the
    cell-index :class:`GridSimulation` (returns an :class:`FDTDResult`).

    The loop runs as ``lax.scan`` over chunks of ``chunk`` steps (default: ~steps/20, at
    least 50 and ~0.5 s of work, at most ~2 s: :func:`default_chunk`), one device call
    each; between chunks the host checks for NaN/Inf (raising FloatingPointError with the
    step) and reports progress. Without a checkpoint the next
    chunk is dispatched before the host checks the last one (:mod:`emjax.fdtd.chunks`: the
    dispatch's host time is hidden), so a NaN/Inf is raised one chunk later, naming the
    chunk where it appeared. ``progress=True`` (default) a bar with the time left
    (:mod:`emjax.progress`: in a terminal or notebook, once a run takes over a second),
    False none, a callable is called as ``progress(done, steps)``. ``initial = (E, H)``
    sets the fields at step 0 (E at t = 0, H at t = -dt/2).

    ``checkpoint``: a file (.npz) written atomically at every chunk boundary with the whole
    state and the probe records so far. If it exists when ``run`` starts, the run resumes
    from it (bit for bit the same as an uninterrupted run) when it was written for the same
    problem (:mod:`emjax.fdtd.fingerprint`; else a ConfigError naming what differs).

    Differentiation: a :class:`GridSimulation` whose ``eps`` or ``sigma`` (or ``initial``)
    holds JAX tracers (``jax.grad``, ``jax.jvp``, ``jax.jit`` of a function of them) runs
    as one traced computation: no host checks between chunks, no ``progress`` calls, no
    ``checkpoint`` file; the result's ``probes``, ``dft`` sums, ``flux()`` and fields are JAX
    arrays to build an objective from. ``remat=0`` keeps every step's residuals for reverse
    mode (3 arrays per step, no recomputation: H100 3.8x the forward instead of 4.9x);
    ``remat=K`` checkpoints segments of K steps that are recomputed in the backward pass, so a
    gradient keeps ``O(steps/K + K)`` state-sized arrays instead of ``O(steps)``. Default
    (:func:`default_remat`): 0 where every step's residuals fit in a third of the device's
    free memory, else ``round(sqrt(steps))``. Without subpixel corrections, dispersive
    poles or Bloch boundaries the adjoint is :mod:`emjax.fdtd.adjoint` (a transposed Yee
    step, per-node sensitivities of the E update); otherwise JAX's reverse mode of the
    ``jax.checkpoint``-ed scan. Jit the
    gradient (``jax.jit(jax.grad(loss))``): unjitted, every call traces and compiles the loop
    anew. A float64 grid needs 64-bit JAX around the whole ``jax.grad`` call (the backward
    pass runs after ``run`` returns): ``jax.config.update("jax_enable_x64", True)`` or
    ``with emjax.backend.precision_scope():``; float32 needs nothing. Measured on a 2-core
    CPU (32^3, CPML, 1000 steps, float32): the gradient takes ~11x the forward run (7x
    with ``remat=0``).

    ``layout``: None or 1 (one device, the default), a device count, a list of devices or an
    :class:`emjax.layout.Layout`: the grid split into slabs along x over the devices (see
    :mod:`emjax.fdtd.sharded`); the results equal the one-device run's to rounding. The
    result's ``E`` and ``H`` are then x-split arrays (NumPy arrays when ``nx`` does not
    divide by the device count), its probes and DFT sums NumPy arrays as on one device; a
    ``checkpoint`` is written per shard (readable by any layout). Concrete inputs only (a
    traced run stays on one device).

    ``out_of_core``: the calculation window of :mod:`emjax.fdtd.window`: the
    state in host memory, slabs along x advanced ``th`` steps per visit on the device.
    ``None`` (default): used automatically when a concrete one-device run on a GPU does not
    fit the device's memory; ``False``: never; ``True`` or a dict ``{"th": ..., "slab": ...,
    "device_bytes": ..., "host_memory": ...}``: always (``device_bytes`` sets the slab from a
    device budget, default 80% of the device's free memory; ``th`` default: the rate model's best,
    :func:`emjax.fdtd.window.choose_th`; ``host_memory`` "pinned" or "numpy", default pinned
    where the device has it). ``checkpoint`` as above (every ``chunk`` steps, by default
    ~10 minutes of work, :func:`emjax.fdtd.window.checkpoint_every`; the same format: a
    window run resumes an in-memory run's checkpoint and the other way round);
    no layout with it (yet); bit for bit the in-memory result on the CPU. XLA caps pinned
    host memory on a GPU at ``XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB`` (default 64, read when
    JAX starts): set it higher for grids whose fields exceed it, or the window falls back
    to NumPy (slower link).

    ``kernel``: the step of a concrete run: "xla" (XLA's fused update, every
    step one pass over the grid), "blocked" (the temporally blocked CUDA kernel,
    :mod:`emjax.fdtd.blocked`: TH steps per pass; with a ``layout``, x slabs whose TH-deep
    halos are exchanged once per pass; a ConfigError where it cannot run the simulation) or
    "auto" (default: the blocked kernel on GPUs where it supports the simulation and is
    measured faster, else XLA; the log, logger ``emjax.fdtd``, and the result's ``kernel``
    say which and why). An out-of-core run chooses the same way for its slabs (their seams
    walled for the kernel, :mod:`emjax.fdtd.window.kernel`); traced runs use the XLA step.
    """
    check_run_arguments(progress, initial, checkpoint, out_of_core)
    blocked.check_kernel(kernel)
    if not isinstance(sim, GridSimulation) and hasattr(sim, "_run_physical"):  # a physical Simulation
        kw = dict(chunk=chunk, initial=initial, progress=progress, checkpoint=checkpoint, layout=layout)
        kw["kernel"] = kernel
        if out_of_core is not None:
            kw["out_of_core"] = out_of_core
        return sim._run_physical(steps, until=until, **kw)
    if not isinstance(sim, GridSimulation):
        raise ConfigError(f"run needs an emjax.fdtd.Simulation or GridSimulation, got {type(sim).__name__}")
    if until is not None:
        if steps is not None:
            raise ConfigError("give steps or until (a time in length / c), not both")
        steps = int(math.ceil(require_positive("until", until) / sim.grid.dt))
    steps = require_int("steps", steps, 1)
    make = lambda: progress_bars.StepBar("fdtd", steps, "step")  # noqa: E731
    with progress_bars.shown(progress, make, is_traced(traced_inputs(sim, initial))) as report:
        return _run(sim, steps, chunk, initial, report, checkpoint, remat, layout, out_of_core, kernel)


def _run(sim, steps, chunk, initial, progress, checkpoint, remat, layout, out_of_core, kernel="auto"):
    """:func:`run` of a GridSimulation, ``steps`` checked, ``progress`` a callable or None."""
    if out_of_core is None and as_layout(layout) is None and jax.default_backend() != "cpu":
        if not is_traced(traced_inputs(sim, initial)):
            from ..backend import device_memory_bytes

            out_of_core = sim.memory_bytes() > 0.9 * device_memory_bytes()
            from .window import unsupported

            why = unsupported(sim) if out_of_core else None
            if why is not None:  # too big for the device, and the window cannot take it
                shape_txt = "x".join(map(str, sim.grid.shape))
                raise ResourceError(
                    f"FDTD on a {shape_txt} grid needs about {sim.memory_bytes() / 1e9:.2f} GB, more "
                    f"than the {device_memory_bytes() / 1e9:.2f} GB free on the device; the out-of-core "
                    f"window (state in host memory) does not support {why}; use a coarser grid, "
                    "single precision, or a device with more memory"
                )
    if out_of_core:
        return _run_out_of_core(
            sim, steps, out_of_core, initial, progress, checkpoint, layout, remat, chunk, kernel
        )
    lay = as_layout(layout)
    if lay is not None and any(type(s).__name__ == "CurrentSheet" for s in sim.sources):
        raise ConfigError("mode sources (current sheets) run on one device: drop layout")
    shape_txt = "x".join(map(str, sim.grid.shape))
    if lay is None:
        check_memory(sim.memory_bytes(), f"FDTD on a {shape_txt} grid")
    else:  # each device holds its slab (plus replicated x-CPML windows: small)
        check_memory(sim.memory_bytes() // lay.n, f"FDTD on a {shape_txt} grid split over {lay.n} devices")
    if chunk is None:
        chunk = default_chunk(steps, sim.grid.n_cells, 1 if lay is None else lay.n)
    else:
        chunk = require_int("chunk", chunk, 1)
    if checkpoint is not None and not is_traced(traced_inputs(sim, initial)):
        from ..io import check_output_file

        check_output_file(checkpoint, "checkpoint", create_folder=False)  # before any step
    if (
        sim.grid.precision == "double"
        and not jax.config.jax_enable_x64
        and is_traced(traced_inputs(sim, initial))
    ):
        # the backward pass runs after run() returns, outside its 64-bit scope
        raise ConfigError(
            "differentiating a double-precision FDTD run needs 64-bit JAX around the whole "
            "jax.grad/jit call: jax.config.update('jax_enable_x64', True) or "
            "`with emjax.backend.precision_scope():` (or use Grid(precision='single'))"
        )
    with precision_scope():
        g = sim.grid
        dtype = precision(g.precision).real
        arrays, pml = engine.coefficients(sim, dtype)
        plan = engine.make_plan(sim, steps, dtype, arrays, pml, layout)
        state = engine.initial_state(sim, plan, dtype, initial)
        concrete = checkpoint is not None and not is_traced((arrays, state))  # then fingerprint it
        fp = checkpoint_mod.Fingerprint(plan, arrays, initial) if concrete else None
        if is_traced((arrays, state)):
            if kernel == "blocked":
                raise ConfigError("kernel='blocked' needs concrete inputs (a traced run uses the XLA step)")
            if plan.layout is not None:
                raise ConfigError("a traced (differentiated) FDTD run runs on one device: layout=None")
            return _run_traced(sim, plan, arrays, state, steps, checkpoint, remat)
        if plan.layout is not None:
            return _run_sharded(sim, plan, arrays, state, steps, chunk, checkpoint, progress, fp, kernel)
        recs = []
        if checkpoint is not None and Path(checkpoint).exists():
            state, recs = checkpoint_mod.load(Path(checkpoint), state, fp)
        done = int(state["n"])
        if done > steps:
            raise ConfigError(f"checkpoint {checkpoint} is at step {done}, beyond steps = {steps}")
        advance, kernel_name, kernel_why = blocked.select(plan, dtype, kernel)
        save = None
        if checkpoint is not None:
            save = lambda st, rs: checkpoint_mod.save(Path(checkpoint), st, rs, fp)  # noqa: E731
        state, acc = run_chunks(
            lambda st, n: advance(plan, arrays, st, n),
            state,
            done,
            steps,
            chunk,
            at_boundary=save,
            progress=progress,
            recs=recs,
        )
        recs = acc.recs
        probes = np.concatenate(recs) if recs else np.zeros((0, len(sim.probes)))
        return FDTDResult(
            sim,
            probes,
            (np.arange(len(probes)) + 1) * g.dt,
            jnp.stack(state["E"]),
            jnp.stack(state["H"]),
            acc.timed_steps if acc.timed_steps else steps,
            acc.run_s if acc.timed_steps else acc.compile_s,
            acc.compile_s,
            tuple({k: np.asarray(v) for k, v in d.items()} for d in state["dft"]),
            int(state["n"]),
            kernel=f"{kernel_name} ({kernel_why})",
        )


def _forward_mode(tree) -> bool:
    """Whether a leaf is traced by forward mode (``jax.jvp``, ``jax.jacfwd``): the hand-written
    adjoint is a ``custom_vjp``, which JAX cannot push tangents through, so forward mode
    differentiates the checkpointed loop itself (reverse mode, ``jax.grad``, linearizes
    with another tracer and keeps the adjoint)."""
    return any(type(x).__name__ == "JVPTracer" for x in jax.tree_util.tree_leaves(tree))


def _run_traced(sim, plan, arrays, state, steps, checkpoint, remat) -> FDTDResult:
    """The run of traced inputs: one jitted computation (see :func:`run`)."""
    if checkpoint is not None:
        raise ConfigError("checkpoint files need concrete inputs (not under jax.grad / jax.jit)")
    if remat is None:
        itemsize = np.dtype(precision(sim.grid.precision).real).itemsize
        segment = default_remat(steps, sim.grid.n_cells, itemsize)
    else:
        segment = require_int("remat", remat, 0)
    from . import adjoint

    if ADJOINT == "custom" and adjoint.applicable(plan) and not _forward_mode((arrays, state)):
        lossless = not is_traced(sim.sigma) and np.all(np.asarray(sim.sigma) == 0)
        state, rec = adjoint.advance(plan, arrays, state, steps, segment, lossy=not lossless)
    else:
        state, rec = _advance_traced(plan, arrays, state, steps, segment)
    return FDTDResult(
        sim,
        rec,
        (np.arange(steps) + 1) * sim.grid.dt,
        jnp.stack(state["E"]),
        jnp.stack(state["H"]),
        steps,
        0.0,
        0.0,
        tuple(dict(d) for d in state["dft"]),
        steps,
    )


def _run_sharded(
    sim, plan, arrays, state, steps, chunk, checkpoint, progress, fp, kernel="auto"
) -> FDTDResult:
    """The loop of :func:`run` on several devices (``plan.layout``; see sharded.py; the
    blocked kernel's slabs: blocked/shards.py)."""
    g = sim.grid
    lay, nx = plan.layout, g.shape[0]
    recs = []
    if checkpoint is not None and Path(checkpoint).exists():
        state, recs = checkpoint_mod.load_host(Path(checkpoint), state, fp)
    one_axes = sharded.axes_of(state, g.shape)  # the checkpoints' (one-device) layout
    loc = subpixel_slabs.localize(plan, arrays, state)  # the subpixel nodes dealt out by slab
    plan, arrays, state = loc.plan, loc.arrays, loc.state
    axes = (sharded.axes_of(arrays, g.shape, loc.dealt), sharded.axes_of(state, g.shape, loc.dealt))
    arrays = sharded.place(arrays, axes[0], lay, nx)
    state = sharded.place(state, axes[1], lay, nx)
    done = int(sharded.host_copy(state["n"]))
    if done > steps:
        raise ConfigError(f"checkpoint {checkpoint} is at step {done}, beyond steps = {steps}")
    adv, kernel_name, kernel_why = blocked.select(plan, state["E"][0].dtype, kernel)
    plain = lambda st: st  # noqa: E731  (the state as the run's checkpoints and result take it)
    if kernel_name == "xla":
        adv = partial(_sharded_xla, axes=axes)
    elif isinstance(adv, blocked.BlockedStep):  # the blocked slabs: their layout kept between calls
        from .blocked import shards

        th, block = adv.th, adv.block
        keys = tuple(state["psi"])
        state = shards.extend(plan, state, th)
        plain = partial(shards.crop, plan, th=th, keys=keys)
        adv = lambda plan, arrays, st, n: shards.advance_extended(plan, arrays, st, n, th, block)  # noqa: E731
    save = None
    if checkpoint is not None:

        def save(st, rs):
            one = loc.to_global(plain(st))  # the node state in the one-device layout
            checkpoint_mod.save_sharded(Path(checkpoint), one, rs, fp, one_axes)

    state, acc = run_chunks(
        lambda st, n: adv(plan, arrays, st, n),
        state,
        done,
        steps,
        chunk,
        to_host=sharded.host_copy,
        at_boundary=save,
        progress=progress,
        recs=recs,
    )
    state = plain(state)
    recs, compile_s, t_run, timed_steps = acc.recs, acc.compile_s, acc.run_s, acc.timed_steps
    probes = np.concatenate(recs) if recs else np.zeros((0, len(sim.probes)))
    E, H = sharded.final_fields(state["E"], lay, nx), sharded.final_fields(state["H"], lay, nx)
    return FDTDResult(
        sim,
        probes,
        (np.arange(len(probes)) + 1) * g.dt,
        E,
        H,
        timed_steps if timed_steps else steps,
        t_run if timed_steps else compile_s,
        compile_s,
        tuple({k: sharded.host_copy(v) for k, v in d.items()} for d in state["dft"]),
        int(sharded.host_copy(state["n"])),
        kernel=f"{kernel_name} ({kernel_why})",
    )


def _sharded_xla(plan, arrays, state, n, axes):
    return sharded.advance(plan, arrays, state, n, axes)


def _run_out_of_core(
    sim, steps, out_of_core, initial, progress, checkpoint, layout, remat, chunk=None, kernel="auto"
):
    """``run`` through the calculation window (emjax.fdtd.window)."""
    from ..backend import device_memory_bytes
    from . import window

    if as_layout(layout) is not None or remat is not None:
        raise ConfigError("out_of_core: a window run takes no layout or remat (yet)")
    if chunk is not None:
        chunk = require_int("chunk", chunk, 1)
    if out_of_core is True:
        opts = {}
    elif isinstance(out_of_core, dict):
        unknown = set(out_of_core) - {"th", "slab", "device_bytes", "host_memory"}
        if unknown:
            raise ConfigError(
                f"out_of_core: unknown key(s) {sorted(unknown)}; allowed: th, slab, device_bytes, host_memory"
            )
        opts = dict(out_of_core)
    else:
        raise ConfigError(f"out_of_core must be None, True, False or a dict, got {out_of_core!r}")
    if opts.get("slab") is None and opts.get("device_bytes") is None:
        opts["device_bytes"] = int(0.8 * device_memory_bytes())  # the slab model's five states
    # th None: run_window takes the rate model's best for an H100-class device and link, the
    # two directions counted in series (on the H100 they contend: 1200^3 th 16 falls between
    # the duplex and the serial model, and the serial model picks the measured best th), with
    # the in-memory rate of the step that will advance the slabs
    return window.run_window(
        sim,
        steps,
        initial=initial,
        progress=progress,
        checkpoint=checkpoint,
        chunk=chunk,
        kernel=kernel,
        **opts,
    )
