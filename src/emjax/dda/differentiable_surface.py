"""Differentiable DDA on a substrate: the traceable twin of ``dda.solve`` for a
particle above a planar stack (ADDA's surface mode, :mod:`emjax.dda.substrate`).

:func:`emjax.dda.efficiencies` comes here when ``problem.substrate`` is set. What may be
traced (``jax.grad``, ``jax.jvp``, ``jax.jacrev``/``jacfwd``):

* the particle's refractive index ``m``: only the polarizabilities depend on it, the
  reflected-interaction table is a constant; works under ``jax.jit`` too;
* the size (``size_x`` or ``eq_rad`` at a fixed ``grid``): the dipole spacing ``d`` moves
  every table point ``(rho, z_i + z_j) = (d sqrt(i^2 + j^2), 2 h + (s - n_z + 1) d)``;
* the ``height`` of the lattice centre above the stack: it moves every table point
  (``z_i + z_j = 2 h + ...``), the exciting wave's phase and the reflected far field's;
* the substrate: a traced complex index (``substrate=n + 1j * k``) or a
  :class:`emjax.layered.Stack` with traced permittivities (tested: a substrate index;
  traced thicknesses go the same way but are not tested). Which branches apply (light from
  below, a far field below the surface) is decided on the concrete bottom index: from a
  lossless bottom medium d / d Im n_sub is one-sided and not meaningful there.

For the last three the table comes from :func:`emjax.layered.green_tensor`'s traced path:
the Sommerfeld quadrature nodes are chosen from the concrete (primal) values and the
integrand is differentiated at those nodes, so the derivative is that of the quadrature
rule (the table's accuracy, ``substrate.TABLE_RTOL`` = 1e-8, bounds it). That needs
concrete primal values: call ``jax.grad`` **outside** ``jax.jit`` (inside, a ConfigError
says so). The table dominates: for a 6^3 sphere (220 table points) a test of one gradient
(one forward, three pull-backs, four finite-difference evaluations) took 5-8 min on the
shared 2-core box under a load of ~10, against ~2 min for the m-gradients with a constant
table. The rest (incident and reflected wave from the stack's Fresnel
coefficients, the two QMR solves, cross sections, far field) is one jitted function.

Adjoint: the system ``I - s (G + G_R) s`` is complex symmetric (``G_R`` is reciprocal with
source and observer in the top medium: ``G_R,ab(x_i - x_j, y_i - y_j, z_i + z_j) =
G_R,ba(x_j - x_i, y_j - y_i, z_j + z_i)``; checked on layered's tensor and on the dense
operator in tests/dda/test_dda_gradients_surface.py), so the reverse pass is one more QMR
solve with the same operator (:func:`emjax.krylov.linear_solve`).

Returned: a :class:`~emjax.dda.traced_result.TracedResult` with ``S`` (1, n_theta, 4) and
``mueller`` (1, n_theta, 4, 4) in ADDA's surface-mode scattering plane, as
:func:`emjax.dda.solve` (rows below the surface scaled by Re(m_bottom), all by the
incoming-irradiance factor), ``Cext_xy``/``Cabs_xy`` (X = p, Y = s) and ``Qext``, ``Qabs``
with ADDA's normalization; ``Qsca = Qext - Qabs`` (with an absorbing substrate that
includes the power the particle's near field deposits in it). Not here: Csca by hemisphere
integration (``dda.solve`` with concrete inputs).
"""

from __future__ import annotations

import math
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import krylov
from ..backend import precision_scope
from ..errors import ConfigError
from ..layered import green_tensor
from ..tracing import is_traced, primal
from . import interaction, observables
from .lattice import Lattice
from .matvec import sqrt_alpha_grid
from .substrate import (
    TABLE_RTOL,
    SurfaceOperator,
    beam_vectors,
    check_height,
    convolve_surface,
    resolve_stack,
)
from .surface_far import scattering_plane

_ROUND = 1e-10  # as surface_far: |n_z| below this is grazing


