"""The TOML config of ``emjax fdfd``, mapped onto :class:`FDFDProblem` (see
examples/fdfd_cylinder.toml; every key with its type, range and default: docs/toml.md)::

    dims = 2                    # 2 or 3
    wavelength = 1.0            # vacuum wavelength; the length unit of everything else
    resolution = 40             # cells per vacuum wavelength (>= 5)
    polarization = "TM"         # 2-D: "TM" (E_z) or "TE" (H_z); 3-D: E vector [ex, ey, ez]
    direction = [1.0, 0.0, 0.0] # incident propagation direction (2-D: in the xy plane)
    size = [3.0, 3.0]           # region inside the PML, centred at `center` (3-D: 3 numbers)
    center = [0.0, 0.0]
    pml_cells = 12              # SC-PML thickness in cells, outside `size`
    averaging = "subpixel"      # or "staircase"
    stencil = "compact"         # 2-D: or "yee" (five-point; 3-D is always Yee)
    precision = "double"        # 3-D iterative solves: or "single"
    unit = "um"                 # the length unit (needed by library materials)

    [[objects]]                 # later objects override earlier ones
    shape = "cylinder"          # 2-D: cylinder (circle), box, ellipse, polygon
                                # 3-D: sphere, box, cylinder (axis z, turned by rotation), ellipsoid
                                # from files: stl (3-D), gds (emjax.cad_config lists their keys)
    center = [0.0, 0.0]
    radius = 0.5                # cylinder, sphere; box: size = [sx, sy(, sz)];
                                # ellipse/ellipsoid: semi_axes; polygon: vertices = [[x, y], ...]
                                # 3-D cylinder: height; rotation: degrees (2-D: about z;
                                # 3-D: ZYZ Euler angles [alpha, beta, gamma])
    material = "pec"            # or a library material ("Au", "SiO2", ...: needs unit),
                                # or eps = 4.0 ("4+0.1j" or [re, im]), n = 1.5 (or [n, k]),
                                # eps_diag = [exx, eyy, ezz] (lab axes),
                                # drude = {eps_inf, omega_p, gamma}, lorentz = {...}
                                # (angular frequencies in rad per length unit: 2 pi / wavelength)

    [rcs]
    angles = 721                # 2-D: phi from 0 to 360 deg from +x in the xy plane;
                                # 3-D: theta from 0 to 180 deg from the incident direction,
                                # in the E- and the H-plane; or a list of angles (degrees)

    [monostatic]                # optional: backscatter vs incidence angle, one factorization
    angles = 72                 # 2-D: incidence phi over [0, 360) (or a list, degrees);
                                # 3-D: the direction turned about the E vector over [0, 360)

    [solver]
    type = "direct"             # or "qmr", "bicgstab" (iterative, 3-D)
    rtol = 1e-6
    maxiter = 20000

Units as the solvers': ``resolution`` here counts cells per *wavelength*; the Python
solvers take cells per unit length (``resolution / wavelength``) and ``frequency = 1 /
wavelength``. Nothing here imports JAX (``emjax --help`` stays fast).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..config import Table, dispersive_material, number, parse_complex, parse_refractive_index
from ..errors import ConfigError, require_int, require_positive
from ..materials import DiagonalAnisotropic

__all__ = ["FDFDProblem", "MIN_RESOLUTION", "build_fdfd", "resolution_warnings"]

#: the fewest cells per vacuum wavelength accepted (the Yee grid's phase error is ~8% there)
MIN_RESOLUTION = 5.0
#: object surfaces stay this many cells inside the region: the far-field contour runs 3
#: cells inside it and takes centred differences
CONTOUR_CELLS = 4
TOP_KEYS = {
    "dims",
    "wavelength",
    "resolution",
    "polarization",
    "direction",
    "size",
    "center",
    "pml_cells",
    "averaging",
    "stencil",
    "precision",
    "objects",
    "rcs",
    "monostatic",
    "solver",
    "unit",
}
MATERIAL_KEYS = {"material", "eps", "eps_diag", "n", "drude", "lorentz"}
#: per dimension and shape: the geometry keys (besides shape, center, material keys)
SHAPE_KEYS = {
    2: {
        "cylinder": {"radius"},
        "box": {"size", "rotation"},
        "ellipse": {"semi_axes", "rotation"},
        "polygon": {"vertices"},
        "gds": {"file", "layer", "datatype", "cell", "sidewall_angle"},
    },
    3: {
        "sphere": {"radius"},
        "box": {"size", "rotation"},
        "cylinder": {"radius", "height", "rotation"},
        "ellipsoid": {"semi_axes", "rotation"},
        "stl": {"file", "scale", "size", "rotation"},
        "gds": {"file", "layer", "datatype", "z", "cell", "sidewall_angle"},
    },
}
SOLVER_TYPES = ("direct", "qmr", "bicgstab", "multigrid")


@dataclass(frozen=True, eq=False)
class FDFDProblem:
    """A plane-wave scattering problem for :func:`emjax.fdfd.solve_rcs`.

    Lengths in the wavelength's unit; ``resolution`` in cells per vacuum wavelength;
    ``polarization`` "TM"/"TE" (2-D) or the incident E vector (3-D, complex allowed);
    ``direction`` a unit 3-vector; ``rcs_angles`` and ``monostatic_angles`` in degrees (see
    the module docstring); ``solver`` None (the solver's default), an
    ``emjax.fdfd.solvers.Direct`` or ``Iterative``; ``objects`` the TOML object tables
    (for the record), ``scene`` the :class:`emjax.scene.Scene` built from them."""

    dims: int
    wavelength: float
    resolution: float
    polarization: object
    direction: tuple
    size: tuple
    center: tuple
    pml_cells: int
    scene: object
    averaging: str
    precision: str
    solver: object
    solver_type: str
    rcs_angles: np.ndarray
    monostatic_angles: np.ndarray | None
    objects: tuple = ()
    features: tuple = ()  # per object: its smallest length (resolution warnings)
    stencil: str = "compact"  # 2-D: "compact" or "yee" (emjax.fdfd.tm)

    @property
    def frequency(self) -> float:
        """1 / wavelength (the solvers' frequency)."""
        return 1.0 / self.wavelength

    @property
    def cells_per_length(self) -> float:
        """The solvers' ``resolution``: cells per unit length."""
        return self.resolution / self.wavelength

    @property
    def dx(self) -> float:
        return self.wavelength / self.resolution

    @property
    def incidence_angle(self) -> float:
        """2-D: the incident direction's angle from +x in the xy plane, degrees."""
        return math.degrees(math.atan2(self.direction[1], self.direction[0]))


def _numbers(value, field: str, n: int | tuple) -> list[float]:
    counts = (n,) if isinstance(n, int) else n
    if not isinstance(value, (list, tuple)) or len(value) not in counts:
        want = " or ".join(str(c) for c in counts)
        raise ConfigError(f"{field} must be a list of {want} numbers, got {value!r}")
    bad = ConfigError(f"{field} must hold finite numbers, got {value!r}")
    out = [number(v, bad) for v in value]
    if not all(math.isfinite(v) for v in out):
        raise bad
    return out


def _angles(value, field: str, full: float, endpoint: bool) -> np.ndarray:
    """An angle count N (evenly over [0, full], or [0, full) without ``endpoint``) or a list
    of angles in degrees."""
    if isinstance(value, list):
        if not value:
            raise ConfigError(f"{field} must not be empty")
        return np.asarray(_numbers(value, field, len(value)))
    n = require_int(field, value, 1, 100_000)
    return np.linspace(0.0, full, n, endpoint=endpoint) if n > 1 else np.zeros(1)


def _material(o: dict, where: str, unit=None):
    from .. import scene
    from ..materials import catalog

    given = [k for k in MATERIAL_KEYS if k in o]
    if len(given) != 1:
        raise ConfigError(
            f'{where}: give exactly one of material = "pec", eps, eps_diag, n, drude, lorentz '
            f"(got {given or 'none'})"
        )
    k = given[0]
    if k == "material":  # "pec" or a library material (in the config's length unit)
        if isinstance(o[k], str) and o[k].lower() == "pec":
            return scene.PEC
        return catalog.from_config(o[k], where, unit, extra=("pec",))
    if k in ("drude", "lorentz"):
        return dispersive_material(k, o[k], where)
    if k == "eps_diag":  # [exx, eyy, ezz], each as eps
        v = o[k]
        if not isinstance(v, list) or len(v) != 3:
            raise ConfigError(f"{where}.eps_diag must be a list of 3 permittivities [xx, yy, zz], got {v!r}")
        comps = []
        for c, e in zip("xyz", v):
            z = parse_complex(e, f"{where}.eps_diag[{c}{c}]")
            if not (math.isfinite(z.real) and math.isfinite(z.imag)) or z.imag < 0:
                raise ConfigError(f"{where}.eps_diag[{c}{c}] must be finite with Im >= 0, got {e!r}")
            comps.append(z)
        return DiagonalAnisotropic(*comps)
    if k == "eps":
        eps = parse_complex(o[k], f"{where}.eps")
    else:
        eps = parse_refractive_index(o[k], f"{where}.n") ** 2
    if not (math.isfinite(eps.real) and math.isfinite(eps.imag)):
        raise ConfigError(f"{where}.{k} must be finite, got {o[k]!r}")
    if eps.imag < 0:
        raise ConfigError(f"{where}.{k}: Im eps must be >= 0 (exp(-i omega t): absorption), got {o[k]!r}")
    return eps.real if eps.imag == 0 else eps


def _objects(o, i: int, dims: int, unit=None, base_dir=None) -> list:
    """[(scene.Object, smallest feature length)] of one ``[[objects]]`` table: one, or a
    file shape's several (:mod:`emjax.cad_config`; paths relative to ``base_dir``)."""
    from .. import geometry, scene

    where = f"objects[{i}]"
    t = Table(o, where)
    shapes = SHAPE_KEYS[dims]
    name = t.choice("shape", tuple(shapes), fold=True)
    Table(o, where, {"shape", "center"} | MATERIAL_KEYS | shapes[name])
    mat = _material(o, where, unit)
    if name in ("stl", "gds"):
        from ..cad_config import file_objects

        objs = file_objects(t, name, mat, base_dir, dims=dims)
        return [(obj, float(min((obj.bounds()[1] - obj.bounds()[0])[:dims]))) for obj in objs]
    c = t.reals("center", length=dims, default=[0.0] * dims)
    center = (c[0], c[1], 0.0) if dims == 2 else tuple(c)

    def need(key):
        if key not in o:
            raise ConfigError(f"{where}.{key} is required for shape {name!r}")
        return o[key]

    def positive(key, value):
        return t.positive(key)

    rotation = None
    if "rotation" in o:
        if dims == 2:
            if not isinstance(o["rotation"], (int, float)) or isinstance(o["rotation"], bool):
                raise ConfigError(
                    f"{where}.rotation must be one angle (degrees) in 2-D, got {o['rotation']!r}"
                )
            rotation = (t.real("rotation"), 0.0, 0.0)
        else:
            rotation = t.reals("rotation", length=3)
    if name in ("cylinder", "sphere"):
        r = positive("radius", need("radius"))
        if name == "sphere":
            shape, size, feature = geometry.Sphere(), 2 * r, 2 * r
        elif dims == 2:
            shape, size, feature = geometry.Disk(), 2 * r, 2 * r
        else:
            h = positive("height", need("height"))
            shape, size, feature = geometry.Cylinder(aspect=h / (2 * r)), 2 * r, min(2 * r, h)
    elif name == "box":
        s = [
            require_positive(f"{where}.size[{k}]", v)
            for k, v in enumerate(_numbers(need("size"), f"{where}.size", dims))
        ]
        shape = geometry.Rectangle(s[1] / s[0]) if dims == 2 else geometry.Box(s[1] / s[0], s[2] / s[0])
        size, feature = s[0], min(s)
    elif name in ("ellipse", "ellipsoid"):
        a = _numbers(need("semi_axes"), f"{where}.semi_axes", dims)
        a = [require_positive(f"{where}.semi_axes[{k}]", v) for k, v in enumerate(a)]
        # a 2-D ellipse: an ellipsoid far longer along z than the grid's one cell
        z_over_x = 1e9 if dims == 2 else a[2] / a[0]
        shape, size, feature = geometry.Ellipsoid(a[1] / a[0], z_over_x), 2 * a[0], 2 * min(a)
    else:  # polygon: absolute vertices; the shape is normalized to its bounding box
        v = need("vertices")
        if not isinstance(v, list) or len(v) < 3:
            raise ConfigError(f"{where}.vertices must be a list of >= 3 [x, y] pairs, got {v!r}")
        v = np.asarray([_numbers(p, f"{where}.vertices[{k}]", 2) for k, p in enumerate(v)])
        lo, hi = v.min(0), v.max(0)
        if np.any(hi - lo <= 0):
            raise ConfigError(f"{where}.vertices span no area: {v.tolist()}")
        shape, size, feature = geometry.Polygon(vertices=v), float(hi[0] - lo[0]), float(np.min(hi - lo))
        if "center" in o:
            raise ConfigError(f"{where}: a polygon is placed by its vertices; leave out center")
        center = (float(lo[0] + hi[0]) / 2, float(lo[1] + hi[1]) / 2, 0.0)
    return [(scene.Object(shape, mat, center=center, size=size, rotation=rotation), feature)]


def _solver(cfg, dims: int):
    """(solver object or None, type name) from ``[solver]``."""
    t = Table(cfg, "").sub("solver", {"type", "rtol", "maxiter"})
    table = t.table
    kind = t.choice("type", SOLVER_TYPES, default="auto" if dims == 3 else "direct", fold=True)
    rtol = t.real("rtol", default=1e-6, lo=0, lo_open=True, hi=1, hi_open=True)
    maxiter = t.int("maxiter", default=20_000, lo=1, hi=10_000_000)
    if dims == 2 and kind != "direct":
        raise ConfigError(
            f"[solver].type = {kind!r}: the 2-D solvers are direct only (SuperLU on the host, the block "
            'Thomas algorithm on a GPU); use type = "direct" (or dims = 3)'
        )
    if kind in ("direct", "auto"):
        if set(table) & {"rtol", "maxiter"}:
            raise ConfigError(
                f"[solver]: rtol and maxiter apply to qmr, bicgstab and multigrid, not {kind!r}"
            )
        if kind == "auto":
            return None, kind
    from ..krylov import QMR, BiCGStab
    from .solvers import Direct, Iterative

    if kind == "direct":
        return Direct(), kind
    if kind == "multigrid":  # COCG preconditioned by the shifted-Laplacian V-cycle
        from ..krylov.preconditioned import PCOCG

        return Iterative(method=PCOCG(rtol=rtol, maxiter=maxiter), preconditioner="multigrid"), kind
    method = (QMR if kind == "qmr" else BiCGStab)(rtol=rtol, maxiter=maxiter)
    return Iterative(method=method), kind


def _polarization(cfg, dims: int, direction: np.ndarray):
    if dims == 2:
        pol = cfg.get("polarization", "TM")
        if not isinstance(pol, str) or pol.upper() not in ("TM", "TE"):
            raise ConfigError(f'polarization must be "TM" (E_z) or "TE" (H_z) in 2-D, got {pol!r}')
        return pol.upper()
    pol = cfg.get("polarization", [0.0, 0.0, 1.0])
    if not isinstance(pol, list) or len(pol) != 3:
        raise ConfigError(f"polarization must be the incident E vector [ex, ey, ez] in 3-D, got {pol!r}")
    e = np.array([parse_complex(v, f"polarization[{k}]") for k, v in enumerate(pol)])
    if not np.all(np.isfinite(e)) or np.linalg.norm(e) == 0:
        raise ConfigError(f"polarization must be a non-zero finite vector [ex, ey, ez], got {pol!r}")
    dot = abs(np.dot(direction, e)) / np.linalg.norm(e)
    if dot > 1e-6:
        raise ConfigError(
            f"polarization {pol!r} must be orthogonal to direction {direction.tolist()} "
            f"(|d . e| / |e| = {dot:.3g}; allowed: <= 1e-6)"
        )
    return tuple(complex(v) if v.imag else float(v.real) for v in e)


def build_fdfd(cfg: dict, base_dir=None) -> FDFDProblem:
    """An :class:`FDFDProblem` from a parsed TOML config; :class:`ConfigError` naming the
    field and its allowed values for anything invalid (checked before anything is
    allocated). ``base_dir``: the folder that objects' ``file`` paths are relative to
    (the TOML file's; None: the working directory)."""
    from .. import scene
    from ..materials import catalog

    top = Table(cfg, "", TOP_KEYS)
    dims = cfg.get("dims", 2)
    if isinstance(dims, bool) or dims not in (2, 3):
        raise ConfigError(f"dims must be 2 or 3, got {dims!r}")
    dims = int(dims)
    wavelength = top.positive("wavelength")
    resolution = top.positive("resolution")
    if resolution < MIN_RESOLUTION:
        raise ConfigError(
            f"resolution must be >= {MIN_RESOLUTION:g} cells per wavelength (10-20 for a few per cent), "
            f"got {cfg['resolution']!r}"
        )
    d = _numbers(cfg.get("direction", [1.0, 0.0, 0.0]), "direction", (2, 3) if dims == 2 else 3)
    d = np.asarray(d + [0.0] * (3 - len(d)))
    if np.linalg.norm(d) == 0:
        raise ConfigError("direction must be a non-zero vector")
    d = d / np.linalg.norm(d)
    if dims == 2 and abs(d[2]) > 1e-12:
        raise ConfigError(
            f"direction must lie in the xy plane in 2-D (its z component 0), got {cfg['direction']!r}"
        )
    pol = _polarization(cfg, dims, d)
    size = top.reals("size", length=dims, lo=0, lo_open=True)
    center = top.reals("center", length=dims, default=[0.0] * dims)
    pml = top.int("pml_cells", default=12, lo=1, hi=200)
    averaging = top.choice("averaging", ("subpixel", "staircase"), default="subpixel")
    stencil = cfg.get("stencil", "compact" if dims == 2 else "yee")
    if stencil not in ("compact", "yee"):
        raise ConfigError(f'stencil must be "compact" or "yee", got {stencil!r}')
    if dims == 3 and stencil != "yee":
        raise ConfigError('stencil = "compact" is 2-D only; 3-D solves use the Yee stencil ("yee")')
    precision = top.choice("precision", ("single", "double"), default="double")
    solver, solver_type = _solver(cfg, dims)
    if precision == "single" and (dims == 2 or solver_type == "direct"):
        raise ConfigError('precision = "single" applies to 3-D iterative solves only (qmr, bicgstab)')

    raw = [t.table for t in top.tables("objects")]
    unit = top.choice("unit", tuple(catalog.UNITS), default=None)  # for library materials
    tables = [(i, _objects(o, i, dims, unit, base_dir)) for i, o in enumerate(raw)]
    dx = wavelength / resolution
    for i, objs in tables:
        for obj, _ in objs:
            _check_placement(obj, i, dims, size, center, dx)
    built = [pair for _, objs in tables for pair in objs]
    sc = scene.Scene([o for o, _ in built]) if built else None

    rcs = top.sub("rcs", {"angles"}).table
    rcs_angles = _angles(
        rcs.get("angles", 361 if dims == 2 else 181), "[rcs].angles", 360.0 if dims == 2 else 180.0, True
    )
    mono = cfg.get("monostatic")
    mono_angles = None
    if mono is not None:
        mono = top.sub("monostatic", {"angles"}).table
        if "angles" not in mono:
            raise ConfigError("[monostatic].angles is required (a count over [0, 360) or a list, degrees)")
        mono_angles = _angles(mono["angles"], "[monostatic].angles", 360.0, False)
        if dims == 3 and isinstance(pol, tuple) and np.linalg.norm(np.real(pol)) < 1e-12:
            raise ConfigError("[monostatic] in 3-D turns the direction about Re(polarization); it is zero")
    problem = FDFDProblem(
        dims=dims,
        wavelength=wavelength,
        resolution=resolution,
        polarization=pol,
        direction=tuple(float(v) for v in d),
        size=size,
        center=center,
        pml_cells=pml,
        scene=sc,
        averaging=averaging,
        stencil=stencil,
        precision=precision,
        solver=solver,
        solver_type=solver_type,
        rcs_angles=rcs_angles,
        monostatic_angles=mono_angles,
        objects=tuple(dict(o) for o in raw),
        features=tuple(f for _, f in built),
    )
    return problem


def _check_placement(obj, i: int, dims: int, size, center, dx) -> None:
    """The object's bounding box lies inside the region, ``CONTOUR_CELLS`` cells off its
    edges (the PML and the far-field contour are vacuum)."""
    lo, hi = obj.bounds()
    margin = CONTOUR_CELLS * dx
    for k in range(dims):
        a = center[k] - size[k] / 2 + margin
        b = center[k] + size[k] / 2 - margin
        if lo[k] < a - 1e-12 or hi[k] > b + 1e-12:
            axis = "xyz"[k]
            raise ConfigError(
                f"objects[{i}] ({obj.shape.name}) spans {axis} = {lo[k]:.6g} .. {hi[k]:.6g}; "
                f"objects must lie inside the region, {CONTOUR_CELLS} cells off its edges (the PML and "
                f"the far-field contour outside): {a:.6g} <= {axis} <= {b:.6g}. Enlarge size or move it"
            )


def resolution_warnings(problem: FDFDProblem) -> list[str]:
    """Warnings (not errors) when the grid is coarse for the scene: a feature thinner than
    4 cells, or fewer than 8 cells per wavelength inside a material."""
    out = []
    dx = problem.dx
    for i, f in enumerate(problem.features):
        if f < 4 * dx:
            out.append(
                f"objects[{i}]: its smallest feature ({f:.4g}) spans {f / dx:.2g} cells (< 4); "
                f"raise resolution above {4 * problem.wavelength / f:.3g} cells per wavelength"
            )
    if problem.scene is not None:
        omega = 2 * math.pi / problem.wavelength
        for i, obj in enumerate(problem.scene.objects):
            for m in obj.material:
                if isinstance(m, DiagonalAnisotropic):
                    eps = max(m.components(omega), key=abs)  # the densest direction
                else:
                    eps = m.permittivity(omega) if hasattr(m, "permittivity") else m
                try:
                    n = abs(np.sqrt(complex(eps)))
                except TypeError:  # PEC
                    continue
                if problem.resolution / max(n, 1e-12) < 8:
                    out.append(
                        f"objects[{i}]: {problem.resolution / n:.3g} cells per wavelength inside "
                        f"(|n| = {n:.3g}); "
                        f"raise resolution to >= {8 * n:.3g} for a few per cent accuracy"
                    )
    return out
