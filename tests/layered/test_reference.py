"""Self-checks of the independent layered-media references (tests/layered/layered_reference.py).

Each check compares two routes that share no formula: finite differences of the PDE, the
image method against the Chance-Prock-Silbey integral, electrostatic boundary conditions,
plane-wave Fresnel transmission solved numerically + reciprocity against the stationary-phase
far fields, and power conservation between the far fields and the decay-rate integral.
"""

import layered_reference as ref  # tests/layered on sys.path (tests/reference.py is the DDA one)
import numpy as np
import pytest
from scipy import integrate

K0 = 2 * np.pi  # wavelength 1
PEC = np.inf


# ----------------------------------------------------------------------------- free space


def _curl_curl_fd(fun, pts, h):
    """curl curl of each column of fun(points) (N, 3, 3) by central differences (O(h^2));
    h: step per point (N,)."""
    e = np.eye(3)[:, None, :] * h[None, :, None]
    h = h[:, None, None]
    F0 = fun(pts)
    d2 = np.zeros((len(pts), 3, 3, 3, 3), dtype=complex)  # [n, a, b, i, j] = d_a d_b G_ij
    for a in range(3):
        for b in range(3):
            if a == b:
                d2[:, a, a] = (fun(pts + e[a]) - 2 * F0 + fun(pts - e[a])) / h**2
            else:
                d2[:, a, b] = (
                    fun(pts + e[a] + e[b])
                    - fun(pts + e[a] - e[b])
                    - fun(pts - e[a] + e[b])
                    + fun(pts - e[a] - e[b])
                ) / (4 * h**2)
    grad_div = np.einsum("nimmj->nij", d2)  # d_i d_m G_mj
    lap = np.einsum("naaij->nij", d2)
    return grad_div - lap, F0


@pytest.mark.parametrize("eps", [1.0, 2.25 + 0.3j, -4 + 0.5j])
def test_free_space_green_solves_helmholtz(eps):
    """curl curl G0 - k^2 G0 = 0 away from the source, by second-order finite differences
    with steps h = 2e-4 R (truncation ~ 30 (h/R)^2 / min(1, kR)^2 ~ 1e-5 of k^2 G at kR = 0.3,
    rounding ~ 1e-16 (R/h)^2 ~ 1e-9), at kR from 0.3 to 10, lossless, lossy and metallic.
    A wrong near-field coefficient would leave a residual of order 1/(kR)^2 x k^2 G."""
    src = np.array([0.1, -0.2, 0.3])
    rng = np.random.default_rng(1)
    dirs = rng.normal(size=(6, 3))
    dirs /= np.linalg.norm(dirs, axis=1)[:, None]
    pts = src + dirs * np.array([0.05, 0.1, 0.3, 0.6, 1.0, 1.6])[:, None]
    fun = lambda p: ref.free_space_green(eps, K0, p, src)
    cc, G = _curl_curl_fd(fun, pts, 2e-4 * np.linalg.norm(pts - src, axis=1))
    k2 = K0**2 * eps
    res = np.abs(cc - k2 * G).max(axis=(1, 2)) / np.abs(k2 * G).max(axis=(1, 2))
    assert res.max() < 3e-5, res


def test_free_space_green_symmetry_and_radiation_reaction():
    """G0 is symmetric, G0(r, r') = G0(r', r), and Im G0(r -> r') -> k/(6 pi) I with error
    O((kR)^2) (the relation behind decay_rate_from_green)."""
    eps = 2.25
    src = np.array([0.3, 0.1, -0.2])
    pts = np.array([[1.0, 0.4, 0.5], [0.2, -0.7, 0.9]])
    G = ref.free_space_green(eps, K0, pts, src)
    assert np.allclose(G, G.transpose(0, 2, 1), rtol=0, atol=1e-15 * np.abs(G).max())
    G2 = np.stack([ref.free_space_green(eps, K0, src[None], p)[0] for p in pts])
    assert np.allclose(G, G2, rtol=1e-14, atol=0)
    k = K0 * np.sqrt(eps)
    x = 1e-3 / k
    Gs = ref.free_space_green(eps, K0, src + x * np.array([[0.6, 0.0, 0.8], [0.0, 1.0, 0.0]]), src)
    err = np.abs(Gs.imag - k / (6 * np.pi) * np.eye(3)).max() / (k / (6 * np.pi))
    assert err < 1e-5


