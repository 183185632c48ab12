"""``emjax dda`` and ``emjax bench dda``: options -> DDAProblem and solver -> solve -> files.

A thin layer over the Python API: :mod:`emjax.dda.options` reads flags and TOML configs into
plain values, :func:`build_dda` maps them onto the API's dataclasses (strings become objects
through the registries ``SHAPES``, ``POLARIZABILITIES`` and ``SOLVERS``, here and nowhere
else), and the commands call :func:`emjax.dda.solve` or :func:`emjax.dda.average` and write
result.nc, ADDA's files and the Mueller figure.

Exit status: 0 success, 1 invalid input (raised as ConfigError, reported by ``emjax.cli``),
2 a solve that did not converge (results are still written). JAX, xarray and matplotlib are
imported inside the commands, so ``emjax --help`` is fast.
"""

from __future__ import annotations

import json
import shlex
import sys
import warnings

from ..config import append_json, finite_or_none, parse_refractive_index, refractive_indices
from ..errors import ConfigError, require_finite, require_int
from .options import (
    AVERAGE_KEYS,
    add_arguments,
    add_bench_arguments,
    dda_config,
    is_average,
    named_as_typed,
    parse_angles,
    parse_orientation,
    parse_prop,
    ratio_pair,
)

__all__ = ["COMMAND", "add_bench", "add_command", "build_average", "build_dda", "run", "run_bench"]

COMMAND = "dda"


def add_command(sub) -> None:
    """Register ``emjax dda`` in the subparsers ``sub``."""
    p = sub.add_parser(
        "dda",
        help="discrete dipole approximation (ADDA-like options)",
        description="Scattering by one particle with the DDA, for incident light polarized "
        "along x and y, incidence along +z. Lengths in any unit shared by the "
        "wavelength and the sizes. Exit status 0 converged, 2 not converged, "
        "1 invalid input.",
    )
    add_arguments(p)
    p.add_argument(
        "--devices",
        type=int,
        default=None,
        metavar="N",
        help="run on the first N devices: one orientation's lattice in slabs along x, or an "
        "orientation average's right-hand sides split over them",
    )


def add_bench(bench) -> None:
    """Register ``emjax bench dda`` in the benchmark subparsers ``bench``."""
    b = bench.add_parser("dda", help="DDA matvec, iteration and solve times of a sphere")
    add_bench_arguments(b)
    b.add_argument(
        "--devices",
        type=int,
        default=None,
        metavar="N",
        help="strong scaling over 1, 2, 4 .. N devices (one lattice in slabs; JSON lines)",
    )
    b.add_argument(
        "--scaling-mode",
        default="slabs",
        choices=["slabs", "orientations"],
        help="with --devices: split one lattice in slabs, or a batch of 8 right-hand sides",
    )


#: shape-specific options: key -> (shape name, function of the value -> constructor kwargs)
_SHAPE_OPTIONS = {
    "aspect": (("cylinder", "prism"), lambda v: {"aspect": v}),  # prism: hexagonal (Prism(6, aspect))
    "core_ratio": (("coated",), lambda v: {"core_ratio": v}),
    "semi_axes": (("ellipsoid",), lambda v: _yz_ratios("semi_axes", v)),
    "box_ratios": (("box",), lambda v: _yz_ratios("box_ratios", v)),
}


def _yz_ratios(name, value) -> dict:
    y, z = ratio_pair(name, value)
    return {"y_over_x": y, "z_over_x": z}


JSON_KEYS = (
    "Cext",
    "Cabs",
    "Csca",
    "Qext",
    "Qabs",
    "Qsca",
    "Cext_x",
    "Cext_y",
    "Cabs_x",
    "Cabs_y",
    "g",
    "n_dipoles",
    "grid",
    "iterations",
    "converged",
    "seconds",
    "out",
)


def _lookup(registry: dict, field: str, name):
    if not isinstance(name, str) or name.lower() not in registry:
        raise ConfigError(f"{field} must be one of {', '.join(sorted(registry))}; got {name!r}")
    return registry[name.lower()]


