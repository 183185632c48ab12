"""Independent references for dipoles above a single planar interface (NumPy/SciPy only).

Closed forms and one-dimensional integrals, written without the generalized reflection
coefficients and Sommerfeld integrals of ``emjax.layered``, for its tests to compare with.

Conventions
-----------
* Time dependence ``exp(-i omega t)``; relative permittivity ``eps`` complex with
  ``Im eps >= 0`` for a lossy medium; ``k0 = 2 pi / wavelength``; lengths in any unit shared
  with the wavelength; ``k = k0 sqrt(eps)`` on the branch ``Im k >= 0``; every normal
  wavenumber ``kz = sqrt(k^2 - k_rho^2)`` on the branch ``Im kz >= 0`` (``Re kz >= 0`` when
  real).
* The dyadic Green's tensor solves ``curl curl G - k0^2 eps(z) G = I delta(r - r')``, so a
  point dipole ``p`` at ``r'`` radiates ``E(r) = (k0^2 / eps0) G(r, r') p`` (SI ``eps0``).
  All functions return ``G`` itself (or, where said, ``k0^2 G``), shape ``(N, 3, 3)`` with
  ``G[n, i, j] = G_ij(r_n, r')``: component ``i`` of the field at ``r_n`` from a unit dipole
  along ``j``.
* Geometry: the interface is the plane ``z = 0``, normal ``z``; medium 1 (``eps1``) fills
  ``z > 0`` and holds the source, medium 2 (``eps2``) fills ``z < 0``. ``eps2 = np.inf``
  (either sign) means a perfect electric conductor (``r_s = -1``, ``r_p = +1``).
* "Scattered" for an observation point in medium 1 means total minus the free-space
  direct wave ``G0(r, r')`` of medium 1; in medium 2 there is no direct wave and the
  "transmitted" tensor is the total field there.
* Fresnel coefficients of a plane wave in medium 1 hitting medium 2 (non-magnetic media),
  as in Novotny & Hecht, *Principles of Nano-Optics* (2nd ed., Cambridge 2012), eq. (2.49):

      r_s = (kz1 - kz2) / (kz1 + kz2)                       (ratio of E_s = E_y amplitudes)
      r_p = (eps2 kz1 - eps1 kz2) / (eps2 kz1 + eps1 kz2)   (ratio of H_s = H_y amplitudes)

  Sign of ``r_p``: it is the ratio of the tangential *magnetic* fields (equivalently of the
  E amplitudes along ``p_hat = s_hat x k_hat``, the same formula for the incident and the
  reflected wave). With it, the tangential E of the p wave reflects with ``-r_p`` and the
  normal E with ``+r_p``; at normal incidence ``r_p = -r_s = (n2 - n1)/(n2 + n1)``; for a
  perfect conductor ``r_p = +1``, ``r_s = -1``. This is the same ``r_p`` as the TM
  coefficient written in ``emjax.layered.coefficients``.

Importing: ``tests/reference.py`` is already imported by other tests as the top-level
module ``reference`` (pytest's default "prepend" import mode, no ``__init__.py`` in tests/),
so ``from reference import ...`` in tests/layered would collide in a full run; load this
file by path, as ``_load_reference`` in test_reference.py does.

Functions
---------
``free_space_green``, ``decay_rate`` (+ ``decay_rate_components``, ``decay_rate_from_green``,
``fresnel``), ``image_dipole_quasistatic``, ``perfect_conductor_image``,
``far_field_reflected``, ``far_field_transmitted``.
"""

from __future__ import annotations

import numpy as np
from scipy import integrate

__all__ = [
    "decay_rate",
    "decay_rate_components",
    "decay_rate_from_green",
    "far_field_reflected",
    "far_field_transmitted",
    "free_space_green",
    "fresnel",
    "image_dipole_quasistatic",
    "perfect_conductor_image",
]

_EYE = np.eye(3)
_MIRROR = np.diag([1.0, 1.0, -1.0])  # z -> -z, both for points and for dipole moments


# ----------------------------------------------------------------------------- helpers


