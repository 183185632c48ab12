"""The material library's parameters, as their sources print them.

Metals: the Lorentz-Drude (LD) model of Rakić et al. (1998), photon energies in eV::

    eps(w) = 1 - f0 wp**2 / (w (w + i G0)) + sum_j f_j wp**2 / (w_j**2 - w**2 - i w G_j)

Dielectrics: Sellmeier forms in micrometres, ``n**2 = eps_inf + sum B lambda**2 / (lambda**2 -
C)`` where ``C`` is printed either as a wavelength (squared here: ``c_is_wavelength``) or as a
wavelength squared. The valid range is the source's (for the LD fits: the photon-energy range
of the fit). :mod:`emjax.materials.catalog` turns these into material objects.
"""

from __future__ import annotations

from dataclasses import dataclass

#: photon energy (eV) times vacuum wavelength (um): h c / e
HC_EV_UM = 1.23984193

RAKIC = (
    "A. D. Rakić, A. B. Djurišić, J. M. Elazar, M. L. Majewski, Optical properties of metallic "
    "films for vertical-cavity optoelectronic devices, Appl. Opt. 37, 5271-5283 (1998): "
    "Lorentz-Drude model"
)


@dataclass(frozen=True)
class LorentzDrudeEntry:
    """Rakić's LD parameters: ``omega_p``, ``f0``, ``gamma0`` and oscillators ``(f, gamma,
    omega)``, energies in eV; ``range_ev`` the photon energies the fit covers."""

    omega_p: float
    f0: float
    gamma0: float
    oscillators: tuple
    range_ev: tuple
    citation: str = RAKIC
    note: str = "fit to measured data from several sources"


@dataclass(frozen=True)
class SellmeierEntry:
    """``n**2 = eps_inf + sum(B lambda**2 / (lambda**2 - C))``, lambda in um; ``C`` is printed
    as the resonance wavelength (``c_is_wavelength``: use ``C**2``) or its square."""

    eps_inf: float
    terms: tuple  # (B, C) pairs
    c_is_wavelength: bool
    range_um: tuple
    citation: str
    note: str = ""


@dataclass(frozen=True)
class TableEntry:
    """Tabulated ``wavelength (um), n, k`` rows (a module of :mod:`catalog_tables`)."""

    table: str  # the name in catalog_tables.TABLES
    citation: str
    note: str = ""
    poles: int = 3  # Lorentz poles of the pole model the FDTD steps (fitted)
    drude: bool | None = None  # and a Drude term (None: where the data have Re eps < 0)


