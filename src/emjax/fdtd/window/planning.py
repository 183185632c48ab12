"""Planning a window run: what it cannot run (:func:`unsupported`), the host setup of the
whole grid, the rate model and the sizing of slabs and steps per pass (:func:`choose_th`),
and the default checkpoint interval."""

from __future__ import annotations

import jax
import numpy as np

from ...backend import precision, precision_scope
from ...errors import ConfigError
from .. import step as engine
from ..grid import CPML
from ..spec import GridSimulation, is_traced
from ..tfsf import TFSF
from .slabs import _x_split, ghost


def _global_setup(sim: GridSimulation, steps: int, dtype, initial):
    """The plan, coefficients and initial state of :func:`emjax.fdtd.run` (host copies)."""
    cpu = jax.devices("cpu")[0]
    with jax.default_device(cpu):
        arrays, pml = engine.coefficients(sim, dtype)
        plan = engine.make_plan(sim, steps, dtype, arrays, pml)
        if initial is None:  # zeros straight in host memory (lazily paged in), no device copy
            shapes = jax.eval_shape(lambda: engine.initial_state(sim, plan, dtype, None))
            state = jax.tree_util.tree_map(lambda x: np.zeros(x.shape, x.dtype), shapes)
        else:
            state = jax.tree_util.tree_map(np.array, engine.initial_state(sim, plan, dtype, initial))
    for f in ("E", "H"):  # one (3, nx, ny, nz) array each, the result's (no stacking copy at the end)
        whole = np.zeros((3,) + state[f][0].shape, state[f][0].dtype)
        if initial is not None:
            for c in range(3):
                whole[c] = state[f][c]
        state[f] = tuple(whole)  # views
    return plan, jax.tree_util.tree_map(np.asarray, arrays), state


def unsupported(sim: GridSimulation) -> str | None:
    """Why the window cannot run ``sim`` (None: it can)."""
    if is_traced((sim.eps, sim.sigma)):
        return "traced (differentiated) inputs (use fdtd.run)"
    if any(isinstance(b, CPML) and b.wall == "pmc" for b in sim.grid.boundary):
        return "PMC walls (even mirror symmetry)"
    if sim.subpixel is not None:
        return 'subpixel corrections (the sparse box; a Simulation with averaging="diagonal" can use it)'
    if sim.grid.bloch_phases[0] is not None:
        return "a Bloch boundary along x (the slab axis)"
    for s in sim.sources:
        if type(s).__name__ == "CurrentSheet":
            return "mode sources (current sheets; run on one device)"
        if isinstance(s, TFSF) and s.oblique:
            return (
                "oblique TF/SF incidence (its incident field is evaluated at absolute positions; "
                "use incidence along an axis)"
            )
    return None


def _check(sim: GridSimulation, th: int):
    if not isinstance(sim, GridSimulation):
        raise ConfigError("run_window needs a GridSimulation (a physical Simulation: its .to_grid()[0])")
    why = unsupported(sim)
    if why is not None:
        raise ConfigError(f"run_window: the window does not support {why}")


def model_times(r_dev, b_link, th, slab, order, *, nx, bytes_in, bytes_out, plane=1, b_down=None) -> tuple:
    """(compute, transfer) seconds of one slab and pass, ``plane`` cells per x plane;
    ``b_down``: the directions overlap (``b_link`` up, ``b_down`` down), else they add."""
    S = min(slab, nx)
    m = min(S + 2 * ghost(order, th), nx)  # a sub-grid is at most the grid
    if b_down is not None:
        return m * th * plane / r_dev, max(m * bytes_in / b_link, S * bytes_out / b_down) * plane
    return m * th * plane / r_dev, (m * bytes_in + S * bytes_out) * plane / b_link


def model_rate(
    r_dev: float,
    b_link: float,
    th: int,
    slab: int,
    order: int,
    *,
    nx: int,
    bytes_in: float,
    bytes_out: float,
    overlap: bool = True,
    plane: int = 1,
    overhead: float = 0.0,
    b_down: float | None = None,
) -> float:
    """Expected cell updates/s of the window (see the module docstring): ``r_dev`` the
    in-memory rate (cells/s), ``b_link`` the host link bandwidth (bytes/s), ``bytes_in``/
    ``bytes_out`` per cell sent/returned per pass; a slab's sub-grid is at most the grid
    (``nx`` planes). ``overlap=False``: transfers and compute add up (the CPU).
    ``overhead``: fixed host seconds per slab and pass (dispatch, one transfer per array),
    on the host's side of the overlap; it matters for small planes only (``plane`` cells).
    ``b_down``: full duplex, ``b_link`` the host -> device and ``b_down`` the device -> host
    rate (:func:`model_times`)."""
    kw = dict(nx=nx, bytes_in=bytes_in, bytes_out=bytes_out, plane=plane, b_down=b_down)
    t_c, t_t = model_times(r_dev, b_link, th, slab, order, **kw)
    total = max(t_c, t_t + overhead) if overlap else t_c + t_t + overhead
    return min(slab, nx) * plane * th / total


def bytes_per_cell(sim: GridSimulation, steps: int = 1, setup: tuple | None = None) -> tuple:
    """(sent, returned) bytes per cell per pass: the x-split state and coefficient arrays.
    ``setup``: :func:`_global_setup`'s (plan, arrays, state) of ``sim`` where the caller
    has it (else the whole grid is set up on the host here)."""
    if setup is None:
        with precision_scope():
            dtype = precision(sim.grid.precision).real
            setup = _global_setup(sim, steps, dtype, None)
    _, arrays, state = setup
    nx, n = sim.grid.shape[0], sim.grid.n_cells
    size = lambda t: sum(x.nbytes for x in jax.tree_util.tree_leaves(t) if _x_split(x, nx))
    st = size({k: state[k] for k in ("E", "H", "J")}) + sum(
        v.nbytes for k, v in state["psi"].items() if k[1] != "0"
    )
    co = size({k: v for k, v in arrays.items() if not k.startswith("pml")})
    return (st + co) / n, st / n


