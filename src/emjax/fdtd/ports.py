"""Waveguide ports and the S-matrix of a physical-unit FDTD device.

A :class:`Port` is a rectangle across a waveguide (one size 0: the normal) with the
direction a wave enters the device through it ("+" or "-" along the normal) and the modes
it carries. :func:`s_matrix` runs one simulation per excited port-mode: a
:class:`~emjax.fdtd.ModeSource` ``source_offset`` cells behind the port's plane (outside
the device) launches the mode into the device, and a :class:`~emjax.fdtd.ModeMonitor` on
every port's plane measures the modes' amplitudes. With ``a_in`` the excited mode's
amplitude entering the device at its own port's plane and ``b_i`` the amplitude of
port-mode i leaving the device (towards the port's outside) at port i's plane,
``S[:, i, j] = b_i / a_in``: power-normalized (``|S_ij|^2`` is the share of the power),
phases referred to the ports' planes. Each run records E at the ports' centres; if the
field there, over the run's last 5% of steps, stays above :data:`DECAYED` of its peak, the
spectra are truncated and :func:`s_matrix` warns (``SMatrix.residual`` holds the ratio per
excited column).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, replace

import numpy as np

from ..errors import ConfigError, require_int, require_positive
from ..modes.smatrix import SMatrix
from .mode_monitor import ModeMonitor, amplitudes
from .mode_source import DIRECTIONS, ModeSource
from .physical import Simulation
from .physical_parts import _frequencies, _vec3
from .sources import GaussianPulse


@dataclass(frozen=True)
class Port:
    """A waveguide port: ``name``, the rectangle ``center, size`` (one size 0: the normal),
    ``direction`` ("+" or "-") in which a wave enters the device through it, ``modes``
    (indices by decreasing ``Re n_eff``: 0 the fundamental)."""

    name: str
    center: tuple
    size: tuple
    direction: str = "+"
    modes: tuple = (0,)

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name or ":" in self.name:
            raise ConfigError(f"Port.name must be a non-empty string without ':', got {self.name!r}")
        object.__setattr__(self, "center", _vec3(f"Port {self.name!r} center", self.center))
        size = _vec3(f"Port {self.name!r} size", self.size, positive=True, allow_zero=True)
        if sum(s == 0 for s in size) != 1:
            raise ConfigError(
                f"Port {self.name!r} size must be 0 along exactly one axis (the normal), got {size}"
            )
        object.__setattr__(self, "size", size)
        if self.direction not in DIRECTIONS:
            raise ConfigError(f"Port {self.name!r} direction must be '+' or '-', got {self.direction!r}")
        try:
            modes = tuple(int(m) for m in self.modes)
        except (TypeError, ValueError):
            modes = ()
        if not modes or min(modes) < 0 or len(set(modes)) != len(modes):
            raise ConfigError(
                f"Port {self.name!r} modes must be distinct mode indices >= 0, got {self.modes!r}"
            )
        object.__setattr__(self, "modes", modes)

    @property
    def axis(self) -> int:
        return self.size.index(0.0)

    @property
    def sign(self) -> int:
        return 1 if self.direction == "+" else -1


def _labels(ports) -> list:
    many = any(len(p.modes) > 1 for p in ports)
    return [(p, m, f"{p.name}:{m}" if many else p.name) for p in ports for m in p.modes]


def default_until(sim: Simulation, ports, waveform) -> float:
    """A run time: the pulse (``2 cutoff tau``) plus four passes over the region's diagonal
    at the slowest guess of the group velocity ``c / (2 n_max)`` (n_max the densest
    medium's index)."""
    n_max = 1.0
    if sim.scene is not None:
        f = waveform.frequency
        for m in [sim.scene.background, *sim.scene.materials]:
            e = m.permittivity(2 * math.pi * f) if hasattr(m, "permittivity") else m
            try:
                n_max = max(n_max, float(np.sqrt(complex(np.asarray(e))).real))
            except (TypeError, ValueError):
                continue
    tau = 1 / (2 * math.pi * waveform.bandwidth)
    diag = math.sqrt(sum(s * s for s in sim.size))
    return 2 * waveform.cutoff * tau + 4 * diag * 2 * n_max


def s_matrix(
    sim: Simulation,
    ports,
    frequencies,
    *,
    until: float | None = None,
    bandwidth: float | None = None,
    source_offset: int = 2,
    excite=None,
    progress=False,
    **run_kw,
) -> SMatrix:
    """The S-matrix of ``sim``'s scene between ``ports`` at ``frequencies`` (``1 /
    wavelength``), one run per excited port-mode (module docstring). ``sim``'s own sources
    and monitors are replaced. ``until``: each run's time (length / c; default
    :func:`default_until`); ``bandwidth``: the Gaussian pulse's (default half the band, at
    least 5% of its centre); ``excite``: the port names to excite (default all: their
    columns; the others stay NaN). Keyword arguments go to :func:`emjax.fdtd.run`."""
    from .simulation import run

    if not isinstance(sim, Simulation):
        raise ConfigError("s_matrix needs a physical fdtd.Simulation")
    ports = tuple(ports)
    if not ports or not all(isinstance(p, Port) for p in ports):
        raise ConfigError("ports must be a non-empty list of fdtd.Port")
    names = [p.name for p in ports]
    if len(set(names)) != len(names):
        raise ConfigError(f"port names must be distinct, got {names}")
    freqs = _frequencies("frequencies", frequencies)
    require_int("source_offset", source_offset, 1, 100)
    excite = names if excite is None else list(excite)
    for e in excite:
        if e not in names:
            raise ConfigError(f"excite: no port named {e!r}; the ports are {names}")
    fc = 0.5 * (min(freqs) + max(freqs))
    bw = bandwidth if bandwidth is not None else max(0.5 * (max(freqs) - min(freqs)), 0.05 * fc)
    require_positive("bandwidth", bw)
    wf = GaussianPulse(fc, bw)
    until = default_until(sim, ports, wf) if until is None else require_positive("until", until)
    monitors = [ModeMonitor(p.center, p.size, freqs, name=p.name, modes=p.modes) for p in ports]
    probes = tuple((p.center, "xyz"[c], "E") for p in ports for c in range(3) if c != p.axis)
    labels = _labels(ports)
    s = np.full((len(freqs), len(labels), len(labels)), np.nan, complex)
    residual = np.full(len(labels), np.nan)
    cache: dict = {}
    for j, (port, mode, _) in enumerate(labels):
        if port.name not in excite:
            continue
        center = list(port.center)
        center[port.axis] -= port.sign * source_offset * sim.dx
        src = ModeSource(tuple(center), port.size, port.direction, mode, wf)
        try:
            run_sim = replace(sim, sources=(src,), monitors=tuple(monitors), probes=probes)
        except ConfigError as exc:
            raise ConfigError(f"port {port.name!r}: {exc}") from None
        result = run(run_sim, until=until, progress=progress, **run_kw)
        residual[j] = _residual(result.raw.probes)
        amps = {p.name: amplitudes(result, p.name, cache) for p in ports}
        a_in = amps[port.name][:, port.modes.index(mode), 0 if port.sign > 0 else 1]
        if np.any(np.abs(a_in) == 0):
            raise ConfigError(f"port {port.name!r}: no power entered the device (check the port's plane)")
        for i, (p_out, m_out, _) in enumerate(labels):
            b = amps[p_out.name][:, p_out.modes.index(m_out), 1 if p_out.sign > 0 else 0]
            s[:, i, j] = b / a_in
    bad = [lab for (_, _, lab), r in zip(labels, residual) if r > DECAYED]
    if bad:
        warnings.warn(
            f"s_matrix: the fields at the ports had not decayed by the end of the run exciting "
            f"{', '.join(bad)} (residual {np.nanmax(residual):.2g} of the peak, > {DECAYED:g}): the "
            f"spectra are truncated; raise until (was {until:.6g})",
            RuntimeWarning,
            stacklevel=2,
        )
    return SMatrix(np.asarray(freqs), tuple(lab for _, _, lab in labels), s, residual)


#: a run whose fields at the ports, over its last 5% of steps, stay above this share of
#: their peak is warned about (its DFTs are truncated)
DECAYED = 1e-3


def _residual(series) -> float:
    """The largest ``|E|`` sample of the last 5% of the steps over the largest of all."""
    a = np.abs(np.asarray(series))
    if a.size == 0 or not np.any(a):
        return float("nan")
    tail = a[-max(1, len(a) // 20) :]
    return float(tail.max() / a.max())