# ----------------------------------------------------------------------------- decay rate


@pytest.mark.parametrize("orientation", ["perpendicular", "parallel"])
def test_decay_rate_homogeneous_is_one(orientation):
    assert ref.decay_rate(2.25, 2.25, K0, 0.05, orientation) == 1.0


@pytest.mark.parametrize("eps2", [2.25, 0.5 + 0.1j, -10 + 1j])
def test_decay_rate_far_from_interface(eps2):
    """k1 d = 1000: the rate is 1 + O(1/(k1 d)); parallel matches Drexhage's asymptotic
    1 + 3/4 Re[r_s(0) exp(2 i k1 d)/(i k1 d)] (the c = 1 endpoint of the propagating
    integral) to O(1/(k1 d)^2); perpendicular deviates by O(1/(k1 d)^2) only."""
    kd = 1000.0
    n2 = np.sqrt(eps2)
    rs0 = (1 - n2) / (1 + n2)
    par = ref.decay_rate(1.0, eps2, K0, kd / K0, "parallel")
    perp = ref.decay_rate(1.0, eps2, K0, kd / K0, "perpendicular")
    drexhage = 1 + 0.75 * np.real(rs0 * np.exp(2j * kd) / (1j * kd))
    assert abs(par - 1) < 1e-3 and abs(perp - 1) < 1e-5
    assert abs(par - drexhage) < 1e-6


def test_decay_rate_perfect_conductor_limits():
    """PEC at d -> 0: 2 (perpendicular: the in-phase image doubles the dipole) and 0
    (parallel: the image cancels it), with corrections O((k d)^2)."""
    d = 1e-3
    assert abs(ref.decay_rate(1.0, PEC, K0, d, "perpendicular") - 2) < 1e-4
    assert abs(ref.decay_rate(1.0, PEC, K0, d, "parallel")) < 1e-4
    # a very good conductor approaches the PEC, up to its Ohmic loss ~ Re(1/n2) / (k d)^2
    # (which diverges as d -> 0 for any finite eps2)
    for o in ("perpendicular", "parallel"):
        a, b = ref.decay_rate(1.0, 1e12j, K0, 0.1, o), ref.decay_rate(1.0, PEC, K0, 0.1, o)
        assert 0 < a - b < 1e-5


@pytest.mark.parametrize("eps1", [1.0, 2.25])
@pytest.mark.parametrize("orientation", ["perpendicular", "parallel"])
def test_decay_rate_perfect_conductor_equals_image(eps1, orientation):
    """The CPS integral with r_s = -1, r_p = 1 against 1 + (6 pi/k1) Im[n.G_scat.n] of the
    exact PEC image tensor, at heights from 0.01 to 30 wavelengths (agreement 1e-11)."""
    for d in (0.01, 0.1, 0.37, 1.3, 30.0):
        src = np.array([0.2, -0.1, d])
        G = ref.perfect_conductor_image(eps1, K0, src[None], src)[0]
        a = ref.decay_rate(eps1, PEC, K0, d, orientation)
        b = ref.decay_rate_from_green(G, eps1, K0, orientation)
        assert abs(a - b) < 1e-11, (d, a, b)


