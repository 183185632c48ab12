"""Drude and Lorentz take their frequencies by keyword in either unit: ``f_p``/``f_0`` in
1/length (emjax's frequency convention, c / wavelength) or ``omega_p``/``omega_0`` in rad
per unit time (2 pi f), with ``gamma`` in the unit of the frequency it comes with; exactly
one of each pair, and a positional frequency (ambiguous) is refused. The same metal given
either way has the same permittivity (against the closed form in f) and the same FDTD
poles and update coefficients; the TOML keys follow the same rule."""

import math

import numpy as np
import pytest

from emjax import ConfigError, materials
from emjax.backend import precision_scope
from emjax.config import dispersive_material
from emjax.fdtd import dispersive

F = np.linspace(0.2, 3.0, 15)  # frequencies, 1/length
OMEGA = 2 * np.pi * F


def test_drude_by_f_p_equals_drude_by_omega_p_and_the_formula_in_f():
    """eps = eps_inf - f_p^2 / (f^2 + i gamma f) with f_p, gamma in 1/length; the same
    metal given as omega_p = 2 pi f_p, gamma_omega = 2 pi gamma: equal to rounding."""
    f_p, gamma = 1.5, 0.08
    by_f = materials.Drude(2.0, f_p=f_p, gamma=gamma)
    by_omega = materials.Drude(2.0, omega_p=2 * np.pi * f_p, gamma=2 * np.pi * gamma)
    formula = 2.0 - f_p**2 / (F**2 + 1j * gamma * F)
    np.testing.assert_allclose(by_f.permittivity(OMEGA), formula, rtol=1e-13)
    np.testing.assert_allclose(by_omega.permittivity(OMEGA), formula, rtol=1e-13)
    np.testing.assert_allclose(by_f.refractive_index(1 / F), by_omega.refractive_index(1 / F), rtol=1e-13)


def test_lorentz_by_f_0_equals_lorentz_by_omega_0_and_the_formula_in_f():
    f_0, gamma, d = 0.8, 0.05, 2.0
    by_f = materials.Lorentz(1.5, d, f_0=f_0, gamma=gamma)
    by_omega = materials.Lorentz(1.5, d, omega_0=2 * np.pi * f_0, gamma=2 * np.pi * gamma)
    formula = 1.5 + d * f_0**2 / (f_0**2 - F**2 - 1j * gamma * F)
    np.testing.assert_allclose(by_f.permittivity(OMEGA), formula, rtol=1e-12)
    np.testing.assert_allclose(by_omega.permittivity(OMEGA), formula, rtol=1e-12)


@pytest.mark.parametrize(
    "by_f,by_omega",
    [
        (
            lambda: materials.Drude(1.0, f_p=1.5, gamma=0.5 / (2 * math.pi)),
            lambda: materials.Drude(1.0, omega_p=2 * math.pi * 1.5, gamma=0.5),
        ),
        (
            lambda: materials.Lorentz(1.5, 2.0, f_0=0.8, gamma=0.02),
            lambda: materials.Lorentz(1.5, 2.0, omega_0=2 * math.pi * 0.8, gamma=2 * math.pi * 0.02),
        ),
    ],
    ids=["drude", "lorentz"],
)
def test_the_same_fdtd_poles_and_update_coefficients(by_f, by_omega):
    """The FDTD update reads the poles: the two spellings give the same poles and the same
    ADE coefficients (J-E Drude k, beta; Lorentz c1, c2, c3) on a small mask."""
    a, b = by_f(), by_omega()
    assert len(a.poles) == len(b.poles) == 1 and type(a.poles[0]) is type(b.poles[0])
    for name in ("omega_p", "omega_0", "gamma", "delta_eps"):
        if hasattr(a.poles[0], name):
            assert getattr(a.poles[0], name) == pytest.approx(getattr(b.poles[0], name), rel=1e-14)
    mask = np.zeros((4, 4, 4), bool)
    mask[1:3, 1:3, 1:3] = True
    with precision_scope():  # float64 coefficients
        ca = dispersive.coefficients(a, mask, 1.0, 0.01, np.float64)
        cb = dispersive.coefficients(b, mask, 1.0, 0.01, np.float64)
    np.testing.assert_allclose(ca[0], cb[0])
    np.testing.assert_allclose(ca[1], cb[1], rtol=1e-13)
    for key in ("pole_k", "pole_beta"):
        for x, y in zip(ca[2][key], cb[2][key]):
            np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-13)
    for x, y in zip(ca[2]["lorentz"], cb[2]["lorentz"]):
        for u, v in zip(x, y):
            np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-13)


