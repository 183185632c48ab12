"""Options of ``emjax dda``: its arguments, its TOML config and their merging.

Nothing here imports JAX, so ``emjax --help`` stays fast. Values stay plain Python (strings,
numbers, lists); :mod:`emjax.dda.cli` maps them onto emjax's dataclasses through the registries.

A ``dda`` TOML config uses the long option names with underscores as keys::

    shape = "cylinder"
    aspect = 2.0
    size = 3.0
    m = "1.5+0.01j"          # or a list, one entry per domain: ["1.5+0.01j", "1.2"]
    orient = [0, 30, 0]      # or "0,30,0"
    prop = [0.5, 0, -0.866]  # or "0.5,0,-0.866": direction of incidence (ADDA's -prop)
    surf = [0.55, "1.5"]     # height of the lattice centre and substrate index (ADDA's -surf)

    [substrate]              # or a multilayer below the particle (instead of surf)
    height = 0.55            # from the top interface to the lattice centre
    n = ["1", "1.7", "0.2+3j"]   # indices top (vacuum) .. bottom; or eps = [...]
    thickness = [0.1]        # finite layers, top first

Flags on the command line override the file.
"""

from __future__ import annotations

import argparse
import math
import re
from contextlib import contextmanager
from pathlib import Path

from ..config import Table, check_devices_option, load_toml, number
from ..errors import ConfigError
from ..outdir import add_output_arguments