@pytest.mark.parametrize("eps2", [-10 + 1j, 2.25 + 0.5j, 5j])
@pytest.mark.parametrize("orientation", ["perpendicular", "parallel"])
def test_decay_rate_quasistatic_equals_image_dipole(eps2, orientation):
    """Lossy medium 2, k1 d = 1e-3: the non-radiative (evanescent) rate ~ 1/(k1 d)^3 equals
    the quasi-static image dipole's 1 + (6 pi/k1) Im[n.G_qs.n] to ~ 1e-5 relative (the
    corrections are O((k1 d)^2) relative)."""
    eps1 = 1.0
    d = 1e-3 / K0
    src = np.array([0.0, 0.0, d])
    Gq = ref.image_dipole_quasistatic(eps1, eps2, src[None], src)[0] / K0**2
    a = ref.decay_rate(eps1, eps2, K0, d, orientation)
    b = ref.decay_rate_from_green(Gq, eps1, K0, orientation)
    assert abs(a - b) / a < 2e-5
    closed = 3 / 8 * np.imag((eps2 - eps1) / (eps2 + eps1)) / 1e-3**3
    if orientation == "parallel":
        closed /= 2
    assert abs(b - 1 - closed) / closed < 1e-12


def _decay_rate_in_s(eps1, eps2, d, orientation):
    """The CPS integrals in the original variable s, with s = sin t on [0, 1) and s = cosh u
    beyond (other substitutions than reference.decay_rate, which integrates in sz)."""
    n1 = np.sqrt(eps1)
    k1 = K0 * n1

    def kz(e, s):
        w = np.sqrt(complex(e - eps1 * s * s))
        return w if w.imag >= 0 else -w

    def f(s):
        kz1, kz2 = kz(eps1, s), kz(eps2, s)
        rs, rp, sz = (
            (kz1 - kz2) / (kz1 + kz2),
            (eps2 * kz1 - eps1 * kz2) / (eps2 * kz1 + eps1 * kz2),
            kz1 / n1,
        )
        v = 1.5 * s**3 / sz * rp if orientation == "perpendicular" else 0.75 * s / sz * (rs - sz**2 * rp)
        return (v * np.exp(2j * k1 * d * sz)).real

    opts = dict(limit=2000, epsabs=1e-12, epsrel=1e-11)
    tc = np.arcsin(min(1.0, np.sqrt(max(np.real(eps2), 0) / eps1)))
    v1 = integrate.quad(lambda t: f(np.sin(t)) * np.cos(t), 0, np.pi / 2, points=[tc], **opts)[0]
    pts = []
    if np.real(eps1 + eps2) < 0:
        pts.append(np.arccosh(np.real(np.sqrt(eps2 / (eps1 + eps2)))))
    if np.real(eps2) > eps1:
        pts.append(np.arccosh(np.sqrt(np.real(eps2) / eps1)))
    umax = np.arccosh(1 + 100 / (2 * k1 * d)) + 1
    v2 = integrate.quad(lambda u: f(np.cosh(u)) * np.sinh(u), 0, umax, points=pts or None, **opts)[0]
    return 1 + v1 + v2


@pytest.mark.parametrize("eps2", [9.0, 0.3, -2 + 0.002j, 12 + 3j])
@pytest.mark.parametrize("orientation", ["perpendicular", "parallel"])
def test_decay_rate_other_substitution(eps2, orientation):
    """The same integral evaluated in s (s = sin t, s = cosh u): agreement 1e-10 (observed
    <= 1e-12) for a denser and a rarer dielectric, a weakly damped plasmonic metal (sharp
    surface-plasmon pole) and a lossy dielectric, at heights 0.005 and 0.3 wavelengths."""
    for d in (0.005, 0.3):
        a = ref.decay_rate(1.0, eps2, K0, d, orientation)
        b = _decay_rate_in_s(1.0, eps2, d, orientation)
        assert abs(a - b) < 1e-10 * abs(a), (d, a, b)


# ----------------------------------------------------------------------------- quasi-static / PEC


