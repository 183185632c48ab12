"""The substrate steps of a DDA solve (:func:`emjax.dda.solve` with ``substrate``): the
reflected interaction table and its FFT, the far-field amplitudes in ADDA's scattering plane
and over the hemispheres, and the result of a particle on a surface."""

from __future__ import annotations

import math
import time

import numpy as np

from ..scattering import mueller_from_amplitude
from . import interaction
from .results import DDAResult


def _surface_setup(problem, lat, cdt, timings, Dhat=None, announce=False):
    """The stack, the checked height and the FFT of the reflected interaction table."""
    from .substrate import TABLE_RTOL, check_height, reflected_fft, reflected_table, resolve_stack

    t0 = time.perf_counter()
    stack, eps = resolve_stack(problem.substrate, problem.wavelength)
    height, layers = check_height(lat, problem.height)
    table, n_points = reflected_table(
        stack, problem.wavelength, lat.shape, lat.d, height, layers, TABLE_RTOL, progress=announce
    )
    timings["reflected_table_s"] = time.perf_counter() - t0
    timings["reflected_table_points"] = n_points
    t0 = time.perf_counter()
    Rhat = reflected_fft(table, lat.shape, cdt)
    Rhat.block_until_ready()
    timings["reflected_fft_s"] = time.perf_counter() - t0
    if Dhat is None:  # the surface matvec uses the "yzx" layout
        Dhat = interaction.interaction_fft(
            lat.shape, lat.d, problem.k, cdt, kind=problem.polarizability.interaction
        )
    return dict(eps=eps, thickness=np.asarray(stack.thickness), height=height, Rhat=Rhat, Dhat=Dhat)


def _surface_far_field(problem, surface, P, d, k, grid):
    """Far-field amplitudes in ADDA's scattering plane and on the hemisphere quadratures."""
    from .surface_far import far_amplitudes, hemisphere_quadrature, scattering_plane

    theta = np.asarray(problem.theta)
    n_plane, par, per = scattering_plane(problem.incidence_direction(), theta)
    args = (P, d, k, surface["eps"], surface["thickness"], surface["height"])
    out = {"plane": far_amplitudes(*args, n_plane), "par": par, "per": per}
    if problem.integrate:
        rmax = 0.5 * d * math.sqrt(sum(n * n for n in grid)) + surface["height"]
        eps_b = complex(surface["eps"][-1])
        for name, lower in (("up", False), ("down", True)):
            if lower and abs(eps_b.imag) > 1e-12:
                continue  # no far field in an absorbing substrate
            m = math.sqrt(eps_b.real) if lower else None
            qn, qw = hemisphere_quadrature(k * rmax, lower, m)
            F = far_amplitudes(*args, qn)
            weight = 1.0 / m if lower else 1.0
            out[name] = float(np.sum(qw * np.sum(np.abs(F) ** 2, axis=1))) * weight / k**2
    return out


def _surface_result(problem, lat, surface, amps, Cext, Cabs, scale, common, t_start):
    """The DDAResult of a particle on a substrate: S and Mueller in ADDA's scattering plane
    (theta from +z, rows below the surface scaled by Re(m_bottom) as ADDA's), Csca over the
    upper hemisphere (and the lower one into a lossless bottom medium), x inc_scale."""
    from .surface_far import amplitude_matrix

    theta = np.asarray(problem.theta)
    FX, FY = amps[0]["plane"], amps[1]["plane"]
    S = amplitude_matrix(FX, FY, amps[0]["par"], amps[0]["per"])[None]
    mueller = mueller_from_amplitude(*np.moveaxis(S, -1, 0)) * scale
    below = np.cos(np.deg2rad(theta)) < -1e-10
    eps_b = complex(surface["eps"][-1])
    mueller[:, below] *= np.sqrt(eps_b).real
    up = [a.get("up") for a in amps]
    down = [a.get("down") for a in amps]
    has_up, has_down = up[0] is not None, down[0] is not None
    Csca_up = scale * np.array(up) if has_up else None
    Csca_down = scale * np.array(down) if has_down else None
    Csca_int = None if not has_up else (Csca_up + Csca_down if has_down else Csca_up)
    p = problem.incidence_direction()
    phi_plane = math.degrees(math.atan2(p[1], p[0])) if math.hypot(p[0], p[1]) > 0 else 0.0
    return DDAResult(
        problem=problem,
        lattice=lat,
        Cext_xy=np.array(Cext),
        Cabs_xy=np.array(Cabs),
        Csca_int_xy=Csca_int,
        g_xy=None,
        theta=theta,
        phi=np.array([phi_plane]),
        S=S,
        mueller=mueller,
        forward_amplitude=np.full(2, np.nan + 0j),
        seconds=time.perf_counter() - t_start,
        Csca_up_xy=Csca_up,
        Csca_down_xy=Csca_down,
        **common,
    )
