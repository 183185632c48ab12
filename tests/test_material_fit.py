"""emjax.materials.fit: a passive, causal Drude-Lorentz model fitted to n, k."""

import numpy as np
import pytest

from emjax import ConfigError, materials
from emjax.materials import Dispersive, DrudePole, LorentzPole


def _passive(model: Dispersive, wavelength) -> None:
    """Every parameter on the physical side and Im eps >= 0 from 1/1000 to 1000 times the
    fitted band's frequencies (off exact resonances)."""
    assert model.eps_inf >= 1
    for p in model.poles:
        assert p.gamma >= 0
        if isinstance(p, LorentzPole):
            assert p.delta_eps >= 0 and p.omega_0 > 0
    w = 2 * np.pi / np.geomspace(min(wavelength) / 1e3, max(wavelength) * 1e3, 997)
    eps = model.permittivity(w)
    assert np.all(np.isfinite(eps)) and np.all(eps.imag >= 0)


def test_refit_a_known_two_pole_model():
    """A Drude + Lorentz metal-like model sampled at 40 wavelengths (0.4-2): the fit from
    its own n, k returns eps within 1e-6 relative across the band and a decade beyond it
    (the data are exact, so only the optimizer's tolerance is left)."""
    true = Dispersive(2.0, (DrudePole(8.0, 0.3), LorentzPole(1.5, 6.0, 0.8)))
    wl = np.linspace(0.4, 2.0, 40)
    m = true.refractive_index(wl)
    res = materials.fit(wl, m.real, m.imag, poles=1, drude=True)
    w = 2 * np.pi / np.geomspace(0.1, 20, 300)
    rel = np.abs(res.model.permittivity(w) - true.permittivity(w)) / np.abs(true.permittivity(w))
    assert rel.max() < 1e-6
    assert res.rms_error < 1e-8
    _passive(res.model, wl)


def test_refit_a_known_two_lorentz_model():
    """Two lossy Lorentz oscillators (a dielectric with a resonance inside the band)."""
    true = Dispersive(1.5, (LorentzPole(2.0, 20.0, 1.0), LorentzPole(0.5, 9.0, 0.5)))
    wl = np.linspace(0.4, 2.0, 40)
    m = true.refractive_index(wl)
    res = materials.fit(wl, m.real, m.imag, poles=2, drude=False)
    rel = np.abs(res.model.permittivity(2 * np.pi / wl) - m**2) / np.abs(m**2)
    assert rel.max() < 1e-6
    _passive(res.model, wl)


def test_fit_library_sellmeier_and_metal():
    """Real data from the library: fused silica (Malitson) over 0.3-2 um with 2 poles (n to
    1e-4 RMS: measured 9e-7, two poles are nearly the formula's two UV terms; the infrared
    term is far below the band); gold (Rakić) over 0.4-1 um with a Drude and 3 Lorentz
    poles (RMS in n + i k below 1e-3: measured 9e-5)."""
    silica = materials.library("SiO2").refit(0.3, 2.0, poles=2)
    assert silica.rms_error < 1e-4
    assert not any(isinstance(p, DrudePole) for p in silica.model.poles)
    _passive(silica.model, silica.wavelength)
    gold = materials.library("Au").refit(0.4, 1.0, poles=3)
    assert gold.rms_error < 1e-3
    assert isinstance(gold.model.poles[0], DrudePole)  # Re eps < 0: a Drude term is added
    _passive(gold.model, gold.wavelength)


def test_another_pole_never_fits_worse():
    """Gold over 0.3-2 um (50 samples): each fit starts also from the fit with one pole fewer
    plus a weak new pole, so the error does not grow with the number of poles."""
    wl = np.geomspace(0.3, 2.0, 50)
    m = materials.library("Au").refractive_index(wl)
    errors = [materials.fit(wl, m.real, m.imag, poles=p).rms_error for p in (2, 3, 4)]
    assert errors[1] <= errors[0] * (1 + 1e-9) and errors[2] <= errors[1] * (1 + 1e-9)
    assert errors[2] < 0.5 * errors[0]


def test_bad_data_refused_in_one_line():
    wl, n, k = [0.5, 0.6, 0.7, 0.8], [1.5] * 4, [0.0] * 4
    with pytest.raises(ConfigError, match="fit.k must be >= 0"):
        materials.fit(wl, n, [0, -0.1, 0, 0])
    with pytest.raises(ConfigError, match="4 distinct wavelengths cannot determine 10 parameters"):
        materials.fit(wl, n, k, poles=3)
    with pytest.raises(ConfigError, match="fit.poles must be an integer in"):
        materials.fit(wl, n, k, poles=-1)
    with pytest.raises(ConfigError, match="fit.wavelength must be finite and > 0"):
        materials.fit([0.5, -0.6, 0.7, 0.8], n, k, poles=1)
    with pytest.raises(ConfigError, match="refit: wavelength_min = 2.0 must be below wavelength_max = 1.0"):
        materials.library("Au").refit(2.0, 1.0)
    with pytest.raises(ConfigError, match="refit.wavelength_min must be > 0"):
        materials.library("Au").refit(-1.0, 1.0)