@pytest.mark.parametrize("eps2", [2.25, -6 + 0.8j, 1e3j])
def test_quasistatic_boundary_conditions(eps2):
    """On z = 0: the quasi-static total field above (direct + image) and the transmitted
    field below have equal tangential E and equal normal eps E_z, for every dipole
    orientation (points at z = +-1e-10: the O(1e-10) offset is the tolerance)."""
    eps1 = 1.7
    src = np.array([0.03, -0.02, 0.1])
    xy = np.array([[0.0, 0.0], [0.05, 0.01], [-0.2, 0.13], [0.4, -0.3]])
    up = np.column_stack([xy, np.full(len(xy), 1e-10)])
    dn = np.column_stack([xy, np.full(len(xy), -1e-10)])
    E1 = ref.image_dipole_quasistatic(eps1, eps2, up, src, include_direct=True)
    E2 = ref.image_dipole_quasistatic(eps1, eps2, dn, src)
    scale = np.abs(E1).max()
    assert np.abs(E1[:, :2] - E2[:, :2]).max() < 1e-8 * scale
    assert np.abs(eps1 * E1[:, 2] - eps2 * E2[:, 2]).max() < 1e-8 * scale * abs(eps2)


def test_perfect_conductor_image_properties():
    """Tangential total E vanishes on z = 0; reciprocity G_s(r, r') = G_s(r', r)^T; for
    k0 -> 0, k0^2 G_s tends to the quasi-static image with eps2 = inf."""
    eps1 = 2.0
    src = np.array([0.1, 0.2, 0.35])
    pts = np.array([[0.5, -0.3, 0.0], [1.2, 0.4, 0.0], [0.1, 0.2, 0.0]])
    tot = ref.free_space_green(eps1, K0, pts, src) + ref.perfect_conductor_image(eps1, K0, pts, src)
    assert np.abs(tot[:, :2, :]).max() < 1e-14 * np.abs(tot).max()
    obs = np.array([[0.7, -0.1, 0.45]])
    a = ref.perfect_conductor_image(eps1, K0, obs, src)[0]
    b = ref.perfect_conductor_image(eps1, K0, src[None], obs[0])[0]
    assert np.allclose(a, b.T, rtol=1e-14, atol=0)
    k0 = 1e-4
    g = k0**2 * ref.perfect_conductor_image(eps1, k0, obs, src)
    q = ref.image_dipole_quasistatic(eps1, PEC, obs, src)
    assert np.abs(g - q).max() < 1e-6 * np.abs(q).max()


# ----------------------------------------------------------------------------- far fields


def _plane_wave_interface(eps_in, eps_out, k_inc, E_inc):
    """Reflected and transmitted plane waves at z = 0 for an incident wave (wavevector k_inc
    in units of k0, E amplitude E_inc at the origin) in eps_in, by solving the four
    continuity conditions of tangential E and tangential H = k x E numerically (no Fresnel
    formula). Returns (k_r, E_r, k_t, E_t)."""
    kx, ky, kz = k_inc
    up = np.real(kz) > 0 or (np.real(kz) == 0 and np.imag(kz) > 0)
    kz_out = np.sqrt(complex(eps_out) - kx**2 - ky**2)
    kz_out = kz_out if kz_out.imag >= 0 else -kz_out
    k_r = np.array([kx, ky, -kz], dtype=complex)
    k_t = np.array([kx, ky, kz_out if up else -kz_out], dtype=complex)
    kp = np.array([kx, ky, 0.0])
    s = np.cross([0.0, 0.0, 1.0], kp)
    s = s / np.linalg.norm(s) if np.linalg.norm(s) > 0 else np.array([0.0, 1.0, 0.0])

    def basis(k):
        return [s, np.cross(k, s) / np.sqrt(k @ k)]

    A = np.zeros((4, 4), dtype=complex)
    rhs = np.zeros(4, dtype=complex)
    for col, (k, sign) in enumerate([(k_r, 1.0), (k_r, 1.0), (k_t, -1.0), (k_t, -1.0)]):
        v = basis(k)[col % 2]
        A[:2, col] = sign * v[:2]
        A[2:, col] = sign * np.cross(k, v)[:2]
    rhs[:2] = -E_inc[:2]
    rhs[2:] = -np.cross(k_inc, E_inc)[:2]
    x = np.linalg.solve(A, rhs)
    br, bt = basis(k_r), basis(k_t)
    return k_r, x[0] * br[0] + x[1] * br[1], k_t, x[2] * bt[0] + x[3] * bt[1]


