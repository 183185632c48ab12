"""DDA on a substrate: the particle in vacuum above a planar stack (ADDA's surface mode).

Geometry (as ADDA's ``-surf h m``): lengths from the lattice (box) centre, the stack's top
interface is the plane ``z = -height``, the particle sits in the top medium (vacuum) above it.
The dipoles interact through ``G_free(r_i - r_j) + G_R(x_i - x_j, y_i - y_j, z_i + z_j)``:
``G_R`` is the reflected (scattered) part of the stack's dyadic Green's tensor, taken from
:func:`emjax.layered.green_tensor` (``part="scattered"``) once per lattice at the distinct
``(rho, z_i + z_j)`` values, and converted to the DDA's Gaussian units
(``G_dda = 4 pi k^2 G_layered``, checked against the free-space terms).

The matvec. ``G_R`` depends on ``x_i - x_j`` and ``y_i - y_j`` (a convolution: circulant
embedding and FFT, as the free term) and on ``z_i + z_j`` (a Hankel structure). In Fourier
space along z a Hankel sum is a product with the *reversed* spectrum: with the table
``a(s)`` at ``s = k_i + k_j`` zero-padded to ``Mz >= 2 nz - 1`` and ``A = FFT(a)``,
``sum_j a(k_i + k_j) p_j = IFFT_z[A(f) Q(-f)]`` with ``Q = FFT_z(p)``. So one forward and one
inverse FFT serve both terms: ``y = IFFT[D Q(f) + R Q(-f)]`` (``Q(-f)``: an index reversal),
O(N log N) on the device with twice the tensor memory and one extra tensor product.

``G_R`` in a stack obeys ``G_R,zx = -G_R,xz`` and ``G_R,zy = -G_R,yz`` (reciprocity for
source and observer in the same medium), so six components are stored, as for the free term,
and the system stays complex-symmetric (QMR applies).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from .. import progress as progress_bars
from ..errors import ConfigError, require_finite
from ..layered import Stack, green_tensor
from ..materials import _as_complex
from ..tracing import is_traced, primal
from .interaction import fft_shape

#: relative accuracy asked of the Sommerfeld integrals (layered's Gauss-Kronrod estimate);
#: measured: the table at 1e-6 differs from one at 1e-10 by 1.3e-11 of its largest entry
#: (sphere g16 on glass), so this costs nothing and is far below ADDA's own 1e-4 (somnec CRIT)
TABLE_RTOL = 1e-8


# --- the stack ---------------------------------------------------------------------------
def resolve_stack(substrate, wavelength: float) -> tuple[Stack, np.ndarray]:
    """``(Stack with z_top = 0, eps of its media at the wavelength)`` from a complex
    substrate index (ADDA's ``-surf h m``: vacuum over a half-space of index m) or a
    :class:`emjax.layered.Stack` whose top medium is vacuum."""
    if isinstance(substrate, Stack):
        eps = substrate.permittivities(wavelength)
        top = primal(eps[0]) if is_traced(eps) else eps[0]  # traced: dda.efficiencies' gradients
        if top is not None and abs(top - 1) > 1e-12:
            raise ConfigError(
                f"substrate: the stack's top medium (eps[0]) holds the particle and must be "
                f"vacuum (eps = 1), got {eps[0]}"
            )
        stack = Stack(eps=substrate.eps, thickness=substrate.thickness, z_top=0.0)
        return stack, eps
    if is_traced(substrate) and np.ndim(substrate) == 0:  # jax.grad w.r.t. the index
        value = primal(substrate)
        if value is not None:
            resolve_stack(complex(value), wavelength)  # the checks, on the concrete value
        return Stack(eps=(1.0, substrate * substrate), thickness=(), z_top=0.0), jnp.stack(
            [jnp.ones((), jnp.complex128), (substrate * substrate).astype(jnp.complex128)]
        )
    if isinstance(substrate, (str, bytes)) or np.ndim(substrate) != 0:
        raise ConfigError(
            f"substrate must be a complex refractive index (e.g. 1.5 or 0.2+3j) or an "
            f"emjax.layered.Stack, got {substrate!r}"
        )
    m = _as_complex("substrate", substrate)
    if m.imag < 0 or m.real < 0 or m == 0:
        raise ConfigError(
            f"substrate = {m}: a refractive index n + ik needs n >= 0, k >= 0, not both 0 "
            "(exp(-i omega t): absorption is Im(m) >= 0)"
        )
    eps = np.array([1.0, m * m], dtype=complex)
    return Stack(eps=(1.0, m * m), thickness=(), z_top=0.0), eps


# --- incidence -----------------------------------------------------------------------------
def beam_vectors(prop) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(prop, e_X, e_Y)``, ADDA's incident polarizations (``param.c``):
    ``e_Y = (-p_y, p_x, 0) / |...|`` (or (0, 1, 0) along +-z) and ``e_X = e_Y x prop``.
    On a substrate X is the p (TM) wave and Y the s (TE) wave."""
    p = np.asarray(prop, dtype=float)
    s = math.hypot(p[0], p[1])
    eY = np.array([0.0, 1.0, 0.0]) if s == 0 else np.array([-p[1], p[0], 0.0]) / s
    return p, np.cross(eY, p), eY


def _kz(eps, kpar2):
    kz = np.sqrt(complex(eps) - kpar2)
    return -kz if (kz.imag < 0 or (kz.imag == 0 and kz.real < 0)) else kz


def stack_amplitudes(eps, thickness_k, kpar2, tm: bool, from_above: bool, incoming):
    """Plane-wave amplitudes of the field component ``U`` along ``e_Y`` (E for TE, H for
    TM) in the top and bottom media of a stack (lengths in units of 1/k0).

    Top medium: ``U = D exp(-i kz0 (z - z0)) + Up exp(i kz0 (z - z0))`` about the top
    interface z0; bottom: ``U = Dn exp(-i kzN (z - zB)) + Un exp(i kzN (z - zB))`` about the
    bottom interface zB. ``incoming``: D (from above) or Un (from below). Returns (Up, Dn).
    Characteristic (Abeles) matrices of the finite layers carry ``(U, W)``,
    ``W = dU/dz / (i gamma)`` with gamma = 1 (TE) or eps (TM), continuous at interfaces.
    """
    kz = [_kz(e, kpar2) for e in eps]
    g = [complex(e) if tm else 1.0 for e in eps]
    M = np.eye(2, dtype=complex)
    for j in range(1, len(eps) - 1):
        ph = kz[j] * thickness_k[j - 1]
        c, s = np.cos(ph), np.sin(ph)
        M = M @ np.array([[c, 1j * g[j] * s / kz[j]], [1j * kz[j] * s / g[j], c]])
    yt, yb = kz[0] / g[0], kz[-1] / g[-1]
    if from_above:  # [D + Up, yt (Up - D)] = M [Dn, -yb Dn]
        v = M @ np.array([1.0, -yb])
        Dn = 2 * yt * incoming / (yt * v[0] - v[1])
        return v[0] * Dn - incoming, Dn
    # from below: [Up, yt Up] = M [Dn + Un, yb (Un - Dn)]
    (a, b), (c, e) = M
    A = np.array([[1.0, -(a - b * yb)], [yt, -(c - e * yb)]])
    rhs = incoming * np.array([a + b * yb, c + e * yb])
    Up, Dn = np.linalg.solve(A, rhs)
    return Up, Dn


def exciting_field(eps, thickness, height, k, prop, which: str, grid, d):
    """The field exciting the dipoles, (3, nx, ny, nz) complex128 (NumPy), and the
    incoming-irradiance scale of Cext/Cabs (ADDA's ``inc_scale``).

    From above (prop_z < 0): the unit incident wave ``e exp(i k prop . r)`` (zero phase at
    the lattice centre) plus the stack's reflected wave. From below (prop_z > 0): the wave
    ``e exp(i k m prop . r)`` in the bottom medium (index m, lossless; unit amplitude
    continued to the origin) transmitted through the stack; ``inc_scale = 1 / Re(m)`` so that
    cross sections refer to the incoming irradiance. ``which``: "X" (p, TM) or "Y" (s, TE).
    """
    p, eX, eY = beam_vectors(prop)
    tm = which == "X"
    from_above = p[2] < 0
    th = k * np.asarray(thickness, dtype=float)
    z0 = -height
    zB = z0 - float(np.sum(thickness))
    if from_above:
        kpar = k * p[:2]
        D = np.exp(1j * k * p[2] * z0)  # unit incident amplitude (E; H = E in vacuum)
        Up, _ = stack_amplitudes(eps, th, p[0] ** 2 + p[1] ** 2, tm, True, D)
        kz0 = -p[2]
        inc_scale = 1.0
        waves = [(D, np.array([p[0], p[1], -kz0])), (Up, np.array([p[0], p[1], kz0]))]
    else:
        m = np.sqrt(complex(eps[-1]))
        Un = np.exp(1j * k * m * p[2] * zB) * (m if tm else 1.0)  # TM: U is H = m E
        kp = m.real * p[:2]
        kpar2 = float(kp[0] ** 2 + kp[1] ** 2)
        Up, _ = stack_amplitudes(eps, th, kpar2, tm, False, Un)
        kz0 = _kz(1.0, kpar2)
        kpar = k * kp
        inc_scale = 1.0 / m.real
        waves = [(Up, np.array([kp[0], kp[1], kz0]))]
    x, y, z = (((np.arange(n) - (n - 1) / 2) * d) for n in grid)
    E = np.zeros((3,) + tuple(grid), dtype=complex)
    lateral = np.exp(1j * (kpar[0] * x[:, None, None] + kpar[1] * y[None, :, None]))
    for amp, kvec in waves:
        vec = np.cross(eY, kvec) if tm else eY.astype(complex)
        phase = amp * np.exp(1j * k * kvec[2] * (z - z0))[None, None, :]
        E += vec[:, None, None, None] * (lateral * phase)[None]
    return E, inc_scale


# --- the reflected interaction -------------------------------------------------------------
def check_height(lattice, height):
    """The voxels must lie above the surface (ADDA checks only the dipole centres)."""
    height = require_finite("height", height)
    nz = lattice.shape[2]
    layers = np.nonzero(np.any(lattice.domains >= 0, axis=(0, 1)))[0]
    lowest_face = (layers[0] - (nz - 1) / 2 - 0.5) * lattice.d
    need = -lowest_face
    if not height >= need * (1 - 1e-9):
        raise ConfigError(
            f"height = {height:g}: the particle's lowest voxel face is {need:g} below its centre, "
            f"so it would touch or cross the surface; allowed: height >= {need:g}"
        )
    return height, layers


def reflected_table(stack, wavelength, grid, d, height, layers, rtol=TABLE_RTOL, progress=False):
    """``G_R`` (Gaussian units) on the lattice: (6, 2nx-1, 2ny-1, 2nz-1) complex128 (NumPy)
    for index differences ``(ix, iy) in [-(n-1), n-1]`` (numbered modulo ``2n - 1``... as
    stored: index ``i`` holds difference ``i`` for ``i < n`` and ``i - (2n - 1)`` above) and
    z-index sums ``s = k_i + k_j in [0, 2 nz - 2]`` (zero where no pair of occupied layers
    gives ``s``). Also returns the number of Sommerfeld points evaluated.

    Uses the cylindrical form of a stack's reflected tensor: one evaluation at ``phi = 0``
    per distinct ``(rho, s)`` gives the four functions from which every azimuth follows.
    ``progress``: a bar of the entries evaluated (emjax.progress).
    """
    nx, ny, nz = grid
    k = 2 * math.pi / wavelength
    sums = np.unique(layers[:, None] + layers[None, :])
    hz = height + (np.arange(nz) - (nz - 1) / 2) * d  # heights of the layers above the surface
    Z = 2 * hz[0] + sums * d  # z_i + z_j measured from the surface
    r2 = np.unique((np.arange(nx)[:, None] ** 2 + np.arange(ny)[None, :] ** 2).ravel())
    rho = d * np.sqrt(r2)
    zs = Z.min() / 2  # source height; the reflected part depends on z + z' only
    R, ZZ = np.meshgrid(rho, Z, indexing="ij")
    pts = np.stack([R.ravel(), np.zeros(R.size), ZZ.ravel() - zs], axis=1)
    what = f"dda: building the substrate interaction table ({len(pts)} entries)"
    with progress_bars.shown(bool(progress), lambda: progress_bars.StepBar(what, len(pts), "entry")) as bar:
        report = (lambda info: bar(info["done"], info["total"])) if bar is not None else False
        G = green_tensor(stack, wavelength, (0.0, 0.0, zs), pts, part="scattered", rtol=rtol, progress=report)
    G = (4 * math.pi * k * k) * G.reshape(len(rho), len(Z), 3, 3)
    A = 0.5 * (G[..., 0, 0] + G[..., 1, 1])  # isotropic lateral part
    B = 0.5 * (G[..., 0, 0] - G[..., 1, 1])  # cos(2 phi) part
    C = G[..., 0, 2]  # cos(phi) part of xz
    Dzz = G[..., 2, 2]
    ix = np.concatenate([np.arange(nx), np.arange(-(nx - 1), 0)])
    iy = np.concatenate([np.arange(ny), np.arange(-(ny - 1), 0)])
    IX, IY = np.meshgrid(ix, iy, indexing="ij")
    u = np.searchsorted(r2, IX**2 + IY**2)  # (2nx-1, 2ny-1) -> row of the rho table
    rr = np.sqrt(IX**2 + IY**2).astype(float)
    rs = np.where(rr == 0, 1.0, rr)
    c, s = np.where(rr == 0, 1.0, IX / rs), np.where(rr == 0, 0.0, IY / rs)
    c2, s2 = c * c - s * s, 2 * s * c
    out = np.zeros((6, 2 * nx - 1, 2 * ny - 1, 2 * nz - 1), dtype=complex)
    a, b, cc, dz = (t[u] for t in (A, B, C, Dzz))  # (2nx-1, 2ny-1, n_sums)
    e = lambda t: t[..., None]  # noqa: E731
    out[0][:, :, sums] = a + b * e(c2)
    out[1][:, :, sums] = b * e(s2)
    out[2][:, :, sums] = cc * e(c)
    out[3][:, :, sums] = a - b * e(c2)
    out[4][:, :, sums] = cc * e(s)
    out[5][:, :, sums] = dz
    return out, len(pts)


def reflected_fft(table, grid, dtype) -> jax.Array:
    """FFT of the embedded reflected table in the "yzx" layout (6, My, Mz, Mx) of
    :func:`emjax.dda.interaction.convolve`: x and y circulant (wrapped differences), z the
    sum index zero-padded (no wrap: ``2 nz - 1 <= Mz``)."""
    nx, ny, nz = grid
    Mx, My, Mz = fft_shape(grid)
    emb = np.zeros((6, Mx, My, Mz), dtype=complex)
    for sx_src, sx_dst in ((slice(0, nx), slice(0, nx)), (slice(nx, 2 * nx - 1), slice(Mx - nx + 1, Mx))):
        for sy_src, sy_dst in ((slice(0, ny), slice(0, ny)), (slice(ny, 2 * ny - 1), slice(My - ny + 1, My))):
            emb[:, sx_dst, sy_dst, : 2 * nz - 1] = table[:, sx_src, sy_src, :]
    g = jnp.fft.fftn(jnp.asarray(emb, dtype=dtype), axes=(1, 2, 3))
    return jnp.moveaxis(g, 1, 3)


def convolve_surface(Dhat, Rhat, p):
    """``sum_j [G(r_i - r_j) + G_R(x_i - x_j, y_i - y_j, z_i + z_j)] p_j``, p (3, nx, ny, nz);
    both tensors in the "yzx" layout (6, My, Mz, Mx). The forward FFT is shared; the
    reflected term multiplies the z-reversed spectrum ``Q(-f_z)``."""
    _, nx, ny, nz = p.shape
    My, Mz, Mx = Dhat.shape[1:]
    q = jnp.fft.fft2(p, s=(My, Mz), axes=(2, 3))
    q = jnp.fft.fft(jnp.moveaxis(q, 1, 3), n=Mx, axis=3)  # (3, My, Mz, Mx)
    qr = jnp.roll(jnp.flip(q, axis=2), 1, axis=2)  # Q(-f_z)
    D, R = Dhat, Rhat
    y = jnp.stack(
        [
            D[0] * q[0] + D[1] * q[1] + D[2] * q[2] + R[0] * qr[0] + R[1] * qr[1] + R[2] * qr[2],
            D[1] * q[0] + D[3] * q[1] + D[4] * q[2] + R[1] * qr[0] + R[3] * qr[1] + R[4] * qr[2],
            D[2] * q[0] + D[4] * q[1] + D[5] * q[2] - R[2] * qr[0] - R[4] * qr[1] + R[5] * qr[2],
        ]
    )
    y = jnp.moveaxis(jnp.fft.ifft(y, axis=3)[..., :nx], 3, 1)
    return jnp.fft.ifft2(y, axes=(2, 3))[:, :, :ny, :nz]


class SurfaceOperator:
    """``x -> x - s * ((G + G_R) * (s * x))``; a JAX pytree (Dhat, Rhat, s)."""

    variant = "surface"

    def __init__(self, Dhat, Rhat, s):
        self.Dhat, self.Rhat, self.s = Dhat, Rhat, s

    def interact(self, p):
        q = p.astype(self.Dhat.dtype)
        return convolve_surface(self.Dhat, self.Rhat, q).astype(p.dtype)

    def __call__(self, x):
        return x - self.s * self.interact(self.s * x)


jax.tree_util.register_pytree_node(
    SurfaceOperator,
    lambda op: ((op.Dhat, op.Rhat, op.s), None),
    lambda _, children: SurfaceOperator(*children),
)
