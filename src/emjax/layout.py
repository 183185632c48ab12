"""Device layouts: which devices a solver runs on and how its arrays are split over them.

A :class:`Layout` is a one-dimensional :class:`jax.sharding.Mesh` over some of
``jax.devices()`` (one host or several, after :func:`initialize_distributed`), with one mesh
axis named :data:`AXIS`. Every solver accepts ``layout=``; ``None`` (the default) is one
device, the default device, and costs nothing: no mesh, no sharding annotations, the code
paths of a single-device run.

How a solver uses the axis is the solver's choice (FDTD/FDFD: slabs of the grid along x;
DDA: orientations, or slabs of the lattice; layered maps: points). The helpers here are the
generic parts: shardings for "split axis k" and "replicated", placing arrays, and the padding
that makes a length divisible by the number of devices.

Several hosts: call :func:`initialize_distributed` once at start in every process (it reads
the usual environment variables, see its docstring), then ``Layout.all()`` spans every
device of every process.
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from .errors import ConfigError

#: the name of the layout's one mesh axis
AXIS = "d"


@dataclass(frozen=True)
class Layout:
    """A 1-D device mesh. Build with :meth:`of` (or :meth:`all`); hashable, so it can be a
    static argument of a jitted function."""

    devices: tuple

    def __post_init__(self):
        if not self.devices:
            raise ConfigError("layout: devices must name at least one device")
        ids = [d.id for d in self.devices]
        if len(set(ids)) != len(ids):
            raise ConfigError(f"layout: devices must be distinct, got ids {ids}")

    # construction ---------------------------------------------------------------------
    @classmethod
    def of(cls, devices: int | Sequence | Layout | None = None) -> Layout:
        """``None``: the default device; an int ``n``: the first ``n`` of ``jax.devices()``
        (1 <= n <= their number); a sequence of devices; a Layout (returned as is)."""
        if isinstance(devices, Layout):
            return devices
        available = jax.devices()
        if devices is None:  # this process's first device (jax.devices()[0] is process 0's)
            return cls((jax.local_devices()[0],))
        if isinstance(devices, (int, np.integer)) and not isinstance(devices, bool):
            n = int(devices)
            if not 1 <= n <= len(available):
                raise ConfigError(
                    f"devices must be in [1, {len(available)}] (the devices JAX sees: "
                    f"{available[0].platform} x {len(available)}), got {n}"
                )
            if jax.process_count() > 1 and n != len(available):
                # the first n would leave some processes without a device of the layout
                raise ConfigError(
                    f"devices: with {jax.process_count()} processes a layout spans every "
                    f"process's devices: give {len(available)} (all of them), got {n}"
                )
            return cls(tuple(available[:n]))
        try:
            devs = tuple(devices)
        except TypeError:
            raise ConfigError(
                f"devices must be None, a count or a list of jax devices, got {devices!r}"
            ) from None
        if not all(isinstance(d, jax.Device) for d in devs):
            raise ConfigError("devices: a list must hold jax.Device objects (from jax.devices())")
        return cls(devs)

    @classmethod
    def all(cls) -> Layout:
        """Every device of every process (after :func:`initialize_distributed`)."""
        return cls(tuple(jax.devices()))

    # properties -----------------------------------------------------------------------
    @property
    def n(self) -> int:
        """Number of devices."""
        return len(self.devices)

    @property
    def single(self) -> bool:
        return self.n == 1

    @property
    def mesh(self) -> Mesh:
        return Mesh(np.array(self.devices, dtype=object), (AXIS,))

    def spec(self, ndim: int, axis: int | None) -> PartitionSpec:
        """PartitionSpec of an ``ndim`` array split along ``axis`` (None: replicated)."""
        if axis is None:
            return PartitionSpec()
        axis = axis % ndim
        return PartitionSpec(*[AXIS if k == axis else None for k in range(ndim)])

    def sharding(self, ndim: int, axis: int | None) -> NamedSharding:
        """NamedSharding of an ``ndim`` array split along ``axis`` (None: replicated)."""
        return NamedSharding(self.mesh, self.spec(ndim, axis))

    def put(self, x, axis: int | None):
        """Place ``x`` split along ``axis`` (its length must divide by :attr:`n`; see
        :meth:`padded`), or replicated (``axis=None``). One device: ``jax.device_put`` to it."""
        if self.single:
            return jax.device_put(x, self.devices[0])
        if axis is not None and np.shape(x)[axis] % self.n:
            raise ConfigError(
                f"layout: axis {axis} of length {np.shape(x)[axis]} does not divide over "
                f"{self.n} devices (pad it to {self.padded(np.shape(x)[axis])})"
            )
        return jax.device_put(x, self.sharding(np.ndim(x), axis))

    def gather(self, x, piece_bytes: int | None = None) -> np.ndarray:
        """``x`` as one host NumPy array, on every process (an array spread over several
        processes is all-gathered; on one process this is ``np.asarray``).

        The all-gather goes through the devices (each piece replicated on every device,
        then copied to the host), so a large array comes in pieces along its longest axis
        that is not split, each at most ``piece_bytes`` (default: a quarter of one device's
        share of ``x``, at least 64 MiB): a device needs that much free, not the whole
        array."""
        if getattr(x, "is_fully_addressable", True):
            return np.asarray(x)
        from jax.experimental import multihost_utils

        limit = piece_bytes or max(x.nbytes // (4 * self.n), 64 << 20)
        spec = tuple(getattr(x.sharding, "spec", ())) + (None,) * x.ndim
        free = [k for k in range(x.ndim) if spec[k] is None and x.shape[k] > 1]
        if x.nbytes <= limit or not free:
            return np.asarray(multihost_utils.process_allgather(x, tiled=True))
        axis = max(free, key=lambda k: x.shape[k])
        length = x.shape[axis]
        n_pieces = min(length, -(-x.nbytes // limit))
        size = -(-length // n_pieces)
        out = np.empty(x.shape, x.dtype)
        for start in range(0, length, size):
            start = min(start, length - size)  # the last piece ends at the end (overlaps)
            piece = _piece(x, np.int32(start), axis, size)
            where = (slice(None),) * axis + (slice(start, start + size),)
            out[where] = np.asarray(multihost_utils.process_allgather(piece, tiled=True))
        return out

    @property
    def local(self) -> bool:
        """Whether every device belongs to this process (then work can be dealt out whole,
        one device at a time, by :meth:`deal` and :func:`on_each`)."""
        me = jax.process_index()
        return all(d.process_index == me for d in self.devices)

    def deal(self, n: int) -> list[range]:
        """Items ``0 .. n - 1`` dealt out whole: one contiguous run per device, lengths
        differing by at most one, the longer runs first (empty runs when n < devices)."""
        q, r = divmod(int(n), self.n)
        starts = [i * q + min(i, r) for i in range(self.n + 1)]
        return [range(starts[i], starts[i + 1]) for i in range(self.n)]

    def padded(self, length: int) -> int:
        """The smallest multiple of :attr:`n` that is >= ``length``."""
        return -(-int(length) // self.n) * self.n

    def describe(self) -> str:
        d = self.devices[0]
        hosts = len({dev.process_index for dev in self.devices})
        return f"{self.n} x {d.platform}" + (f" on {hosts} processes" if hosts > 1 else "")


@partial(jax.jit, static_argnums=(2, 3))
def _piece(x, start, axis: int, size: int):
    """``size`` entries of ``x`` along ``axis`` from ``start`` (one compilation for every
    piece of one size), split over the devices as ``x`` is."""
    return jax.lax.dynamic_slice_in_dim(x, start, size, axis)


def on_each(devices: Sequence, fn: Callable, *per_device: Sequence) -> list:
    """``fn(device, *args_i)`` for every device at once, ``args_i`` the i-th entries of
    ``per_device``; returns the results in device order.

    One host thread per device, each with its device as JAX's default device and 64-bit
    types on (JAX's config contexts are per thread; the context variables of the caller,
    e.g. a progress callback, are copied into each). So a host-driven loop on one device
    (Krylov chunks, a quadrature's refinement) never waits for another device's results,
    and every device's work is queued before any is waited for. A single device runs in
    the calling thread. The first error is raised once every thread has finished."""
    from .backend import precision_scope

    def one(dev, args):
        with precision_scope(), jax.default_device(dev):
            return fn(dev, *args)

    devices = list(devices)
    args = [tuple(a[i] for a in per_device) for i in range(len(devices))]
    if len(devices) == 1:
        return [one(devices[0], args[0])]
    with ThreadPoolExecutor(max_workers=len(devices), thread_name_prefix="emjax-device") as pool:
        futures = [pool.submit(contextvars.copy_context().run, one, d, a) for d, a in zip(devices, args)]
        errors = [f.exception() for f in futures]
    for e in errors:
        if e is not None:
            raise e
    return [f.result() for f in futures]


def as_layout(layout) -> Layout | None:
    """Normalize a solver's ``layout=`` argument: None or a one-device layout -> None (the
    plain single-device path); an int or a device list -> :class:`Layout`."""
    if layout is None:
        return None
    lay = Layout.of(layout)
    return None if lay.single else lay


#: where :func:`initialize_distributed` reads each setting, first found first: the emjax
#: names, JAX's (its coordinator), then a torchrun-style launcher's (MASTER_ADDR with
#: MASTER_PORT, WORLD_SIZE, RANK)
COORDINATOR_ENV = ("EMJAX_COORDINATOR", "JAX_COORDINATOR_ADDRESS", "MASTER_ADDR")
NUM_PROCESSES_ENV = ("EMJAX_NUM_PROCESSES", "WORLD_SIZE")
PROCESS_ID_ENV = ("EMJAX_PROCESS_ID", "RANK")


def _from_env(names):
    """(value, the variable's name) of the first of ``names`` set and not empty, else (None, None)."""
    for name in names:
        v = os.environ.get(name, "").strip()
        if v:
            return v, name
    return None, None


def _count(value, name: str, lo: int, hi: int | None = None) -> int:
    """An integer setting (from a flag, an argument or the environment) in [lo, hi]."""
    try:
        v = int(str(value).strip()) if not isinstance(value, (int, np.integer)) else int(value)
    except ValueError:
        v = None
    if v is None or isinstance(value, bool) or v < lo or (hi is not None and v > hi):
        rng = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise ConfigError(f"{name} must be an integer {rng}, got {value!r}")
    return v


def _address(value, name: str) -> str:
    host, sep, port = str(value).strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ConfigError(f"{name} must be HOST:PORT (a port in [1, 65535]), got {value!r}")
    return f"{host}:{int(port)}"


def initialize_distributed(
    coordinator: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    *,
    names: tuple = ("coordinator", "num_processes", "process_id"),
) -> bool:
    """Start JAX's multi-process runtime (``jax.distributed.initialize``) from the arguments
    or the environment, before anything else touches a device. Returns True when this
    process is one of several (the runtime started, now or earlier), False for a single
    process (nothing done).

    Each setting not given is read from the environment (first found):

    * coordinator ``HOST:PORT`` (process 0's host and a free port): ``EMJAX_COORDINATOR``,
      ``JAX_COORDINATOR_ADDRESS``, or ``MASTER_ADDR`` with ``MASTER_PORT`` (default 29500);
    * number of processes: ``EMJAX_NUM_PROCESSES``, ``WORLD_SIZE``;
    * this process's id in [0, number - 1]: ``EMJAX_PROCESS_ID``, ``RANK``;
    * with no coordinator, inside ``srun`` with several tasks (``SLURM_STEP_NODELIST`` and
      ``SLURM_NTASKS`` > 1): JAX's own Slurm detection (coordinator on the first node, one
      process per task, each task's GPU by ``SLURM_LOCALID``).

    A coordinator needs the other two; one process (``num_processes`` 1) does nothing, and
    so do ``WORLD_SIZE``/``RANK`` without a coordinator (another launcher's names). Bad
    values are a :class:`ConfigError` of one line naming the setting as it was written
    (``names``: how the caller's user wrote the three arguments, e.g. command-line flags).
    On the CPU, collectives between processes use gloo (selected here).
    """
    import jax.distributed as jd

    default = dict(zip(("coordinator", "num_processes", "process_id"), names))
    given = dict(default)
    if coordinator is None:
        coordinator, given["coordinator"] = _from_env(COORDINATOR_ENV[:2])
        if coordinator is None and os.environ.get("MASTER_ADDR", "").strip():
            port, _ = _from_env(("MASTER_PORT",))
            coordinator = f"{os.environ['MASTER_ADDR'].strip()}:{port or 29500}"
            given["coordinator"] = "MASTER_ADDR/MASTER_PORT"
    if num_processes is None:
        num_processes, given["num_processes"] = _from_env(NUM_PROCESSES_ENV)
    if process_id is None:
        process_id, given["process_id"] = _from_env(PROCESS_ID_ENV)
    # a setting found nowhere is named by the caller's name for it (an argument, a flag)
    envs = dict(coordinator=COORDINATOR_ENV, num_processes=NUM_PROCESSES_ENV, process_id=PROCESS_ID_ENV)
    given = {k: v or f"{default[k]} (or {envs[k][0]})" for k, v in given.items()}
    slurm = coordinator is None and "SLURM_STEP_NODELIST" in os.environ and _slurm_tasks() > 1
    generic = num_processes is None or given["num_processes"] == "WORLD_SIZE"
    if coordinator is None and not slurm and generic:
        return False  # nothing set, or a launcher's generic names without its coordinator
    if num_processes is not None:
        num_processes = _count(num_processes, given["num_processes"], 1)
    if process_id is not None:
        hi = None if num_processes is None else num_processes - 1
        process_id = _count(process_id, given["process_id"], 0, hi)
    if coordinator is None:
        if not slurm:
            if num_processes is not None and num_processes > 1:
                raise ConfigError(
                    f"{given['num_processes']} = {num_processes} needs a coordinator HOST:PORT "
                    f"({given['coordinator']})"
                )
            return False
    else:
        coordinator = _address(coordinator, given["coordinator"])
        missing = [
            name
            for value, name in ((num_processes, given["num_processes"]), (process_id, given["process_id"]))
            if value is None
        ]
        if missing:
            raise ConfigError(f"a coordinator ({given['coordinator']}) needs {' and '.join(missing)} too")
        if num_processes == 1:
            return False
    if jd.is_initialized():
        return jax.process_count() > 1
    try:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    except Exception:  # noqa: BLE001  (option absent in this JAX: CPU collectives unavailable)
        pass
    kwargs = {}
    if coordinator is not None:
        kwargs = dict(coordinator_address=coordinator, num_processes=num_processes, process_id=process_id)
    try:
        jd.initialize(**kwargs)
    except Exception as exc:  # noqa: BLE001  (JAX's runtime errors: one line for the user)
        where = f" (coordinator {coordinator}, process {process_id} of {num_processes})" if kwargs else ""
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"jax.distributed could not start{where}: {first}") from None
    return jax.process_count() > 1


def _slurm_tasks() -> int:
    try:
        return int(os.environ.get("SLURM_NTASKS", "1"))
    except ValueError:
        return 1