def _far_by_reciprocity(eps1, eps2, h, e_hat, medium):
    """M(e) = 4 pi r exp(-i k r) G_far(r e, (0,0,h)) from G(r', r) of a far dipole at r e:
    its plane wave (I - e e) q exp(-i k e.x) hits the interface; the (reflected +
    incident or transmitted) field at (0,0,h) gives G(r', r e) q; transpose."""
    src = np.array([0.0, 0.0, h])
    eps_far = eps1 if medium == 1 else eps2
    n_far = np.sqrt(eps_far)
    k_inc = -n_far * e_hat
    Gt = np.zeros((3, 3), dtype=complex)
    for j in range(3):
        q = np.eye(3)[j]
        E_inc = q - e_hat * (e_hat @ q)
        if medium == 1:
            k_r, E_r, _, _ = _plane_wave_interface(eps1, eps2, k_inc, E_inc)
            E = E_inc * np.exp(1j * K0 * (k_inc @ src)) + E_r * np.exp(1j * K0 * (k_r @ src))
        else:
            _, _, k_t, E_t = _plane_wave_interface(eps2, eps1, k_inc, E_inc)
            E = E_t * np.exp(1j * K0 * (k_t @ src))
        Gt[:, j] = E
    return Gt.T


@pytest.mark.parametrize("eps2", [2.25, 0.6, -5 + 0.7j])
def test_far_field_reflected_by_reciprocity(eps2):
    """far_field_reflected equals reciprocity + a numerically solved plane-wave reflection,
    at polar angles 0..85 deg (to rounding)."""
    eps1, h, r = 1.3, 0.37, 1.0
    n1 = np.sqrt(eps1)
    for th, ph in [(0.0, 0.0), (0.3, 0.4), (0.9, 2.0), (1.2, -1.0), (1.48, 3.0)]:
        e = np.array([np.sin(th) * np.cos(ph), np.sin(th) * np.sin(ph), np.cos(th)])
        G = ref.far_field_reflected(eps1, eps2, K0, h, (r * e)[None])[0]
        M = 4 * np.pi * r * np.exp(-1j * K0 * n1 * r) * G
        M_rec = _far_by_reciprocity(eps1, eps2, h, e, 1)
        assert np.abs(M - M_rec).max() < 1e-12, (th, ph)


@pytest.mark.parametrize("eps2", [2.25, 0.6, 4.0 + 0.1j])
def test_far_field_transmitted_by_reciprocity(eps2):
    """far_field_transmitted (stationary phase) equals reciprocity + a numerically solved
    plane-wave transmission 2 -> 1, including beyond the critical angle (forbidden light,
    evanescent in medium 1), to rounding."""
    eps1, h, r = 1.0, 0.21, 1.0
    n2 = np.sqrt(eps2)
    for th, ph in [(np.pi, 0.0), (2.9, 0.4), (2.5, 2.0), (2.2, -1.0), (1.7, 3.0)]:
        e = np.array([np.sin(th) * np.cos(ph), np.sin(th) * np.sin(ph), np.cos(th)])
        G = ref.far_field_transmitted(eps1, eps2, K0, h, (r * e)[None])[0]
        M = 4 * np.pi * r * np.exp(-1j * K0 * n2 * r) * G
        M_rec = _far_by_reciprocity(eps1, eps2, h, e, 2)
        assert np.abs(M - M_rec).max() < 1e-12 * max(1.0, np.abs(M).max()), (th, ph)