def _points(r) -> np.ndarray:
    r = np.asarray(r, dtype=float)
    if r.shape[-1] != 3:
        raise ValueError(f"points must have a last axis of length 3, got shape {r.shape}")
    return r


def _src(r_src) -> np.ndarray:
    s = np.asarray(r_src, dtype=float)
    if s.shape != (3,):
        raise ValueError(f"r_src must be 3 coordinates, got shape {s.shape}")
    return s


def _is_pec(eps2) -> bool:
    return bool(np.isinf(np.abs(complex(eps2))))


def _sqrt_up(x):
    """sqrt on the branch Im >= 0 (and Re >= 0 for a positive real argument)."""
    w = np.sqrt(np.asarray(x, dtype=complex))
    return np.where(w.imag < 0, -w, w)


def _wavenumber(eps, k0):
    return k0 * complex(_sqrt_up(complex(eps)))


def _real_eps1(eps1) -> float:
    e = complex(eps1)
    if e.imag != 0 or e.real <= 0:
        raise ValueError(f"eps1 must be real and positive (a lossless host medium), got {eps1!r}")
    return e.real


def fresnel(eps1, eps2, kz1, kz2):
    """Fresnel ``(r_s, r_p)`` of medium 1 -> medium 2 for given normal wavenumbers (any unit,
    both in the same unit), see the module docstring; ``eps2 = inf`` gives ``(-1, +1)``."""
    kz1 = np.asarray(kz1, dtype=complex)
    if _is_pec(eps2):
        return -np.ones_like(kz1), np.ones_like(kz1)
    kz2 = np.asarray(kz2, dtype=complex)
    rs = (kz1 - kz2) / (kz1 + kz2)
    rp = (eps2 * kz1 - eps1 * kz2) / (eps2 * kz1 + eps1 * kz2)
    return rs, rp


# ----------------------------------------------------------------------------- 1. free space


def free_space_green(eps, k0, r, r_src) -> np.ndarray:
    """Free-space dyadic Green's tensor of a homogeneous medium ``eps``.

    ``G0(r, r') = (I + grad grad / k^2) exp(ikR) / (4 pi R)`` with ``k = k0 sqrt(eps)``
    (``Im k >= 0``), ``R = |r - r'|``, ``u = (r - r') / R``; in closed form (Novotny & Hecht
    eq. (2.85); Jackson eq. (9.18) for the field)

        G0 = exp(ikR)/(4 pi R) [ (1 + i/(kR) - 1/(kR)^2) I + (-1 - 3i/(kR) + 3/(kR)^2) u u ].

    ``r``: observation points (N, 3) (any leading shape); ``r_src``: (3,). Returns (N, 3, 3)
    complex. Singular at ``R = 0`` (not handled). Useful limit: for real ``eps``,
    ``Im G0(r, r) = lim_{R->0} Im G0 = k / (6 pi) I`` (the radiation reaction).
    """
    d = _points(r) - _src(r_src)
    k = _wavenumber(eps, k0)
    R = np.linalg.norm(d, axis=-1)
    u = d / R[..., None]
    x = k * R
    a = 1 + 1j / x - 1 / x**2
    b = -1 - 3j / x + 3 / x**2
    uu = u[..., :, None] * u[..., None, :]
    pref = np.exp(1j * x) / (4 * np.pi * R)
    return pref[..., None, None] * (a[..., None, None] * _EYE + b[..., None, None] * uu)


# ----------------------------------------------------------------------------- 2. decay rate


def _orientation(orientation: str) -> str:
    o = str(orientation).lower()
    if o in ("perpendicular", "perp", "z", "normal", "vertical"):
        return "perpendicular"
    if o in ("parallel", "par", "x", "y", "horizontal"):
        return "parallel"
    raise ValueError(f"orientation must be 'perpendicular' or 'parallel', got {orientation!r}")


def _sorted_breaks(a, b, cands):
    pts = sorted({float(c) for c in cands if a < c < b})
    return [a, *pts, b]


