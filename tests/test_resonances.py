"""Filter diagonalization (emjax.resonances) on sums of damped sinusoids: the frequencies,
decay rates, Q and amplitudes come back, with noise too; bad input is one line."""

import numpy as np
import pytest

from emjax import ConfigError
from emjax.resonances import resonances

DT, N = 0.05, 1500
MODES = [(1.0, 0.01, 1.0), (1.3, 0.05, 0.5), (2.1, 0.002, 0.3)]  # f, decay, amplitude


def _signal(noise=0.0, seed=0):
    t = np.arange(N) * DT
    s = sum(a * np.exp(-g * t) * np.cos(2 * np.pi * f * t + 0.3) for f, g, a in MODES)
    return s + noise * np.random.default_rng(seed).standard_normal(N)


@pytest.mark.parametrize("noise", [0.0, 1e-5])
def test_damped_sinusoids(noise):
    found = resonances(_signal(noise), DT, 0.5, 3.0, min_amplitude=1e-2)
    assert len(found) == len(MODES)
    for r, (f, g, a) in zip(found, MODES):
        assert abs(r.frequency - f) <= 1e-6 * f
        assert abs(r.Q - np.pi * f / g) <= 0.01 * np.pi * f / g
        assert abs(abs(r.amplitude) - a / 2) <= 0.01 * a  # a cosine is two exponentials
        if noise == 0:
            assert abs(r.decay - g) <= 1e-9 and r.error <= 1e-10


def test_the_band_picks_and_bad_input_is_one_line():
    found = resonances(_signal(), DT, 1.2, 1.5)
    assert [round(r.frequency, 6) for r in found] == [1.3]
    with pytest.raises(ConfigError, match="fmax <= 1 / \\(2 dt\\)"):
        resonances(_signal(), DT, 0.5, 20.0)
    with pytest.raises(ConfigError, match="at least 8 finite samples"):
        resonances([1.0, np.nan] * 8, DT, 0.5, 3.0)


def test_lossless_modes_are_kept():
    """Undamped sinusoids (a lossless cavity): the decay comes out as +- rounding (measured
    ~1e-13 either sign) and every mode is kept, whatever the sign; a measurably growing one
    is dropped unless ``growing``."""
    t = np.arange(400) * DT
    for phase in np.linspace(0, 3, 5):
        s = np.cos(2 * np.pi * 1.0 * t + phase) + 0.5 * np.cos(2 * np.pi * 1.7 * t + 2 * phase)
        found = resonances(s, DT, 0.5, 2.0)
        assert [round(r.frequency, 9) for r in found] == [1.0, 1.7]
        assert all(abs(r.decay) < 1e-9 for r in found)
    rising = np.exp(1e-3 * t) * np.cos(2 * np.pi * t)
    assert resonances(rising, DT, 0.5, 2.0) == []
    assert resonances(rising, DT, 0.5, 2.0, growing=True)[0].decay == pytest.approx(-1e-3, rel=1e-6)