def test_far_fields_pec_and_homogeneous_limits():
    """PEC: far_field_reflected = r e^{-ikr} (G0 + image) at k r = 1e5 to O(1/(k r)).
    eps2 = eps1: reflected part 0 and transmitted = far field of G0."""
    eps1, h = 1.0, 0.3
    src = np.array([0.0, 0.0, h])
    r = 1e5 / K0
    rng = np.random.default_rng(3)
    e = rng.normal(size=(5, 3))
    e[:, 2] = np.abs(e[:, 2]) + 0.2
    e /= np.linalg.norm(e, axis=1)[:, None]
    pts = r * e
    exact = ref.free_space_green(eps1, K0, pts, src) + ref.perfect_conductor_image(eps1, K0, pts, src)
    far = ref.far_field_reflected(eps1, PEC, K0, h, pts)
    assert np.abs(exact - far).max() < 1e-4 * np.abs(far).max()
    e2 = e * np.array([1, 1, -1])
    for fun, p in ((ref.far_field_reflected, pts), (ref.far_field_transmitted, r * e2)):
        G0 = ref.free_space_green(eps1, K0, p, src)
        assert np.abs(fun(eps1, eps1, K0, h, p) - G0).max() < 1e-4 * np.abs(G0).max()


def _hemisphere_power(fun, n, lo, hi, breaks, p):
    """(n / n1) 6 pi int |G p|^2 r^2 dOmega over lo < theta < hi (r = 1): P / P0 of the
    far field (the 1/(2 Z0) and |p|^2 cancel against Larmor's P0 in medium 1)."""
    phis = np.arange(8) * (2 * np.pi / 8)  # exact for the degree-2 trig polynomial in phi

    def f(th):
        pts = np.column_stack([np.sin(th) * np.cos(phis), np.sin(th) * np.sin(phis), np.full(8, np.cos(th))])
        G = fun(pts)
        return np.sum(np.abs(G @ p) ** 2) * (2 * np.pi / 8) * np.sin(th)

    edges = [lo, *sorted(b for b in breaks if lo < b < hi), hi]
    tot = 0.0
    for a, b in zip(edges[:-1], edges[1:]):
        tot += integrate.quad(f, a, b, epsabs=1e-13, epsrel=1e-11, limit=400)[0]
    return 6 * np.pi * n * tot


@pytest.mark.parametrize("eps2", [2.25, 0.49])
@pytest.mark.parametrize("orientation", ["perpendicular", "parallel"])
def test_far_field_energy_equals_decay_rate(eps2, orientation):
    """Lossless media: the power through the upper and lower hemispheres (from
    far_field_reflected and far_field_transmitted) adds up to decay_rate; for n2 > n1 the
    lower-hemisphere power beyond the critical angle equals the 'forbidden' part of the
    decay-rate integral (1 < s < n2/n1). Agreement 1e-10 (observed ~1e-15)."""
    eps1, h = 1.0, 0.15
    n1, n2 = np.sqrt(eps1), np.sqrt(eps2)
    p = np.array([0.0, 0.0, 1.0]) if orientation == "perpendicular" else np.array([1.0, 0.0, 0.0])
    up = lambda x: ref.far_field_reflected(eps1, eps2, K0, h, x)
    dn = lambda x: ref.far_field_transmitted(eps1, eps2, K0, h, x)
    up_breaks = [np.arcsin(n2 / n1)] if n2 < n1 else []
    th_c = np.pi - np.arcsin(n1 / n2) if n2 > n1 else None
    P_up = _hemisphere_power(up, n1, 0.0, np.pi / 2, up_breaks, p) / n1
    P_dn = _hemisphere_power(dn, n2, np.pi / 2, np.pi, [th_c] if th_c else [], p) / n1
    comp = ref.decay_rate_components(eps1, eps2, K0, h, orientation)
    assert abs(P_up + P_dn - comp["total"]) < 1e-10
    if th_c:
        P_forb = _hemisphere_power(dn, n2, np.pi / 2, th_c, [], p) / n1
        assert abs(P_forb - comp["forbidden"]) < 1e-10
        assert comp["forbidden"] > 0.1