def build_dda(cfg: dict):
    """``(DDAProblem, solver)`` from a config dict (keys of :data:`emjax.dda.options.DDA_DEFAULTS`)."""
    import numpy as np

    from ..geometry import SHAPES
    from ..krylov import SOLVERS
    from . import POLARIZABILITIES, DDAProblem

    shape_cls = _lookup({**SHAPES, "stl": None}, "shape", cfg["shape"])
    shape_name = cfg["shape"].lower()
    kwargs = {}
    for key, (owner, to_kwargs) in {**_SHAPE_OPTIONS, "file": (("stl",), None)}.items():
        if cfg.get(key) is None:
            continue
        if shape_name not in owner:
            raise ConfigError(f"{key} applies to shape(s) {', '.join(owner)} only, not {shape_name!r}")
        if to_kwargs is not None:
            kwargs.update(to_kwargs(cfg[key]))
    shape = _mesh(cfg) if shape_name == "stl" else shape_cls(**kwargs)

    solver_cls = _lookup(SOLVERS, "solver", cfg["solver"])
    solver_kw = {"rtol": require_finite("rtol", cfg["rtol"])}
    if cfg["maxiter"] is not None:
        solver_kw["maxiter"] = require_int("maxiter", cfg["maxiter"], 1)
    solver = solver_cls(**solver_kw)

    polarizability = _lookup(POLARIZABILITIES, "polarizability", cfg["polarizability"])()
    ntheta = require_int("ntheta", cfg["ntheta"], 2, 100_000)
    if not isinstance(cfg["no_integrate"], bool):
        raise ConfigError(f"no_integrate must be true or false, got {cfg['no_integrate']!r}")
    from ..geometry import Voxels

    unsized = all(cfg[k] is None for k in ("size", "eq_rad", "grid"))
    if unsized and not isinstance(shape, Voxels):
        raise ConfigError(
            "give the particle's size: --size (its extent along x) or --eq-rad, or the dipoles "
            "along x, --grid (in a config: size, eq_rad or grid)"
        )
    problem = DDAProblem(
        shape,
        m=refractive_indices(cfg["m"]),
        wavelength=cfg["wavelength"],
        size_x=cfg["size"],
        eq_rad=cfg["eq_rad"],
        dipoles_per_wavelength=cfg["dpl"],
        grid=cfg["grid"],
        polarizability=polarizability,
        orientation=(0.0, 0.0, 0.0) if is_average(cfg["orient"]) else parse_orientation(cfg["orient"]),
        precision=cfg["precision"],
        theta=tuple(np.linspace(0.0, 180.0, ntheta)),
        phi=parse_angles(cfg["phi"], "phi"),
        integrate=not cfg["no_integrate"],
        **_incidence(cfg),
    )
    return problem, solver


def _mesh(cfg: dict):
    """The ``--shape stl --file PATH`` mesh; its size is the file's (in the wavelength's
    unit) unless the config sizes the particle."""
    from ..geometry import Mesh

    if cfg.get("file") is None:
        raise ConfigError("--shape stl needs --file PATH (the mesh file; in a config: file)")
    mesh = Mesh.from_file(cfg["file"])
    if cfg["size"] is None and cfg["eq_rad"] is None and not (cfg["grid"] and cfg["dpl"]):
        cfg["size"] = mesh.size
    return mesh


_SUBSTRATE_KEYS = ("height", "n", "eps", "thickness")


