"""FDTD: emjax's XLA step, emjax's blocked CUDA kernel and fdtdx (the JAX FDTD package on
PyPI) on the same problem, side by side in one process: an N^3 vacuum grid with a 10-cell
CPML on every face, a z-polarized point dipole (a Gaussian pulse of 20 cells' wavelength)
in the middle, float32, Courant number 0.99/sqrt(3), ``--steps`` steps.

PYTHONPATH=src python3 benchmarks/fdtd_vs_fdtdx.py --out results/gpu-fdtd-vs-fdtdx.jsonl
PYTHONPATH=/tmp/fdtdx-site:src python3 benchmarks/fdtd_vs_fdtdx.py --n 32 --steps 20 --check

fdtdx is not a dependency of emjax: install it beside (benchmarks/fdtdx_wheels.txt lists an
offline wheel set). One JSON row per (n, path) as benchmarks/fdtd_kernels.py writes them:
``compile_s`` (the first call: compiling and one run), ``run_s`` (a second call),
``cells_per_s`` = n^3 * steps / run_s, ``probe_ez`` (E_z three cells from the dipole after
the run) and, for the blocked kernel, ``rel_err`` of its E fields against the XLA step's.
Each code is timed as its users call it: emjax's ``advance`` (a jitted ``lax.scan``) and
fdtdx's ``run_fdtd`` (its ``while_loop``) under one ``jax.jit``, without its progress bar,
returning the final E and H. The blocked kernel runs only on a GPU.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from fdtd_kernels import _fresh, simulation

from emjax.backend import device_description
from emjax.bench import git_commit
from emjax.errors import ConfigError
from emjax.fdtd.blocked import choice

PML = 10
WAVELENGTH_CELLS = 20  # emjax's pulse: frequency 0.05 in units of c / dx
BANDWIDTH = 0.5  # emjax's GaussianPulse bandwidth, same units
DX = 50e-9  # fdtdx works in SI units: any spacing, the same cells
C0 = 299792458.0


def _emjax_path(n, steps, kernel):
    """(row fields, E fields) of emjax's ``kernel`` ("xla" or "blocked") on the case."""
    dtype = jnp.float32
    sim = simulation(n, "cpml", "single", "vacuum")
    plan, arrays, state = _fresh(sim, steps, dtype)
    fn, name, why = choice.select(plan, dtype, kernel)
    t0 = time.perf_counter()
    jax.block_until_ready(fn(plan, arrays, state, steps))
    compile_s = time.perf_counter() - t0
    plan, arrays, state = _fresh(sim, steps, dtype)
    t0 = time.perf_counter()
    out = jax.block_until_ready(fn(plan, arrays, state, steps))
    run_s = time.perf_counter() - t0
    c = n // 2
    E = [np.asarray(e) for e in out[0]["E"]]
    row = {
        "path": "xla" if name == "xla" else "blocked-cuda",
        "compile_s": round(compile_s, 3),
        "run_s": run_s,
        "cells_per_s": n**3 * steps / run_s,
        "courant": sim.grid.courant,
        "probe_ez": float(E[2][c + 3, c, c]),
        "finite": bool(out[2]),
    }
    if name != "xla":
        row["kernel_choice"] = why
    return row, E


