"""Gradients through the layered Green's tensor: the traced path behind ``green_tensor``.

When a stack permittivity, thickness or ``z_top``, the source, the points or the dipole
moment is a JAX tracer (``jax.grad``, ``jax.jvp``, ``jax.jacfwd``/``jacrev``), green.py
comes here. The adaptive quadrature is a constant of the differentiation: the groups,
their deformed paths and Gauss-Kronrod panels are chosen by the ordinary (host) pipeline
from the concrete (primal) values, exactly the nodes a call with those values would use;
then the integrand at those nodes (coefficients, exponentials, Bessel functions) and the
direct term are evaluated again in JAX as functions of the traced inputs, so the derivative
is that of the quadrature rule (the derivative of the integral to about ``rtol``, since the
integrand is smooth in the parameters). Which layer holds each point stays that of the
primal values (a derivative across an interface has no meaning).

Lateral derivatives on the source's axis (``rho = 0``) are exact: the traced assembly uses
``J1(k rho) cos phi = (J1(k rho) / rho) dx`` and ``J2 cos 2 phi = (J2 / rho^2) (dx^2 -
dy^2)``, smooth in dx, dy. Inside ``jax.jit`` or ``jax.vmap`` the values are abstract and the
nodes cannot be chosen: that raises a ConfigError (differentiate outside jit).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import ConfigError
from ..tracing import is_traced, primal  # noqa: F401  (shared; re-exported here)
from . import sommerfeld as som
from .bessel import jn012
from .coefficients import integrand_coefficients

BLOCK = 15 * 16  # nodes per step of the scan (whole panels)


def concrete(name: str, x):
    """``primal(x)``, or a ConfigError naming ``name`` when the value is abstract."""
    v = primal(x)
    if v is None:
        raise ConfigError(
            f"{name} is an abstract tracer (inside jax.jit or jax.vmap): emjax.layered chooses its "
            "quadrature nodes from concrete values; call jax.grad/jacfwd/jacrev/jvp outside jit"
        )
    return v


def _scaled_bessel(kr, rho, axis, bessel_real: bool):
    """J0(k rho), J1(k rho) / rho, J2(k rho) / rho^2 (P, N), finite on the axis (rho = 0),
    where the limits k / 2 and k^2 / 8 are taken (their rho-derivatives vanish there)."""
    k = jnp.real(kr) if bessel_real else kr
    rs = jnp.where(axis, 1.0, rho)
    J0, J1, J2 = jn012(rs[:, None] * k[None, :])
    J1 = J1 / rs[:, None]
    J2 = J2 / (rs * rs)[:, None]
    a = axis[:, None]
    J0 = jnp.where(a, jnp.ones_like(J0), J0)
    J1 = jnp.where(a, (0.5 * k)[None, :].astype(J1.dtype), J1)
    J2 = jnp.where(a, (0.125 * k * k)[None, :].astype(J2.dtype), J2)
    return J0, J1, J2


def _integrals(kr, w, coef, kzm, rho, axis, zu, zd, orders, real, has_up, has_dn):
    """sum_nodes w f (P, nsel) with J_n replaced by J_n / rho^n; a checkpointed scan over
    blocks of nodes (a multiple of BLOCK), so reverse mode keeps only the (P, nsel) carry per
    block."""
    nb = kr.shape[0] // BLOCK

    @jax.checkpoint
    def body(acc, blk):
        k, wb, c, z = blk
        total = 0
        if has_up:
            total = jnp.exp(1j * z[None, :] * zu[:, None])[..., None] * c[None, :, :, 0]
        if has_dn:
            total = total + jnp.exp(-1j * z[None, :] * zd[:, None])[..., None] * c[None, :, :, 1]
        J = [j.astype(c.dtype) for j in _scaled_bessel(k, rho, axis, real)]
        f = som.select_bessel(total, J, orders)
        return acc + jnp.einsum("pbs,b->ps", f, wb, precision=som.HIGHEST), None

    xs = (
        kr.reshape(nb, BLOCK),
        w.reshape(nb, BLOCK),
        coef.reshape(nb, BLOCK, *coef.shape[1:]),
        kzm.reshape(nb, BLOCK),
    )
    acc0 = jnp.zeros((rho.shape[0], coef.shape[1]), coef.dtype)
    acc, _ = jax.lax.scan(body, acc0, xs)
    return acc


def integrals(plan, ctx, sel, eps, interfaces, src, pts):
    """Traced integrals (N, nsel) (J_n scaled by 1 / rho^n) and the lateral offsets dx, dy
    (N,) of every point, for the groups of ``plan`` (m, idx, path) from the host pipeline.
    One jitted function per group (shapes padded): few compilations, none per operation."""
    n_media = ctx["stack"].n_media
    on_axis = np.all(ctx["pts"][:, :2] == ctx["src"][:2], axis=1)  # rho = 0 (primal)
    dx, dy = pts[:, 0] - src[0], pts[:, 1] - src[1]
    I = jnp.zeros((pts.shape[0], len(sel)), ctx["cdtype"])
    for m, idx, path in plan:
        (ke, we, _), (kt, wt, _) = path.nodes()
        nodes = []
        for kr, wk in ((ke, we), (kt, wt)):
            pad = BLOCK * (1 << max(0, -(-len(kr) // BLOCK) - 1).bit_length()) - len(kr)
            nodes.append(np.concatenate([kr, np.full(pad, kr[-1])]))
            nodes.append(np.concatenate([wk, np.zeros(pad, wk.dtype)]))
        total = _group(
            *nodes,
            jnp.asarray(ctx["k0"], jnp.float64),
            eps,
            interfaces,
            src,
            pts[idx],
            jnp.asarray(on_axis[idx]),
            s=ctx["s"],
            m=m,
            n_media=n_media,
            sel=tuple(sel),
            cdtype=np.dtype(ctx["cdtype"]).name,
            rdtype=np.dtype(ctx["rdtype"]).name,
        )
        I = I.at[idx].set(total)
    return I, dx, dy


@partial(jax.jit, static_argnames=("s", "m", "n_media", "sel", "cdtype", "rdtype"))
def _group(ke, we, kt, wt, k0, eps, interfaces, src, pts, on_axis, *, s, m, n_media, sel, cdtype, rdtype):
    cdt, rdt = jnp.dtype(cdtype), jnp.dtype(rdtype)
    dx, dy = pts[:, 0] - src[0], pts[:, 1] - src[1]
    dxs, dys = jnp.where(on_axis, 1.0, dx), jnp.where(on_axis, 0.0, dy)
    rho = jnp.where(on_axis, 0.0, jnp.sqrt(dxs * dxs + dys * dys))
    z = pts[:, 2]
    zu = z - interfaces[m] if m < n_media - 1 else jnp.zeros_like(z)
    zd = z - interfaces[m - 1] if m > 0 else jnp.zeros_like(z)
    args = (rho.astype(rdt), on_axis, zu.astype(rdt), zd.astype(rdt))
    orders = som.orders_of(sel)
    total = 0
    for kr, wk, real in ((ke, we, False), (kt, wt, True)):
        coef, kzm = integrand_coefficients(
            kr.astype(jnp.complex128), k0, eps, interfaces, src[2], s, m, xp=jnp
        )
        coef = coef[:, list(sel), :].astype(cdt)
        kr_j = jnp.real(kr).astype(rdt) if real else kr.astype(cdt)
        total = total + _integrals(
            kr_j, wk.astype(cdt), coef, kzm.astype(cdt), *args, orders, real, m < n_media - 1, m > 0
        )
    return total


_UNTRACEABLE = (TypeError, jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError)


def wavelength_scaled(stack, wavelength, source, points):
    """A traced ``wavelength`` as a traced length scale. ``G`` has units 1 / length and
    depends on lengths only through ``k0 x``, so ``G(wl; x) = s G(wl0; s x)`` with ``s =
    wl0 / wl``, ``wl0`` the concrete wavelength and ``x`` every length (source, points,
    thicknesses, z_top): returns ``(stack', wl0, source', points', s)`` for a call at
    ``wl0`` whose G (and G_H) is multiplied by ``s`` (E and H of a moment by ``s**3``). The
    permittivities are those at the traced wavelength (a material's dispersion must be
    traceable; constants are)."""
    from ..materials import Material

    wl0 = float(concrete("wavelength", wavelength))
    if not (np.isfinite(wl0) and wl0 > 0):
        raise ConfigError(f"wavelength must be > 0, got {wl0!r}")
    eps = []
    for i, e in enumerate(stack.eps):
        if isinstance(e, Material):
            try:
                e = jnp.asarray(e.permittivity(2 * np.pi / wavelength), jnp.complex128).reshape(())
            except _UNTRACEABLE as err:
                raise ConfigError(
                    f"Stack.eps[{i}]: {type(e).__name__}'s permittivity is not traceable in the wavelength; "
                    "for a wavelength gradient give eps as a number (or a traced value)"
                ) from err
        eps.append(e)
    s = wl0 / wavelength
    scaled = type(stack)(eps=eps, thickness=[d * s for d in stack.thickness], z_top=stack.z_top * s)
    return scaled, wl0, jnp.asarray(source) * s, jnp.asarray(points) * s, s