def surface_efficiencies(problem, solver, variant):
    """See the module doc; called by :func:`emjax.dda.efficiencies` (64-bit scope on)."""
    from .traced_result import traced_result

    if variant != "pruned":
        raise ConfigError("variant: a particle on a substrate uses the 'pruned' matvec; allowed: 'pruned'")
    lat = problem.lattice()
    d = lat.d
    stack, eps, thickness = _stack(problem)
    traced_table = is_traced(d) or stack.traced or is_traced(problem.height)
    d0 = primal(d) if is_traced(d) else np.asarray(d)
    if traced_table and (d0 is None or _abstract(eps) or _abstract(thickness) or _abstract(problem.height)):
        raise ConfigError(
            "emjax.dda on a substrate: a traced size, height or substrate needs concrete values to "
            "choose the reflected-interaction table's Sommerfeld nodes; call jax.grad/jacrev/jvp "
            "outside jax.jit (a traced m alone works under jit)"
        )
    h0 = primal(problem.height) if is_traced(problem.height) else problem.height
    _, layers = check_height(Lattice(lat.domains, float(d0), float(d0) * lat.shape[0]), float(h0))
    height = problem.height if is_traced(problem.height) else float(h0)
    args = (stack, problem.wavelength, lat.shape, d, height, layers)
    if traced_table:
        table = reflected_table_traced(*args)
    else:  # a constant: computed on the host even inside an outer jax.jit
        with jax.ensure_compile_time_eval():
            table = reflected_table_traced(*args)
    eps0 = np.asarray(primal(eps) if is_traced(eps) else eps, dtype=complex)
    bottom_lossless = abs(eps0[-1].imag) < 1e-12
    reflects = bool(np.any(np.abs(eps0[1:] - 1) > 1e-12))
    static = _Static(
        grid=lat.shape,
        k=problem.k,
        prop=tuple(float(v) for v in problem.incidence_direction()),
        theta=tuple(problem.theta),
        pol=problem.polarizability,
        solver=solver,
        cdt=np.dtype(_cdt(problem)).name,
        bottom_lossless=bottom_lossless,
        reflects=reflects,
    )
    params = dict(ms=tuple(problem.refractive_indices()), d=d, eps=eps, thickness=thickness, height=height)
    return traced_result(lat, *_core(params, table, jnp.asarray(lat.domains), static))


def _cdt(problem):
    from ..backend import precision

    return precision(problem.precision).complex


def _abstract(x) -> bool:
    return is_traced(x) and primal(x) is None


def _stack(problem):
    """(Stack with z_top = 0, eps of its media (NumPy, or a traced jax.Array), thicknesses
    (a tuple, entries possibly traced))."""
    stack, eps = resolve_stack(problem.substrate, problem.wavelength)
    return stack, eps, tuple(stack.thickness)


def reflected_table_traced(stack, wavelength, grid, d, height, layers, rtol=TABLE_RTOL):
    """:func:`emjax.dda.substrate.reflected_table` as a JAX function of ``d`` and the stack
    (either may be traced): the same points, one :func:`emjax.layered.green_tensor` call
    (its traced path when something is traced), the same cylindrical assembly; returns the
    table (6, 2nx-1, 2ny-1, 2nz-1) complex128."""
    with precision_scope():
        return _reflected_table(stack, wavelength, grid, d, height, layers, rtol)


def _reflected_table(stack, wavelength, grid, d, height, layers, rtol):
    nx, ny, nz = grid
    k = 2 * math.pi / wavelength
    sums = np.unique(layers[:, None] + layers[None, :])
    r2 = np.unique((np.arange(nx)[:, None] ** 2 + np.arange(ny)[None, :] ** 2).ravel())
    traced = is_traced(d) or stack.traced or is_traced(height)
    xp = jnp if traced else np
    # z_i + z_j above the surface: 2 h + (s - (nz - 1)) d for the layer-index sum s
    Z = 2 * height + (sums - (nz - 1)) * d
    zs = Z[0] / 2  # the source at the lowest pair's mean height
    R, ZZ = (a.ravel() for a in xp.meshgrid(d * np.sqrt(r2), Z - zs, indexing="ij"))
    pts = xp.stack([R, xp.zeros_like(R), ZZ], axis=1)
    src = xp.stack([xp.zeros_like(zs), xp.zeros_like(zs), zs]) if traced else (0.0, 0.0, float(zs))
    G = green_tensor(stack, wavelength, src, pts, part="scattered", rtol=rtol)
    G = (4 * math.pi * k * k) * jnp.asarray(G).reshape(len(r2), len(sums), 3, 3)
    lateral_a = 0.5 * (G[..., 0, 0] + G[..., 1, 1])  # cylindrical parts: isotropic,
    lateral_b = 0.5 * (G[..., 0, 0] - G[..., 1, 1])  # cos 2phi,
    xz, zz = G[..., 0, 2], G[..., 2, 2]  # cos phi (xz), zz
    # every (ix, iy) difference as stored (numbered modulo 2n - 1)
    ix = np.concatenate([np.arange(nx), np.arange(-(nx - 1), 0)])
    iy = np.concatenate([np.arange(ny), np.arange(-(ny - 1), 0)])
    IX, IY = np.meshgrid(ix, iy, indexing="ij")
    row = np.searchsorted(r2, IX**2 + IY**2)
    rr = np.hypot(IX, IY)
    cos = np.where(rr == 0, 1.0, IX / np.where(rr == 0, 1, rr))[..., None]
    sin = np.where(rr == 0, 0.0, IY / np.where(rr == 0, 1, rr))[..., None]
    a, b, c, z = (t[row] for t in (lateral_a, lateral_b, xz, zz))
    comps = [
        a + b * (cos * cos - sin * sin),
        b * (2 * sin * cos),
        c * cos,
        a - b * (cos * cos - sin * sin),
        c * sin,
        z,
    ]
    out = jnp.zeros((6, 2 * nx - 1, 2 * ny - 1, 2 * nz - 1), jnp.complex128)
    return out.at[:, :, :, sums].set(jnp.stack(comps).astype(jnp.complex128))


