"""The layered benchmark behind ``emjax bench layered``: Quinto et al.'s map, time and error
against a tighter run."""

from __future__ import annotations

import datetime
import time

import jax
import numpy as np

from ..backend import device_description
from ..bench import git_commit
from ..layout import as_layout


def paper_case_points(n: int, spacing: float = 1.0) -> np.ndarray:
    """Quinto et al.'s map: n x n points spaced ``spacing`` (nm) in the XZ plane, centred at
    the origin (on the glass/air interface), C order (x slowest)."""
    c = (np.arange(n) - n // 2) * spacing
    X, Z = np.meshgrid(c, c, indexing="ij")
    return np.stack([X.ravel(), np.zeros(X.size), Z.ravel()], axis=1)


def paper_case_stack():
    """Glass (n = 1.5) above z = 0, air below; lengths in nm."""
    from .stack import Stack

    return Stack(eps=[2.25, 1.0])


def layered_benchmark(
    n: int,
    precision: str = "double",
    rtol: float = 1e-8,
    reference_rtol: float = 1e-12,
    repeats: int = 2,
    reference=None,
    layout=None,
) -> dict:
    """Quinto et al.'s case: a vertical dipole in glass 10 nm above air, wavelength 600 nm,
    Ez of the reflected (glass) and transmitted (air) field on an n x n XZ map spaced 1 nm.

    Times the whole call (quadrature set-up, refinement and the integration; the first
    call, with compilation, is reported apart) and the error against a run at
    ``reference_rtol`` in double precision: max |Ez - Ez_ref| / max |Ez_ref| (normwise)
    and the median of the pointwise relative error. ``layout``: the points spread over
    these devices (see :func:`scaling`).
    """
    from .green import dipole_fields

    stack = paper_case_stack()
    pts = paper_case_points(n)
    src = (0.0, 0.0, 10.0)
    kw = dict(part="scattered", fields="E", p=(0, 0, 1), progress=False)
    run_kw = dict(kw, layout=layout)
    t0 = time.perf_counter()
    r = dipole_fields(stack, 600.0, src, pts, rtol=rtol, precision=precision, **run_kw)
    first = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        r = dipole_fields(stack, 600.0, src, pts, rtol=rtol, precision=precision, **run_kw)
        times.append(time.perf_counter() - t0)
    if reference is None:
        reference = dipole_fields(stack, 600.0, src, pts, rtol=reference_rtol, precision="double", **kw).E[
            :, 2
        ]
    ez = r.E[:, 2]
    d = np.abs(ez - reference)
    return {
        "case": "layered_quinto2011",
        "points": int(len(pts)),
        "map": f"{n}x{n}",
        "precision": precision,
        "rtol": rtol,
        "seconds": min(times) if times else first,
        "first_call_s": first,
        "points_per_s": len(pts) / (min(times) if times else first),
        "max_error_normwise": float(d.max() / np.abs(reference).max()),
        "median_error_pointwise": float(np.median(d / np.maximum(np.abs(reference), 1e-300))),
        "max_error_estimate": float(np.max(r.error)),
        "groups": [{k: (round(v, 4) if isinstance(v, float) else v) for k, v in g.items()} for g in r.stats],
        "device": device_description(),
        "devices": 1 if as_layout(layout) is None else as_layout(layout).n,
        "date": datetime.date.today().isoformat(),
        "commit": git_commit(),
        "jax": jax.__version__,
    }


def scaling(n: int, devices: int, precision: str = "double", rtol: float = 1e-8, repeats: int = 2):
    """Strong scaling of the n x n map over 1, 2, 4 .. ``devices`` devices (emjax.layout):
    :func:`layered_benchmark` at each count (the reference computed once), with
    ``speedup`` = time on one device / time on this many (the errors against the common
    reference are the same at every count: the sharded map equals the one-device map).
    Yields one row per count as it is measured."""
    from .green import dipole_fields

    reference = dipole_fields(
        paper_case_stack(),
        600.0,
        (0.0, 0.0, 10.0),
        paper_case_points(n),
        p=(0, 0, 1),
        part="scattered",
        fields="E",
        rtol=1e-12,
        progress=False,
    ).E[:, 2]
    counts, c = [], 1
    while c < devices:
        counts.append(c)
        c *= 2
    t_one = None
    for k in counts + [devices]:
        r = layered_benchmark(n, precision, rtol, repeats=repeats, reference=reference, layout=k)
        t_one = t_one or r["seconds"]
        r.update(case="layered_quinto2011_scaling", speedup=t_one / r["seconds"])
        r["efficiency"] = r["speedup"] / k
        yield r
