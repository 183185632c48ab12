"""Which step runs a simulation: the XLA step or the blocked kernel (``kernel=`` of
:func:`emjax.fdtd.run`, ``[run] kernel`` in TOML, ``emjax bench fdtd --kernel``)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import jax
import numpy as np

from ...errors import ConfigError

KERNELS = ("auto", "xla", "blocked")
_log = logging.getLogger("emjax.fdtd")


def check_kernel(kernel) -> str:
    if kernel not in KERNELS:
        raise ConfigError(f"kernel must be 'auto', 'xla' or 'blocked', got {kernel!r}")
    return kernel


def carries(plan, dtype) -> str | None:
    """Why the blocked kernel cannot carry ``plan``'s features, wherever it runs (None: it
    can): :func:`why_not` without the device's part (the window asks it of each slab)."""
    from dataclasses import replace

    from . import cuda_advance, unsupported

    # several devices are the CUDA kernel's own business (.shards, in why_not)
    why = unsupported(
        replace(plan, layout=None), monitors=True, tfsf=True, poles=True
    ) or cuda_advance.unsupported(plan)
    if why is not None:
        return f"it does not support {why}"
    if np.dtype(dtype).kind == "c":
        return "it does not support complex (Bloch) fields"
    return None


def why_not(plan, dtype, cells: int | None = None) -> str | None:
    """Why the blocked GPU kernel cannot run ``plan`` here (None: it can); with a layout,
    on its devices (x slabs with TH-deep halos, :mod:`.shards`). ``cells``: the cells whose
    second copy must fit the device (default the grid's; the window's: its largest slab)."""
    if jax.default_backend() != "gpu":
        return f"no GPU (JAX backend {jax.default_backend()!r}); the blocked kernel is CUDA"
    from . import cuda

    why = carries(plan, dtype)
    if why is not None:
        return why
    if cuda.nvrtc() is None:
        return "NVRTC (libnvrtc) is not installed: pip install emjax[cuda]"
    # the kernel reads one copy of the fields and writes another: a second copy of E and H
    # (the psi slabs and the poles' state too) must fit beside the state already on the device
    from ...backend import device_memory_bytes

    devices = 1
    if plan.layout is not None:
        from . import shards

        why = shards.unsupported(plan, default_tiling(dtype)[0])
        if why is not None:
            return f"it does not support {why} on {plan.layout.n} devices"
        devices = plan.layout.n
    cells = int(np.prod(plan.shape)) if cells is None else int(cells)
    arrays = 6 + 3 * plan.n_poles + 6 * plan.n_lorentz  # fields, and the poles' state
    extra = arrays * cells * np.dtype(dtype).itemsize // devices
    free = device_memory_bytes()
    if 1.1 * extra > free:
        return (
            f"its second copy of the fields ({extra / 1e9:.1f} GB) does not fit the "
            f"{free / 1e9:.1f} GB free on the device"
        )
    return None


def auto_reason(plan, dtype) -> str | None:
    """Why "auto" keeps the XLA step where the blocked kernel could run ``plan`` (None:
    "auto" takes the kernel): where it is measured slower."""
    if plan.n_poles or plan.n_lorentz:
        # measured (`emjax bench fdtd --material drude`: a Drude cube, 512^3 CPML, float32):
        # H100 22.3 against XLA's 24.5 G cell/s, H200 25.8 against 34.3 (the poles' state
        # spills registers)
        return "with Drude/Lorentz poles it is not yet faster than the XLA step (kernel='blocked' takes them)"
    if plan.monitors:
        # measured (H100, 512^3 CPML, a 6-plane flux box, 3 frequencies): 28.8 against XLA's
        # 35.8 G cell/s
        return "with DFT monitors it is not yet faster than the XLA step"
    if any(plan.pml):
        # measured (H100, the CPML as a kernel of its own): float32 with a 10-cell CPML on
        # every face 0.52x the XLA step at 256^3 (slabs 7.8% of each axis; before the bulk
        # kernel's unrolling), 1.34x at 512^3 (3.9%), 2.04x at 1024^3; without a CPML
        # 2.3-2.8x; float64 at 512^3 (TH = 3, tiles of 16, the CPML windows the bulk's
        # tile): H100 1.91x with a CPML (1.54x with windows of 12 x 12), 1.74x without
        if any(2 * L > 0.04 * n for L, n in zip(plan.pml, plan.shape)):
            return "its CPML slabs are over 4% of the grid, where it is not yet faster than the XLA step"
    return None