def _reflected_fft(table, grid, dtype):
    """:func:`emjax.dda.substrate.reflected_fft` for a (traced) table: the same embedding
    (x and y wrapped, z zero-padded) as one scatter, FFT, "yzx" layout."""
    nx, ny, nz = grid
    Mx, My, Mz = interaction.fft_shape(grid)
    to_x = np.concatenate([np.arange(nx), np.arange(Mx - nx + 1, Mx)])
    to_y = np.concatenate([np.arange(ny), np.arange(My - ny + 1, My)])
    emb = (
        jnp.zeros((6, Mx, My, Mz), dtype)
        .at[:, to_x[:, None], to_y[None, :], : 2 * nz - 1]
        .set(table.astype(dtype))
    )
    return jnp.moveaxis(jnp.fft.fftn(emb, axes=(1, 2, 3)), 1, 3)


# --- the stack's plane waves, in jax.numpy ---------------------------------------------------
def _kz(eps, kpar2):
    """sqrt(eps - kpar2) on the branch Im >= 0 (Re >= 0 when real), as substrate._kz."""
    kz = jnp.sqrt(jnp.asarray(eps, jnp.complex128) - kpar2)
    flip = (jnp.imag(kz) < 0) | ((jnp.imag(kz) == 0) & (jnp.real(kz) < 0))
    return jnp.where(flip, -kz, kz)


def _transfer(eps, thickness_k, kpar2, tm):
    """(M, y_top, y_bottom): the product of the finite layers' characteristic matrices and
    the top and bottom admittances, as in :func:`emjax.dda.substrate.stack_amplitudes`."""
    n = eps.shape[0]
    kz = [_kz(eps[j], kpar2) for j in range(n)]
    g = [eps[j] if tm else 1.0 for j in range(n)]
    M = jnp.eye(2, dtype=jnp.complex128)
    for j in range(1, n - 1):
        ph = kz[j] * thickness_k[j - 1]
        c, s = jnp.cos(ph), jnp.sin(ph)
        layer = jnp.stack([jnp.stack([c, 1j * g[j] * s / kz[j]]), jnp.stack([1j * kz[j] * s / g[j], c])])
        M = M @ layer
    return M, kz[0] / g[0], kz[-1] / g[-1]


def reflection_up(eps, thickness_k, kpar2, tm):
    """(Up, Dn) for a unit wave D = 1 from above (substrate.stack_amplitudes, from_above)."""
    M, yt, yb = _transfer(eps, thickness_k, kpar2, tm)
    v0, v1 = M[0, 0] - M[0, 1] * yb, M[1, 0] - M[1, 1] * yb
    dn = 2 * yt / (yt * v0 - v1)
    return v0 * dn - 1, dn


def transmission_up(eps, thickness_k, kpar2, tm, incoming):
    """Up in the top medium for ``incoming`` Un from below (stack_amplitudes, from below):
    the 2x2 system solved by Cramer's rule."""
    M, yt, yb = _transfer(eps, thickness_k, kpar2, tm)
    (a, b), (c, e) = M[0], M[1]
    a01, a11 = -(a - b * yb), -(c - e * yb)
    r0, r1 = incoming * (a + b * yb), incoming * (c + e * yb)
    return (r0 * a11 - a01 * r1) / (a11 - a01 * yt)


