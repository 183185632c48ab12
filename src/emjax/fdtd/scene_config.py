"""The physical-unit TOML config of ``emjax fdtd`` (a ``[simulation]`` table), mapped onto
:class:`emjax.fdtd.Simulation` (see examples/fdtd_sphere.toml; every key with its type, range
and default: docs/toml.md)::

    [simulation]
    size = [1.0, 1.0, 1.0]          # the region, CPML excluded (any length unit)
    resolution = 40                 # cells per unit length
    center = [0, 0, 0]
    boundary = "cpml"               # or "pec", "periodic", "bloch", or one per axis
    bloch_k = [0, 0, 0]             # the Bloch wavevector (rad / length) of "bloch" axes
    pml_thickness = 10              # cells
    averaging = "subpixel"          # or "diagonal" (the tensor's diagonal), "staircase"
    precision = "single"
    background = 1.0                # eps of the background
    unit = "um"                     # the length unit (needed by library materials)
    symmetry = [0, 0, 0]            # mirror planes through center: 0, -1 (odd, PEC), +1 (even, PMC)

    [[objects]]                     # later objects override earlier ones
    shape = "sphere"                # sphere, ellipsoid, box, cylinder, coated, prism,
                                    # polygon_prism, rosette; 2-D grids: disk, rectangle, polygon;
                                    # from files: stl (file, scale), gds (file, layer, datatype,
                                    # z): emjax.cad_config
    size = 0.48                     # extent along the shape's own x
    center = [0, 0, 0]
    rotation = [0, 0, 0]            # ZYZ Euler angles, degrees
    eps = 6.0                       # or: pec = true, or drude = {eps_inf, omega_p, gamma}
                                    #     or lorentz = {eps_inf, delta_eps, omega_0, gamma}
                                    #     or material = "Au" (the library; needs unit)
    # aspect, core_ratio, semi_axes, box_ratios: as emjax dda's shape options;
    # vertices = [[x, y], ...] for "polygon" (2-D grids) and "polygon_prism"

    [[sources]]
    type = "plane_wave"             # TF/SF box: center, size, direction, polarization
    center = [0, 0, 0]
    size = [0.7, 0.7, 0.7]
    frequency = 1.0                 # waveform "gaussian" (bandwidth), "ricker", "cw" (ramp)
    # type = "dipole": position, component, amplitude
    # type = "plane_current": position (along axis), axis, polarization, amplitude: a current
    #   sheet across a periodic / Bloch cell (examples/fdtd_unit_cell.toml)

    [[probes]]                      # field time series at a point
    position = [0, 0, 0.3]
    component = "x"
    field = "E"                     # or "H"
    resonances = {fmin = 0.8, fmax = 1.2}  # its ring-down's resonances (start: a time)

    [[monitors]]
    type = "cross_sections"         # or "flux_box" (center, size, name), "flux_plane",
                                    # "field_plane" (E, H on the plane: NAME.nc with --out)
    frequencies = [0.9, 1.0, 1.1]

    [run]
    until = 120                     # time in length / c (or steps = N); chunk, checkpoint
"""

from __future__ import annotations

import math
import warnings

from ..cad_config import FILE_KEYS, FILE_SHAPES, file_objects
from ..config import Table, dispersive_material
from ..errors import ConfigError
from ..materials import catalog
from .config import _highest_frequency, _resolution, out_of_core_option, waveform