def _incidence(cfg: dict) -> dict:
    """``prop``, ``substrate`` and ``height`` keyword arguments from ``prop``, ``surf`` and a
    ``[substrate]`` table."""
    kw = {}
    if cfg.get("prop") is not None:
        kw["prop"] = parse_prop(cfg["prop"])
    surf, table = cfg.get("surf"), cfg.get("substrate")
    if surf is not None and table is not None:
        raise ConfigError("surf and [substrate] both describe the substrate: give one of them")
    if surf is not None:
        if not isinstance(surf, (list, tuple)) or len(surf) != 2:
            raise ConfigError(f"surf: expected H M (height and substrate index), got {surf!r}")
        bad = ConfigError(f"surf: the height H must be a number, got {surf[0]!r}")
        from ..config import number

        kw["height"] = number(surf[0], bad)
        kw["substrate"] = parse_refractive_index(surf[1], "surf M (substrate index)")
    if table is not None:
        from ..config import Table
        from ..layered import Stack

        t = Table(table, "[substrate]", _SUBSTRATE_KEYS)
        if t.has("n") == t.has("eps"):
            raise ConfigError("[substrate]: give the media as n = [...] or as eps = [...] (one of them)")
        height = t.real("height")
        if t.has("n"):
            eps = [
                parse_refractive_index(v, f"[substrate].n[{i}]") ** 2 for i, v in enumerate(_media(t, "n"))
            ]
        else:
            eps = [parse_refractive_index(v, f"[substrate].eps[{i}]") for i, v in enumerate(_media(t, "eps"))]
        thickness = t.reals("thickness", lo=0, lo_open=True) if t.get("thickness", []) != [] else []
        if len(thickness) != len(eps) - 2:
            raise ConfigError(
                f"[substrate].thickness needs one value per finite layer: {len(eps) - 2} for "
                f"{len(eps)} media, got {len(thickness)}"
            )
        kw["substrate"] = Stack(eps=eps, thickness=list(thickness))
        kw["height"] = height
    return kw


def _media(t, key: str) -> list:
    v = t.get(key)
    if not isinstance(v, list) or len(v) < 2:
        raise ConfigError(f"{t.name(key)} must list >= 2 media, top (the particle's) first, got {v!r}")
    return v


def build_average(cfg: dict):
    """The :class:`~emjax.dda.OrientationAverage` of an ``orient = "avg"`` config, else None."""
    given = [k for k in AVERAGE_KEYS if cfg.get(k) is not None]
    if not is_average(cfg["orient"]):
        if given:
            raise ConfigError(f"{given[0]} applies to orient = avg only (--orient avg)")
        return None
    from . import OrientationAverage

    kw = {}
    names = {
        "avg_eps": "eps",
        "avg_beta_levels": "beta_levels",
        "avg_gamma_levels": "gamma_levels",
        "avg_alpha": "n_alpha",
        "sym_n_fold": "n_fold",
        "sym_c2x": "c2_x",
    }
    for key, name in names.items():
        if cfg.get(key) is not None:
            kw[name] = cfg[key]
    if "eps" in kw:
        kw["eps"] = require_finite("avg_eps", kw["eps"])
    for key in ("beta_levels", "gamma_levels"):
        if key in kw and (not isinstance(kw[key], (list, tuple)) or len(kw[key]) != 2):
            raise ConfigError(f"avg_{key}: expected two integers MIN MAX, got {kw[key]!r}")
    if "c2_x" in kw and not isinstance(kw["c2_x"], bool):
        raise ConfigError(f"sym_c2x must be true or false, got {kw['c2_x']!r}")
    try:
        return OrientationAverage(**kw)
    except ConfigError as exc:  # name the option the user typed, not only the API field
        raise ConfigError(
            f"orientation averaging (--avg-eps/-beta-levels/-gamma-levels/-alpha, --sym-n-fold): {exc}"
        ) from exc


class _Progress:
    """A tqdm status line per polarization on stderr: iterations and relative residual."""

    def __init__(self):
        self._bars = {}

    def __call__(self, label: str, iterations: int, residual: float) -> None:
        if not sys.stderr.isatty():  # logs and pipes: one plain line per report
            print(
                f"{_progress_label(label)}: {iterations} iterations, relative residual {residual:.3e}",
                file=sys.stderr,
                flush=True,
            )
            return
        from tqdm import tqdm

        bar = self._bars.get(label)
        if bar is None:
            self.close()
            # solve() reports only at chunk ends, the first one after compiling: a rate or
            # elapsed time per bar would mislead, so show iterations and residual only
            bar = self._bars[label] = tqdm(
                desc=_progress_label(label),
                file=sys.stderr,
                bar_format="{desc}: {n} iterations{postfix}",
            )
        bar.n = iterations
        bar.set_postfix_str(f"relative residual {residual:.3e}")  # refreshes the line

    def close(self) -> None:
        for bar in self._bars.values():
            bar.close()