BAD = [
    (
        "Drude positional",
        lambda: materials.Drude(1.0, 9.4, 0.5),
        r"^Drude: a frequency given by position is ambiguous .*f_p=.*omega_p=",
    ),
    (
        "Drude both",
        lambda: materials.Drude(f_p=1.0, omega_p=6.0, gamma=0.1),
        r"^Drude: give exactly one of f_p= .*or omega_p=.*got both",
    ),
    (
        "Drude neither",
        lambda: materials.Drude(1.0, gamma=0.1),
        r"^Drude: give exactly one of f_p=.*got neither",
    ),
    ("Drude no gamma", lambda: materials.Drude(f_p=1.0), r"^Drude: gamma= .* is required"),
    ("Drude f_p<0", lambda: materials.Drude(f_p=-1.0, gamma=0.1), r"^Drude.f_p must be > 0"),
    (
        "Drude gamma nan",
        lambda: materials.Drude(omega_p=1.0, gamma=float("nan")),
        r"^Drude.gamma must be finite",
    ),
    (
        "Lorentz positional",
        lambda: materials.Lorentz(1.5, 1.0, 5.0, 0.1),
        r"^Lorentz: a frequency given by position is ambiguous .*f_0=.*omega_0=",
    ),
    (
        "Lorentz no delta",
        lambda: materials.Lorentz(1.5, f_0=1.0, gamma=0.1),
        r"^Lorentz: delta_eps= .* is required",
    ),
    (
        "Lorentz delta nan",
        lambda: materials.Lorentz(1.5, float("nan"), f_0=1.0, gamma=0.1),
        r"^Lorentz.delta_eps must be finite",
    ),
    (
        "Lorentz both",
        lambda: materials.Lorentz(1.5, 1.0, f_0=1.0, omega_0=1.0, gamma=0.1),
        r"^Lorentz: give exactly one of f_0=",
    ),
    ("Debye tau nan", lambda: materials.Debye(1.0, 2.0, float("nan")), r"^Debye.tau must be finite"),
    ("Debye tau<0", lambda: materials.Debye(1.0, 2.0, -1.0), r"^Debye.tau must be >= 0"),
    (
        "pole gamma nan",
        lambda: materials.Dispersive(1.0, (materials.DrudePole(1.0, float("nan")),)),
        r"^poles\[0\].gamma must be finite",
    ),
]


@pytest.mark.parametrize("make,message", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_ambiguous_or_bad_pole_parameters_are_one_line(make, message):
    with pytest.raises(ConfigError, match=message) as e:
        make()
    assert "\n" not in str(e.value)


def test_toml_keys_follow_the_same_rule():
    w = "objects[0]"
    a = dispersive_material("drude", {"f_p": 1.5, "gamma": 0.1}, w)
    b = dispersive_material("drude", {"omega_p": 2 * math.pi * 1.5, "gamma": 2 * math.pi * 0.1}, w)
    np.testing.assert_allclose(a.permittivity(OMEGA), b.permittivity(OMEGA), rtol=1e-13)
    c = dispersive_material("lorentz", {"delta_eps": 1.0, "f_0": 0.9, "gamma": 0.05}, w)
    d = dispersive_material(
        "lorentz", {"delta_eps": 1.0, "omega_0": 2 * math.pi * 0.9, "gamma": 2 * math.pi * 0.05}, w
    )
    np.testing.assert_allclose(c.permittivity(OMEGA), d.permittivity(OMEGA), rtol=1e-13)
    with pytest.raises(ConfigError, match=r"^objects\[0\].drude: give exactly one of f_p .* or omega_p"):
        dispersive_material("drude", {"f_p": 1.5, "omega_p": 9.4, "gamma": 0.1}, w)
    with pytest.raises(ConfigError, match=r"^objects\[0\].lorentz: give exactly one of f_0 .* or omega_0"):
        dispersive_material("lorentz", {"delta_eps": 1.0, "gamma": 0.1}, w)


def test_the_unit_cell_example_is_the_metal_its_comment_describes():
    """examples/fdtd_unit_cell.toml writes its film as f_p = 1.5, gamma = 0.0795775 (1/length):
    the angular omega_p = 2 pi 1.5 = 9.4248, gamma = 0.5 of its comment."""
    from pathlib import Path

    from emjax.config import load_toml

    cfg = load_toml(Path(__file__).resolve().parent.parent / "examples" / "fdtd_unit_cell.toml")
    m = dispersive_material("drude", cfg["objects"][0]["drude"], "objects[0]")
    assert m.poles[0].omega_p == pytest.approx(9.4248, rel=1e-5)
    assert m.poles[0].gamma == pytest.approx(0.5, rel=1e-6)