def _re_int_oscillatory(f, a, b, omega):
    """Re int_a^b f(c) exp(i omega c) dc for a smooth complex f (QAWO when oscillatory)."""
    opts = dict(epsabs=1e-13, epsrel=1e-12, limit=1000)
    if omega * (b - a) > 20:
        vc, _ = integrate.quad(lambda c: f(c).real, a, b, weight="cos", wvar=omega, **opts)
        vs, _ = integrate.quad(lambda c: f(c).imag, a, b, weight="sin", wvar=omega, **opts)
        return vc - vs
    v, _ = integrate.quad(lambda c: (f(c) * np.exp(1j * omega * c)).real, a, b, **opts)
    return v


def decay_rate_components(eps1, eps2, k0, d, orientation) -> dict:
    """Parts of the normalised decay rate (see :func:`decay_rate`), each a float:

    ``"direct"`` (= 1), ``"propagating"`` (``0 <= s < 1``, waves propagating in medium 1),
    ``"evanescent"`` (``s > 1``), ``"forbidden"`` (the part of the evanescent integral over
    ``1 < s < Re n2 / n1``: for lossless media with ``n2 > n1`` it is the power radiated into
    medium 2 at angles beyond the critical angle, "forbidden light"), ``"total"``.
    """
    e1 = _real_eps1(eps1)
    o = _orientation(orientation)
    d = float(d)
    if not d > 0:
        raise ValueError(f"d must be > 0, got {d}")
    n1 = np.sqrt(e1)
    k1 = k0 * n1
    omega = 2 * k1 * d
    pec = _is_pec(eps2)
    e2 = complex(eps2) if not pec else complex(np.inf)
    out = {"direct": 1.0, "propagating": 0.0, "evanescent": 0.0, "forbidden": 0.0}
    if not pec and e2.imag < 0:
        raise ValueError(f"eps2 = {e2} has Im < 0 (gain); with exp(-i omega t) losses have Im eps >= 0")
    if not pec and e2.imag == 0 and (e1 + e2).real <= 0:
        raise ValueError(f"eps2 = {e2}: lossless with eps1 + eps2 <= 0 puts the plasmon pole on the path")
    if not pec and e2 == e1:
        out["total"] = 1.0
        return out
    de = (e2 - e1) if not pec else 0.0

    # propagating part, c = sz = cos(theta) in (0, 1]; s ds / sz = -dc
    def coeffs_c(c):
        kz1 = n1 * c
        kz2 = _sqrt_up(de + e1 * c * c) if not pec else 1.0
        return fresnel(e1, e2, kz1, kz2)

    if o == "perpendicular":
        fc = lambda c: (1 - c * c) * coeffs_c(c)[1]
    else:
        fc = lambda c: (lambda rs, rp: rs - c * c * rp)(*coeffs_c(c))
    cands = []
    if not pec:
        cb2 = (e1 - e2.real) / e1  # critical angle (total internal reflection) if 0 < cb2 < 1
        if 0 < cb2 < 1:
            cands.append(np.sqrt(cb2))
    brk = _sorted_breaks(0.0, 1.0, cands)
    prop = sum(_re_int_oscillatory(fc, a, b, omega) for a, b in zip(brk[:-1], brk[1:]))

    # evanescent part, sz = i w, w = sqrt(s^2 - 1) in (0, inf); s ds / sz = -i dw
    def coeffs_w(w):
        kz1 = 1j * n1 * w
        kz2 = _sqrt_up(de - e1 * w * w) if not pec else 1.0
        return fresnel(e1, e2, kz1, kz2)

    if o == "perpendicular":
        fw = lambda w: ((1 + w * w) * coeffs_w(w)[1] * np.exp(-omega * w)).imag
    else:
        fw = lambda w: (lambda rs, rp: (rs + w * w * rp) * np.exp(-omega * w))(*coeffs_w(w)).imag
    ev = 0.0
    fb = 0.0
    if not pec:  # (for a PEC r_s, r_p are real: no evanescent contribution)
        cands = []
        wb2 = (e2.real - e1) / e1  # kz2 = 0 (medium 2 optically denser)
        wb = np.sqrt(wb2) if wb2 > 0 else 0.0
        if wb > 0:
            cands.append(wb)
        if (e1 + e2).real < 0:  # surface plasmon pole of r_p: s^2 = eps2 / (eps1 + eps2)
            wsp = complex(_sqrt_up(-e1 / (e1 + e2)))
            if wsp.real > 0:
                dl = max(abs(wsp.imag), 1e-9 * wsp.real)
                cands += [wsp.real + f * dl for f in (-30, -3, 0, 3, 30)]
        wmax = max([0.0, *cands]) + 80.0 / omega
        cands += [max([0.0, *cands]) + f / omega for f in (1.0, 5.0, 20.0)]
        brk = _sorted_breaks(0.0, wmax, cands)
        for a, b in zip(brk[:-1], brk[1:]):
            v, _ = integrate.quad(fw, a, b, epsabs=1e-13, epsrel=1e-12, limit=1000)
            ev += v
            if b <= wb * (1 + 1e-15):
                fb += v
    w = 1.5 if o == "perpendicular" else 0.75
    out["propagating"] = w * prop
    out["evanescent"] = w * ev
    out["forbidden"] = w * fb
    out["total"] = 1.0 + out["propagating"] + out["evanescent"]
    return out


