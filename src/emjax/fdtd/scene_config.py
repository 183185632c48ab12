"""The physical-unit TOML config of ``emjax fdtd`` (a ``[simulation]`` table), mapped onto
:class:`emjax.fdtd.Simulation` (see examples/fdtd_sphere.toml)::

    [simulation]
    size = [1.0, 1.0, 1.0]          # the region, CPML excluded (any length unit)
    resolution = 40                 # cells per unit length
    center = [0, 0, 0]
    boundary = "cpml"               # or "pec", "periodic", "bloch", or one per axis
    bloch_k = [0, 0, 0]             # the Bloch wavevector (rad / length) of "bloch" axes
    pml_thickness = 10              # cells
    averaging = "subpixel"          # or "staircase"
    precision = "single"
    background = 1.0                # eps of the background

    [[objects]]                     # later objects override earlier ones
    shape = "sphere"                # sphere, ellipsoid, box, cylinder, coated, prism,
                                    # polygon_prism, rosette; 2-D grids: disk, rectangle, polygon
    size = 0.48                     # extent along the shape's own x
    center = [0, 0, 0]
    rotation = [0, 0, 0]            # ZYZ Euler angles, degrees
    eps = 6.0                       # or: pec = true, or drude = {eps_inf, omega_p, gamma}
                                    #     or lorentz = {eps_inf, delta_eps, omega_0, gamma}
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

    [[monitors]]
    type = "cross_sections"         # or "flux_box" (center, size, name), "flux_plane",
                                    # "field_plane" (E, H on the plane: NAME.nc with --out)
    frequencies = [0.9, 1.0, 1.1]

    [run]
    until = 120                     # time in length / c (or steps = N); chunk, checkpoint
"""

from __future__ import annotations

from ..config import check_keys, dispersive_material
from ..errors import ConfigError
from .config import waveform

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
}
SHAPE_OPTIONS = {"aspect", "core_ratio", "semi_axes", "box_ratios", "vertices"}


def _material(o: dict, where: str):
    from .. import scene

    given = [k for k in ("eps", "pec", "drude", "lorentz") if k in o]
    if len(given) != 1:
        raise ConfigError(f"{where}: give exactly one of eps, pec, drude, lorentz (got {given or 'none'})")
    k = given[0]
    if k == "eps":
        v = o["eps"]
        return [float(x) for x in v] if isinstance(v, list) else float(v)
    if k == "pec":
        if o["pec"] is not True:
            raise ConfigError(f"{where}.pec must be true")
        return scene.PEC
    return dispersive_material(k, o[k], where)


def _object(o: dict, i: int):
    from .. import scene
    from ..geometry import SHAPES as SHAPES_3D
    from ..geometry import SHAPES_2D, PolygonPrism

    SHAPES = {**SHAPES_3D, **SHAPES_2D, "polygon_prism": PolygonPrism}
    where = f"objects[{i}]"
    check_keys(
        o, {"shape", "size", "center", "rotation", "eps", "pec", "drude", "lorentz"} | SHAPE_OPTIONS, where
    )
    name = o.get("shape")
    if not isinstance(name, str) or name.lower() not in SHAPES:
        raise ConfigError(f"{where}.shape must be one of {', '.join(sorted(SHAPES))}; got {name!r}")
    kw = {}
    if "aspect" in o:
        kw["aspect"] = o["aspect"]
    if "core_ratio" in o:
        kw["core_ratio"] = o["core_ratio"]
    if "vertices" in o:  # polygon (2-D) and polygon_prism: [[x, y], ...]
        kw["vertices"] = o["vertices"]
    for key in ("semi_axes", "box_ratios"):
        if key in o:
            y, z = o[key]
            kw.update(y_over_x=y, z_over_x=z)
    try:
        shape = SHAPES[name.lower()](**kw)
    except TypeError:
        raise ConfigError(f"{where}: {sorted(kw)} do not apply to shape {name!r}") from None
    mat = _material(o, where)
    if isinstance(mat, list):
        mat = tuple(mat)
    if "size" not in o:
        raise ConfigError(f"{where}.size is required (extent along the shape's x)")
    return scene.Object(
        shape, mat, center=o.get("center", (0, 0, 0)), size=o["size"], rotation=o.get("rotation")
    )


