"""DDA problem spec, solver entry point and result."""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import jax.numpy as jnp
import numpy as np

from .. import krylov
from .. import progress as progress_bars
from ..backend import check_memory, precision, precision_scope
from ..errors import ConfigError, require_finite
from ..geometry import Shape
from ..materials import Material, check_refractive_index, is_traced
from ..scattering import (
    angles_deg,
    euler_matrix,
    mueller_from_amplitude,
    scattering_basis,
)
from ..tracing import primal
from . import interaction, observables
from .lattice import Lattice, build_lattice, plan_grid
from .matvec import DDAOperator, sqrt_alpha_grid
from .polarizability import CM, FCD, LDR, RR
from .results import DDAResult, Efficiencies  # noqa: F401  (Efficiencies: re-exported)
from .surface_solve import _surface_far_field, _surface_result, _surface_setup

_POLARIZABILITY_TYPES = (CM, RR, LDR, FCD)
# vectors kept by the solvers (QMR: x, r, v, v_prev, p1, p2, ap1, ap2 + temporaries)
_KRYLOV_VECTORS = 12


@dataclass(frozen=True, eq=False)
class DDAProblem:
    """A particle, a wavelength and how to discretize and solve it.

    Parameters
    ----------
    shape : an :mod:`emjax.geometry` shape.
    m : refractive index per domain (complex ``n + ik``, ``k >= 0``) or materials.
    wavelength : vacuum wavelength (length unit shared with sizes; default 2 pi, as ADDA).
    size_x / eq_rad : particle size along x, or its volume-equivalent radius (one of them).
    dipoles_per_wavelength : default ``10 |m|_max`` (as ADDA); or give ``grid``.
    grid : dipoles along x (overrides ``dipoles_per_wavelength``).
    polarizability : ``LDR()`` (default), ``CM()``, ``RR()`` or ``FCD()``.
    orientation : ZYZ Euler angles (alpha, beta, gamma) in degrees of the particle.
    precision : ``"double"`` (default) or ``"single"``.
    theta : scattering angles in degrees (default 0..180 step 1).
    phi : azimuths of the scattering planes in degrees (default 90: the yz plane, as ADDA).
    integrate : also compute Csca and g by integrating |F|^2 over all directions.
    volume_correction : scale the dipole size so that the dipoles' volume equals the shape's.
    prop : direction of incidence (x, y, z), normalized (ADDA's ``-prop``); default +z.
        The incident polarizations are then ADDA's: ``e_Y = (-p_y, p_x, 0) / |...|`` (or
        (0, 1, 0) along +-z) and ``e_X = e_Y x prop``; without a substrate the scattering
        angles refer to the beam frame (theta from prop, phi = 90 the plane of prop and
        e_Y), as ADDA's.
    substrate : a complex refractive index (vacuum over a half-space, ADDA's ``-surf h m``)
        or an :class:`emjax.layered.Stack` whose top medium is vacuum (``eps[0] = 1``);
        the particle sits above it. ``prop_z < 0``: light from above (incident plus
        reflected wave); ``prop_z > 0``: from below through a lossless bottom medium (the
        transmitted wave). The default prop (0, 0, 1) is ADDA's: from below. See
        :mod:`emjax.dda.substrate` and ``surface_far`` for the conventions.
    height : with a substrate, the distance from the stack's top interface up to the
        lattice (box) centre (ADDA's ``h``); the voxels must stay above the interface.

    Differentiable inputs (JAX tracers under ``jax.grad``, ``jvp``, ``jit``, ``vmap``): ``m``
    (each entry, e.g. ``n + 1j * k`` with traced ``n``, ``k``), the size (``size_x`` or
    ``eq_rad``) and, with a substrate, ``height`` and the substrate's index or a Stack's
    eps / thicknesses. They are checked on their concrete values where JAX has them. The
    lattice is discrete: it is chosen from the concrete values (the default ``10 |m|`` rule
    or ``dipoles_per_wavelength``) and held fixed, so a size derivative is taken at a fixed
    number of dipoles with the dipole spacing ``d`` proportional to the size (dipoles per
    wavelength change with it; the jumps of the cell count are not differentiated). Inside
    ``jax.jit``/``vmap`` there are no concrete values: a traced size needs ``grid=``, a
    traced ``m`` ``dipoles_per_wavelength=`` or ``grid=`` with a size. :func:`solve` and
    :func:`emjax.dda.average` hand such a problem to :func:`emjax.dda.efficiencies` /
    :func:`emjax.dda.efficiencies_averaged` (adjoint gradients).
    """

    shape: Shape
    m: tuple
    wavelength: float = 2 * math.pi
    size_x: float | None = None
    eq_rad: float | None = None
    dipoles_per_wavelength: float | None = None
    grid: int | None = None
    polarizability: object = field(default_factory=LDR)
    orientation: tuple = (0.0, 0.0, 0.0)
    precision: str = "double"
    theta: tuple | None = None
    phi: tuple = (90.0,)
    integrate: bool = True
    volume_correction: bool = True
    prop: tuple | None = None
    substrate: object = None
    height: float | None = None

    def __post_init__(self):
        if not isinstance(self.shape, Shape):
            raise ConfigError(f"shape must be an emjax.geometry shape, got {self.shape!r}")
        ms = self.m if isinstance(self.m, (tuple, list)) else (self.m,)
        object.__setattr__(self, "m", tuple(ms))
        if len(self.m) != self.shape.n_domains:
            raise ConfigError(
                f"m: shape {self.shape.name!r} has {self.shape.n_domains} domain(s) but "
                f"{len(self.m)} refractive index(es) were given"
            )
        if is_traced(self.wavelength):
            raise ConfigError(
                "wavelength: not differentiable in emjax.dda; the efficiencies depend on k * size and m, "
                "so differentiate the size (eq_rad or size_x) at a fixed wavelength"
            )
        wl = require_finite("wavelength", self.wavelength)
        if wl <= 0:
            raise ConfigError(f"wavelength must be > 0, got {self.wavelength!r}")
        self.refractive_indices()  # validates m
        if not isinstance(self.polarizability, _POLARIZABILITY_TYPES):
            raise ConfigError(
                f"polarizability must be one of CM(), RR(), LDR(), FCD(); got {self.polarizability!r}"
            )
        precision(self.precision)
        if (
            isinstance(self.orientation, str)
            or not hasattr(self.orientation, "__len__")
            or len(self.orientation) != 3
        ):
            raise ConfigError(
                "orientation must be three Euler angles (alpha, beta, gamma) in degrees, got "
                f"{self.orientation!r} (a random-orientation average: emjax.dda.average(problem, ...))"
            )
        for name, a in zip(("alpha", "beta", "gamma"), self.orientation):
            require_finite(f"orientation.{name}", a)
        theta = tuple(np.arange(181.0)) if self.theta is None else angles_deg("theta", self.theta)
        for t in theta:
            if not -360 <= t <= 360:
                raise ConfigError(f"theta values must be finite angles in [-360, 360] deg, got {t}")
        object.__setattr__(self, "theta", theta)
        object.__setattr__(self, "phi", angles_deg("phi", self.phi))
        self._check_incidence()
        plan = self.plan()
        grid = self.shape.box_shape(plan.nx)
        self._check_resources(grid)
        if isinstance(self.polarizability, FCD) and self._traced_size() is None:
            # FCD needs k d < pi (nominal d, before voxels)
            d = plan.d or (plan.size_x / plan.nx if plan.size_x else None)
            if d is not None and self.k * d >= math.pi:
                raise ConfigError(
                    f"FCD needs more than 2 dipoles per wavelength; the lattice has {self.wavelength / d:.3g}"
                )

    def _check_incidence(self):
        if self.prop is not None:
            try:
                p = np.asarray(self.prop, dtype=float)
            except (TypeError, ValueError) as exc:
                raise ConfigError(f"prop must be three numbers (x, y, z), got {self.prop!r}") from exc
            norm = float(np.linalg.norm(p)) if p.shape == (3,) else 0.0
            if p.shape != (3,) or not np.all(np.isfinite(p)) or norm == 0:
                raise ConfigError(f"prop must be three finite numbers, not all zero; got {self.prop!r}")
            object.__setattr__(self, "prop", tuple(float(v) for v in p / norm))
        if self.substrate is None:
            if self.height is not None:
                raise ConfigError("height is only meaningful with a substrate (substrate=...)")
            return
        from .substrate import resolve_stack

        _, eps = resolve_stack(self.substrate, self.wavelength)
        if self.height is None:
            raise ConfigError("height: a substrate needs the height of the lattice centre above it (> 0)")
        # a traced height (jax.grad) is checked on its concrete value where there is one
        h = primal(self.height) if is_traced(self.height) else require_finite("height", self.height)
        if h is not None and float(h) <= 0:
            raise ConfigError(
                f"height must be > 0 (the particle sits above the surface), got {self.height!r}"
            )
        if any(a != 0 for a in self.orientation):
            raise ConfigError(
                "orientation: with a substrate the particle is fixed in the laboratory frame "
                "(as ADDA's surface mode); rotate the shape instead; allowed: (0, 0, 0)"
            )
        pz = self.incidence_direction()[2]
        if abs(pz) < 1e-12:
            raise ConfigError(
                "prop: with a substrate the incidence must come from above (prop_z < 0) or "
                f"below (prop_z > 0); prop_z = 0 (grazing) is not allowed, got prop = {self.prop}"
            )
        from ..tracing import is_traced as _traced

        bottom = primal(eps[-1]) if _traced(eps) else eps[-1]  # None: abstract (inside jit)
        if pz > 0 and bottom is not None and abs(complex(bottom).imag) > 1e-12:
            raise ConfigError(
                f"prop: incidence from below (prop_z > 0) needs a lossless bottom medium; its eps is "
                f"{complex(bottom)} (allowed: Im eps = 0)"
            )

    def incidence_direction(self) -> np.ndarray:
        """Unit propagation direction of the incident wave (lab frame)."""
        return np.array((0.0, 0.0, 1.0) if self.prop is None else self.prop)

    # -- derived, cheap --------------------------------------------------------------------
    def refractive_indices(self) -> tuple[complex, ...]:
        out = []
        for i, m in enumerate(self.m):
            if isinstance(m, Material):
                m = m.refractive_index(self.wavelength)
                m = m if is_traced(m) else complex(np.asarray(m))  # traced: material parameters
            out.append(check_refractive_index(f"m[{i}]", m))
        return tuple(out)

    @property
    def k(self) -> float:
        return 2 * math.pi / self.wavelength

    @property
    def traced(self) -> bool:
        """Whether m, the size or the substrate is a JAX tracer (see the class docstring)."""
        sub = is_traced(self.substrate) or bool(getattr(self.substrate, "traced", False))
        return (
            self._traced_size() is not None
            or any(is_traced(m) for m in self.m)
            or sub
            or is_traced(self.height)
        )

    def _traced_size(self):
        """``(name, value)`` of a traced size_x or eq_rad, else None."""
        for name in ("size_x", "eq_rad"):
            v = getattr(self, name)
            if v is not None and is_traced(v):
                return name, v
        return None

    def plan(self):
        """Cells along x and the size rule. Traced inputs (see the class doc): the lattice is
        chosen from their concrete (primal) values and held fixed; inside ``jax.jit`` or
        ``jax.vmap`` (no concrete values) the inputs must fix it themselves."""
        ms = self.refractive_indices()
        m_abs = [_abs_primal(m) for m in ms]  # None: an abstract tracer
        sized = self.size_x is not None or self.eq_rad is not None
        if None in m_abs and self.dipoles_per_wavelength is None and (self.grid is None or not sized):
            raise ConfigError(
                "m is an abstract tracer (inside jax.jit/vmap): the default lattice (10 |m| dipoles per "
                "wavelength) would depend on it; give grid= with a size, or dipoles_per_wavelength="
            )
        m_max = max((a for a in m_abs if a is not None), default=1.0)
        sizes = dict(size_x=self.size_x, eq_rad=self.eq_rad)
        grid, dpl = self.grid, self.dipoles_per_wavelength
        traced = self._traced_size()
        if traced is not None:
            if grid is None:  # the cells along x from the concrete size, then held fixed
                v = primal(traced[1])
                if v is None:
                    raise ConfigError(
                        f"{traced[0]} is an abstract tracer (inside jax.jit/vmap): the lattice would "
                        "depend on it; give grid= (the size then scales the dipole spacing)"
                    )
                concrete = {**sizes, traced[0]: float(v)}
                wl = self.wavelength
                grid = plan_grid(self.shape, wl, m_max, dipoles_per_wavelength=dpl, **concrete).nx
                dpl = None
            sizes[traced[0]] = 1.0  # a concrete stand-in: d is proportional to the size
        plan = plan_grid(self.shape, self.wavelength, m_max, dipoles_per_wavelength=dpl, grid=grid, **sizes)
        if traced is not None:
            t = traced[1]
            plan = replace(
                plan,
                size_x=None if plan.size_x is None else plan.size_x * t,
                eq_rad=None if plan.eq_rad is None else plan.eq_rad * t,
            )
        return plan

    def memory_bytes(self, grid) -> int:
        c = np.dtype(precision(self.precision).complex).itemsize
        n = math.prod(grid)
        fft = math.prod(interaction.fft_shape(grid))
        octant = 6 * n * 16
        tensors = 6 * fft * c
        if self.substrate is not None:  # the reflected tensor (and its host table) too
            tensors += 6 * fft * c + 6 * fft * 16
        return tensors + 3 * fft * c * 2 + _KRYLOV_VECTORS * 3 * n * 16 + octant

    def _check_resources(self, grid, devices: int | None = None):
        """Refuse a lattice whose memory estimate exceeds one device's free memory after a
        split over ``devices`` (default: every device JAX sees, so that a lattice meant for
        ``solve(layout=...)`` can be built; ``solve`` checks again for its own layout)."""
        import jax

        n = len(jax.devices()) if devices is None else devices
        what = f"DDA on a {grid[0]}x{grid[1]}x{grid[2]} lattice" + (
            f" split over {n} devices" if n > 1 else ""
        )
        check_memory(self.memory_bytes(grid) // n, what)

    def lattice(self) -> Lattice:
        """The voxels and the dipole size (a traced size: ``d`` and ``size_x`` traced)."""
        traced = self._traced_size()
        if traced is None:
            return build_lattice(self.shape, self.plan(), volume_correction=self.volume_correction)
        # every rule of build_lattice gives a d proportional to the size: build at size 1
        unit = replace(self, **{traced[0]: 1.0}, grid=self.plan().nx, dipoles_per_wavelength=None)
        lat = build_lattice(unit.shape, unit.plan(), volume_correction=self.volume_correction)
        return Lattice(lat.domains, lat.d * traced[1], lat.size_x * traced[1])


def _abs_primal(m):
    """|m| of a concrete or traced index (its primal value), None for an abstract tracer."""
    v = primal(m) if is_traced(m) else m
    return None if v is None else abs(complex(v))


def solve(
    problem: DDAProblem,
    solver: krylov._Method | None = None,
    *,
    progress: bool | Callable[[str, int, float], None] = True,
    keep_polarization: bool = False,
    variant: str = "pruned",
    layout=None,
) -> DDAResult:
    """Solve the DDA for both incident polarizations and compute the observables.

    ``progress``: True (default) one bar with the time left for both polarizations, the
    substrate table's build its own (:mod:`emjax.progress`); False none; a callable is
    called as ``progress(label, iterations, relative_residual)`` between solver chunks.
    ``layout``: devices to split the lattice over in slabs along x (a Layout, a count or a
    device list; None: one device), see :mod:`emjax.dda.distributed`.
    Non-convergence does not raise: the result has ``converged`` False for that
    polarization and a RuntimeWarning is issued (the CLI reports it loudly).

    Traced inputs (``jax.grad``/``jit``/``vmap`` of ``m``, the size, a substrate or its
    height; see :class:`DDAProblem`): the solve is :func:`emjax.dda.efficiencies` and the
    result its :class:`~emjax.dda.TracedResult` of JAX arrays (``Qext``, ``Qabs``, ``Qsca``,
    ``Cext``, ``Cabs``, ``Csca``, ``S``, ``mueller``, ``converged``), equal to this function's values
    for the same inputs; no progress, one device, no integrated Csca / g (``integrate``).

    ``precision="single"`` keeps the interaction tensor and runs the FFT matvec in
    complex64 (the bulk of memory and time) but the Krylov vectors and recurrences in
    complex128: QMR's Lanczos recurrences in float32 stagnate above 1e-5 or diverge once a
    solve needs more than ~100 iterations (measured on an H100: 32^3 sphere stuck at 1.6e-5,
    128^3 diverged).
    """
    solver = solver or krylov.QMR()
    if not isinstance(solver, krylov._Method):
        raise ConfigError(f"solver must be QMR(), BiCG() or BiCGStab(), got {solver!r}")
    if problem.traced:
        return _solve_traced(problem, solver, keep_polarization, variant, layout)
    if variant not in interaction.LAYOUTS:
        raise ConfigError(f"variant must be one of {sorted(interaction.LAYOUTS)}, got {variant!r}")
    from ..layout import as_layout

    lay = as_layout(layout)
    problem._check_resources(problem.shape.box_shape(problem.plan().nx), 1 if lay is None else lay.n)
    make = lambda: progress_bars.ResidualBar("dda", solver.rtol, parts=2)  # noqa: E731
    with precision_scope(), progress_bars.shown(progress, make) as report:
        report = report.labelled if isinstance(report, progress_bars.ResidualBar) else report
        return _solve(problem, solver, report, keep_polarization, variant, layout, bool(progress))


def _solve_traced(problem, solver, keep_polarization, variant, layout):
    """``solve`` with traced inputs (jax.grad/jit/vmap): :func:`emjax.dda.efficiencies`."""
    if layout is not None:
        raise ConfigError("layout: traced inputs (jax.grad/jit/vmap) run on one device; leave layout=None")
    if keep_polarization:
        raise ConfigError(
            "keep_polarization: the dipole polarization is not kept for traced inputs (jax.grad/jit/vmap); "
            "solve with concrete values to get it"
        )
    from .differentiable import efficiencies

    return efficiencies(problem, solver, variant=variant)


def _solve(problem, solver, progress, keep_polarization, variant, layout=None, announce=False):
    t_start = time.perf_counter()
    timings = {}
    prec = precision(problem.precision)
    cdt, _rdt = prec.complex, prec.real  # of the interaction tensor and FFTs
    vdt = np.complex128  # of the Krylov vectors
    lat = problem.lattice()
    grid = lat.shape
    k, d = problem.k, lat.d
    ms = problem.refractive_indices()
    pol = problem.polarizability
    timings["lattice_s"] = time.perf_counter() - t_start

    t0 = time.perf_counter()
    slabs = None if layout is None else _slabs(problem, grid, layout, variant)  # None: one device
    if slabs is None:
        Dhat = interaction.interaction_fft(
            grid, d, k, cdt, kind=pol.interaction, layout=interaction.LAYOUTS[variant]
        )
    else:
        Dhat = slabs.interaction_fft(d, k, cdt, pol.interaction)
    Dhat.block_until_ready()
    timings["interaction_s"] = time.perf_counter() - t0
    surface = None
    if problem.substrate is not None:
        surface = _surface_setup(problem, lat, cdt, timings, Dhat if variant == "pruned" else None, announce)

    R = euler_matrix(*problem.orientation)
    to_particle = R.T  # lab vectors in the particle frame
    if problem.prop is not None or surface is not None:
        # the beam frame (e_X, e_Y, prop) takes the place of the lab's (x, y, z)
        from .substrate import beam_vectors

        bp, beX, beY = beam_vectors(problem.incidence_direction())
        to_particle = R.T @ np.column_stack([beX, beY, bp])
    prop = to_particle @ np.array([0.0, 0.0, 1.0])
    pols = (to_particle @ np.array([1.0, 0.0, 0.0]), to_particle @ np.array([0.0, 1.0, 0.0]))
    domains = jnp.asarray(lat.domains)
    mask = domains >= 0

    theta = np.asarray(problem.theta)
    phi = np.asarray(problem.phi)
    T, Ph = np.meshgrid(theta, phi)  # (n_phi, n_theta)
    n_lab, th_lab, ph_lab = scattering_basis(T, Ph)
    dirs = np.concatenate([n_lab.reshape(-1, 3), [[0.0, 0.0, 1.0]]])
    integrate = problem.integrate and surface is None
    if integrate:
        rmax = 0.5 * d * math.sqrt(sum(n * n for n in grid))
        qt, qp, qw = observables.sphere_quadrature(k * rmax)
        qn, _, _ = scattering_basis(qt, qp)
        dirs = np.concatenate([dirs, qn])
    dirs_p = jnp.asarray(dirs @ to_particle.T, dtype=np.float64)

    Cext, Cabs, amps, iters, conv, hists, msgs, alphas, Ps = [], [], [], [], [], [], [], [], []
    t0 = time.perf_counter()
    for label, e in zip(("X", "Y"), pols):
        alpha = np.array([pol(m, d, k, prop, e) for m in ms])
        alphas.append(alpha)
        s = sqrt_alpha_grid(lat.domains, alpha, vdt)
        inv_alpha = jnp.where(mask, 1 / jnp.asarray(alpha, vdt)[jnp.clip(domains, 0)], 0)
        if surface is None:
            E = observables.incident_field(grid, d, k, prop, e, vdt)
            op = DDAOperator(Dhat, s, variant) if slabs is None else slabs.operator(Dhat, s)
            scale = 1.0
        else:
            from .substrate import SurfaceOperator, exciting_field

            E, scale = exciting_field(
                surface["eps"], surface["thickness"], surface["height"], k, prop, label, grid, d
            )
            E = jnp.asarray(E, vdt)
            op = SurfaceOperator(surface["Dhat"], surface["Rhat"], s)
        cb = None if progress is None else (lambda it, r, _l=label: progress(_l, it, r))
        if cb is not None:
            cb(0, 1.0)
        res = krylov.solve(op, s * E if slabs is None else slabs.put(s * E), solver, progress=cb)
        if not res.converged:
            warnings.warn(f"DDA polarization {label}: {res.message}", RuntimeWarning, stacklevel=3)
        P = s * (res.x if slabs is None else slabs.crop(res.x))
        ce, ca = observables.cross_sections(P, E, inv_alpha, mask, k)
        Cext.append(scale * float(ce))
        Cabs.append(scale * float(ca))
        if surface is None:
            amps.append(np.asarray(observables.far_field_sum(P, dirs_p, d, k)))  # particle frame
        else:
            amps.append(_surface_far_field(problem, surface, P, d, k, grid))
        iters.append(res.iterations)
        conv.append(res.converged)
        hists.append(res.residual_history)
        msgs.append(res.message)
        if keep_polarization:
            Ps.append(P)
    timings["solve_s"] = time.perf_counter() - t0
    if surface is not None:
        return _surface_result(
            problem,
            lat,
            surface,
            amps,
            Cext,
            Cabs,
            scale,
            dict(
                iterations=tuple(iters),
                converged=tuple(conv),
                residual_history=tuple(hists),
                solver_messages=tuple(msgs),
                alpha=np.array(alphas),
                timings=timings,
                polarization=tuple(Ps) if keep_polarization else None,
                solver=solver,
            ),
            t_start,
        )

    # far-field amplitudes F = -i k^3 A, back in the lab frame
    F = [(-1j * k**3) * (a @ to_particle) for a in amps]  # rows: lab-frame vectors
    n_ang = T.size
    FX, FY = F[0][:n_ang].reshape(T.shape + (3,)), F[1][:n_ang].reshape(T.shape + (3,))
    S = observables.amplitude_elements(FX, FY, Ph, th_lab, ph_lab)
    mueller = mueller_from_amplitude(*np.moveaxis(S, -1, 0))
    fwd = np.array([F[0][n_ang] @ np.array([1.0, 0, 0]), F[1][n_ang] @ np.array([0, 1.0, 0])])

    Csca_int = g = None
    if integrate:
        Csca_int, g = [], []
        for f in F:
            c, gi = observables.integrated_scattering(f[n_ang + 1 :], qn, qw, np.cos(np.deg2rad(qt)), k)
            Csca_int.append(c)
            g.append(gi)
        Csca_int, g = np.array(Csca_int), np.array(g)

    return DDAResult(
        problem=problem,
        lattice=lat,
        Cext_xy=np.array(Cext),
        Cabs_xy=np.array(Cabs),
        Csca_int_xy=Csca_int,
        g_xy=g,
        theta=theta,
        phi=phi,
        S=S,
        mueller=mueller,
        forward_amplitude=fwd,
        iterations=tuple(iters),
        converged=tuple(conv),
        residual_history=tuple(hists),
        solver_messages=tuple(msgs),
        alpha=np.array(alphas),
        seconds=time.perf_counter() - t_start,
        timings=timings,
        polarization=tuple(Ps) if keep_polarization else None,
        solver=solver,
    )


def _slabs(problem, grid, layout, variant):
    """The slab decomposition over ``layout`` (None for one device)."""
    from ..layout import as_layout

    lay = as_layout(layout)
    if lay is None:
        return None
    if problem.substrate is not None or variant != "pruned":
        raise ConfigError("layout: several devices need substrate=None and variant='pruned'")
    from .distributed import Slabs

    return Slabs(grid, lay)