def decay_rate(eps1, eps2, k0, d, orientation) -> float:
    """Normalised total decay rate ``Gamma / Gamma0`` of a dipole at height ``d`` above an
    interface (power it emits, radiated plus absorbed, over the power it emits in
    homogeneous medium 1). Medium 1 (``eps1``, real > 0) for ``z > 0``; medium 2 (``eps2``,
    complex, or ``np.inf`` for a perfect conductor) for ``z < 0``; ``orientation``:
    ``"perpendicular"`` (dipole along z) or ``"parallel"`` (along x).

    Chance, Prock & Silbey, Adv. Chem. Phys. 37, 1 (1978); Lukosz & Kunz, J. Opt. Soc. Am.
    67, 1607 (1977); in the form of Novotny & Hecht, eqs. (10.26)-(10.27)::

        Gamma_perp / Gamma0 = 1 + 3/2 Re int_0^inf  s^3 / sz  r_p(s) exp(2 i k1 d sz) ds
        Gamma_par  / Gamma0 = 1 + 3/4 Re int_0^inf  s / sz [r_s(s) - sz^2 r_p(s)] exp(2 i k1 d sz) ds

    with ``s = k_rho / k1``, ``sz = sqrt(1 - s^2)`` (``Im >= 0``), ``k1 = k0 sqrt(eps1)`` and
    the Fresnel coefficients of the module docstring (``r_p`` = ratio of H_y). Evaluated by
    ``scipy.integrate.quad`` (epsabs 1e-13, epsrel 1e-12) after removing the ``1/sz``
    endpoint singularity: on ``0 <= s < 1`` with ``c = sz`` (``s ds/sz = -dc``)::

        perp: 3/2 Re int_0^1 (1 - c^2) r_p e^{2 i k1 d c} dc
        par:  3/4 Re int_0^1 (r_s - c^2 r_p) e^{2 i k1 d c} dc

    (QAWO cos/sin weights when oscillatory), and on ``s > 1`` with ``sz = i w``,
    ``w = sqrt(s^2 - 1)`` (``s ds / sz = -i dw``)::

        perp: 3/2 Im int_0^inf (1 + w^2) r_p e^{-2 k1 d w} dw
        par:  3/4 Im int_0^inf (r_s + w^2 r_p) e^{-2 k1 d w} dw

    split at the critical angle (``s = n2/n1`` when ``n2 < n1``), at the branch point
    ``kz2 = 0`` (``s = n2/n1 > 1``) and around a surface-plasmon pole
    (``s^2 = eps2/(eps1 + eps2)``, needs ``Im eps2 > 0`` to be integrable).

    Relation to the Green tensor (:func:`decay_rate_from_green`): the power of a dipole is
    ``P = (omega/2) Im(p* . E(r0))`` and ``E = (k0^2/eps0) G p``, and in a homogeneous
    lossless medium ``Im G0(r0, r0) = k1/(6 pi) I`` (limit ``R -> 0`` of
    :func:`free_space_green`; it reproduces Larmor's ``P0 = omega k0^3 n1 |p|^2 /
    (12 pi eps0)``), hence for unit orientation ``n``::

        Gamma / Gamma0 = 1 + (6 pi / k1) Im[ n . G_scat(r0, r0) . n ].

    Limits: ``d -> inf``: 1 (with the Drexhage oscillation ~ 3/4 Re[r_s(0) e^{2ik1d}/(i k1 d)]
    for parallel); ``eps2 = eps1``: exactly 1; perfect conductor at ``d -> 0``: 2
    (perpendicular) and 0 (parallel); for lossy ``eps2`` at ``k1 d << 1``: ``3/8 Im[(eps2 -
    eps1)/(eps2 + eps1)] / (k1 d)^3`` (perpendicular), half that (parallel).
    """
    return decay_rate_components(eps1, eps2, k0, d, orientation)["total"]