#: defaults of ``emjax dda`` (None: let the Python API decide)
DDA_DEFAULTS = {
    "shape": "sphere",
    "file": None,
    "aspect": None,
    "core_ratio": None,
    "semi_axes": None,
    "box_ratios": None,
    "size": None,
    "eq_rad": None,
    "wavelength": 2 * math.pi,
    "m": ["1.5"],
    "dpl": None,
    "grid": None,
    "solver": "qmr",
    "rtol": 1e-5,
    "maxiter": None,
    "polarizability": "ldr",
    "precision": "double",
    "orient": [0.0, 0.0, 0.0],
    "prop": None,
    "surf": None,
    "substrate": None,
    "ntheta": 181,
    "phi": [90.0],
    "out": None,
    "no_integrate": False,
    # orientation averaging (orient = "avg")
    "avg_eps": None,
    "avg_beta_levels": None,
    "avg_gamma_levels": None,
    "avg_alpha": None,
    "sym_n_fold": None,
    "sym_c2x": None,
    "batch": None,
    "checkpoint": None,
}
#: keys that only apply with ``orient = "avg"``
AVERAGE_KEYS = (
    "avg_eps",
    "avg_beta_levels",
    "avg_gamma_levels",
    "avg_alpha",
    "sym_n_fold",
    "sym_c2x",
    "batch",
    "checkpoint",
)
#: keys of DDA_DEFAULTS that are alternatives: giving one on the command line drops the
#: other from the config file
_ALTERNATIVES = (("size", "eq_rad"),)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``emjax dda``."""
    # Every default is None so that a TOML config can fill what the command line leaves out.
    g = p.add_argument_group("particle")
    g.add_argument(
        "--shape",
        help="sphere (default), ellipsoid, box, cylinder, coated, prism (hexagonal), rosette, "
        "stl (a closed surface mesh: --file)",
    )
    g.add_argument(
        "--file",
        metavar="PATH",
        help="stl: the mesh file (STL, OBJ, PLY ...: what trimesh reads; size: the file's unless "
        "--size or --eq-rad)",
    )
    g.add_argument("--aspect", type=float, help="cylinder, prism: height / diameter (along z)")
    g.add_argument(
        "--core-ratio",
        type=float,
        help="coated: core diameter / outer diameter (give two --m: shell, core)",
    )
    g.add_argument(
        "--semi-axes",
        type=float,
        nargs=2,
        metavar=("Y_OVER_X", "Z_OVER_X"),
        help="ellipsoid: semi-axes along y and z over that along x",
    )
    g.add_argument(
        "--box-ratios",
        type=float,
        nargs=2,
        metavar=("Y_OVER_X", "Z_OVER_X"),
        help="box: edges along y and z over that along x",
    )
    g.add_argument("--size", type=float, metavar="SIZE_X", help="particle size along x")
    g.add_argument("--eq-rad", type=float, help="volume-equivalent radius (instead of --size)")
    g.add_argument(
        "--m",
        action="append",
        metavar="M",
        help="refractive index n+ik per domain (repeatable): 1.5+0.01j, 1.5,0.01 or 1.33; default 1.5",
    )
    g.add_argument(
        "--orient",
        metavar="ALPHA,BETA,GAMMA|avg",
        help="ZYZ Euler angles of the particle in degrees (default 0,0,0), or avg: average over "
        "random orientation (ADDA's -orient avg)",
    )
    g.add_argument(
        "--prop",
        metavar="X,Y,Z",
        help="direction of the incident wave (ADDA's -prop; default 0,0,1); polarizations X and Y "
        "as ADDA's (on a substrate X = p, Y = s)",
    )
    g.add_argument(
        "--surf",
        nargs=2,
        metavar=("H", "M"),
        help="particle above a substrate of index M (e.g. 1.5 or 0.2+3j), the lattice centre H above "
        "its surface (ADDA's -surf h mre mim); prop_z < 0: light from above, > 0: from below. "
        "Multilayers: a [substrate] table in --config",
    )
    g = p.add_argument_group("orientation averaging (--orient avg)")
    g.add_argument(
        "--avg-eps", type=float, help="relative accuracy of the averaged Cext, Cabs (default 1e-3)"
    )
    g.add_argument(
        "--avg-beta-levels",
        type=int,
        nargs=2,
        metavar=("MIN", "MAX"),
        help="levels of the beta rule, 2^level + 1 nodes in [0, 180] (default 2 5)",
    )
    g.add_argument(
        "--avg-gamma-levels",
        type=int,
        nargs=2,
        metavar=("MIN", "MAX"),
        help="levels of the gamma rule, 2^level nodes per period (default 3 5)",
    )
    g.add_argument(
        "--avg-alpha", type=int, metavar="N", help="alpha values for the Mueller matrix (default 32)"
    )
    g.add_argument(
        "--sym-n-fold",
        type=int,
        metavar="N",
        help="particle unchanged by a 360/N deg rotation about its z axis (0: axisymmetric; default 1)",
    )
    g.add_argument(
        "--sym-c2x",
        action="store_const",
        const=True,
        default=None,
        help="particle unchanged by a 180 deg rotation about its x axis (halves the beta range)",
    )
    g.add_argument(
        "--batch",
        type=int,
        help="orientations solved together (default: what fits in memory, <= 64 on a GPU, 1 on a CPU)",
    )
    g.add_argument(
        "--checkpoint",
        type=Path,
        metavar="FILE.npz",
        help="save the solved orientations after every batch; an existing file resumes the run",
    )
    g = p.add_argument_group("light and discretization")
    g.add_argument("--wavelength", type=float, help="vacuum wavelength (default 2 pi)")
    g.add_argument("--dpl", type=float, help="dipoles per wavelength (default 10 |m|)")
    g.add_argument("--grid", type=int, help="dipoles along x, 1 to 100000 (overrides --dpl)")
    g.add_argument("--polarizability", help="ldr (default), cm, rr, fcd")
    g.add_argument("--precision", help="double (default) or single")
    g = p.add_argument_group("solver")
    g.add_argument("--solver", help="qmr (default), bicg, bicgstab")
    g.add_argument("--rtol", type=float, help="relative residual to reach (default 1e-5)")
    g.add_argument("--maxiter", type=int, help="maximum iterations (default 10000)")
    g = p.add_argument_group("output")
    g.add_argument("--ntheta", type=int, help="scattering angles: N points from 0 to 180 deg (default 181)")
    g.add_argument(
        "--phi",
        metavar="PHI1,PHI2,...",
        help="scattering planes in deg (default 90: yz, as ADDA); several give a (theta, phi) grid "
        "and ADDA's mueller_scatgrid file",
    )
    g.add_argument(
        "--no-integrate",
        action="store_const",
        const=True,
        default=None,
        help="skip the integration of Csca and g over all directions",
    )
    add_output_arguments(
        g,
        "result.nc, CrossSec-X, CrossSec-Y, mueller, log, mueller.png (--orient avg: CrossSec and "
        "log_orient_avg in place of CrossSec-X, CrossSec-Y)",
    )
    g.add_argument("--json", action="store_true", help="print one line of JSON (and nothing else) on stdout")
    p.add_argument(
        "--config",
        type=Path,
        metavar="FILE.toml",
        help="TOML file with the same keys (underscores); flags override it",
    )
    p.add_argument(
        "config_file",
        nargs="?",
        type=Path,
        metavar="CONFIG.toml",
        help="the same as --config FILE.toml (as for emjax fdtd, fdfd and layered)",
    )


def add_bench_arguments(b: argparse.ArgumentParser) -> None:
    """The options of ``emjax bench dda``."""
    b.add_argument(
        "--grid",
        type=int,
        action="append",
        required=True,
        metavar="N",
        help="lattice N^3 (repeatable)",
    )
    b.add_argument(
        "--precision",
        action="append",
        metavar="P",
        help="single or double (repeatable; default double)",
    )
    b.add_argument("--repeats", type=int, default=10, help="timed matvecs (default 10)")
    b.add_argument(
        "--variant",
        default=None,
        choices=["pruned", "full"],
        help="FFT variant: pruned (default) or full (plain padded 3-D FFTs)",
    )
    b.add_argument("--no-solve", action="store_true", help="skip the full solve")
    b.add_argument("--json", action="store_true", help="one JSON object per run on stdout")
    b.add_argument(
        "--out",
        type=Path,
        metavar="FILE.json",
        help="append the results to this JSON file (a list)",
    )


#: Upper bound of ``emjax bench dda --repeats``.
MAX_REPEATS = 100_000


def check_bench_options(args: argparse.Namespace) -> tuple:
    """``(grids, precisions, repeats)`` of ``emjax bench dda``, each option checked against
    its range and named as typed (``--grid`` against the largest lattice whose estimated
    memory fits the device) before anything is built."""
    import jax

    from ..backend import PRECISIONS, default_device, device_memory_bytes, largest_fitting
    from ..errors import require_int
    from ..geometry import Sphere
    from .problem import DDAProblem

    precisions = args.precision or ["double"]
    for p in precisions:
        if p not in PRECISIONS:
            raise ConfigError(f"--precision must be one of {', '.join(PRECISIONS)}, got {p!r}")
    repeats = require_int("--repeats", args.repeats, 1, MAX_REPEATS)
    if getattr(args, "devices", None) is not None:
        require_int("--devices", args.devices, 1, len(jax.devices()), why="the devices JAX sees")
    avail = device_memory_bytes()
    for p in precisions:
        bytes_of = DDAProblem(Sphere(), 1.5, size_x=1.0, grid=8, precision=p).memory_bytes
        hi = largest_fitting(lambda n, b=bytes_of: b((n, n, n)), avail, 1, 65535)
        why = f"the largest {p}-precision lattice that fits the {avail / 1e9:.1f} GB free on "
        why += str(default_device())
        for g in args.grid:
            require_int("--grid", g, 1, hi, why=why)
    return [int(g) for g in args.grid], precisions, repeats


#: Where an API argument is spelled differently from the option (and config key) it comes from.
_OPTION_OF = {"size_x": "size", "dipoles_per_wavelength": "dpl", "orientation": "orient"}


@contextmanager
def named_as_typed(args: argparse.Namespace):
    """Re-raise a :class:`ConfigError` that names an API argument (``size_x must be > 0``)
    under the option the user typed (``--size must be > 0``) when its value came from the
    command line (a config file's keys are checked, by their own names, while it is read)."""
    try:
        yield
    except ConfigError as exc:
        msg = str(exc)
        m = re.match(r"[A-Za-z_]+(?=[\[ .:=]|$)", msg)
        key = _OPTION_OF.get(m.group(0), m.group(0)) if m else None
        if key in DDA_DEFAULTS and getattr(args, key, None) is not None:
            raise ConfigError("--" + key.replace("_", "-") + msg[m.end() :]) from None
        raise


def dda_config(args: argparse.Namespace) -> dict:
    """Defaults, then the ``--config`` file, then the command-line flags."""
    check_devices_option(getattr(args, "devices", None))
    cfg = dict(DDA_DEFAULTS)
    cli = {k: getattr(args, k) for k in DDA_DEFAULTS if getattr(args, k, None) is not None}
    if getattr(args, "config_file", None) is not None:
        if args.config is not None:
            raise ConfigError("give the config file once: as CONFIG.toml or as --config FILE.toml, not both")
        args.config = args.config_file
    if args.config is not None:
        toml = check_dda_toml(load_toml(args.config))
        if toml.get("file") is not None:  # relative to the config file
            toml["file"] = str(Path(args.config).parent / toml["file"])
        for group in _ALTERNATIVES:
            if any(k in cli for k in group):
                for k in group:
                    toml.pop(k, None)
        cfg.update(toml)
    cfg.update(cli)
    return cfg


def check_dda_toml(toml: dict) -> dict:
    """A ``dda`` TOML config's top level checked key by key (:class:`emjax.config.Table`):
    unknown keys refused with the allowed ones listed, each value's type and range named
    (``rtol must be a number in (0, 1), got 2``) before anything is built; returns the
    config with ``out`` and ``checkpoint`` as paths. Forms that the command line shares
    (``m``, ``orient``, ``prop``, ``phi``, ``surf``, the ``[substrate]`` table) and the
    registries' names (shape, solver, polarizability) are checked where they are mapped
    onto the API (:func:`emjax.dda.cli.build_dda`)."""
    t = Table(toml, "", DDA_DEFAULTS)
    for key in ("shape", "solver", "polarizability"):
        t.string(key, default=None, what="a name (emjax dda --help lists them)")
    t.choice("precision", ("double", "single"), default=None, fold=True)
    for key in ("aspect", "size", "eq_rad", "wavelength", "dpl"):
        if t.has(key):
            t.positive(key)
    t.real("core_ratio", default=None, lo=0, hi=1, lo_open=True, hi_open=True)
    for key in ("semi_axes", "box_ratios"):
        t.reals(key, length=2, default=None, lo=0, lo_open=True)
    t.int("grid", default=None, lo=1, hi=100_000)
    t.real("rtol", default=None, lo=0, hi=1, lo_open=True, hi_open=True)
    t.int("maxiter", default=None, lo=1)
    t.int("ntheta", default=None, lo=2, hi=100_000)
    t.boolean("no_integrate", default=False)
    for key in ("out", "checkpoint", "file"):
        t.string(key, default=None, what="a path (a string)")
    m = t.get("m")
    if m is not None and not (isinstance(m, (str, int, float, list)) and not isinstance(m, bool)):
        raise ConfigError(f'm must be a refractive index like "1.5+0.01j" or a list of them, got {m!r}')
    for key in ("orient", "prop", "phi"):
        v = t.get(key)
        if v is not None and (isinstance(v, (bool, dict)) or not isinstance(v, (str, int, float, list))):
            raise ConfigError(f"{key} must be a string or a list of numbers, got {v!r}")
    surf = t.get("surf")
    if surf is not None and (not isinstance(surf, list) or len(surf) != 2):
        raise ConfigError(f"surf must be [H, M] (height and substrate index), got {surf!r}")
    if t.has("substrate") and not isinstance(t.get("substrate"), dict):
        raise ConfigError(f"substrate must be a [substrate] table, got {t.get('substrate')!r}")
    # orientation averaging: the ranges of emjax.dda.OrientationAverage
    t.real("avg_eps", default=None, lo=0, hi=1, hi_open=True)
    for key in ("avg_beta_levels", "avg_gamma_levels"):
        levels = t.ints(key, 2, default=None, lo=1, hi=10)
        if levels is not None and levels[1] < levels[0]:
            raise ConfigError(f"{key} must be [MIN, MAX] with MIN <= MAX, got {list(levels)!r}")
    t.int("avg_alpha", default=None, lo=1, hi=100_000)
    t.int("sym_n_fold", default=None, lo=0, hi=360)
    if t.has("sym_c2x"):
        t.boolean("sym_c2x")
    t.int("batch", default=None, lo=1)
    out = dict(toml)
    for key in ("out", "checkpoint"):
        if out.get(key) is not None:
            out[key] = Path(out[key])
    return out


def is_average(value) -> bool:
    """Whether an ``orient`` value asks for orientation averaging (``"avg"``)."""
    return isinstance(value, str) and value.strip().lower() == "avg"


def parse_orientation(value) -> tuple[float, float, float]:
    """``"ALPHA,BETA,GAMMA"`` or a list of three numbers (degrees)."""
    parts = value.split(",") if isinstance(value, str) else value
    bad = ConfigError(f"orient: expected three angles ALPHA,BETA,GAMMA in degrees or avg, got {value!r}")
    if not isinstance(parts, (list, tuple)) or len(parts) != 3:
        raise bad
    return tuple(number(v, bad) for v in parts)


def parse_angles(value, name: str) -> tuple[float, ...]:
    """``"0,45,90"``, a number or a list of numbers (degrees)."""
    parts = value.split(",") if isinstance(value, str) else value
    if isinstance(parts, (int, float)):
        parts = [parts]
    bad = ConfigError(f"{name}: expected angles in degrees separated by commas, got {value!r}")
    if not isinstance(parts, (list, tuple)) or not parts:
        raise bad
    return tuple(number(v, bad) for v in parts)


def parse_prop(value) -> tuple[float, float, float]:
    """``"X,Y,Z"`` or a list of three numbers."""
    parts = value.split(",") if isinstance(value, str) else value
    bad = ConfigError(f"prop: expected three numbers X,Y,Z (the direction of incidence), got {value!r}")
    if not isinstance(parts, (list, tuple)) or len(parts) != 3:
        raise bad
    return tuple(number(v, bad) for v in parts)


def ratio_pair(name: str, value) -> tuple[float, float]:
    """Two numbers (``--semi-axes``/``--box-ratios``)."""
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise ConfigError(f"{name}: expected two numbers Y_OVER_X Z_OVER_X, got {value!r}")
    bad = ConfigError(f"{name}: expected two numbers Y_OVER_X Z_OVER_X, got {value!r}")
    return tuple(number(v, bad) for v in value)