def _progress_label(label: str) -> str:
    """dda.solve reports "X"/"Y", dda.average a description of the batch."""
    return label if " " in label else f"polarization {label}"


def _summary_json(result, out) -> str:
    s = {**result.summary(), "out": str(out)}
    for name, xy in (("Cext", result.Cext_xy), ("Cabs", result.Cabs_xy)):  # per polarization
        s[f"{name}_x"], s[f"{name}_y"] = (float(v) for v in xy)
    return json.dumps({k: finite_or_none(s[k]) for k in JSON_KEYS}, allow_nan=False)


def _summary_text(result, solver) -> str:
    prob, lat = result.problem, result.lattice
    ms = ", ".join(f"{m:.6g}" for m in prob.refractive_indices())
    nx, ny, nz = lat.shape
    out = [
        f"emjax dda: {prob.shape!r}, m = {ms}, wavelength {prob.wavelength:.6g}",
        f"  a_eq {result.a_eq:.6g}, size parameter {prob.k * result.a_eq:.6g}, "
        f"lattice {nx}x{ny}x{nz}, {lat.n_dipoles} dipoles, "
        f"{prob.wavelength / lat.d:.4g} dipoles per wavelength",
        f"  {prob.polarizability!r}, {solver!r}, {prob.precision} precision",
    ]
    if prob.prop is not None or prob.substrate is not None:
        p = prob.incidence_direction()
        out.append(f"  incidence along ({p[0]:.6g}, {p[1]:.6g}, {p[2]:.6g})")
    if prob.substrate is not None:
        where = "from above" if prob.incidence_direction()[2] < 0 else "from below"
        out.append(
            f"  substrate {prob.substrate!r}, surface {prob.height:.6g} below the lattice centre; "
            f"light {where}; X = p, Y = s polarization"
        )
    for label, msg in zip("XY", result.solver_messages, strict=True):
        out.append(f"  polarization {label}: {msg}")
    out.append(f"  {'':18s}{'X':>14s}{'Y':>14s}{'unpolarized':>14s}")
    G = result.geometric_cross_section

    def row(name, xy, avg):
        out.append(f"  {name:18s}" + "".join(f"{v:14.6g}" for v in (*xy, avg)))

    row("Cext", result.Cext_xy, result.Cext)
    row("Qext", result.Cext_xy / G, result.Qext)
    row("Cabs", result.Cabs_xy, result.Cabs)
    row("Qabs", result.Cabs_xy / G, result.Qabs)
    row("Csca = Cext - Cabs", result.Cext_xy - result.Cabs_xy, result.Csca)
    up, down = getattr(result, "Csca_up_xy", None), getattr(result, "Csca_down_xy", None)
    if up is not None:
        row("Csca upper half", up, float(up.mean()))
    if down is not None:
        row("Csca lower half", down, float(down.mean()))
    if result.Csca_int_xy is not None and up is None:
        row("Csca (integrated)", result.Csca_int_xy, result.Csca_integrated)
    if result.g_xy is not None:
        row("g", result.g_xy, result.g)
    out.append(f"  time {result.seconds:.3f} s")
    return "\n".join(out)


def _check_outputs(args, cfg):
    """The output folder (--out, the config's ``out``, or a fresh runNNN_dda_...) and
    --checkpoint (a file) writable, before any solve; returns the :class:`OutputFolder`."""
    from ..io import check_output_file
    from ..outdir import OutputFolder

    what = "--out" if getattr(args, "out", None) is not None or cfg.get("out") is None else "out"
    folder = OutputFolder(
        cfg.get("out"), method=COMMAND, overwrite=getattr(args, "overwrite", False), what=what
    )
    folder.check()
    if cfg.get("checkpoint") is not None:
        check_output_file(cfg["checkpoint"], "--checkpoint", create_folder=False)
    return folder


