"""FDTD beyond the device's memory: a calculation window with temporal blocking.

Design
------
The whole state (E, H, CPML psi, Drude/Lorentz currents, DFT sums) and the per-cell
coefficients live in host memory (see "Host memory" below). The grid is cut into slabs of ``slab``
planes along x; in each *pass* every slab is brought to the device with ``G`` ghost planes
per side, advanced ``th`` time steps by the unchanged jitted step
(:func:`emjax.fdtd.step.advance` of a sub-problem :class:`~emjax.fdtd.step.Plan`
of the slab's shape: its slice of the coefficients, the x-CPML faces only where the slab
reaches them, sources/probes/monitors/TF/SF box re-indexed into it), and its own planes are
written back. The physics is not forked: the slab runs the same ``_step``.

Traversal: ghost zones. The Yee stencil reaches ``r`` planes per time step along x (``r = 1``
for the 2nd order, 3 for the 4th: two half steps of reach 1 + 2), so after ``k`` steps only
the planes ``r k`` or more away from the slab's cut ("seam", where the sub-grid's periodic
wrap joins unrelated planes) are still exact; with ``G = th r + 1`` ghost planes (the 1:
the x-normal DFT planes read H one plane below) the slab's own planes are exact after ``th``
steps, bit for bit the in-memory run's numbers. Chosen over the skewed (wavefront) traversal
because each slab is independent within a pass (no device-resident boundary history, any
slab order, the next slab's upload overlaps the current compute) and is exact by
construction; it costs ``2 G / slab`` redundant cell updates, small for the slabs an
out-of-core run uses (slab >> th r). The skew removes that redundancy and is the natural next
step (the same sub-plans, slab k reading slab k-1's stored boundary planes per step).

Slabs whose ghost region meets the x boundary are "edge" rings: the sub-grid holds planes
``[0, e)`` then ``[s, nx)``, so that its own wrap is the grid's (the PEC wall i = 0 = nx, the
CPML faces, the 4th order's wall terms land where the one-grid code puts them) and its seam
sits between ``e - 1`` and ``s``. Other slabs are "interior": contiguous planes, no x
boundary code. Where ``e >= s`` the ring is the whole grid.

The slabs' step (:mod:`.kernel`; ``run_window(kernel=...)``, ``fdtd.run(..., kernel=...)``):
the XLA step or the blocked kernel (:mod:`emjax.fdtd.blocked`, TH steps per pass over the
device's memory), chosen on the whole grid's plan as the in-memory run chooses ("auto": the
kernel on a GPU where it carries the features and is measured faster, else XLA with the
reason logged and in the result's ``kernel``; "blocked": a ConfigError where it cannot). The
kernel marches along a walled x; a slab's seams are inside its ghost planes, spoiled after
``th`` steps whatever runs there, so an interior slab's sub-grid runs walled (PEC) at both
ends instead of wrapping, and an edge ring as it is: the grid's wall and x-CPML at its ends,
its seam inside the march (unrelated neighbours there, as in the XLA step's sub-grid). The
kernel's TH is the in-memory run's (4 in float32; in float64 3 where it divides ``th``,
else 2), at most ``th`` (where it does not divide ``th``, each slab visit ends with a
shorter kernel pass). :func:`.kernel.check_ghosts` refuses owned planes closer than ``th r + 1``
to a cut. The window moves the same bytes per pass either way; in the rate model below
``R_dev`` becomes the kernel's in-memory rate, so the transfers bound the rate up to a
larger ``th`` (pass that rate as :func:`choose_th`'s ``r_dev``).

Within a pass the slab results are written back only once no later slab of the pass reads
those planes (the ghost regions overlap the neighbours; the last slab's edge ring reads the
first slab's planes), so the host keeps one copy of the state plus a few slabs' results.
Async dispatch overlaps: slab k + 1 is sent while slab k runs, slab k's owned planes come
back while slab k + 1 runs.

Host memory. Two paths (:func:`host_memory_path`; ``run_window(host_memory=...)``):

* ``"pinned"`` (the default where the device has a ``pinned_host`` memory kind: GPUs, and
  the CPU backend of JAX >= 0.10, so the CPU tests run it): the x-split leaves (E, H, the
  CPML psi, J/P, the x-split coefficients) are JAX arrays in ``pinned_host`` memory, cut
  along x into chunks at every slab boundary, every ring piece's ends and the x-CPML's
  inner faces (:class:`_Chunks`), so a slab's ring is a list of whole chunks (the psi of
  the x faces, L planes each, go whole to the edge rings). A pass moves them with one batched
  ``jax.device_put`` to the device (page-locked: the full link rate, ~53 GB/s measured on
  the H100 against 1.4-9 GB/s from NumPy), concatenates the ring on the device, runs it, and
  ``device_put``-s only its owned chunks back to pinned memory, all asynchronous: slab
  k + 1's chunks go up while slab k runs and slab k's come back while slab k + 1 runs (the
  host waits for slab k - 1 before sending slab k + 1: about four slab states on the
  device, :func:`slab_for_budget`). The pass reads the chunks of the pass's start (a chunk
  is dropped after its last reader is sent; the new ones are kept apart), so no copy of the
  whole state is made. The small parts (DFT sums, probes, the TF/SF line) take the NumPy
  path's write-back (sent back through pinned memory too). On a GPU XLA's pinned pool is limited to
  ``XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB`` (default 64 GiB) and keeps what it allocated, so the
  chunks plus the result's NumPy E and H must fit host RAM: otherwise the NumPy path
  (a warning; a ResourceError when ``"pinned"`` was asked for).
* ``"numpy"``: NumPy arrays (pageable memory); the ring is gathered on the host,
  ``device_put``, its owned planes come back by ``copy_to_host_async`` and are written into
  the NumPy arrays by worker threads.

Rate model (the paper's section 3.3 analogue). Per pass and slab, with ``A = ny nz`` cells
per plane, ``S = slab``, ``G = th r + 1``:
    compute  T_c = (S + 2G) A th / R_dev       (R_dev: in-memory cell updates/s)
    transfer T_t = A ((S + 2G) b_in + S b_out) / B_link
(``b_in``: bytes per cell sent, state + coefficients; ``b_out``: state bytes returned). With
transfers overlapped, rate = S A th / max(T_c, T_t), i.e.
    rate = min(R_dev S / (S + 2G), B_link th S / ((S + 2G) b_in + S b_out)),
transfer bound (linear in th) at small th, compute bound (R_dev less the ghost overhead) at
large th; without overlap (the CPU, where "transfer" is host memcpy on the same cores) the
times add: rate = S A th / (T_c + T_t). A fixed host cost per slab and pass ``T_0``
(dispatch, one device_put per array: ~5 ms on the loaded 2-core CPU) adds to T_t; it
matters only for small planes. :func:`model_rate` evaluates all three. Where the two
directions run at once (full duplex: a GPU's separate copy engines) and are measured apart
(``B_up``, ``B_down``): T_t = A max((S + 2G) b_in / B_up, S b_out / B_down) (``b_down=``). ``S + 2G`` is at
most ``nx`` (a sub-grid is at most the grid), so at ``th r ~ nx`` every slab computes the
whole grid: the rate then falls as ``S / nx``; choose ``slab >> 2 th r``.

Re-indexing: sources and the TF/SF box act in every ring that holds their planes (ghost
planes must be exact too); probes and x-normal DFT planes belong to the slab that owns their
plane; DFT planes normal to y or z (and DFTField windows) span x, so every ring accumulates
its planes' samples into the running sums, which start from the host's sums and go back
to them (one copy per sample: a periodic edge's repeated sample is written from its plane).
The TF/SF box maps by its 1-D x masks (checked against the grid's on every ring plane but
those next to a seam, which are wrong from the first step anyway); with incidence along
y or z any ring works; along x the 1-D grid's index also has to match, which an edge ring
whose second piece ``[s, nx)`` cuts the box cannot do: refused with a ConfigError naming
it (keep the box clear of the last slab's ghosts, or use a smaller th).

Not supported (ConfigError): subpixel boxes, Bloch boundaries along x, oblique TF/SF
incidence, the TF/SF case above, traced (differentiated) inputs, several devices.

Checkpoints (``checkpoint``, ``chunk``): a pass ends at every ``chunk`` steps and the state
is written in :func:`emjax.fdtd.run`'s format (each run resumes the other's), the leaves in
pinned chunks gathered one at a time while the file is written.
"""

from .driver import run_window
from .hoststate import _Chunks, host_memory_kind, host_memory_path, pinned_pool_limit
from .planning import (
    _global_setup,
    bytes_per_cell,
    checkpoint_every,
    choose_th,
    default_rate,
    model_rate,
    model_times,
    slab_for_budget,
    unsupported,
)
from .slabs import ghost, reach, rings

__all__ = [
    "_Chunks",
    "_global_setup",
    "bytes_per_cell",
    "checkpoint_every",
    "choose_th",
    "default_rate",
    "ghost",
    "host_memory_kind",
    "host_memory_path",
    "model_rate",
    "model_times",
    "pinned_pool_limit",
    "reach",
    "rings",
    "run_window",
    "slab_for_budget",
    "unsupported",
]
