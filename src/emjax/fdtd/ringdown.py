"""Resonances of an FDTD run from a probe's ring-down: the probe's record after the sources
have died out, through filter diagonalization (:func:`emjax.resonances.resonances`).

Used by ``FDTDResult.resonances`` and ``Result.resonances`` (the physical-unit run: the same
record, frequencies in 1 / the simulation's length unit) and by ``emjax fdtd``'s
``resonances`` key of a ``[[probes]]`` table (:func:`resonance_request`)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..errors import ConfigError
from ..resonances import Resonance, resonances
from .sources import ContinuousWave, GaussianPulse, PlaneSource, PointDipole, Ricker
from .tfsf import TFSF

__all__ = ["probe_resonances", "resonance_request", "source_end_time", "write_resonances_csv"]

#: the FDM options a caller may pass on (:func:`emjax.resonances.resonances`)
FDM_OPTIONS = ("density", "cutoff", "max_error", "min_amplitude", "growing")


def waveform_end(wf) -> float:
    """The time after which ``wf`` is below ~1e-5 of its peak: a GaussianPulse's
    ``2 cutoff tau`` (its centre is at ``cutoff tau``; with the default cutoff 5 the
    envelope is then exp(-12.5) = 4e-6), a Ricker wavelet's ``delay + 1.5 / f``. A
    ContinuousWave never ends."""
    if isinstance(wf, GaussianPulse):
        return 2 * wf.cutoff / (2 * math.pi * wf.bandwidth)
    if isinstance(wf, Ricker):
        delay = 1.5 / wf.frequency if wf.delay is None else wf.delay
        return delay + 1.5 / wf.frequency
    what = "a ContinuousWave never ends" if isinstance(wf, ContinuousWave) else f"{wf!r} has no known end"
    raise ConfigError(f"resonances: the source's waveform ({what}): give start (a time in length / c)")


def source_end_time(sim) -> float:
    """When the last source of the grid simulation ``sim`` has died out (length / c): the
    latest :func:`waveform_end`; for a plane wave (TF/SF) plus the time its pulse takes to
    cross the total-field box (at c, with 10% and 4 cells to spare for the grid's slower
    phase velocity and the auxiliary grid's offset). 0 without sources."""
    end = 0.0
    for s in sim.sources:
        if isinstance(s, (PointDipole, PlaneSource)):
            end = max(end, waveform_end(s.waveform))
        elif isinstance(s, TFSF):
            d = np.abs(np.asarray(s.wave.direction, float))
            cells = sum(d[a] * (s.hi[a] - s.lo[a]) for a in range(3)) + 4
            end = max(end, waveform_end(s.waveform) + 1.1 * cells * sim.grid.dx)
        else:  # a source kind this function does not know: no silent guess
            raise ConfigError(f"resonances: no known end for the source {type(s).__name__}: give start")
    return end


def probe_resonances(result, probe: int = 0, fmin=None, fmax=None, start=None, **options) -> list[Resonance]:
    """The resonances in ``[fmin, fmax]`` of probe ``probe`` of the grid-level ``result``
    (:class:`FDTDResult`), from its record at times >= ``start`` (default: when the sources
    have died out, :func:`source_end_time`). ``options``: as
    :func:`emjax.resonances.resonances` (density, cutoff, max_error, min_amplitude, growing)."""
    sim = result.simulation
    n = len(sim.probes)
    if n == 0:
        raise ConfigError("resonances: the simulation has no probes (add one where the mode lives)")
    if isinstance(probe, bool) or not isinstance(probe, (int, np.integer)) or not 0 <= probe < n:
        raise ConfigError(f"resonances: probe must be an integer in [0, {n - 1}], got {probe!r}")
    if fmin is None or fmax is None:
        raise ConfigError("resonances: give fmin and fmax (the band, in 1 / length)")
    bad = sorted(set(options) - set(FDM_OPTIONS))
    if bad:
        raise ConfigError(f"resonances: unknown option(s) {bad}; allowed: {', '.join(FDM_OPTIONS)}")
    auto = start is None
    if auto:
        start = source_end_time(sim)
    elif isinstance(start, bool) or not (
        isinstance(start, (int, float, np.floating, np.integer)) and math.isfinite(start) and start >= 0
    ):
        raise ConfigError(f"resonances: start must be a time >= 0 (length / c), got {start!r}")
    times = np.asarray(result.times, float)
    keep = times >= start - 1e-9 * max(abs(start), 1.0)
    count = int(np.count_nonzero(keep))
    if count < 8:
        why = "the sources end" if auto else "start"
        last = float(times[-1]) if times.size else 0.0
        raise ConfigError(
            f"resonances: {count} probe samples after {why} (t = {start:.6g}; the run ends at "
            f"t = {last:.6g}): run longer than t = {start:.6g} by several periods of the band"
        )
    steps = np.diff(times[keep])
    if steps.size and np.max(np.abs(steps - sim.grid.dt)) > 1e-6 * sim.grid.dt:  # never a silent misfit
        raise ConfigError("resonances: the probe record is not sampled every time step dt")
    signal = np.asarray(result.probes)[keep, probe]
    return resonances(signal, sim.grid.dt, fmin, fmax, **options)


def resonance_request(table, where: str) -> dict | None:
    """A probe's ``resonances = {fmin, fmax, start, max_error, min_amplitude}`` TOML table,
    checked (one ConfigError line naming ``where.resonances.KEY``): the keyword arguments of
    :func:`probe_resonances`, or None when the probe has none."""
    from ..config import Table

    if table is None:
        return None
    t = Table(table, f"{where}.resonances", {"fmin", "fmax", "start", "max_error", "min_amplitude"})
    fmin = t.real("fmin", lo=0)
    fmax = t.real("fmax", lo=0, lo_open=True)
    if fmax <= fmin:
        raise ConfigError(f"{t.name('fmax')} must be > {t.name('fmin')} = {fmin:g}, got {fmax:g}")
    out = {"fmin": fmin, "fmax": fmax, "start": t.real("start", default=None, lo=0)}
    for key in ("max_error", "min_amplitude"):
        if t.has(key):
            out[key] = t.real(key, lo=0, lo_open=True)
    return out


def config_requests(cfg: dict, sources, dt: float, run_time: float) -> dict:
    """``{probe index: request}`` of the config's ``[[probes]]`` tables with a ``resonances``
    key, checked before the run: the band under the Nyquist frequency 1 / (2 dt), an
    automatic start only with sources that end (``sources``: their ``waveform``), the start
    before the run's end ``run_time``."""
    out = {}
    probes = cfg.get("probes", [])
    for i, p in enumerate(probes if isinstance(probes, list) else []):
        where = f"probes[{i}]"
        req = resonance_request(p.get("resonances") if isinstance(p, dict) else None, where)
        if req is None:
            continue
        if req["fmax"] > 0.5 / dt:
            raise ConfigError(
                f"{where}.resonances.fmax must be <= 1 / (2 dt) = {0.5 / dt:.6g} (the time step's "
                f"Nyquist frequency), got {req['fmax']:g}"
            )
        start = req["start"]
        if start is None:
            start = max([waveform_end(s.waveform) for s in sources], default=0.0)
        if start + 8 * dt > run_time:
            raise ConfigError(
                f"{where}.resonances: the ring-down starts at t = {start:.6g} (length / c) but the run "
                f"ends at t = {run_time:.6g}: run longer ([run] until or steps) or give an earlier start"
            )
        out[i] = req
    return out


def find_all(raw, requests: dict) -> list:
    """The :func:`summarize` rows of every requested probe of the grid-level result ``raw``."""
    return summarize({i: probe_resonances(raw, i, **req) for i, req in requests.items()})


def add_to_summary(summary: dict, as_json: bool, requests: dict, rows: list) -> None:
    """``summary["resonances"]`` (when a probe asked for them): the rows (JSON) or lines."""
    if requests:
        summary["resonances"] = rows if as_json else _text(rows)


def write_csv(requests: dict, rows: list, folder) -> None:
    """``folder/resonances.csv`` when a probe asked for resonances."""
    if requests:
        write_resonances_csv(rows, Path(folder) / "resonances.csv")


def _text(rows: list) -> str:
    """The rows as lines for the CLI's summary."""
    if not rows:
        return "none found in the band"
    return "\n" + "\n".join(
        f"  probe {r['probe']}: f = {r['frequency']:.8g}  Q = {r['Q']:.6g}  |amplitude| = "
        f"{r['amplitude']:.3g}  error = {r['error']:.2g}"
        for r in rows
    )


def summarize(found: dict) -> list:
    """``{probe: [Resonance, ...]}`` -> JSON-ready rows: probe, frequency, Q, decay,
    |amplitude|, phase (rad), error."""
    rows = []
    for probe, res in found.items():
        for r in res:
            rows.append(
                {
                    "probe": int(probe),
                    "frequency": r.frequency,
                    "Q": r.Q,
                    "decay": r.decay,
                    "amplitude": abs(r.amplitude),
                    "phase": float(np.angle(r.amplitude)),
                    "error": r.error,
                }
            )
    return rows


def write_resonances_csv(rows: list, path) -> None:
    """The :func:`summarize` rows as a CSV file (a header line, one resonance per line)."""
    keys = ("probe", "frequency", "Q", "decay", "amplitude", "phase", "error")
    lines = [",".join(keys)]
    lines += [",".join(f"{row[k]:.12g}" if k != "probe" else str(row[k]) for k in keys) for row in rows]
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")