#: (th, tile, rows per thread), the measured best first (BENCHMARKS.md, H100, 512^3): float32
#: TH = 4, tiles of 24 x 24 in y-z (32 x 32 windows), 2 rows per thread; float64 TH = 3, tiles
#: of 16 x 16, one row per thread (ptxas: 110 registers, no spills; twice the registers per
#: value make deeper TH or wider tiles spill): 27.8 G cell/s with a CPML (34.65 with the CPML
#: kernels' windows as the bulk's tiles), 33.0 without, against TH = 2 with tiles of 24
#: (19.4 / 21.9) or of 20 (23.4 / 25.0), the next where TH must divide a window's passes.
#: Again on an H200 with a CPML, later kernels (G cell/s; the next plane read at level 3):
#: float32 (4, 24, 2) 106.0, (4, 24, 1) 93.5 (1024 threads of 64 registers), (4, 20, 1) 77.7,
#: (5, 22, 2) 68.8, (3, 26, 2) 66.6, (4, 28, 2) 39.9; float64 (3, 16, 1) 42.7, (3, 18, 1) 29.7,
#: (4, 16, 1) 24.5. A tile is one size (square) or (y, z). Float64 later (H200, 512^3, one
#: lease; the psi prefetch, the CPML's face rows aligned, :data:`.split.ALIGNED_DEFAULT`): tiles
#: of 10 x 26, whose 16 x 32 windows make each warp one whole z row of the window (the 22 x 22
#: windows of 16 x 16 spread a warp over two rows), 55.2 G cell/s against 52.7 for 16 x 16;
#: PEC walls (no CPML) 70.1 against 63.2; (4, 14, 1) 44.6, (4, 12, 1) 36.6, (4, (8, 24), 1)
#: 46.9, (3, (8, 26), 1) 48.8, (3, (12, 26), 1) 47.1 (576 threads: spills), (3, (10, 24), 1) 52.7
TILINGS = {4: ((4, 24, 2),), 8: ((3, (10, 26), 1), (2, 20, 1))}


def default_tiling(dtype, within: int | None = None) -> tuple:
    """(th, (x, y, z tile), rows per thread) of :data:`TILINGS` for ``dtype``; ``within``: a
    step count the TH must divide (the window's passes), where one of them does."""
    options = TILINGS[np.dtype(dtype).itemsize]
    th, b, ry = next((o for o in options if within is None or within % o[0] == 0), options[0])
    by, bz = (b, b) if np.isscalar(b) else b
    return th, (1 << 30, by, bz), ry


@dataclass(frozen=True)
class BlockedStep:
    """The blocked kernel's step as :func:`select` chooses it, called as the XLA step
    (``(plan, arrays, state, n)``; on a layout's devices, :mod:`.shards`): TH, the (x, y, z)
    tile and rows per thread, which a run loop that keeps the slabs' layout between calls
    reads (:attr:`block`)."""

    th: int
    tile: tuple
    ry: int

    @property
    def block(self) -> tuple:
        """(y tile, z tile, rows per thread)."""
        return (self.tile[1], self.tile[2], self.ry)

    def __call__(self, plan, arrays, state, n):
        if plan.layout is not None:
            from . import shards

            return shards.advance(plan, arrays, state, n, self.th, self.block)
        from . import advance

        kw = dict(th=self.th, tile=self.tile, kernel="cuda", rows_per_thread=self.ry)
        return advance(plan, arrays, state, n, **kw)


def select(plan, dtype, kernel: str = "auto"):
    """The step function for ``kernel`` ("auto", "xla" or "blocked") and the reason of the
    choice: ``(advance, name, why)`` with ``advance(plan, arrays, state, n)`` as
    :func:`emjax.fdtd.step.advance` (the blocked kernel's: a :class:`BlockedStep`). "auto"
    takes the blocked kernel on a GPU where it supports the run and is measured faster (CPML
    slabs at most 4% of the grid along each axis); "blocked" where unsupported is a
    ConfigError naming why."""
    from .. import step as engine

    check_kernel(kernel)
    if kernel == "xla":
        return engine.advance, "xla", "asked for"
    why = why_not(plan, dtype)
    if kernel == "blocked" and why is not None:
        raise ConfigError(f"kernel='blocked' cannot run this simulation: {why}; use kernel='xla' or 'auto'")
    if kernel == "auto" and why is None:
        why = auto_reason(plan, dtype)
    if kernel == "auto" and why is not None:
        _log.info("FDTD kernel: xla (the blocked kernel not taken: %s)", why)
        return engine.advance, "xla", f"the blocked kernel not taken: {why}"
    th, tile, ry = default_tiling(dtype)
    tile = (plan.shape[0],) + tuple(min(b, n) for b, n in zip(tile[1:], plan.shape[1:]))
    if (tile[1] + 2 * th) % ry:
        ry = 1
    _log.info("FDTD kernel: blocked (TH = %d, tiles of %d x %d)", th, tile[1], tile[2])
    return BlockedStep(th, tile, ry), "blocked", f"TH = {th}, tiles of {tile[1]} x {tile[2]}"