def build_physical(cfg: dict):
    """(Simulation, steps, until, chunk, checkpoint) from a parsed ``[simulation]`` config."""
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

    check_keys(cfg, {"simulation", "objects", "sources", "monitors", "probes", "run"}, "config")
    s = dict(cfg["simulation"])
    check_keys(s, SIM_KEYS, "[simulation]")
    for key in ("size", "resolution"):
        if key not in s:
            raise ConfigError(f"[simulation].{key} is required")
    names = s.get("boundary", "cpml")
    names = names if isinstance(names, list) else [names] * 3
    if len(names) != 3:
        raise ConfigError(f"[simulation].boundary must be one name or three, got {names!r}")
    k = s.get("bloch_k", [0.0, 0.0, 0.0])
    if not (isinstance(k, list) and len(k) == 3 and all(isinstance(v, (int, float)) for v in k)):
        raise ConfigError(f"[simulation].bloch_k must be three numbers (rad / length), got {k!r}")
    if "bloch_k" in s and "bloch" not in names:
        raise ConfigError('[simulation].bloch_k needs boundary = "bloch" on the axes it applies to')
    bds = []
    for ax, name in enumerate(names):
        if name == "cpml":
            bds.append(CPML(s.get("pml_thickness", 10)))
        elif name in ("pec", "periodic"):
            bds.append(PEC() if name == "pec" else Periodic())
        elif name == "bloch":
            bds.append(Bloch(float(k[ax])))
        else:
            raise ConfigError(f"[simulation].boundary must be cpml, pec, periodic or bloch, got {name!r}")
    objects = [_object(dict(o), i) for i, o in enumerate(cfg.get("objects", []))]
    sc = scene.Scene(objects, background=s.get("background", 1.0)) if objects else None
    srcs = []
    for i, src in enumerate(cfg.get("sources", [])):
        where = f"sources[{i}]"
        src = dict(src)
        kind = src.get("type", "plane_wave")
        if kind == "plane_wave":
            check_keys(
                src,
                {
                    "type",
                    "center",
                    "size",
                    "direction",
                    "polarization",
                    "waveform",
                    "frequency",
                    "bandwidth",
                    "ramp",
                },
                where,
            )
            if "size" not in src:
                raise ConfigError(f"{where}.size is required (the total-field box)")
            srcs.append(
                PlaneWaveSource(
                    src.get("center", (0, 0, 0)),
                    src["size"],
                    src.get("direction", (0, 0, 1)),
                    src.get("polarization", (1, 0, 0)),
                    waveform(src, where),
                )
            )
        elif kind == "dipole":
            check_keys(
                src,
                {"type", "position", "component", "amplitude", "waveform", "frequency", "bandwidth", "ramp"},
                where,
            )
            if "position" not in src:
                raise ConfigError(f"{where}.position is required")
            srcs.append(
                Dipole(
                    src["position"],
                    src.get("component", "z"),
                    waveform(src, where),
                    src.get("amplitude", 1.0),
                )
            )
        elif kind == "plane_current":
            keys = {"type", "position", "axis", "polarization", "amplitude", "waveform", "frequency"}
            check_keys(src, keys | {"bandwidth", "ramp"}, where)
            if "position" not in src:
                raise ConfigError(f"{where}.position is required (the sheet's coordinate along axis)")
            srcs.append(
                PlaneCurrent(
                    src["position"],
                    src.get("axis", "z"),
                    src.get("polarization", (1, 0, 0)),
                    waveform(src, where),
                    src.get("amplitude", 1.0),
                )
            )
        else:
            raise ConfigError(f"{where}.type must be plane_wave, dipole or plane_current, got {kind!r}")
    mons = []
    for i, m in enumerate(cfg.get("monitors", [])):
        where = f"monitors[{i}]"
        m = dict(m)
        kind = m.get("type")
        if "frequencies" not in m:
            raise ConfigError(f"{where}.frequencies is required")
        if kind == "cross_sections":
            check_keys(m, {"type", "frequencies", "gap_out", "gap_in"}, where)
            mons.append(CrossSections(m["frequencies"], m.get("gap_out", 3), m.get("gap_in", 2)))
        elif kind in ("flux_box", "flux_plane", "field_plane"):
            check_keys(m, {"type", "frequencies", "center", "size", "name"}, where)
            if "size" not in m:
                raise ConfigError(f"{where}.size is required")
            cls = {"flux_box": FluxBox, "flux_plane": FluxPlane, "field_plane": FieldPlane}[kind]
            mons.append(
                cls(m.get("center", (0, 0, 0)), m["size"], m["frequencies"], m.get("name", f"monitor{i}"))
            )
        else:
            raise ConfigError(
                f"{where}.type must be cross_sections, flux_box, flux_plane or field_plane, got {kind!r}"
            )
    probes = []
    for i, p in enumerate(cfg.get("probes", [])):
        where = f"probes[{i}]"
        p = dict(p)
        check_keys(p, {"position", "component", "field"}, where)
        if "position" not in p:
            raise ConfigError(f"{where}.position is required")
        if p.get("component", "z") not in ("x", "y", "z") or p.get("field", "E") not in ("E", "H"):
            raise ConfigError(f"{where}: component must be x, y or z and field E or H")
        probes.append((tuple(p["position"]), p.get("component", "z"), p.get("field", "E")))
    sim = Simulation(
        probes=tuple(probes),
        size=s["size"],
        resolution=s["resolution"],
        scene=sc,
        sources=srcs,
        monitors=mons,
        boundary=tuple(bds),
        center=s.get("center", (0, 0, 0)),
        averaging=s.get("averaging", "subpixel"),
        precision=s.get("precision", "single"),
        courant=s.get("courant"),
    )
    run = dict(cfg.get("run", {}))
    check_keys(run, {"steps", "until", "chunk", "checkpoint"}, "[run]")
    if ("steps" in run) == ("until" in run):
        raise ConfigError("[run] needs steps or until (a time in length / c), one of them")
    return sim, run.get("steps"), run.get("until"), run.get("chunk"), run.get("checkpoint")