def _fdtdx_setup(fdtdx, n, steps):
    """fdtdx's objects, arrays and config for the case, checked: an n^3 grid, ``steps``
    steps, the dipole at (n/2, n/2, n/2)."""
    backend = "gpu" if jax.default_backend() == "gpu" else "cpu"
    config = fdtdx.SimulationConfig(
        time=1.0, grid=fdtdx.UniformGrid(spacing=DX), dtype=jnp.float32, courant_factor=0.99, backend=backend
    )
    config = config.aset("time", steps * config.time_step_duration)
    volume = fdtdx.SimulationVolume(partial_grid_shape=(n, n, n))
    objects, constraints = [volume], []
    bounds = fdtdx.BoundaryConfig.from_uniform_bound(thickness=PML, boundary_type="pml")
    bound_dict, c_list = fdtdx.boundary_objects_from_config(bounds, volume)
    objects.extend(bound_dict.values())
    constraints.extend(c_list)
    wl = WAVELENGTH_CELLS * DX
    source = fdtdx.PointDipoleSource(
        partial_grid_shape=(1, 1, 1),
        wave_character=fdtdx.WaveCharacter(wavelength=wl),
        temporal_profile=fdtdx.GaussianPulseProfile(
            center_wave=fdtdx.WaveCharacter(wavelength=wl),
            spectral_width=fdtdx.WaveCharacter(frequency=BANDWIDTH * C0 / DX),
        ),
        polarization=2,
    )
    objects.append(source)
    constraints.append(
        source.set_grid_coordinates(axes=(0, 1, 2), sides=("-",) * 3, coordinates=(n // 2,) * 3)
    )
    key = jax.random.PRNGKey(0)
    obj, arrays, params, config, _ = fdtdx.place_objects(
        object_list=objects, config=config, constraints=constraints, key=key
    )
    arrays, obj, _ = fdtdx.apply_params(arrays, obj, params, key)
    if tuple(arrays.fields.E.shape) != (3, n, n, n) or config.time_steps_total != steps:
        raise RuntimeError(
            f"fdtdx set up E {tuple(arrays.fields.E.shape)} and {config.time_steps_total} steps, "
            f"not (3, {n}, {n}, {n}) and {steps}"
        )
    pmls = [p.grid_shape for p in obj.pml_objects]
    if len(pmls) != 6 or any(sorted(s)[0] != PML for s in pmls):
        raise RuntimeError(f"fdtdx placed PML slabs of shapes {pmls}, not six {PML}-cell slabs")
    return obj, arrays, config, key


def _fdtdx_path(n, steps):
    import fdtdx

    obj, arrays, config, key = _fdtdx_setup(fdtdx, n, steps)

    @jax.jit
    def run(arrays, key):
        t, out = fdtdx.run_fdtd(arrays=arrays, objects=obj, config=config, key=key, show_progress=False)
        return t, out.fields.E, out.fields.H

    t0 = time.perf_counter()
    jax.block_until_ready(run(arrays, key))
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    t, E, H = jax.block_until_ready(run(arrays, key))
    run_s = time.perf_counter() - t0
    if int(t) != steps:
        raise RuntimeError(f"fdtdx stopped at step {int(t)}, not {steps}")
    c = n // 2
    E = np.asarray(E)
    finite = bool(np.isfinite(E).all() and np.isfinite(np.asarray(H)).all())
    row = {
        "path": "fdtdx",
        "fdtdx_version": getattr(fdtdx, "__version__", None) or _dist_version("fdtdx"),
        "compile_s": round(compile_s, 3),
        "run_s": run_s,
        "cells_per_s": n**3 * steps / run_s,
        "courant": config.time_step_duration * C0 / DX,
        "probe_ez": float(E[2, c + 3, c, c]),
        "finite": finite,
        "steps_done": int(t),
        "devices": len(jax.devices()),
    }
    return row, E


def _dist_version(name):
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def check_fdtdx_steps(n, steps):
    """fdtdx stepped as asked: half the steps leave different fields, and the run's own
    step counter reads ``steps``. Raises otherwise."""
    _, full = _fdtdx_path(n, steps)
    _, half = _fdtdx_path(n, steps // 2)
    c = n // 2
    if not np.any(full != half) or full[2, c + 3, c, c] == half[2, c + 3, c, c]:
        raise RuntimeError(f"fdtdx fields after {steps} and {steps // 2} steps are the same")
    return float(half[2, c + 3, c, c]), float(full[2, c + 3, c, c])


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, nargs="+", default=[256, 512])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument(
        "--paths", nargs="+", default=["xla", "blocked", "fdtdx"], choices=["xla", "blocked", "fdtdx"]
    )
    ap.add_argument(
        "--check", action="store_true", help="also run fdtdx for half the steps: the fields must differ"
    )
    ap.add_argument("--commit", default=None, help="the commit to record (default: git's)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    for n in a.n:
        if n < 2 * PML + 8:
            ap.error(
                f"--n must be >= {2 * PML + 8} (a {PML}-cell CPML on each face and room for the probe), "
                f"got {n}"
            )
    if a.steps < 2:
        ap.error(f"--steps must be >= 2, got {a.steps}")
    if "fdtdx" in a.paths:
        try:
            import fdtdx  # noqa: F401
        except ImportError as e:
            sys.exit(
                f"fdtdx is not importable ({e}); install it (benchmarks/fdtdx_wheels.txt) "
                "or leave it out of --paths"
            )
    labels = {
        "device": device_description(),
        "date": time.strftime("%Y-%m-%d"),
        "commit": a.commit or git_commit(),
        "jax": jax.__version__,
    }

    def emit(row):
        print(json.dumps(row), flush=True)
        if a.out:
            with open(a.out, "a") as f:
                f.write(json.dumps(row) + "\n")

    for n in a.n:
        case = {
            **labels,
            "n": n,
            "steps": a.steps,
            "precision": "single",
            "material": "vacuum",
            "boundary": f"cpml {PML} every face",
            "source": "point dipole z, Gaussian pulse",
        }
        ref = None
        for path in a.paths:
            try:
                if path == "fdtdx":
                    row, _ = _fdtdx_path(n, a.steps)
                else:
                    row, E = _emjax_path(n, a.steps, path)
                    if path == "xla":
                        ref = E
                    elif ref is not None:
                        den = max(max(float(np.abs(r).max()) for r in ref), 1e-30)
                        row["rel_err"] = max(float(np.abs(g - r).max()) for g, r in zip(E, ref)) / den
                    del E
            except ConfigError as e:  # the blocked kernel where it cannot run (no GPU)
                print(f"n={n} {path}: skipped: {e}", file=sys.stderr, flush=True)
                continue
            except Exception as e:  # noqa: BLE001
                row = {"path": path, "error": f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"}
            emit({**case, **row})
            gc.collect()
        if a.check and "fdtdx" in a.paths:
            half, full = check_fdtdx_steps(n, a.steps)
            print(
                f"n={n}: fdtdx E_z at the probe after {a.steps // 2} steps {half:.6g}, "
                f"after {a.steps} steps {full:.6g}",
                file=sys.stderr,
            )


if __name__ == "__main__":
    main()