def decay_rate_from_green(G_scat_at_source, eps1, k0, orientation) -> float:
    """``1 + (6 pi / k1) Im[n . G_scat(r0, r0) . n]`` with ``k1 = k0 sqrt(eps1)`` (real
    ``eps1``); ``G_scat_at_source``: (3, 3) scattered tensor at the source point;
    ``orientation``: "perpendicular" (n = z), "parallel" (n = x) or a unit 3-vector."""
    k1 = k0 * np.sqrt(_real_eps1(eps1))
    if isinstance(orientation, str):
        n = (
            np.array([0.0, 0.0, 1.0])
            if _orientation(orientation) == "perpendicular"
            else np.array([1.0, 0, 0])
        )
    else:
        n = np.asarray(orientation, dtype=float)
        n = n / np.linalg.norm(n)
    G = np.asarray(G_scat_at_source).reshape(3, 3)
    return float(1 + 6 * np.pi / k1 * np.imag(n @ G @ n))


# ----------------------------------------------------------------------------- 3. quasi-static


def _grad_grad_inv_r(d):
    """grad grad (1 / (4 pi R)) = (3 u u - I) / (4 pi R^3) for offsets d (N, 3)."""
    R = np.linalg.norm(d, axis=-1)
    u = d / R[..., None]
    uu = u[..., :, None] * u[..., None, :]
    return (3 * uu - _EYE) / (4 * np.pi * R**3)[..., None, None]