def _exciting(eps, thickness, height, k, prop, tm, grid, d):
    """:func:`emjax.dda.substrate.exciting_field` in jax.numpy: (E (3, nx, ny, nz), inc_scale)."""
    p, _, eY = beam_vectors(prop)
    th_k = [k * t for t in thickness]
    z0 = -height
    if p[2] < 0:  # from above: the unit incident wave and the stack's reflection
        kpar2 = float(p[0] ** 2 + p[1] ** 2)
        D = jnp.exp(1j * k * p[2] * z0)
        up, _ = reflection_up(eps, th_k, kpar2, tm)
        kz0 = -p[2]
        kpar = k * jnp.asarray(p[:2])
        waves = [(D, jnp.asarray([p[0], p[1], -kz0])), (D * up, jnp.asarray([p[0], p[1], kz0]))]
        scale = 1.0
    else:  # from below: the wave transmitted from the (lossless) bottom medium
        m = jnp.sqrt(eps[-1])
        zB = z0 - sum(thickness) if thickness else z0
        un = jnp.exp(1j * k * m * p[2] * zB) * (m if tm else 1.0)
        kp = jnp.real(m) * jnp.asarray(p[:2])
        kpar2 = kp[0] ** 2 + kp[1] ** 2
        up = transmission_up(eps, th_k, kpar2, tm, un)
        kz0 = _kz(1.0, kpar2)
        kpar = k * kp
        waves = [(up, jnp.stack([kp[0] + 0j, kp[1] + 0j, kz0]))]
        scale = 1 / jnp.real(m)
    x, y, z = ((jnp.arange(n) - (n - 1) / 2) * d for n in grid)
    lateral = jnp.exp(1j * (kpar[0] * x[:, None, None] + kpar[1] * y[None, :, None]))
    E = 0
    for amp, kvec in waves:
        vec = jnp.cross(jnp.asarray(eY, jnp.complex128), kvec) if tm else jnp.asarray(eY, jnp.complex128)
        phase = amp * jnp.exp(1j * k * kvec[2] * (z - z0))
        E = E + vec[:, None, None, None] * (lateral * phase[None, None, :])[None]
    return E, scale


def _plane_far_field(d, k, eps, thickness, height, n, static):
    """:func:`emjax.dda.surface_far.far_amplitudes` for the scattering-plane directions
    ``n`` (NumPy, concrete), in jax.numpy: the stack's coefficients once, then a function
    ``P -> F`` (Nd, 3)."""
    th_k = [k * t for t in thickness]
    s_par = np.hypot(n[:, 0], n[:, 1])
    flat = s_par < 1e-12
    lateral = np.stack([-n[:, 1], n[:, 0], 0 * n[:, 0]], 1) / np.where(flat, 1, s_par)[:, None]
    es = np.where(flat[:, None], [0.0, 1.0, 0.0], lateral)
    ep = np.cross(es, n)
    above = n[:, 2] > -_ROUND
    ia = np.nonzero(above & ~((np.abs(n[:, 2]) < _ROUND) & static.reflects))[0]
    ib = np.nonzero(~above)[0] if static.bottom_lossless else np.zeros(0, int)
    parts = []  # (rows, directions for the sum, combine(A) -> F rows)
    if len(ia):
        na = n[ia]
        nR = na * np.array([1.0, 1.0, -1.0])
        rs, rp = (
            jnp.stack([reflection_up(eps, th_k, float(1 - v * v), tm)[0] for v in na[:, 2]])
            for tm in (False, True)
        )
        e_s, e_p, epR = es[ia], ep[ia], np.cross(es[ia], nR)
        ph = jnp.exp(2j * k * height * na[:, 2])[:, None]

        def above_rows(A, na=na, e_s=e_s, e_p=e_p, epR=epR, ph=ph, rs=rs, rp=rp):
            AF, AN = A[: len(na)], A[len(na) :]
            direct = AF - na * _dot(na, AF)
            refl = rs[:, None] * _dot(AN, e_s) * e_s + rp[:, None] * _dot(AN, epR) * e_p
            return -1j * k**3 * (direct + ph * refl)

        parts.append((ia, jnp.asarray(np.concatenate([na, nR]), jnp.complex128), above_rows))
    if len(ib):  # into the lossless bottom medium (index m)
        m = jnp.sqrt(jnp.real(eps[-1]))
        nb = n[ib]
        q = m * m * (nb[:, 0] ** 2 + nb[:, 1] ** 2)
        ki = _kz(1.0, q)  # imaginary beyond the critical angle: evanescent in the top medium
        kt = -m * nb[:, 2]
        nN = jnp.stack([m * nb[:, 0] + 0j, m * nb[:, 1] + 0j, -ki], 1)
        ts, tp = (
            jnp.stack([reflection_up(eps, th_k, q[i], tm)[1] for i in range(len(ib))]) for tm in (False, True)
        )
        e_s, e_p = es[ib], ep[ib]
        epN = jnp.cross(jnp.asarray(e_s, jnp.complex128), nN)
        total = sum(thickness) if thickness else 0.0
        ph = (m * jnp.exp(1j * k * (ki * height - kt * (height + total))) * kt / ki)[:, None]

        def below_rows(A, e_s=e_s, e_p=e_p, epN=epN, ph=ph, ts=ts, tp=tp, m=m):
            return (
                -1j * k**3 * ph * (ts[:, None] * _dot(A, e_s) * e_s + (tp / m)[:, None] * _dot(A, epN) * e_p)
            )

        parts.append((ib, nN, below_rows))

    def far(P):
        F = jnp.zeros((len(n), 3), jnp.complex128)
        for rows, dirs, combine in parts:
            F = F.at[rows].set(combine(observables.far_field_sum(P, dirs, d, k)))
        return F

    return far


