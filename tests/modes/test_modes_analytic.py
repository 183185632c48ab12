"""emjax.modes against closed-form waveguides: the symmetric dielectric slab (its dispersion
relation solved here with scipy.optimize) and the hollow rectangular metal waveguide."""

import numpy as np
from scipy.optimize import brentq

from emjax import modes

# slab: core n1 of thickness 2a in cladding n2, vacuum wavelength 1 (V = 2.60: TE0, TE1, TM0,
# TM1 guided)
N1, N2, A, WAVELENGTH = 2.0, 1.45, 0.3, 1.0
CLAD = 2.0  # cladding beyond the core on each side: the wall's effect ~exp(-2 w CLAD / a) < 1e-9


def slab_neff(kind: str, order: int, k0: float = 2 * np.pi / WAVELENGTH) -> float:
    """Effective index of the symmetric slab's TE/TM mode of ``order`` from the transverse
    resonance conditions (Marcuse, Theory of Dielectric Optical Waveguides, ch. 1):
    ``w = r u tan(u)`` (even) or ``w = -r u cot(u)`` (odd), ``u^2 + w^2 = V^2``,
    ``r = 1`` (TE) or ``(n2 / n1)^2`` (TM), ``u = a sqrt(k0^2 n1^2 - beta^2)``."""
    V = k0 * A * np.sqrt(N1**2 - N2**2)
    r = 1.0 if kind == "TE" else (N2 / N1) ** 2

    def f(u):
        w = np.sqrt(V**2 - u**2)
        return w - r * u * np.tan(u) if order % 2 == 0 else w + r * u / np.tan(u)

    lo, hi = order * np.pi / 2 + 1e-12, min((order + 1) * np.pi / 2, V) - 1e-12
    u = brentq(f, lo, hi, xtol=1e-15)
    return float(np.sqrt(N1**2 - (u / (k0 * A)) ** 2))


def slab_pixels(resolution: int) -> np.ndarray:
    """The slab along x (its faces on cell edges), three cells along y (invariant)."""
    n_core, n_clad = round(2 * A * resolution), round(CLAD * resolution)
    eps = np.full(n_core + 2 * n_clad, N2**2)
    eps[n_clad : n_clad + n_core] = N1**2
    return np.repeat(eps[:, None], 3, axis=1)


def slab_modes(kind: str, resolution: int, group_index: bool = False):
    """y-invariant modes: TE (E along y) needs PEC walls in y (E_y normal to them), TM (H
    along y) PMC walls."""
    y_wall = "pec" if kind == "TE" else "pmc"
    return modes.solve(
        slab_pixels(resolution),
        resolution,
        1 / WAVELENGTH,
        2,
        boundary=("pec", "pec", y_wall, y_wall),
        group_index=group_index,
    )


def test_slab_te_tm_against_dispersion_relation_second_order():
    """TE0, TE1 and TM0 of the slab at 20, 40, 80 cells per wavelength: the error against the
    exact n_eff falls by 4 per halving of the cell (Yee's second order: both slopes in
    [1.8, 2.2]) and is below 3e-4 at the finest; the modes carry their polarization (TE:
    E along y, TM: along x)."""
    cases = [("TE", 0), ("TE", 1), ("TM", 0)]
    exact = {c: slab_neff(*c) for c in cases}
    errors = {c: [] for c in cases}
    for res in (20, 40, 80):
        found = {"TE": slab_modes("TE", res), "TM": slab_modes("TM", res)}
        assert np.all(found["TE"].te_fraction < 1e-12) and np.all(found["TM"].te_fraction > 1 - 1e-12)
        for kind, order in cases:
            n = found[kind].n_eff[order]
            assert abs(n.imag) < 1e-12
            errors[(kind, order)].append(abs(n.real - exact[(kind, order)]))
    for c, e in errors.items():
        slopes = np.log2(np.array(e[:-1]) / np.array(e[1:]))
        assert np.all((slopes > 1.8) & (slopes < 2.2)), (c, e, slopes)
        assert e[-1] < 3e-4, (c, e)


def test_slab_group_index_against_dispersion_relation():
    """The group index d beta / d k0 of TE0 and TM0 against the exact relation's (a centred
    difference of the analytic n_eff in k0, step 1e-5: error ~1e-9) at 80 cells per wavelength,
    within 1e-3 (the discretization error of n_g is of the order of n_eff's)."""
    k0, h = 2 * np.pi / WAVELENGTH, 1e-5
    for kind in ("TE", "TM"):
        ng = (slab_neff(kind, 0, k0 * (1 + h)) * (1 + h) - slab_neff(kind, 0, k0 * (1 - h)) * (1 - h)) / (
            2 * h
        )
        assert abs(slab_modes(kind, 80, True).group_index[0] - ng) < 1e-3, kind