def image_dipole_quasistatic(eps1, eps2, r, r_src, include_direct=False) -> np.ndarray:
    """Electrostatic (``k0 -> 0``) limit of the interface's Green tensor, returned as
    ``k0^2 G`` (k0-independent), for a source in medium 1 (``r_src[2] > 0``).

    Derivation (Jackson, *Classical Electrodynamics* 3rd ed., sec. 4.4; superposing the
    image charges of a dipole's two charges): a charge ``q`` at ``r'`` in medium 1 gives
    ``phi_1 = [q/R + beta q/R_m] / (4 pi eps0 eps1)`` (``R_m = |r - M r'|``, ``M`` the mirror
    ``z -> -z``) and ``phi_2 = 2 q / (4 pi eps0 (eps1 + eps2) R)``, with
    ``beta = (eps1 - eps2) / (eps1 + eps2)``; continuity of ``phi`` and of ``eps dphi/dz`` at
    ``z = 0`` holds. A dipole's charges ``+-q`` at ``r' +- delta/2`` have images at
    ``M r' +- M delta/2``, so:

    * ``z > 0`` (scattered part, total minus direct): the field of an image dipole
      ``p_img = beta M p = beta (p_x, p_y, -p_z)`` at ``M r'`` in medium 1::

          k0^2 G_scat = (1/eps1) grad grad (1/(4 pi |r - M r'|)) . diag(beta, beta, -beta)

      i.e. parallel components keep the sign of ``beta`` and the perpendicular one flips
      (perfect conductor, ``beta = -1``: ``diag(-1, -1, +1)``).
    * ``z < 0`` (transmitted = total): the field of the dipole at its own position seen in a
      medium of permittivity ``(eps1 + eps2)/2`` (equivalently a dipole
      ``2 eps2/(eps1 + eps2) p`` in medium 2)::

          k0^2 G_trans = 2/(eps1 + eps2) grad grad (1/(4 pi |r - r'|))

    Normalisation: for ``k0 -> 0`` the free-space tensor is ``G0 -> grad grad (1/(4 pi R)) /
    (k0^2 eps1)``, so these are the ``k0^2 G`` to which ``k0^2 G_scat`` / ``k0^2 G`` of the
    full-wave tensor tend at ``k0 |r - M r'| << 1`` (relative corrections of order
    ``(k0 R)^2``). ``include_direct=True`` adds ``grad grad (1/(4 pi |r - r'|))/eps1`` for
    ``z > 0`` (the quasi-static total). ``eps2 = np.inf``: perfect conductor (no field for
    ``z < 0``). Points exactly on ``z = 0`` are taken in medium 1.
    """
    rs = _src(r_src)
    if not rs[2] > 0:
        raise ValueError("the source must lie in medium 1 (z > 0)")
    pts = _points(r)
    pec = _is_pec(eps2)
    beta = -1.0 if pec else (eps1 - eps2) / (eps1 + eps2)
    t = 0.0 if pec else 2.0 / (eps1 + eps2)
    up = pts[..., 2] >= 0
    out = np.zeros(pts.shape[:-1] + (3, 3), dtype=complex)
    dm = pts - _MIRROR @ rs
    dd = pts - rs
    with np.errstate(divide="ignore", invalid="ignore"):
        scat = _grad_grad_inv_r(dm) @ np.diag([beta, beta, -beta]).astype(complex) / eps1
        if include_direct:
            scat = scat + _grad_grad_inv_r(dd) / eps1
        trans = t * _grad_grad_inv_r(dd)
    out[up] = scat[up]
    out[~up] = trans[~up]
    return out


# ----------------------------------------------------------------------------- 4. PEC image


def perfect_conductor_image(eps1, k0, r, r_src) -> np.ndarray:
    """Exact scattered Green tensor above a perfect electric conductor filling ``z < 0``
    (medium 1, ``eps1``, for ``z > 0``): the image dipole at the mirror point with
    ``p_par -> -p_par``, ``p_perp -> +p_perp`` (Jackson sec. 2.1/4.4; valid at all
    frequencies since G0(r - M r') diag(-1,-1,1) + G0(r - r') has zero tangential E on
    ``z = 0`` and solves the equation in ``z > 0``)::

        G_scat(r, r') = G0(r, M r') . diag(-1, -1, +1),   M: z -> -z.

    Observation points must have ``z >= 0``; the total field is ``G0 + G_scat``.
    """
    pts = _points(r)
    if np.any(pts[..., 2] < 0):
        raise ValueError("observation points must lie in medium 1 (z >= 0)")
    rs = _src(r_src)
    return free_space_green(eps1, k0, pts, _MIRROR @ rs) @ np.diag([-1.0, -1.0, 1.0])


# ----------------------------------------------------------------------------- 5. far fields


def _directions(r_obs):
    pts = _points(r_obs)
    r = np.linalg.norm(pts, axis=-1)
    e = pts / r[..., None]
    rho = np.hypot(pts[..., 0], pts[..., 1])
    on_axis = rho <= 1e-14 * r
    safe = np.where(on_axis, 1.0, rho)
    cph = np.where(on_axis, 1.0, pts[..., 0] / safe)
    sph = np.where(on_axis, 0.0, pts[..., 1] / safe)
    z = np.zeros_like(r)
    rho_hat = np.stack([cph, sph, z], axis=-1)
    phi_hat = np.stack([-sph, cph, z], axis=-1)
    sin_t = rho / r
    cos_t = pts[..., 2] / r
    theta_hat = cos_t[..., None] * rho_hat - sin_t[..., None] * np.array([0.0, 0.0, 1.0])
    return r, e, rho_hat, phi_hat, theta_hat, sin_t, cos_t