TOP_KEYS = {"simulation", "objects", "sources", "monitors", "probes", "run"}
SIM_KEYS = {
    "size",
    "resolution",
    "center",
    "boundary",
    "pml_thickness",
    "averaging",
    "precision",
    "courant",
    "background",
    "bloch_k",
    "unit",
    "symmetry",
}
SHAPE_OPTIONS = {"aspect", "core_ratio", "semi_axes", "box_ratios", "vertices"}
MATERIAL_KEYS = ("eps", "pec", "drude", "lorentz", "material")
OBJECT_KEYS = {"shape", "size", "center", "rotation", *MATERIAL_KEYS} | SHAPE_OPTIONS | FILE_KEYS
WAVEFORM_KEYS = {"waveform", "frequency", "bandwidth", "ramp"}
SOURCE_KEYS = {
    "plane_wave": {"type", "center", "size", "direction", "polarization"} | WAVEFORM_KEYS,
    "dipole": {"type", "position", "component", "amplitude"} | WAVEFORM_KEYS,
    "plane_current": {"type", "position", "axis", "polarization", "amplitude"} | WAVEFORM_KEYS,
}
MONITOR_KEYS = {
    "cross_sections": {"type", "frequencies", "gap_out", "gap_in"},
    "flux_box": {"type", "frequencies", "center", "size", "name"},
    "flux_plane": {"type", "frequencies", "center", "size", "name"},
    "field_plane": {"type", "frequencies", "center", "size", "name"},
}
PROBE_KEYS = {"position", "component", "field", "resonances"}
RUN_KEYS = {"steps", "until", "chunk", "checkpoint", "out_of_core", "th", "device_gb", "kernel"}
BOUNDARIES = ("cpml", "pec", "periodic", "bloch")
#: fewer cells than this across an object's smallest extent: a warning (it is barely resolved)
MIN_FEATURE_CELLS = 2


def _shapes() -> dict:
    from ..geometry import SHAPES as SHAPES_3D
    from ..geometry import SHAPES_2D, PolygonPrism

    return {**SHAPES_3D, **SHAPES_2D, "polygon_prism": PolygonPrism}


def _material(o: Table, unit):
    """(material, largest real permittivity for the resolution check or None); ``unit`` the
    length unit a library ``material`` needs (None: not given)."""
    from .. import scene

    given = [k for k in MATERIAL_KEYS if o.has(k)]
    if len(given) != 1:
        raise ConfigError(
            f"{o.where}: give exactly one of eps, pec, drude, lorentz, material (got {given or 'none'})"
        )
    k = given[0]
    if k == "material":
        mat = catalog.from_config(o.get(k), o.where, unit)
        return mat, max(1.0, mat.max_real_permittivity())
    if k == "eps":
        if isinstance(o.get("eps"), list):  # one per domain (a coated sphere: shell, core)
            eps = o.reals("eps", lo=1.0)
            return tuple(eps), max(eps)
        e = o.real("eps", lo=1.0)
        return e, e
    if k == "pec":
        if o.get("pec") is not True:
            raise ConfigError(
                f"{o.where}.pec must be true (leave it out for a dielectric), got {o.get('pec')!r}"
            )
        return scene.PEC, None
    mat = dispersive_material(k, o.get(k), o.where)
    return mat, max(1.0, float(mat.eps_inf))


def _object(o: Table, unit=None, base_dir=None):
    """[(scene.Object, largest permittivity or None)]: one, or a file shape's several."""
    from .. import scene

    shapes = _shapes()
    name = o.choice("shape", tuple(sorted(shapes)) + FILE_SHAPES, fold=True)
    if name in FILE_SHAPES:
        given = sorted(k for k in SHAPE_OPTIONS if o.has(k))
        if given:
            raise ConfigError(f"{o.where}: {given} do not apply to shape {name!r}")
        mat, eps_max = _material(o, unit)
        return [(obj, eps_max) for obj in file_objects(o, name, mat, base_dir)]
    stray = sorted(k for k in FILE_KEYS if o.has(k))
    if stray:
        raise ConfigError(f"{o.where}: {stray} apply to shapes {', '.join(FILE_SHAPES)} only")
    kw = {}
    if o.has("aspect"):
        kw["aspect"] = o.real("aspect", lo=0, lo_open=True)
    if o.has("core_ratio"):
        kw["core_ratio"] = o.real("core_ratio", lo=0, lo_open=True, hi=1.0, hi_open=True)
    if o.has("vertices"):  # polygon (2-D) and polygon_prism: [[x, y], ...]
        v = o.get("vertices")
        if not isinstance(v, list) or len(v) < 3:
            raise ConfigError(f"{o.name('vertices')} must be a list of >= 3 [x, y] pairs, got {v!r}")
        kw["vertices"] = [
            Table({"v": p}, o.name(f"vertices[{k}]")).reals("v", length=2) for k, p in enumerate(v)
        ]
    for key in ("semi_axes", "box_ratios"):
        if o.has(key):
            y, z = o.reals(key, length=2, lo=0, lo_open=True)
            kw.update(y_over_x=y, z_over_x=z)
    try:
        shape = shapes[name](**kw)
    except TypeError:
        raise ConfigError(f"{o.where}: {sorted(kw)} do not apply to shape {name!r}") from None
    except ConfigError as exc:
        raise ConfigError(f"{o.where}: {exc}") from None
    mat, eps_max = _material(o, unit)
    n_domains = shape.n_domains
    if n_domains > 1 and not isinstance(mat, tuple):
        raise ConfigError(
            f"{o.name('eps')}: shape {name!r} has {n_domains} domains; give eps = [shell, core]"
        )
    if isinstance(mat, tuple) and len(mat) != n_domains:
        raise ConfigError(
            f"{o.name('eps')}: shape {name!r} has {n_domains} domain(s), got {len(mat)} permittivities"
        )
    obj = scene.Object(
        shape,
        mat,
        center=o.reals("center", length=3, default=[0.0, 0.0, 0.0]),
        size=o.positive("size"),
        rotation=o.reals("rotation", length=3, default=None),
    )
    return [(obj, eps_max)]