def _write_outputs(result, solver, folder, command: str, config, average: bool = False) -> None:
    """result.nc, ADDA's files and mueller.png into the run folder (named as ADDA's: shape,
    dipoles along x, the first refractive index)."""
    from ..io import save_dataset
    from .adda_files import write_adda_average_outputs, write_adda_outputs
    from .plot import plot_mueller

    solver = getattr(result, "solver", None) or solver
    ds = result.to_xarray()
    ds.attrs["solver"], ds.attrs["command"] = repr(solver), command
    notes = {"solver": repr(solver)} | ({} if config is None else {"config file": str(config)})
    m = complex(result.problem.refractive_indices()[0])
    name = f"{result.problem.shape.name}_g{result.lattice.shape[0]}_m{m.real:.6g}"
    name += "_avg" if average else ""
    with folder.writing(name, command) as stage:
        save_dataset(ds, stage / "result.nc")
        write = write_adda_average_outputs if average else write_adda_outputs
        write(result, stage, command=command, notes=notes)
        plot_mueller(result, stage / "mueller.png")


def run(args, argv) -> int:
    """``emjax dda``."""
    cfg = dda_config(args)
    with named_as_typed(args):
        problem, solver = build_dda(cfg)
        quadrature = build_average(cfg)
    folder = _check_outputs(args, cfg)
    if quadrature is not None:
        return _cmd_dda_average(args, argv, cfg, problem, solver, quadrature, folder)
    from . import solve

    progress = _Progress()
    try:
        with warnings.catch_warnings():
            # reported below, louder, with the exit status
            warnings.filterwarnings("ignore", message="DDA polarization", category=RuntimeWarning)
            result = solve(problem, solver, progress=progress, layout=getattr(args, "devices", None))
    finally:
        progress.close()
    command = shlex.join(["emjax", *argv])
    _write_outputs(result, solver, folder, command, args.config)
    print(_summary_json(result, folder.path) if args.json else _summary_text(result, solver), flush=True)
    if not args.json:
        print(f"  outputs written to {folder.path}")
    bad = [
        f"polarization {label}: {msg}"
        for label, ok, msg in zip("XY", result.converged, result.solver_messages, strict=True)
        if not ok
    ]
    return _report_convergence(bad)


def _report_convergence(bad: list) -> int:
    if not bad:
        return 0
    print(
        "\n*** NOT CONVERGED *** "
        + "; ".join(bad)
        + "\n*** The results above are NOT reliable: raise --maxiter, loosen --rtol, "
        "or try another --solver. ***",
        file=sys.stderr,
    )
    return 2


AVERAGE_JSON_KEYS = (
    "Cext",
    "Cabs",
    "Csca",
    "Qext",
    "Qabs",
    "Qsca",
    "g",
    "n_dipoles",
    "grid",
    "orient",
    "n_orientations",
    "n_alpha",
    "error_estimate",
    "converged",
    "seconds",
    "out",
)


def _average_text(result, solver) -> str:
    prob, lat, q = result.problem, result.lattice, result.quadrature
    ms = ", ".join(f"{m:.6g}" for m in prob.refractive_indices())
    nx, ny, nz = lat.shape
    G = result.geometric_cross_section
    out = [
        f"emjax dda --orient avg: {prob.shape!r}, m = {ms}, wavelength {prob.wavelength:.6g}",
        f"  a_eq {result.a_eq:.6g}, size parameter {prob.k * result.a_eq:.6g}, "
        f"lattice {nx}x{ny}x{nz}, {lat.n_dipoles} dipoles",
        f"  {prob.polarizability!r}, {solver!r}, {prob.precision} precision",
        f"  {result.n_orientations} orientations (beta, gamma) x 2 polarizations x {q.n_alpha} alpha, "
        f"levels beta {result.levels[0]} gamma {result.levels[1]}, batches of {result.batch_size}",
        f"  error estimates: beta {result.error['beta']:.2e}, gamma {result.error['gamma']:.2e} "
        f"(goal {q.eps:g})",
        f"  Cext {result.Cext:.8g}   Qext {result.Qext:.8g}",
        f"  Cabs {result.Cabs:.8g}   Qabs {result.Qabs:.8g}",
        f"  Csca = Cext - Cabs {result.Csca:.8g}   Qsca {result.Qsca:.8g}",
    ]
    if result.Csca_integrated is not None:
        out.append(
            f"  Csca (integrated) {result.Csca_integrated:.8g}   Qsca {result.Csca_integrated / G:.8g}"
        )
        out.append(f"  g {result.g:.8g}")
    out.append(f"  time {result.seconds:.3f} s")
    return "\n".join(out)