def slab_for_budget(sim: GridSimulation, th: int, device_bytes: float, per_cell: tuple | None = None) -> int:
    """The largest slab (planes) whose sub-grids fit ``device_bytes`` with ghosts: the device
    holds up to five states (the next slab's input chunks, the running slab's input being
    concatenated, its carry and XLA's copy of it, the previous slab's owned planes on their
    way back) and two coefficient sets. (H100, 1200^3 float32 CPML, th 32: a peak of 71.2 GB
    with a 60 GB budget counted as four states, 4.7 states; budgets of five keep under.)
    ``per_cell``: :func:`bytes_per_cell` of ``sim`` where the caller has it (it sets the
    whole grid up on the host)."""
    b_in, b_out = bytes_per_cell(sim) if per_cell is None else per_cell
    plane = sim.grid.n_cells // sim.grid.shape[0]
    per_plane = plane * (5 * b_out + 2 * (b_in - b_out))
    s = int(device_bytes // per_plane) - 2 * ghost(sim.grid.order, th)
    if s < 1:
        raise ConfigError(
            f"run_window: a device budget of {device_bytes / 1e9:.3g} GB holds no slab with "
            f"th = {th} (ghosts 2 x {ghost(sim.grid.order, th)} planes of {per_plane / 1e6:.3g} MB)"
        )
    return min(s, sim.grid.shape[0])


def choose_th(
    sim: GridSimulation,
    device_bytes: float,
    r_dev: float,
    b_up: float,
    b_down: float | None = None,
    ths=(1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128),
    per_cell: tuple | None = None,
) -> tuple:
    """(th, slab, model rate): the steps per pass among ``ths`` that the rate model
    (:func:`model_rate`, transfers overlapped) rates best for ``sim`` with a device budget
    of ``device_bytes`` (the slab from :func:`slab_for_budget`), the in-memory rate
    ``r_dev`` (cells/s) and the link rates (bytes/s; ``b_down`` given: the two directions
    overlap). Larger th hides the link, but the ghosts (``th r + 1`` planes a side) eat
    the slab: the best th is where the two meet. ``per_cell``: :func:`bytes_per_cell` of
    ``sim`` where the caller has it."""
    b_in, b_out = bytes_per_cell(sim) if per_cell is None else per_cell
    nx = sim.grid.shape[0]
    kw = dict(nx=nx, bytes_in=b_in, bytes_out=b_out, plane=sim.grid.n_cells // nx, b_down=b_down)
    best = None
    for th in ths:
        try:
            slab = slab_for_budget(sim, th, device_bytes, (b_in, b_out))
        except ConfigError:  # no slab fits with these ghosts
            continue
        rate = model_rate(r_dev, b_up, th, slab, sim.grid.order, **kw)
        if best is None or rate > best[2]:
            best = (th, slab, rate)
    if best is None:
        raise ConfigError(
            f"choose_th: a device budget of {device_bytes / 1e9:.3g} GB holds no slab for any th"
        )
    return best


#: in-memory rates (cell updates/s) the default th is modelled with: float32 with a CPML on
#: an H100 at 1024^3, the XLA step and the blocked kernel (BENCHMARKS.md: 31.9 and 56.5-57.4;
#: the window at 40 GB measured th 32 / 48 / 64 at 70.0 / 77.1 / 69.5% of the kernel's rate,
#: where the XLA step's rate picks 32 and the kernel's 48)
RATE_XLA = 3.3e10
RATE_BLOCKED = 5.7e10


def default_rate(sim: GridSimulation, kernel: str = "auto", plan=None) -> float:
    """The in-memory rate :func:`choose_th` models ``sim``'s window with when no th is given:
    the blocked kernel's where it would advance the slabs (a GPU, float32, a scene the
    kernel carries, and for ``kernel="auto"`` one where it is measured faster), else XLA's.
    ``plan``: :func:`_global_setup`'s plan of ``sim`` where the caller has it."""
    if kernel == "xla" or jax.default_backend() != "gpu":
        return RATE_XLA
    from ..blocked import choice

    with precision_scope():
        dtype = precision(sim.grid.precision).real
        if np.dtype(dtype).itemsize != 4:
            return RATE_XLA
        if plan is None:
            plan = _global_setup(sim, 1, dtype, None)[0]
    plane = int(np.prod(plan.shape[1:]))  # the slabs' memory is checked once they are sized
    why = choice.why_not(plan, dtype, plane)
    if why is None and kernel == "auto":
        why = choice.auto_reason(plan, dtype)
    return RATE_XLA if why is not None else RATE_BLOCKED


def checkpoint_every(steps: int, n_cells: int, th: int) -> int:
    """Default steps between a window run's checkpoints: ~10 minutes of work at a
    conservative rate (2e10 cell updates/s on a GPU, 2e8 on a CPU), a multiple of ``th``:
    a checkpoint writes the whole state (~25 bytes per cell in float32 with a CPML; 50 GB
    for 1200^3), so the in-memory run's ~2 s chunks would spend most of the time writing."""
    rate = 2e8 if jax.default_backend() == "cpu" else 2e10
    every = int(600.0 * rate / max(n_cells, 1))
    return min(steps, max(th, every - every % th))
