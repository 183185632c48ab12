"""Scattering matrices over frequency between waveguide ports' modes, and Touchstone files.

``S[f, i, j]`` is the amplitude leaving through port-mode ``i`` per unit amplitude entering
through port-mode ``j`` (amplitudes normalized so that ``|a|^2`` is power: ``|S_ij|^2`` is
the share of the power), each referred to its port's reference plane. A solver that has
the amplitudes builds an :class:`SMatrix`; this module names no solver.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._repr import concise_repr
from ..errors import ConfigError

__all__ = ["SMatrix", "read_touchstone", "write_touchstone"]

#: the speed of light in vacuum, m/s (frequency = c / wavelength)
C0 = 299_792_458.0
#: metres per length unit, for Touchstone's frequencies in Hz
UNITS = {"m": 1.0, "mm": 1e-3, "um": 1e-6, "nm": 1e-9}


@dataclass(frozen=True, eq=False)
class SMatrix:
    """S-parameters ``s`` (n_freq, N, N) complex between the N port-modes ``labels``
    (``"port"`` or ``"port:mode"``), at ``frequencies`` (``1 / wavelength`` in the length
    unit); ``s[:, i, j]``: out of ``labels[i]`` per unit amplitude into ``labels[j]``.
    ``residual`` (N,), from a time-domain solver: per excited column, the field left at the
    end of its run over its peak (NaN: not excited)."""

    frequencies: np.ndarray
    labels: tuple
    s: np.ndarray
    residual: np.ndarray | None = None

    __repr__ = concise_repr

    def __getitem__(self, key) -> np.ndarray:
        """``S["out", "in"]``: the spectrum from port-mode ``in`` to ``out`` (labels)."""
        out, inp = key
        try:
            return self.s[:, self.labels.index(out), self.labels.index(inp)]
        except ValueError:
            raise ConfigError(f"no port-mode {key!r}; the labels are {list(self.labels)}") from None

    def to_xarray(self):
        """An ``xarray.Dataset``: ``s_real``, ``s_imag`` over (frequency, out_port, in_port)."""
        import xarray as xr

        dims = ("frequency", "out_port", "in_port")
        coords = {
            "frequency": ("frequency", np.asarray(self.frequencies), {"units": "1 / length"}),
            "out_port": ("out_port", list(self.labels), {"units": "1", "long_name": "port:mode out"}),
            "in_port": ("in_port", list(self.labels), {"units": "1", "long_name": "port:mode in"}),
        }
        data = {
            "s_real": (dims, self.s.real, {"units": "1", "long_name": "Re S (power-normalized)"}),
            "s_imag": (dims, self.s.imag, {"units": "1", "long_name": "Im S (power-normalized)"}),
        }
        if self.residual is not None:
            data["residual"] = ("in_port", np.asarray(self.residual, float), {"units": "1"})
        return xr.Dataset(data, coords=coords, attrs={"convention": "exp(-i omega t)"})

    def save(self, path) -> None:
        """:meth:`to_xarray` to ``path`` (.nc, .h5)."""
        from ..io import save_dataset

        save_dataset(self.to_xarray(), path)

    def write_touchstone(self, path, unit: str = "um") -> Path:
        """:func:`write_touchstone` of this matrix."""
        return write_touchstone(path, self.frequencies, self.s, unit=unit, labels=self.labels)


def write_touchstone(path, frequencies, s, *, unit: str = "um", labels=None) -> Path:
    """A Touchstone 1.1 file of the S-parameters ``s`` (n_freq, N, N): ``# HZ S RI R 50``,
    frequencies in Hz from ``frequencies`` (``1 / wavelength`` in ``unit``: ``c f / unit``),
    ascending. Layout as the format asks: for N = 2 one line per frequency ``S11 S21 S12
    S22``; otherwise the matrix row by row, at most four pairs per line. The exp(-i omega t)
    phases are conjugated to the engineering exp(+j omega t) convention of network
    analysers. ``path``'s suffix should be ``.sNp``."""
    s = np.asarray(s, complex)
    f = np.asarray(frequencies, float)
    if s.ndim != 3 or s.shape[1] != s.shape[2] or s.shape[0] != f.size:
        raise ConfigError(f"s must be (n_freq, N, N) with n_freq = {f.size}, got shape {s.shape}")
    if unit not in UNITS:
        raise ConfigError(f"unit must be one of {', '.join(UNITS)}, got {unit!r}")
    order = np.argsort(f)
    f_hz = f[order] * C0 / UNITS[unit]
    s = s[order].conj()
    n = s.shape[1]
    lines = [
        "! emjax S-parameters (power-normalized waveguide modes)",
        f"! frequencies: c / wavelength, wavelength in {unit}; phases exp(+j omega t)",
    ]
    if labels is not None:
        lines += [f"! port {k + 1}: {lab}" for k, lab in enumerate(labels)]
    lines.append("# HZ S RI R 50")
    pair = lambda z: f"{z.real: .12e} {z.imag: .12e}"  # noqa: E731
    for k in range(f.size):
        if n == 2:
            vals = [s[k, 0, 0], s[k, 1, 0], s[k, 0, 1], s[k, 1, 1]]
            lines.append(f"{f_hz[k]:.12e} " + " ".join(pair(z) for z in vals))
            continue
        for i in range(n):
            row = [pair(z) for z in s[k, i]]
            chunks = [row[c : c + 4] for c in range(0, n, 4)]
            head = f"{f_hz[k]:.12e} " if i == 0 else " " * 19
            lines.append(head + " ".join(chunks[0]))
            lines += [" " * 19 + " ".join(c) for c in chunks[1:]]
    path = Path(path)
    path.write_text("\n".join(lines) + "\n")
    return path


def read_touchstone(path) -> tuple:
    """``(frequencies_hz, s)`` of a Touchstone 1.x file written with ``# HZ S RI`` (the
    layout of :func:`write_touchstone`; N from the ``.sNp`` suffix), in its own exp(+j omega
    t) convention."""
    path = Path(path)
    suffix = path.suffix.lower()
    try:
        n = int(suffix[2:-1])
    except ValueError:
        raise ConfigError(f"{path}: the suffix must be .sNp, got {suffix!r}") from None
    nums, option = [], None
    for line in path.read_text().splitlines():
        line = line.split("!")[0].strip()
        if not line:
            continue
        if line.startswith("#"):
            option = line.upper().split()
            continue
        nums += [float(x) for x in line.split()]
    if option is None or "RI" not in option or "HZ" not in option:
        raise ConfigError(f"{path}: only '# HZ S RI' files are read, got {option}")
    per = 1 + 2 * n * n
    if len(nums) % per:
        raise ConfigError(f"{path}: {len(nums)} numbers is not a whole number of frequencies")
    a = np.array(nums).reshape(-1, per)
    z = a[:, 1::2] + 1j * a[:, 2::2]
    s = z.reshape(-1, n, n)
    if n == 2:
        s = np.swapaxes(s, 1, 2)  # S11 S21 S12 S22: column by column
    return a[:, 0], s
