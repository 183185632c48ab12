"""Mode monitors: the forward and backward amplitudes of waveguide modes on a plane.

A :class:`ModeMonitor` records what a :class:`~emjax.fdtd.FluxPlane` records (the DFT of
the tangential E on an E plane and of the tangential H averaged over the two H planes
around it) and, after the run, projects it at each frequency f onto the plane's modes
``(e_m, h_m)`` solved there (:mod:`emjax.fdtd.mode_plane`: the grid's own modes, normalized
so that a mode's flux as the monitor measures it is 1). With the field a sum of forward
``(e_m, h_m)`` and backward ``(e_m, -h_m)`` modes (a lossless guide; H averaged over the
two planes is the mode's times ``c_m = cos(beta_m dx / 2)``),

    a_m^(+/-) = (c_m X_m +/- Y_m) / 2,
    X_m = (1/2) sum w (E x h_m*) . n dA,   Y_m = (1/2) sum w (e_m* x H) . n dA,

with ``n`` the plane's normal (+axis) and ``w`` the flux monitor's quadrature weights:
``|a_m^+|^2`` is the power carried by mode m towards +axis, ``|a_m^-|^2`` towards -axis
(the continuum's ``a^(+/-) = (int E x h* +/- int e* x H) . n / (4 P_m)`` with ``P_m = (1/2)
Re int e_m x h_m* . n = 1``). Phases refer to the run's time origin (E's DFT at t = 0).

Differentiable: with a scene holding JAX tracers (``jax.grad`` over a design region's
permittivities, a polygon's vertices, an object's size), the amplitudes are JAX functions
of the run's recorded fields, and ``jax.grad`` of a mode's power goes through
:func:`emjax.fdtd.run`'s adjoint. The modes ``(e_m, h_m)`` are held fixed (solved on the
scene's values, no derivative): a mode profile on a plane the design does not reach does
not depend on it; a traced object within a cell of the plane is refused before the run
(:mod:`emjax.fdtd.mode_plane`). So is a mode source's profile.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from ..errors import ConfigError
from ..tracing import is_traced
from .mode_plane import solve
from .monitors import weights
from .physical_parts import FluxPlane


@dataclass(frozen=True)
class ModeMonitor(FluxPlane):
    """Forward and backward amplitudes of the waveguide modes ``modes`` (indices by
    decreasing ``Re n_eff``) on the rectangle ``center, size`` (one size 0: the normal) at
    ``frequencies``: :meth:`Result.mode_amplitudes` (module docstring for the formula)."""

    name: str = "modes"
    modes: tuple = (0,)

    def __post_init__(self):
        super().__post_init__()
        try:
            m = tuple(int(x) for x in self.modes)
        except (TypeError, ValueError):
            raise ConfigError(
                f"ModeMonitor.modes must be mode indices (ints >= 0), got {self.modes!r}"
            ) from None
        if not m or min(m) < 0 or any(int(x) != x for x in self.modes):
            raise ConfigError(f"ModeMonitor.modes must be mode indices (ints >= 0), got {self.modes!r}")
        object.__setattr__(self, "modes", m)


def decompose(E, H, modes, dx: float, axis: int):
    """``(M, 2)`` amplitudes (forward, backward) of the plane's modes (a
    :class:`~emjax.fdtd.mode_plane.PlaneModes`) in one frequency's DFT ``E``, ``H`` (2, n1 +
    1, n2 + 1): NumPy, or JAX where ``E`` or ``H`` is traced (``jax.grad`` through the run;
    the modes are constants)."""
    xp = jnp if is_traced((E, H)) else np
    w1, w2 = weights(np.shape(E)[1:], axis)
    dA = dx * dx
    out = []
    for e, h, c in zip(modes.e, modes.h, modes.cos_half):
        X = 0.5 * xp.sum(w1 * E[0] * h[1].conj() - w2 * E[1] * h[0].conj()) * dA
        Y = 0.5 * xp.sum(w1 * e[0].conj() * H[1] - w2 * e[1].conj() * H[0]) * dA
        out.append(xp.stack([(c * X + Y) / 2, (c * X - Y) / 2]))
    return xp.stack(out)


def amplitudes(result, name: str, cache: dict | None = None):
    """``(n_freq, n_modes, 2)`` complex amplitudes of :class:`ModeMonitor` ``name`` in a
    physical :class:`~emjax.fdtd.physical.Result`: ``[..., 0]`` towards +axis, ``[..., 1]``
    towards -axis; ``|a|^2`` is power (module docstring). ``cache``: a dict keeping the
    solved modes between runs of the same grid and scene (keyed by plane and frequency).

    A NumPy array, or a JAX array where the run was differentiated (a scene with traced
    parameters under ``jax.grad``): the amplitudes are then JAX functions of the recorded
    fields, with the plane's modes held fixed (solved on the scene's values: exact where
    the design stays off the monitor's plane, which :mod:`emjax.fdtd.mode_plane` checks)."""
    sim = result.simulation
    mon_phys = next((m for m in sim.monitors if getattr(m, "name", None) == name), None)
    if not isinstance(mon_phys, ModeMonitor):
        raise ConfigError(
            f"{name!r} is not a ModeMonitor; the mode monitors are "
            f"{sorted(m.name for m in sim.monitors if isinstance(m, ModeMonitor))}"
        )
    i = result._planes(name)[0]
    mon = result.grid_simulation.monitors[i]
    dft = result.raw.dft[i]
    E, H = dft["E"], dft["H"]
    traced = is_traced((E, H))
    if not traced:
        E, H = np.asarray(E), np.asarray(H)
    n_modes = max(mon_phys.modes) + 1
    out = []
    for k, f in enumerate(mon.frequencies):
        key = (mon.axis, mon.lo, mon.hi, mon.index, f, n_modes)
        modes = cache.get(key) if cache is not None else None
        if modes is None:
            modes = solve(sim, mon.axis, mon.lo, mon.hi, mon.index, f, n_modes)
            if cache is not None:  # the same plane of the same scene and grid (runs of one device)
                cache[key] = modes
        a = decompose(E[k], H[k], modes, sim.dx, mon.axis)
        out.append(a[np.asarray(mon_phys.modes)])
    return jnp.stack(out) if traced else np.array(out)