def _outer(a, b):
    return a[..., :, None] * b[..., None, :]


def far_field_reflected(eps1, eps2, k0, r_src_height, r_obs) -> np.ndarray:
    """Leading ``1/r`` term of the TOTAL Green tensor (direct + reflected) far away in
    medium 1 (``z > 0``), for a source at ``(0, 0, h)``, ``h = r_src_height > 0``.

    With ``r = |r_obs|`` (measured from the origin on the interface), ``e = r_obs / r``
    ``= (sin t cos f, sin t sin f, cos t)``, ``theta_hat``, ``phi_hat`` the spherical unit
    vectors and ``D = diag(-1, -1, 1)``::

        G_far = exp(i k1 r)/(4 pi r) [ exp(-i k1 h cos t) (I - e e)
                  + exp(+i k1 h cos t) (r_p theta_hat theta_hat - r_s phi_hat phi_hat) D ]

    with ``r_s``, ``r_p`` at the specular angle (``k_rho = k1 sin t``). The reflected term is
    the far field of the mirror source at ``(0, 0, -h)`` (phase ``exp(+i k1 h cos t)``)
    whose downward plane wave ``(I - k_d k_d) p`` is split into s (``phi_hat``) and p
    (``p_d = -(cos t rho_hat + sin t z_hat)``) parts, reflected with ``r_s`` and ``r_p``
    into ``phi_hat`` and ``theta_hat = p_hat of the reflected wave``; ``-theta_hat p_d^T =
    theta_hat theta_hat^T D``, ``phi_hat phi_hat^T = -phi_hat phi_hat^T D``. This is the
    stationary-phase limit of the angular-spectrum integral (Novotny & Hecht sec. 10.6;
    also reciprocity + Fresnel, see tests). For a perfect conductor it is the far field of
    G0 + :func:`perfect_conductor_image`. Non-uniform near grazing (``t -> 90 deg``), where
    for finite ``eps2`` both coefficients tend to -1, the 1/r term vanishes and surface /
    lateral waves (1/r^2) dominate. ``eps1`` real > 0.
    """
    e1 = _real_eps1(eps1)
    h = float(r_src_height)
    r, e, rho_hat, phi_hat, theta_hat, sin_t, cos_t = _directions(r_obs)
    if np.any(cos_t < 0):
        raise ValueError("observation points must lie in medium 1 (z >= 0)")
    n1 = np.sqrt(e1)
    k1 = k0 * n1
    pec = _is_pec(eps2)
    kz1 = n1 * cos_t
    kz2 = 1.0 if pec else _sqrt_up(complex(eps2) - e1 * sin_t**2)
    rs, rp = fresnel(e1, eps2, kz1, kz2)
    D = np.diag([-1.0, -1.0, 1.0])
    direct = np.exp(-1j * k1 * h * cos_t)[..., None, None] * (_EYE - _outer(e, e))
    refl = (
        rp[..., None, None] * _outer(theta_hat, theta_hat) - rs[..., None, None] * _outer(phi_hat, phi_hat)
    ) @ D
    refl = np.exp(1j * k1 * h * cos_t)[..., None, None] * refl
    return (np.exp(1j * k1 * r) / (4 * np.pi * r))[..., None, None] * (direct + refl)