METALS = {
    "Ag": LorentzDrudeEntry(
        9.01,
        0.845,
        0.048,
        (
            (0.065, 3.886, 0.816),
            (0.124, 0.452, 4.481),
            (0.011, 0.065, 8.185),
            (0.840, 0.916, 9.083),
            (5.646, 2.419, 20.29),
        ),
        (0.1, 5.0),
    ),
    "Al": LorentzDrudeEntry(
        14.98,
        0.523,
        0.047,
        ((0.227, 0.333, 0.162), (0.050, 0.312, 1.544), (0.166, 1.351, 1.808), (0.030, 3.382, 3.473)),
        (0.005, 20.0),
    ),
    "Au": LorentzDrudeEntry(
        9.03,
        0.760,
        0.053,
        (
            (0.024, 0.241, 0.415),
            (0.010, 0.345, 0.830),
            (0.071, 0.870, 2.969),
            (0.601, 2.494, 4.304),
            (4.384, 2.214, 13.32),
        ),
        (0.2, 5.0),
    ),
    "Cr": LorentzDrudeEntry(
        10.75,
        0.168,
        0.047,
        ((0.151, 3.175, 0.121), (0.150, 1.305, 0.543), (1.149, 2.676, 1.970), (0.825, 1.335, 8.775)),
        (0.02, 5.0),
    ),
    "Cu": LorentzDrudeEntry(
        10.83,
        0.575,
        0.030,
        ((0.061, 0.378, 0.291), (0.104, 1.056, 2.957), (0.723, 3.213, 5.300), (0.638, 4.305, 11.18)),
        (0.1, 6.0),
    ),
    "Ni": LorentzDrudeEntry(
        15.92,
        0.096,
        0.048,
        ((0.100, 4.511, 0.174), (0.135, 1.334, 0.582), (0.106, 2.178, 1.597), (0.729, 6.292, 6.089)),
        (0.2, 5.0),
    ),
    "Pt": LorentzDrudeEntry(
        9.59,
        0.333,
        0.080,
        ((0.191, 0.517, 0.780), (0.659, 1.838, 1.314), (0.547, 3.668, 3.141), (3.576, 8.517, 9.249)),
        (0.1, 5.0),
    ),
    "Ti": LorentzDrudeEntry(
        7.29,
        0.148,
        0.082,
        ((0.899, 2.276, 0.777), (0.393, 2.518, 1.545), (0.187, 1.663, 2.509), (0.001, 1.762, 19.43)),
        (0.04, 5.0),
    ),
    "W": LorentzDrudeEntry(
        13.22,
        0.206,
        0.064,
        ((0.054, 0.530, 1.004), (0.166, 1.281, 1.917), (0.706, 3.332, 3.580), (2.590, 5.836, 7.498)),
        (0.1, 5.0),
    ),
}

# Devore's rutile form n**2 = A + B / (lambda**2 - C) is the Sellmeier term B/C lambda**2 /
# (lambda**2 - C) on top of the constant A - B/C.
_DEVORE_A, _DEVORE_B, _DEVORE_C = 5.913, 0.2441, 0.0803