def _inside(t: Table, key: str, lo, hi, region, dx: float) -> None:
    """Refuse a position (lo == hi) or box [lo, hi] reaching past the region (the CPML
    outside it); half a cell of slack for the snapping to nodes."""
    for ax in range(3):
        a, b = region[0][ax] - dx / 2, region[1][ax] + dx / 2
        if lo[ax] < a - 1e-12 or hi[ax] > b + 1e-12:
            span = f"{lo[ax]:.6g}" if lo[ax] == hi[ax] else f"{lo[ax]:.6g} .. {hi[ax]:.6g}"
            raise ConfigError(
                f"{t.name(key)}: {'xyz'[ax]} = {span} lies outside the region (the CPML outside it); "
                f"allowed: {region[0][ax]:.6g} <= {'xyz'[ax]} <= {region[1][ax]:.6g}"
            )


def _box(t: Table, region, dx: float, *, plane: bool = False):
    center = t.reals("center", length=3, default=[0.0, 0.0, 0.0])
    size = t.reals("size", length=3, lo=0)
    zeros = sum(v == 0 for v in size)
    if plane and zeros != 1:
        raise ConfigError(f"{t.name('size')} must be 0 along exactly one axis (the normal), got {list(size)}")
    if not plane and zeros:
        raise ConfigError(f"{t.name('size')} must be > 0 along every axis, got {list(size)}")
    _inside(
        t,
        "size",
        [c - s / 2 for c, s in zip(center, size)],
        [c + s / 2 for c, s in zip(center, size)],
        region,
        dx,
    )
    return center, size


