"""FDTD on several devices: the grid split into slabs along x.

Usage: ``fdtd.run(sim, steps, layout=4)`` (a device count, a list of devices or an
:class:`emjax.layout.Layout`); ``emjax fdtd CONFIG --devices N``; ``emjax bench fdtd --size N
--devices K`` (strong and weak scaling). ``layout=None`` (or one device) is the unchanged
one-device path: no mesh, no sharding annotations, the same jitted function and the same
lowered program as before this module existed.

Design
------
*Placement.* Every array of the state and of the coefficients that spans the grid's x axis
(E, H, the Drude/Lorentz currents, the y- and z-CPML's psi, per-cell ``ca``/``cb``/pole
coefficients, ``(3, nx, ny, nz)`` per-node arrays along their axis 1; :func:`split_axis`)
is placed with a ``NamedSharding`` splitting x over the devices: device ``k`` holds planes
``[k m, (k + 1) m)``, ``m = ceil(nx / n)``. The subpixel node lists, their dispersive
state and their buffer are dealt out by the slab that owns each node (one entry per device,
:mod:`emjax.fdtd.subpixel_slabs`). The rest (the x-CPML's psi slabs, the TF/SF source's 1-D
grid, DFT sums, scalars) is replicated.

*The step.* The jitted chunk (:func:`advance`: ``lax.scan`` of the one-device
:func:`emjax.fdtd.step.step`) is partitioned by XLA (GSPMD). The element-wise bulk
updates run on each device's slab. Sources, probes, TF/SF, DFT/flux monitors, the y/z CPML,
PEC and Drude/Lorentz are the one-device code; XLA moves only what they touch (a probe: an
all-reduce of one number; a DFT plane: its samples). The subpixel corrections run on each
device for the nodes of its slab (:mod:`emjax.fdtd.subpixel_slabs`: no collective over the
node lists; one plane per face from a neighbour where a node sits on a slab boundary; boxes
that touch the grid's faces or carry Bloch phases are left to XLA, which then all-reduces
node-length vectors every half step). The CPML and sources use the zero-padded terms inside
the fused update (the GPU way) also on the CPU: an in-place slab update on a split array
became a whole-field all-gather.

Three things are explicit, with ``jax.shard_map`` (only where ``nx`` divides by the device
count, :func:`halo_ok`; the functions live in :mod:`emjax.fdtd.halo`, below the step):

* the x-differences of the Yee update (:func:`diff_x`), the only non-local operation along
  the split axis: each half step each device sends, by ``jax.lax.ppermute`` on the ring of
  devices, one plane per face per differentiated component (two with the 4th-order
  stencil) to its neighbour, and differences its slab extended by them with the one-device
  arithmetic. The ring closes the periodic wrap; walls ignore the wrapped plane as on one
  device; a Bloch phase multiplies the wrapped plane on the device that receives it.
* the x-CPML (:func:`edge_windows`): the planes ``[0, L + 4)`` and ``[nx - L - 4, nx)`` of
  the differentiated component, replicated by one all-reduce (each device adds the planes
  it owns into zeros), from which every device computes the psi slabs and their correction
  with the one-device functions (``pml.slab_derivative``); psi stays replicated. Left to
  XLA, slicing the slabs out of a split array gave ~50 small collective-permutes and 16
  slab all-gathers per step.
* the 4th order's PEC wall terms, from the same windows (:func:`wall_terms_4`).

*Sizes that do not divide.* The split arrays are stored padded past the high-x boundary to
``n m`` planes (``jax.device_put`` needs a divisible length). Inside the jitted chunk they
are sliced back to ``nx`` (a slice that crosses no device boundary), stepped as unevenly
split arrays that XLA partitions itself, and padded again at the end of the chunk: the pad
planes are never read, the physics is the one-device run's. The x-differences are then
XLA's partitioned ``jnp.roll`` (about twice the collective-permutes of the explicit
exchange); the x-CPML windows are still explicit (the array padded back to its storage
inside the step, a local operation). Measured for a 23-plane CPML grid on 4 devices: 5 + 4
collective-permutes of 1 and 2 planes and the 2 window all-reduces per step (XLA alone: 53
permutes and 16 slab all-gathers). Choose ``nx`` divisible by the device count for speed.

Collectives per step, compiled for 4 CPU devices (``advance.lower(...).compile()``; no all-
gather and no all-to-all when ``nx`` divides): periodic or PEC, 2nd order: 4 + 1 collective-
permutes of one plane (the 4 halo planes, and one plane XLA moves from the dipole's device
to device 0), all-reduces of one number (probe, source); CPML: the same plus 2 all-reduces
of ``2 (L + 4)``-plane windows (the H and the E half step); 4th order: plus 4 permutes of 2
planes; a TF/SF source: ~10 more one-plane permutes (its incident-field curl, ``jnp.roll``
and mask slices partitioned by XLA; the incident field is known on every device, so
computing it on each slab extended by a plane would remove them: not done); an x-normal DFT
plane: one all-reduce of its samples; a subpixel box across slab boundaries: at most 5 more
one-plane permutes, 8 with dispersive interface nodes (a Drude sphere on 2 devices: 4, XLA
merges those that repeat the halo exchange's); a box inside one slab: none.

*Overlap.* The collectives are asynchronous in XLA's GPU schedule (``-start``/``-done``
pairs with its latency-hiding scheduler): a halo permute or window all-reduce starts when
the field it reads is written and can run while independent work of the half step goes on
(the other components' differences along y and z, the y/z-CPML psi updates, the DFT
accumulation, the Drude/Lorentz currents). The fused bulk update of a component that reads a
received plane waits for it: the interior is not updated separately ahead of the halo
(that would write the interior's difference to memory and read it again, more than the
exchange costs in a bandwidth-bound step). Not yet measured on several GPUs (none lent
when this was written); the CPU virtual devices of the tests share the same cores.

*Checkpoints* with a layout are written per shard (:mod:`emjax.fdtd.checkpoint`): one
file per device with its planes of the split arrays, and an index with the replicated
state; any layout (one device included) reads them, and a sharded run resumes from a
one-device checkpoint. Results equal the one-device run's to float rounding (measured
relative differences 1e-7 .. 8e-6 in float32: XLA fuses the partitioned program
differently).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ..layout import Layout
from .halo import resize
from .step import step
from .subpixel_slabs import DEALT


def split_axis(x, shape) -> int | None:
    """The axis of leaf ``x`` that is the grid's x axis (split over the devices), or None
    (replicated): 3-D arrays of ``nx`` planes, and ``(3, nx, ny, nz)`` per-node arrays."""
    s = np.shape(x)
    if len(s) == 3 and s[0] == shape[0] and s != (shape[0], 1, 1):
        return 0
    if len(s) == 4 and s[0] == 3 and s[1:] == tuple(shape):
        return 1
    return None


def axes_of(tree, shape, dealt=()) -> tuple:
    """Per leaf (flattening order): :func:`split_axis`; leaves under the top-level keys
    ``dealt`` get ``DEALT`` (one entry per device along their axis 0: the subpixel nodes
    dealt out by slab, :mod:`emjax.fdtd.subpixel_slabs`)."""
    out = []
    for path, x in jax.tree_util.tree_flatten_with_path(tree)[0]:
        key = getattr(path[0], "key", None) if path else None
        out.append(DEALT if key in dealt else split_axis(x, shape))
    return tuple(out)


def place(tree, axes, layout: Layout, nx: int):
    """Host/one-device leaves -> padded, sharded leaves (split ones along their x axis)."""
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    npad = layout.padded(nx)
    out = []
    for x, ax in zip(leaves, axes):
        if ax == DEALT:  # already one entry per device
            out.append(jax.device_put(x, layout.sharding(np.ndim(x), 0)))
            continue
        if ax is not None and np.shape(x)[ax] != npad:
            x = np.asarray(x)
            widths = [(0, 0)] * x.ndim
            widths[ax] = (0, npad - x.shape[ax])
            x = np.pad(x, widths)
        out.append(jax.device_put(x, layout.sharding(np.ndim(x), ax)))
    return jax.tree_util.tree_unflatten(treedef, out)


def host_copy(x) -> np.ndarray:
    """A replicated array's value as a NumPy array, from this process's copy (``np.asarray``
    of an array spanning several processes' devices fails)."""
    if getattr(x, "is_fully_addressable", True):
        return np.asarray(x)
    try:
        return np.asarray(x.addressable_shards[0].data)
    except ValueError:  # JAX 0.11 on GPUs, one device per process: the shard view fails
        from jax.experimental import multihost_utils

        return np.asarray(multihost_utils.process_allgather(x, tiled=True))


@jax.jit
def _stack(F):
    return jnp.stack(F)


def final_fields(F, layout: Layout, nx: int):
    """The run's final field ``(3, nx, ny, nz)`` from its padded, split components ``F``: one
    x-split device array when ``nx`` divides by the device count, else (a device array must
    split evenly) the logical planes on the host. A layout spanning several processes
    gathers the whole field onto every process's host (the result holds it like a
    one-process run's; probes and DFT monitors are replicated already)."""
    if nx % layout.n == 0:
        out = _stack(F)
        return out if layout.local else layout.gather(out)
    return np.stack([(np.asarray(f) if layout.local else layout.gather(f))[:nx] for f in F])


def _constrain(tree, axes, layout, length):
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    out = []
    for x, ax in zip(leaves, axes):
        if ax == DEALT:
            out.append(jax.lax.with_sharding_constraint(x, layout.sharding(x.ndim, 0)))
            continue
        x = resize(x, ax, length)
        out.append(jax.lax.with_sharding_constraint(x, layout.sharding(x.ndim, ax)))
    return jax.tree_util.tree_unflatten(treedef, out)


@partial(jax.jit, static_argnames=("plan", "steps", "axes"), donate_argnames=("state",))
def advance(plan, arrays, state, steps: int, axes: tuple):
    """``steps`` steps of a sharded run (``plan.layout`` set): as
    :func:`emjax.fdtd.step.advance`, on padded, x-split arrays."""
    layout, nx = plan.layout, plan.shape[0]
    a_axes, s_axes = axes
    arrays = _constrain(arrays, a_axes, layout, nx)
    state = _constrain(state, s_axes, layout, nx)
    state, rec = jax.lax.scan(partial(step, plan, arrays), state, None, length=steps)
    finite = jnp.all(jnp.stack([jnp.all(jnp.isfinite(f)) for f in state["E"] + state["H"]]))
    state = _constrain(state, s_axes, layout, layout.padded(nx))
    return state, rec, finite