def _dot(a, b):
    return jnp.sum(a * b, axis=-1, keepdims=True)


class _Static(NamedTuple):
    """The static (hashable) configuration of :func:`_core`."""

    grid: tuple
    k: float
    prop: tuple
    theta: tuple
    pol: object
    solver: object
    cdt: str
    bottom_lossless: bool
    reflects: bool


@partial(jax.jit, static_argnums=(3,))
def _core(params, table, domains, static):
    from .traced_result import mueller_jax, solve_infos

    grid, k = static.grid, static.k
    d, eps, thickness, ms = params["d"], jnp.asarray(params["eps"]), params["thickness"], params["ms"]
    height = params["height"]
    cdt = np.dtype(static.cdt)
    vdt = np.complex128
    pol = static.pol
    Dhat = interaction.interaction_fft(grid, d, k, cdt, kind=pol.interaction, layout="yzx")
    Rhat = _reflected_fft(table, grid, cdt)
    p, eX, eY = beam_vectors(np.asarray(static.prop))
    mask = domains >= 0
    n_plane, par, per = scattering_plane(static.prop, static.theta)
    far = _plane_far_field(d, k, eps, thickness, height, n_plane, static)
    Cext, Cabs, F, infos = [], [], [], []
    for tm, e in ((True, eX), (False, eY)):
        alpha = jnp.stack([jnp.asarray(pol(m, d, k, p, e)).astype(vdt) for m in ms])
        s = sqrt_alpha_grid(domains, alpha, vdt)
        inv_alpha = jnp.where(mask, 1 / alpha[jnp.clip(domains, 0)], 0)
        E, scale = _exciting(eps, thickness, height, k, static.prop, tm, grid, d)
        E = E.astype(vdt)
        x, info = krylov.linear_solve(SurfaceOperator(Dhat, Rhat, s), s * E, static.solver, return_info=True)
        P = s * x
        ce, ca = observables.cross_sections(P, E, inv_alpha, mask, k)
        Cext.append(scale * ce)
        Cabs.append(scale * ca)
        F.append(far(P))
        infos.append(info)
    FX, FY = F
    dot = lambda a, b: jnp.sum(a * b, axis=-1)  # noqa: E731
    S = jnp.stack([-dot(FY, per), dot(FX, par), -dot(FY, par), dot(FX, per)], axis=-1)[None]
    M = mueller_jax(*jnp.moveaxis(S, -1, 0)) * scale
    below = np.cos(np.deg2rad(np.asarray(static.theta))) < -1e-10
    if below.any():
        M = M * jnp.where(jnp.asarray(below)[None, :, None, None], jnp.real(jnp.sqrt(eps[-1])), 1.0)
    return (jnp.stack(Cext), jnp.stack(Cabs), S, M, *solve_infos(infos))


__all__ = ["convolve_surface", "reflected_table_traced", "surface_efficiencies"]
