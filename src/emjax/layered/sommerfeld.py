"""Sommerfeld integrals over a deformed path with shared, adaptively refined Gauss-Kronrod panels.

The path (Paulus, Gay-Balmaz & Martin, PRE 62, 5797 (2000)): a half ellipse below the real
``k_rho`` axis from 0 to ``2a`` (past every medium's wavenumber and surface-plasmon pole, so
branch points and guided-mode poles are passed at a distance), ``k_rho = a (1 - cos t) - i b
sin t``, then the real axis from ``2a`` to ``k_max`` where the slowest integrand has decayed
(``exp(-k_rho h)``, ``h`` the smallest vertical distance a reflected/transmitted wave
travels). ``b <= 1 / rho_max`` keeps ``J_n(k_rho rho)`` from growing more than ``e``.

As in the GPU scheme of Quinto et al. (PIER 2011), all observation points share one set of
integration nodes: the loop runs over blocks of nodes (``lax.fori_loop``), vectorised over
points. The nodes are Gauss-Kronrod (7, 15) panels; the panel set is refined adaptively on a
sample of the points (the extremes of rho and of the decay distance, plus a random subset)
until ``sum over panels |K15 - G7| <= rtol * |I|`` for every sample point, and the final pass
returns that estimate for every point (K15 is the value; the G7 difference bounds its error
from above in practice).

Compilations: the kernels take fixed node chunks (``CHUNK``, ``REFINE_CHUNK``) and points
in a few bucketed sizes (``groups.point_chunk``). On a CPU the count of valid blocks is a
traced argument, so a map compiles each kernel once per kind of node (complex ellipse, real
tail), of medium (one- or two-sided) and point bucket, not per group or node count. On a
GPU the count is static, rounded up to a multiple of :data:`BLOCK_STEP` (the extra blocks
hold zero-weight nodes and add exact zeros): with a traced bound XLA reads the loop's
condition back to the host after every block, which holds the calling thread until the
call ends (measured on an H200: a 2048^2 map's integration took 1.5x as long, and two
devices' threads could not queue their work ahead). :func:`warm` compiles a map's kernels
side by side in threads.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ..backend import precision_scope
from ..errors import ConfigError
from .bessel import jn012
from .coefficients import BESSEL_ORDER, integrand_coefficients

# full float32 products in the contractions (the GPU's default for float32 dots is TF32)
HIGHEST = jax.lax.Precision.HIGHEST

# Gauss-Kronrod (7, 15) on [-1, 1]: Kronrod nodes/weights and the embedded Gauss weights
_XK = np.array(
    [
        0.991455371120812639206854697526329,
        0.949107912342758524526189684047851,
        0.864864423359769072789712788640926,
        0.741531185599394439863864773280788,
        0.586087235467691130294144845693013,
        0.405845151377397166906606412076961,
        0.207784955007898467600689403773245,
        0.0,
    ]
)
_WK = np.array(
    [
        0.022935322010529224963732008058970,
        0.063092092629978553290700663189204,
        0.104790010322250183839876322541518,
        0.140653259715525918745189590510238,
        0.169004726639267902826583426598550,
        0.190350578064785409913256402421014,
        0.204432940075298892414161999234649,
        0.209482141084727828012999174891714,
    ]
)
_WG = np.array(
    [
        0.129484966168869693270611432679082,
        0.279705391489276667901467771423780,
        0.381830050505118944950369775488975,
        0.417959183673469387755102040816327,
    ]
)
GK_X = np.concatenate([-_XK[:-1], _XK[::-1]])
GK_WK = np.concatenate([_WK[:-1], _WK[::-1]])
GK_WG = np.zeros(15)
GK_WG[1::2] = np.concatenate([_WG[:-1], _WG[::-1]])

MAX_PANELS = 40_000
MAX_ROUNDS = 24


def panel_nodes(lo, hi):
    """Nodes (n, 15) and Kronrod/Gauss weights (n, 15) of panels [lo, hi] (parameter space)."""
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    c, h = (lo + hi) / 2, (hi - lo) / 2
    x = c[:, None] + h[:, None] * GK_X[None, :]
    return x, h[:, None] * GK_WK[None, :], h[:, None] * GK_WG[None, :]


class Path:
    """The half ellipse (parameter t in [0, pi]) and the real tail, each a list of panels."""

    def __init__(self, a: float, b: float, k_max: float, ellipse_panels: int, tail_width: float):
        self.a, self.b, self.k_max = a, b, k_max
        t = np.linspace(0, np.pi, ellipse_panels + 1)
        self.ellipse = [t[:-1], t[1:]]
        n_tail = max(1, int(np.ceil((k_max - 2 * a) / tail_width)))
        k = np.linspace(2 * a, k_max, n_tail + 1)
        self.tail = [k[:-1], k[1:]]

    @property
    def n_panels(self) -> int:
        return len(self.ellipse[0]) + len(self.tail[0])

    def nodes(self):
        """(kr, wK, wG) for the ellipse (complex kr, weights times dk/dt) and the tail."""
        ell = tuple(a.ravel() for a in self.nodes_of("ellipse", *self.ellipse))
        tail = tuple(a.ravel() for a in self.nodes_of("tail", *self.tail))
        return ell, tail

    def nodes_of(self, which: str, lo, hi):
        """(kr, wK, wG), each (n, 15), of the panels [lo, hi] of the ellipse or the tail
        (each panel's nodes computed from its own ends only)."""
        t, wk, wg = panel_nodes(lo, hi)
        if which == "tail":
            return t, wk, wg
        kr = self.a * (1 - np.cos(t)) - 1j * self.b * np.sin(t)
        jac = self.a * np.sin(t) - 1j * self.b * np.cos(t)
        return kr, wk * jac, wg * jac

    def bisect(self, which: str, mask):
        lo, hi = getattr(self, which)
        mid = (lo + hi) / 2
        keep = ~mask
        new_lo = np.concatenate([lo[keep], lo[mask], mid[mask]])
        new_hi = np.concatenate([hi[keep], mid[mask], hi[mask]])
        order = np.argsort(new_lo)
        setattr(self, which, [new_lo[order], new_hi[order]])


def choose_path(k0, eps, rho_max: float, h_min: float, rtol: float, wavelength: float) -> Path:
    k = k0 * np.sqrt(eps.astype(complex))
    # branch points and guided-mode poles near the real axis lie below Re k of the media with
    # moderate loss; a strongly lossy medium's branch point sits far above the axis
    k_hi = float(max(k0, np.max(np.where(k.imag < 0.5 * k.real, k.real, 0.0))))
    for e1, e2 in zip(eps[:-1], eps[1:]):  # surface-plasmon poles beyond every k
        if e1.real * e2.real < 0 and abs(e1 + e2) > 1e-12 * abs(e1):
            k_hi = max(k_hi, float(abs((k0 * np.sqrt(e1 * e2 / (e1 + e2))).real)))
    a = 0.5 * (1.2 * k_hi + 0.1 * k0)
    b = min(0.5 * k_hi, 1.0 / rho_max) if rho_max > 0 else 0.5 * k_hi
    if h_min <= 1e-9 * wavelength:
        raise ConfigError(
            "points: an observation point and the source are both on an interface (or on the same "
            "interface plane through the source), where the Sommerfeld integrand does not decay; "
            "move the points off the interface by at least 1e-9 wavelengths"
        )
    tol = rtol * 1e-3  # the truncated remainder stays well below rtol (and is estimated too)
    x = np.log(1 / tol)
    for _ in range(20):  # x = ln(1/tol) + 3 ln x: exp(-x) x^3 = tol
        x = np.log(1 / tol) + 3 * np.log(max(x, 1.0))
    k_max = max(x / h_min, 2 * a * 1.5)
    width = min(2 * np.pi / rho_max if rho_max > 0 else np.inf, 2.0 / h_min, k_max)
    n = int(np.ceil((k_max - 2 * a) / width))
    if n > MAX_PANELS:
        raise ConfigError(
            f"points: the field map needs {n} quadrature panels (rho up to {rho_max:g} with waves "
            f"decaying only over {h_min:g}); allowed <= {MAX_PANELS}: split the map or move points "
            "away from the interfaces"
        )
    return Path(a, b, k_max, 8, width)


@partial(jax.jit, static_argnames=("bessel_real", "has_up", "has_dn"))
def integrand(kr, coef, kzm, rho, zu, zd, bessel_real: bool, has_up: bool, has_dn: bool):
    """Integrand values (P, N, nsel) at nodes kr (N,) for points (P,) (no weights)."""
    x = rho[:, None] * (jnp.real(kr) if bessel_real else kr)[None, :]
    J = jn012(x)
    J = [j.astype(coef.dtype) for j in J]
    total = 0
    if has_up:
        total = jnp.exp(1j * kzm[None, :] * zu[:, None])[..., None] * coef[None, :, :, 0]
    if has_dn:
        total = total + jnp.exp(-1j * kzm[None, :] * zd[:, None])[..., None] * coef[None, :, :, 1]
    return total, J


def select_bessel(total, J, orders):
    return jnp.stack([total[..., i] * J[n] for i, n in enumerate(orders)], axis=-1)


REFINE_POINTS = 64  # sample points per call of panel_sums (fixed: one compilation)
REFINE_BLOCK = 15 * 16  # nodes per loop step of panel_sums
BLOCK_STEP = 4  # on a GPU, loops run over a multiple of this many blocks (static counts)
STATIC_COUNTS = ("gpu",)  # the platforms whose kernels take static block counts
REFINE_CHUNK = 15 * 256  # nodes per call of panel_sums


def panel_sums(kr, wk, wg, coef, kzm, rho, zu, zd, n_blocks, orders, bessel_real, has_up, has_dn):
    """Per-panel Kronrod and Gauss sums, (P, n_panels, nsel) each; nodes grouped by 15.

    The nodes (a fixed REFINE_CHUNK, padded) are taken REFINE_BLOCK at a time for the first
    ``n_blocks`` (a traced int32, or a static int: see the module's docstring) blocks;
    panels beyond them come back zero."""
    P, N, S = rho.shape[0], kr.shape[0], coef.shape[1]
    pb = REFINE_BLOCK // 15

    def body(i, carry):
        K, G = carry
        a = i * REFINE_BLOCK

        def sl(x):
            return jax.lax.dynamic_slice_in_dim(x, a, REFINE_BLOCK, 0)

        total, J = integrand(sl(kr), sl(coef), sl(kzm), rho, zu, zd, bessel_real, has_up, has_dn)
        f = select_bessel(total, J, orders).reshape(P, pb, 15, S)
        k = jnp.einsum("pnks,nk->pns", f, sl(wk).reshape(-1, 15), precision=HIGHEST)
        g = jnp.einsum("pnks,nk->pns", f, sl(wg).reshape(-1, 15), precision=HIGHEST)
        return (
            jax.lax.dynamic_update_slice_in_dim(K, k, i * pb, 1),
            jax.lax.dynamic_update_slice_in_dim(G, g, i * pb, 1),
        )

    zero = jnp.zeros((P, N // 15, S), coef.dtype)
    return jax.lax.fori_loop(0, n_blocks, body, (zero, zero))


def _refine_sums(kr, wk, wg, coef, kzm, rho, zu, zd, n_blocks, orders, bessel_real, has_up, has_dn):
    """:func:`panel_sums` of a batch of slots (leading axis of every argument but
    ``n_blocks``: each slot a chunk of one group's nodes and a tile of its sample points),
    reduced on the device to what the refinement reads: per slot the Kronrod sum over the
    panels (P, nsel) and per panel the Gauss-Kronrod difference above rounding level summed
    over the integrals (P, REFINE_CHUNK / 15). ``n_blocks``: the most valid blocks of any
    slot (the others' extra blocks hold zero-weight padding: zero sums)."""
    floor = 64 * jnp.finfo(rho.dtype).eps  # rounding-level differences are no error signal

    def one(kr, wk, wg, coef, kzm, rho, zu, zd):
        K, G = panel_sums(kr, wk, wg, coef, kzm, rho, zu, zd, n_blocks, orders, bessel_real, has_up, has_dn)
        d = jnp.maximum(jnp.abs(K - G) - floor * (jnp.abs(K) + jnp.abs(G)), 0)
        return K.sum(1), d.sum(-1)

    return jax.vmap(one)(kr, wk, wg, coef, kzm, rho, zu, zd)


CHUNK = 15 * 64  # nodes per call of integrate (fixed shapes: one compilation per variant)


def weight_matrix(w, block: int):
    """(n_blocks, block, 2 q + 1) per-panel weights of ``w`` (N, 3) (Kronrod, Kronrod - Gauss,
    last-panel Kronrod), q = block / 15 panels per block: one matrix product then gives the
    per-panel sums and the last-panel sum from one evaluation of the integrand."""
    N = w.shape[0]
    q = block // 15
    W = np.zeros((N // block, block, 2 * q + 1), w.dtype)
    wb = w.reshape(N // block, q, 15, 3)
    for j in range(q):
        W[:, 15 * j : 15 * (j + 1), j] = wb[:, j, :, 0]
        W[:, 15 * j : 15 * (j + 1), q + j] = wb[:, j, :, 1]
    W[:, :, 2 * q] = w[:, 2].reshape(N // block, block)
    return W


def _integrate(acc, kr, W, coef, kzm, rho, zu, zd, orders, bessel_real, has_up, has_dn, n_blocks=None):
    """Add one chunk of nodes to the accumulators ``acc = (K, err, last)`` of all points.

    ``W`` (n_blocks, block, 2 q + 1) from :func:`weight_matrix` (padded nodes: zero
    weights). The loop runs over blocks of nodes (whole panels), vectorised over points
    (P,); the integrand of a block is evaluated once and contracted with W. K, last:
    (P, nsel) complex; err (P, nsel): sum over panels of |K - G| above rounding level.
    ``n_blocks`` (a traced int32 or a static int, see the module's docstring; None: all):
    only the first blocks are evaluated.
    """
    nb, block, ncol = W.shape
    q = block // 15
    floor = 64 * jnp.finfo(rho.dtype).eps  # rounding-level differences are no error signal
    xs = (
        kr.reshape(nb, block),
        W.astype(coef.dtype),
        coef.reshape(nb, block, *coef.shape[1:]),
        kzm.reshape(nb, block),
    )

    def body(i, carry):
        K, err, last = carry
        k, w, c, z = (jax.lax.dynamic_index_in_dim(x, i, keepdims=False) for x in xs)
        total, J = integrand(k, c, z, rho, zu, zd, bessel_real, has_up, has_dn)
        f = select_bessel(total, J, orders)  # (P, block, S)
        r = jnp.einsum("pbs,bw->psw", f, w, precision=HIGHEST)  # (P, S, 2q + 1)
        kp, d = r[..., :q], r[..., q : 2 * q]
        d = jnp.maximum(jnp.abs(d) - floor * 2 * jnp.abs(kp), 0)
        return (K + kp.sum(-1), err + d.sum(-1), last + r[..., 2 * q])

    return jax.lax.fori_loop(0, nb if n_blocks is None else n_blocks, body, tuple(acc))


_STATICS = ("orders", "bessel_real", "has_up", "has_dn")
_refine_sums.__name__, _integrate.__name__ = "refine_sums", "integrate"  # programs' names
refine_sums = jax.jit(_refine_sums, static_argnames=_STATICS)
integrate = jax.jit(_integrate, static_argnames=_STATICS)
#: the kernels with a static block count (on a GPU)
_FIXED = {
    refine_sums: jax.jit(_refine_sums, static_argnames=_STATICS + ("n_blocks",)),
    integrate: jax.jit(_integrate, static_argnames=_STATICS + ("n_blocks",)),
}


def _blocks(fn, args, n_blocks, device):
    """``(kernel, n_blocks)`` for ``fn`` on ``device``: on a GPU the static-count kernel and
    the count rounded up to a multiple of :data:`BLOCK_STEP` (at most the chunk's blocks);
    elsewhere ``fn`` and the traced count."""
    if n_blocks is None or getattr(device, "platform", "cpu") not in STATIC_COUNTS:
        return fn, n_blocks
    most = args[2].shape[0] if fn is integrate else REFINE_CHUNK // REFINE_BLOCK
    if isinstance(n_blocks, jax.ShapeDtypeStruct):  # warm: every count
        counts = list(range(BLOCK_STEP, most + 1, BLOCK_STEP))
        return _FIXED[fn], counts + ([most] if most % BLOCK_STEP else [])
    return _FIXED[fn], int(min(-(-int(n_blocks) // BLOCK_STEP) * BLOCK_STEP, most))


def coefficient_table(kr, k0, eps, interfaces, z_src, s, m, sel, cdtype):
    """Host arrays (coefficients (N, nsel, 2), kz_m (N,)) for nodes kr (host, complex)."""
    with np.errstate(all="ignore"):  # padded nodes may repeat; nothing divides by zero on the path
        coef, kzm = integrand_coefficients(
            np.asarray(kr, complex), k0, np.asarray(eps, complex), tuple(interfaces), z_src, s, m
        )
    return coef[:, list(sel), :].astype(cdtype), kzm.astype(cdtype)


def orders_of(sel) -> tuple:
    return tuple(BESSEL_ORDER[i] for i in sel)


# Compilations started ahead, in threads (XLA compiles with the GIL released): a map knows
# every kernel shape it needs before it starts (fixed node chunks, bucketed point counts),
# so they compile side by side instead of one after another on first use.
_POOL: ThreadPoolExecutor | None = None
WARM_ENV = "EMJAX_LAYERED_WARM"  # "0": no compilation ahead (for comparisons)
_WARM: dict = {}
_LOCK = threading.Lock()


def _key(fn, args, kwargs, static):
    leaves = jax.tree_util.tree_leaves((args, kwargs))
    shapes = tuple(
        (tuple(a.shape), np.dtype(a.dtype).name) if hasattr(a, "dtype") else ((), np.asarray(a).dtype.name)
        for a in leaves
    )
    return (fn.__name__, shapes, tuple(sorted(static.items())))


def _compile(fn, args, kwargs, static, device):
    with precision_scope(), jax.default_device(device):
        fn.lower(*args, **kwargs, **static).compile()


def _device(device=None):
    """``device``, else the calling thread's default device (a program compiles per device);
    with several processes, this process's first device (``jax.devices()[0]`` is process 0's)."""
    if device is None:
        device = jax.config.jax_default_device
    return device if isinstance(device, jax.Device) else jax.local_devices()[0]


def _device_of(args):
    """The device of the first array among ``args`` (else the default device)."""
    for a in jax.tree_util.tree_leaves(args):
        if isinstance(a, jax.Array):
            return next(iter(a.devices()))
    return _device()


def warm(fn, args, kwargs=None, device=None, **static) -> None:
    """Compile ``fn`` (jitted) for these arguments (``jax.ShapeDtypeStruct`` leaves) on
    ``device`` (default: the calling thread's default device) in the background; :func:`call`
    with matching arguments on that device waits for it (then jit finds it in its cache: no
    second compilation). ``EMJAX_LAYERED_WARM=0`` turns this off."""
    if os.environ.get(WARM_ENV, "1").strip().lower() in ("0", "off", "no", "false"):
        return  # each kernel then compiles on its first call, one after another
    kwargs = kwargs or {}
    device = _device(device)
    if "n_blocks" in kwargs:
        fixed, counts = _blocks(fn, args, kwargs["n_blocks"], device)
        if fixed is not fn:  # a GPU: the static counts (every one for a traced spec)
            for n in counts if isinstance(counts, list) else [counts]:
                _submit(fixed, args, {}, dict(static, n_blocks=n), device)
            return
    _submit(fn, args, kwargs, static, device)


def _submit(fn, args, kwargs, static, device) -> None:
    key = (_key(fn, args, kwargs, static), device.id)
    global _POOL
    with _LOCK:
        if key in _WARM:
            return
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=max(1, min(8, os.cpu_count() or 1)))
        _WARM[key] = _POOL.submit(_compile, fn, args, kwargs, static, device)


def call(fn, *args, n_blocks=None, **static):
    """``fn(*args, **static)`` (with ``n_blocks`` where given) once a compilation of it
    started by :func:`warm` has finished (a failed one is left to jit to report)."""
    device = _device_of(args)
    kernel, n_blocks = _blocks(fn, args, n_blocks, device)
    kwargs = {}
    if kernel is not fn:  # the static-count kernel
        static = dict(static, n_blocks=n_blocks)
    elif n_blocks is not None:
        kwargs = dict(n_blocks=n_blocks)
    fn = kernel
    fut = _WARM.get((_key(fn, args, kwargs, static), device.id))
    if fut is not None:
        fut.exception()  # waits; errors surface from the call itself
    return fn(*args, **kwargs, **static)