DIELECTRICS = {
    "Si": SellmeierEntry(
        1.0,
        ((10.6684293, 0.301516485), (0.0030434748, 1.13475115), (1.54133408, 1104.0)),
        True,
        (1.357, 11.04),
        "C. D. Salzberg, J. J. Villa, Infrared refractive indexes of silicon, germanium and "
        "modified selenium glass, J. Opt. Soc. Am. 47, 244-246 (1957); Sellmeier fit: B. Tatian, "
        "Appl. Opt. 23, 4477-4485 (1984)",
        "crystalline, 26 °C; transparent range only (no absorption)",
    ),
    "Ge": SellmeierEntry(
        1.0,
        ((0.4886331, 1.393959), (14.5142535, 0.1626427), (0.0091224, 752.190)),
        False,
        (2.0, 14.0),
        "J. H. Burnett, S. G. Kaplan, E. Stover, A. Phenis, Refractive index measurements of Ge, "
        "Proc. SPIE 9974, 99740X (2016)",
        "crystalline, 22 °C; transparent range only",
    ),
    "GaAs": SellmeierEntry(
        5.372514,
        (
            (27.83972 * 0.4431307**2, 0.4431307),
            (0.031764 * 0.8746453**2, 0.8746453),
            (0.00143636 * 36.9166**2, 36.9166),
        ),
        True,
        (0.97, 17.0),
        "T. Skauli et al., Improved dispersion relations for GaAs and applications to nonlinear "
        "optics, J. Appl. Phys. 94, 6447-6455 (2003)",
        "22 °C; below the band gap only",
    ),
    "InP": SellmeierEntry(
        7.255,
        ((2.316, 0.6263), (2.765, 32.935)),
        True,
        (0.95, 10.0),
        "G. D. Pettit, W. J. Turner, Refractive index of InP, J. Appl. Phys. 36, 2081 (1965); "
        "Sellmeier form: Handbook of Optics, 2nd ed., Vol. 2 (McGraw-Hill, 1994)",
        "room temperature; below the band gap only",
    ),
    "SiO2": SellmeierEntry(
        1.0,
        ((0.6961663, 0.0684043), (0.4079426, 0.1162414), (0.8974794, 9.896161)),
        True,
        (0.21, 6.7),
        "I. H. Malitson, Interspecimen comparison of the refractive index of fused silica, "
        "J. Opt. Soc. Am. 55, 1205-1208 (1965); validity to 6.7 um: C. Z. Tan, J. Non-Cryst. "
        "Solids 223, 158-163 (1998)",
        "fused silica, 20 °C",
    ),
    "Si3N4": SellmeierEntry(
        1.0,
        ((3.0249, 0.1353406), (40314.0, 1239.842)),
        True,
        (0.31, 5.504),
        "K. Luke, Y. Okawachi, M. R. E. Lamont, A. L. Gaeta, M. Lipson, Broadband mid-infrared "
        "frequency comb generation in a Si3N4 microresonator, Opt. Lett. 40, 4823-4826 (2015)",
        "340 nm film on thermal SiO2",
    ),
    "Al2O3": SellmeierEntry(
        1.0,
        ((1.4313493, 0.0726631), (0.65054713, 0.1193242), (5.3414021, 18.028251)),
        True,
        (0.2, 5.0),
        "I. H. Malitson, M. J. Dodge, Refractive index and birefringence of synthetic sapphire, "
        "J. Opt. Soc. Am. 62, 1405 (1972); M. J. Dodge, Handbook of Laser Science and "
        "Technology, Vol. IV, CRC Press (1986)",
        "sapphire, ordinary ray, 20 °C",
    ),
    "TiO2": SellmeierEntry(
        _DEVORE_A - _DEVORE_B / _DEVORE_C,
        ((_DEVORE_B / _DEVORE_C, _DEVORE_C),),
        False,
        (0.43, 1.53),
        "J. R. Devore, Refractive indices of rutile and sphalerite, J. Opt. Soc. Am. 41, 416-419 (1951)",
        "rutile, ordinary ray, room temperature",
    ),
    "water": SellmeierEntry(
        1.0,
        (
            (5.684027565e-1, 5.101829712e-3),
            (1.726177391e-1, 1.821153936e-2),
            (2.086189578e-2, 2.620722293e-2),
            (1.130748688e-1, 1.069792721e1),
        ),
        False,
        (0.182, 1.129),
        "M. Daimon, A. Masumura, Measurement of the refractive index of distilled water from "
        "the near-infrared region to the ultraviolet region, Appl. Opt. 46, 3811-3820 (2007)",
        "distilled water, 20.0 °C; absorption neglected",
    ),
    "ice_150K": SellmeierEntry(
        1.0,
        ((0.496, 0.071), (0.190, 0.134)),
        True,
        (0.210, 0.757),
        "V. Kofman, J. He, I. L. ten Kate, H. Linnartz, The refractive index of amorphous and "
        "crystalline water ice in the UV-vis, Astrophys. J. 875, 131 (2019)",
        "crystalline ice, 150 K",
    ),
}

TABLES = {
    "ITO": TableEntry(
        "ITO",
        "T. A. F. König et al., Electrically tunable plasmonic behavior of nanocube-polymer "
        "nanomaterials induced by a redox-active electrochromic polymer, ACS Nano 8, 6182-6192 "
        "(2014); data via refractiveindex.info (CC0), every fourth point",
        "72 nm ITO film on glass, ellipsometry",
        poles=3,
        drude=True,  # the free carriers (their plasma edge lies beyond the table's 1 um)
    ),
    "ice": TableEntry(
        "ice",
        "S. G. Warren, R. E. Brandt, Optical constants of ice from the ultraviolet to the "
        "microwave: A revised compilation, J. Geophys. Res. 113, D14220 (2008); data via "
        "refractiveindex.info (CC0), 0.2-2.5 um",
        "ice Ih at 266 K (-7 °C)",
        poles=2,
        drude=False,
    ),
}