def test_metal_waveguide_modes_exact_on_the_grid():
    """A hollow PEC waveguide a x b = 2 x 0.8 at frequency 1 (k0 = 2 pi): the Yee grid's
    modes are TE_mn / TM_mn with the discrete cutoff ``kc^2 = (2/d)^2 (sin^2(m pi d / 2a) +
    sin^2(n pi d / 2b))`` exactly (to 1e-9), and that differs from the continuum's
    ``(m pi / a)^2 + (n pi / b)^2`` by O(d^2) (below 0.3% in n_eff at d = 1/20). Cutoff: TE10's
    n_eff at f just below (pi / a) / (2 pi) is imaginary."""
    a, b, res, f = 2.0, 0.8, 20, 1.0
    d, k0 = 1 / res, 2 * np.pi * f
    r = modes.solve(np.ones((round(a * res), round(b * res))), res, f, 8)
    kc2 = []
    for m in range(5):
        for n in range(3):
            disc = (2 / d) ** 2 * (
                np.sin(m * np.pi * d / (2 * a)) ** 2 + np.sin(n * np.pi * d / (2 * b)) ** 2
            )
            cont = (m * np.pi / a) ** 2 + (n * np.pi / b) ** 2
            copies = (m > 0 or n > 0) + (m > 0 and n > 0)  # TE_mn, and TM_mn if both > 0
            kc2 += [(disc, cont)] * copies
    kc2.sort()
    disc = np.array([np.sqrt(complex(1 - kd / k0**2)) for kd, _ in kc2[:8]])
    cont = np.array([np.sqrt(complex(1 - kc / k0**2)) for _, kc in kc2[:8]])
    assert np.allclose(r.n_eff, disc, atol=1e-9, rtol=0)
    assert np.all(abs(r.n_eff - cont) < 3e-3)
    # TE10 alone just above its cutoff, evanescent just below it
    fc = np.sin(np.pi * d / (2 * a)) / (np.pi * d)  # the grid's cutoff kc / (2 pi)
    above = modes.solve(np.ones((40, 16)), res, fc * 1.01, 1).n_eff[0]
    below = modes.solve(np.ones((40, 16)), res, fc * 0.99, 1).n_eff[0]
    assert abs(above.imag) < 1e-12 and above.real > 0.1
    assert abs(below.real) < 1e-12 and below.imag > 0.1


def test_symmetry_walls_halve_the_section():
    """Half of the slab's section with a wall through its middle: a PMC wall keeps the modes
    whose E_y is even about it (TE0), a PEC wall those whose E_y is odd (TE1); each half
    section's first mode has the full section's n_eff to 1e-10."""
    full = slab_modes("TE", 40)
    half = slab_pixels(40)[round(CLAD * 40) + round(A * 40) :]
    for wall, order in (("pmc", 0), ("pec", 1)):
        r = modes.solve(half, 40, 1 / WAVELENGTH, 1, boundary=(wall, "pec", "pec", "pec"))
        assert abs(r.n_eff[0] - full.n_eff[order]) < 1e-10, wall


def test_diagonal_anisotropy_enters_by_component():
    """A (3, nx, ny) permittivity: the slab's TE modes (E along y, H in x and z) see eps_yy
    only and its TM modes (E in x and z) eps_xx and eps_zz only: changing the other entries
    leaves their n_eff unchanged (to 1e-12), while an isotropic section with the entry they
    see gives the same modes."""
    iso = slab_pixels(20)
    aniso = np.stack([iso * 1.3, iso, iso * 0.8])  # eps_xx, eps_zz changed, eps_yy kept
    te_iso, te_aniso = slab_modes("TE", 20), modes.solve(aniso, 20, 1 / WAVELENGTH, 2, group_index=False)
    assert np.allclose(te_aniso.n_eff, te_iso.n_eff, atol=1e-12, rtol=0)
    tm_walls = ("pec", "pec", "pmc", "pmc")
    tm_ref = modes.solve(np.stack([iso * 1.3, iso, iso * 0.8]), 20, 1 / WAVELENGTH, 1, boundary=tm_walls)
    tm_other = modes.solve(
        np.stack([iso * 1.3, iso * 2.0, iso * 0.8]), 20, 1 / WAVELENGTH, 1, boundary=tm_walls
    )
    assert abs(tm_ref.n_eff[0] - tm_other.n_eff[0]) < 1e-12
    assert abs(tm_ref.n_eff[0] - slab_modes("TM", 20).n_eff[0]) > 1e-2  # it does see eps_xx, eps_zz