def build_physical(cfg: dict, base_dir=None):
    """(Simulation, steps, until, chunk, checkpoint) from a parsed ``[simulation]`` config.

    Every key is checked (type, range, required; unknown keys refused, naming the allowed
    ones) and so is the physics that needs no grid: sources and monitors inside the region
    (the CPML outside it), objects overlapping it, frequencies resolved by >= 2 cells per
    wavelength in the densest medium (a warning below 5), features thinner than 2 cells (a
    warning). Nothing grid-sized is allocated here."""
    from .. import scene
    from .grid import CPML, PEC, Bloch, Periodic
    from .physical import (
        CrossSections,
        Dipole,
        FieldPlane,
        FluxBox,
        FluxPlane,
        PlaneCurrent,
        PlaneWaveSource,
        Simulation,
    )

    top = Table(cfg, "", TOP_KEYS)
    s = top.sub("simulation", SIM_KEYS, required=True)
    size = s.reals("size", length=3)
    for ax, v in enumerate(size):
        if v <= 0:
            raise ConfigError(f"[simulation].size[{ax}] must be > 0, got {v!r}")
    resolution = s.positive("resolution")
    dx = 1.0 / resolution
    center = s.reals("center", length=3, default=[0.0, 0.0, 0.0])
    names = s.get("boundary", "cpml")
    names = names if isinstance(names, list) else [names] * 3
    if len(names) != 3:
        raise ConfigError(f"[simulation].boundary must be one name or three, got {names!r}")
    for ax, name in enumerate(names):
        if name not in BOUNDARIES:
            raise ConfigError(
                f"[simulation].boundary{'' if not isinstance(s.get('boundary'), list) else f'[{ax}]'} "
                f"must be one of {', '.join(BOUNDARIES)}, got {name!r}"
            )
    k = s.get("bloch_k", [0.0, 0.0, 0.0])
    if not (isinstance(k, list) and len(k) == 3):
        raise ConfigError(f"[simulation].bloch_k must be three numbers (rad / length), got {k!r}")
    k = s.reals("bloch_k", length=3, default=[0.0, 0.0, 0.0])
    if s.has("bloch_k") and "bloch" not in names:
        raise ConfigError('[simulation].bloch_k needs boundary = "bloch" on the axes it applies to')
    thickness = s.int("pml_thickness", default=10, lo=1)
    averaging = s.choice("averaging", ("subpixel", "diagonal", "staircase"), default="subpixel")
    precision = s.choice("precision", ("single", "double"), default="single")
    courant = s.real("courant", default=None, lo=0, lo_open=True, hi=1.0)
    background = s.real("background", default=1.0, lo=1.0)
    unit = s.choice("unit", tuple(catalog.UNITS), default=None)  # the length unit, for library materials
    from .symmetry import check_values

    try:
        symmetry = check_values(s.get("symmetry", [0, 0, 0]))
    except ConfigError as exc:
        raise ConfigError(f"[simulation].{exc}") from None
    bds = []
    for ax, name in enumerate(names):
        if name == "cpml":
            bds.append(CPML(thickness))
        elif name in ("pec", "periodic"):
            bds.append(PEC() if name == "pec" else Periodic())
        else:
            bds.append(Bloch(float(k[ax])))
    region = (
        [c - v / 2 for c, v in zip(center, size)],
        [c + v / 2 for c, v in zip(center, size)],
    )

    objects, eps_max = [], background
    tables = top.tables("objects", OBJECT_KEYS)
    for o, (obj, e) in ((t, pair) for t in tables for pair in _object(t, unit, base_dir)):
        lo, hi = obj.bounds()
        for ax in range(3):
            if hi[ax] <= region[0][ax] or lo[ax] >= region[1][ax]:
                raise ConfigError(
                    f"{o.where} spans {'xyz'[ax]} = {lo[ax]:.6g} .. {hi[ax]:.6g}, outside the region "
                    f"{region[0][ax]:.6g} .. {region[1][ax]:.6g}: it would not be simulated; move its center"
                )
        feature = float(min(hi - lo))
        if feature < MIN_FEATURE_CELLS * dx:
            warnings.warn(
                f"{o.where}: its smallest extent ({feature:.4g}) spans {feature / dx:.2g} cells "
                f"(< {MIN_FEATURE_CELLS}); raise [simulation].resolution above "
                f"{MIN_FEATURE_CELLS / feature:.3g}",
                stacklevel=2,
            )
        objects.append(obj)
        if e is not None:
            eps_max = max(eps_max, e)
    n_max = math.sqrt(eps_max)
    sc = scene.Scene(objects, background=background) if objects else None

    srcs = []
    plane_wave = None
    for src in top.tables("sources"):
        kind = src.choice("type", tuple(SOURCE_KEYS), default="plane_wave")
        if kind == "plane_wave":
            if plane_wave is not None:
                raise ConfigError(
                    f"{src.name('type')}: at most one plane_wave source per simulation ({plane_wave} is one)"
                )
            plane_wave = src.where
        Table(src.table, src.where, SOURCE_KEYS[kind])
        wf = waveform(src.table, src.where)
        _resolution(_highest_frequency(wf), dx, n_max, src.where)
        if kind == "plane_wave":
            c, sz = _box(src, region, dx)
            direction = src.reals("direction", length=3, default=[0.0, 0.0, 1.0])
            if not any(direction):
                raise ConfigError(f"{src.name('direction')} must be a non-zero vector, got {list(direction)}")
            pol = src.reals("polarization", length=3, default=[1.0, 0.0, 0.0])
            try:
                srcs.append(PlaneWaveSource(c, sz, direction, pol, wf))
            except ConfigError as exc:
                raise ConfigError(f"{src.where}: {exc}") from None
        elif kind == "dipole":
            pos = src.reals("position", length=3)
            _inside(src, "position", pos, pos, region, dx)
            comp = src.choice("component", ("x", "y", "z"), default="z")
            amp = src.real("amplitude", default=1.0)
            if amp == 0:
                raise ConfigError(f"{src.name('amplitude')} must not be 0")
            srcs.append(Dipole(pos, comp, wf, amp))
        else:
            axis = src.choice("axis", ("x", "y", "z"), default="z")
            a = "xyz".index(axis)
            pos = src.real("position", lo=region[0][a] - dx / 2, hi=region[1][a] + dx / 2)
            pol = src.reals("polarization", length=3, default=[1.0, 0.0, 0.0])
            amp = src.real("amplitude", default=1.0)
            if amp == 0:
                raise ConfigError(f"{src.name('amplitude')} must not be 0")
            for ax, b in enumerate(bds):
                if ax != a and not isinstance(b, (Periodic, Bloch)):
                    raise ConfigError(
                        f"{src.where}: a plane_current needs boundary periodic or bloch along "
                        f"{'xyz'[ax]} (its plane), got {names[ax]!r}"
                    )
            try:
                srcs.append(PlaneCurrent(pos, axis, pol, wf, amp))
            except ConfigError as exc:
                raise ConfigError(f"{src.where}: {exc}") from None

    mons, names_seen = [], {}
    for i, m in enumerate(top.tables("monitors")):
        kind = m.choice("type", tuple(MONITOR_KEYS))
        Table(m.table, m.where, MONITOR_KEYS[kind])
        freqs = m.reals("frequencies", lo=0, lo_open=True)
        _resolution(max(freqs), dx, n_max, m.name("frequencies"))
        if kind == "cross_sections":
            if plane_wave is None:
                raise ConfigError(
                    f"{m.name('type')} = 'cross_sections' needs a plane_wave source (the TF/SF box it "
                    "measures around)"
                )
            mons.append(
                CrossSections(freqs, m.int("gap_out", default=3, lo=1), m.int("gap_in", default=2, lo=2))
            )
            continue
        c, sz = _box(m, region, dx, plane=kind != "flux_box")
        name = m.string("name", default=f"monitor{i}", what="a name (a string)")
        if name in names_seen:
            raise ConfigError(
                f"{m.name('name')} = {name!r} is taken by {names_seen[name]}; names must differ"
            )
        names_seen[name] = m.where
        cls = {"flux_box": FluxBox, "flux_plane": FluxPlane, "field_plane": FieldPlane}[kind]
        mons.append(cls(c, sz, freqs, name))
    probes = []
    for p in top.tables("probes", PROBE_KEYS):
        probes.append(
            (
                p.reals("position", length=3),
                p.choice("component", ("x", "y", "z"), default="z"),
                p.choice("field", ("E", "H"), default="E"),
            )
        )
    try:
        sim = Simulation(
            probes=tuple(probes),
            size=size,
            resolution=resolution,
            scene=sc,
            sources=srcs,
            monitors=mons,
            boundary=tuple(bds),
            center=center,
            averaging=averaging,
            precision=precision,
            courant=courant,
            symmetry=symmetry,
        )
    except ConfigError as exc:  # the grid's checks (courant limit, cells vs CPML)
        raise ConfigError(f"[simulation]: {exc}") from None
    run = top.sub("run", RUN_KEYS)
    if run.has("steps") == run.has("until"):
        raise ConfigError("[run] needs steps or until (a time in length / c), one of them")
    steps = run.int("steps", default=None, lo=1)
    until = run.real("until", default=None, lo=0, lo_open=True)
    chunk = run.int("chunk", default=None, lo=1)
    checkpoint = run.string("checkpoint", default=None, what="a file path (a string)")
    out_of_core_option(cfg)
    return sim, steps, until, chunk, checkpoint