def _cmd_dda_average(args, argv, cfg, problem, solver, quadrature, folder) -> int:
    import numpy as np

    from . import average

    batch = None if cfg["batch"] is None else require_int("batch", cfg["batch"], 1)
    progress = _Progress()
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="DDA orientation", category=RuntimeWarning)
            result = average(
                problem,
                quadrature,
                solver,
                batch=batch,
                progress=progress,
                checkpoint=cfg["checkpoint"],
                layout=getattr(args, "devices", None),
            )
    finally:
        progress.close()
    _write_outputs(result, solver, folder, shlex.join(["emjax", *argv]), args.config, average=True)
    if args.json:
        s = {**result.summary(), "out": str(folder.path)}
        print(json.dumps({k: finite_or_none(s[k]) for k in AVERAGE_JSON_KEYS}, allow_nan=False), flush=True)
    else:
        print(_average_text(result, solver), flush=True)
        print(f"  outputs written to {folder.path}")
    n_bad = int(np.sum(~np.asarray(result.converged)))
    bad = [f"{n_bad} of {result.converged.size} orientation/polarization solves"] if n_bad else []
    if not result.accuracy_met:
        err = max(float(result.error.get("beta") or 0.0), float(result.error.get("gamma") or 0.0))
        bad.append(
            f"the orientation average (error estimate {err:.2e} > --avg-eps "
            f"{result.quadrature.eps:g} at the maximum levels {result.levels}; raise the levels)"
        )
    return _report_convergence(bad)


def _bench_line(r: dict) -> str:
    def ms(key):
        v = r.get(key)
        return "-" if v is None else f"{1e3 * v:.3f} ms"

    line = (
        f"dda grid {r.get('grid')} {r.get('precision')}: matvec {ms('matvec_s')}, "
        f"iteration {ms('iteration_s')}"
    )
    if r.get("solve_s") is not None:
        line += f", solve {r['solve_s']:.3f} s ({r.get('solve_iterations')} it)"
    if r.get("matvec_bandwidth_fraction") is not None:
        line += f", {r['matvec_bandwidth_fraction']:.0%} of copy bandwidth"
    return line + f" on {r.get('device')}"


def run_bench(args, argv) -> int:
    """``emjax bench dda``."""
    from .bench import dda_benchmark
    from .options import check_bench_options

    grids, precisions, repeats = check_bench_options(args)
    if args.out is not None:
        from ..io import check_output_file

        check_output_file(args.out, "--out")
    if getattr(args, "devices", None) is not None:  # strong scaling over devices
        from ..layout import Layout
        from .bench import scaling_benchmark

        n = Layout.of(args.devices).n
        for grid in grids:
            for p in precisions:
                for r in scaling_benchmark(grid, n, args.scaling_mode, p, repeats=repeats):
                    print(json.dumps(r, default=str), flush=True)
                    if args.out is not None:
                        append_json(args.out, r)
        return 0
    for grid in grids:
        for p in precisions:
            r = dda_benchmark(
                grid=grid,
                precision=p,
                repeats=repeats,
                solve=not args.no_solve,
                variant=args.variant,
            )
            r = {"grid": grid, "precision": p, **r}
            print(json.dumps(r, default=str) if args.json else _bench_line(r), flush=True)
            if args.out is not None:
                append_json(args.out, r)
    return 0