def far_field_transmitted(eps1, eps2, k0, height, r_obs) -> np.ndarray:
    """Leading ``1/r`` term of the Green tensor far away in medium 2 (``z < 0``) for a source
    at ``(0, 0, h)`` in medium 1, ``h = height > 0``; ``eps1`` real > 0, ``eps2`` real > 0
    (for lossy ``eps2`` the formula is still the saddle-point term but the field decays as
    ``exp(-Im k2 r)``).

    Derivation (Novotny & Hecht sec. 10.6, eqs. (10.32)-(10.35) in spirit; Mandel & Wolf
    sec. 3.3 for the asymptotics). Angular spectrum of the source for ``z < h`` (Weyl)::

        G0 = i/(8 pi^2) int d^2k_par  (1/kz1) [s s + p_d p_d] exp(i k_par.rho + i kz1 (h - z)),

    ``s = z_hat x k_par_hat``, ``p = s x k_hat`` for each wave. Each down-going wave crosses
    ``z = 0`` with ``t_s = 2 kz1/(kz1 + kz2)`` and, for E along ``p``, ``t_p = (n1/n2) (1 + r_p)
    = (n1/n2) 2 eps2 kz1/(eps2 kz1 + eps1 kz2)``, becoming ``[t_s s s + t_p p_2 p_d]
    exp(i k_par.rho + i kz1 h - i kz2 z)``. The stationary point of the phase for
    ``r -> inf`` along ``e = (sin t cos f, sin t sin f, cos t)``, ``cos t < 0``, is
    ``k_par = k2 sin t (cos f, sin f)`` (``kz2 = k2 |cos t|``) and the 2-D saddle gives
    ``int d^2k A exp(i k.r) -> -2 pi i k2 |cos t| A exp(i k2 r)/r``. With ``p_2 = theta_hat``,
    ``s = phi_hat`` and ``p_d = -(kz1 rho_hat + k_rho z_hat)/k1``::

        G_far = exp(i k2 r)/(4 pi r) exp(i kz1 h) [ 2 kz2/(kz1 + kz2) phi_hat phi_hat
                     + (n1/n2) 2 eps2 kz2/(eps2 kz1 + eps1 kz2) theta_hat p_d^T ],

    ``k_rho = k2 sin t``, ``kz1 = sqrt(k1^2 - k_rho^2)`` (``Im >= 0``: for ``k_rho > k1``,
    beyond the critical angle of a denser medium 2, ``exp(i kz1 h)`` decays, the "forbidden
    light"). The ``1/kz1`` of the spectrum cancels with the ``kz1`` of ``t``: regular at the
    critical angle (where the asymptotics is nevertheless non-uniform: lateral wave). The
    same tensor follows from reciprocity ``G(r, r') = G(r', r)^T`` and the Fresnel
    transmission 2 -> 1 of the plane wave of a far dipole (checked in the tests). ``eps2 =
    eps1`` gives the far field of G0. Against a numerical Sommerfeld (J0) integral of
    ``G_zz`` (eps1 = 1, eps2 = 2.25, h = 0.2 wavelengths) the relative deviation falls as
    ``c / r`` with ``c`` ~ 2 wavelengths at 160 deg and ~ 12.5 wavelengths at 130 deg (8 deg
    beyond the critical angle): compare at r >~ 1e3 wavelengths, away from the critical angle.
    """
    e1 = _real_eps1(eps1)
    if _is_pec(eps2):
        raise ValueError("no transmitted field into a perfect conductor")
    e2 = complex(eps2)
    h = float(height)
    r, e, rho_hat, phi_hat, theta_hat, sin_t, cos_t = _directions(r_obs)
    if np.any(cos_t > 0):
        raise ValueError("observation points must lie in medium 2 (z <= 0)")
    n1 = np.sqrt(e1)
    n2 = complex(_sqrt_up(e2))
    k2 = k0 * n2
    krho = n2 * sin_t  # in units of k0
    kz2 = n2 * np.abs(cos_t)
    kz1 = _sqrt_up(e1 - krho**2)
    ts = 2 * kz2 / (kz1 + kz2)
    tp = (n1 / n2) * 2 * e2 * kz2 / (e2 * kz1 + e1 * kz2)
    pd = -(kz1[..., None] * rho_hat + krho[..., None] * np.array([0.0, 0.0, 1.0])) / n1
    M = ts[..., None, None] * _outer(phi_hat, phi_hat) + tp[..., None, None] * _outer(theta_hat, pd)
    pref = np.exp(1j * k2 * r) / (4 * np.pi * r) * np.exp(1j * k0 * kz1 * h)
    return pref[..., None, None] * M
