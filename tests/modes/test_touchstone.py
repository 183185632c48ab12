"""Touchstone files of S-matrices: the layout of the format, read back."""

import numpy as np
import pytest

from emjax.errors import ConfigError
from emjax.modes.smatrix import C0, SMatrix, read_touchstone, write_touchstone


def _random_s(n, nf=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(nf, n, n)) + 1j * rng.normal(size=(nf, n, n))


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_touchstone_round_trip(tmp_path, n):
    s = _random_s(n)
    f = np.array([0.7, 0.6, 0.65])  # 1 / um, not sorted
    path = write_touchstone(tmp_path / f"d.s{n}p", f, s, unit="um")
    f_hz, back = read_touchstone(path)
    order = np.argsort(f)
    np.testing.assert_allclose(f_hz, f[order] * C0 / 1e-6, rtol=1e-12)
    np.testing.assert_allclose(back, s[order].conj(), atol=1e-11)  # exp(+j omega t) phases


def test_touchstone_two_port_order_and_header(tmp_path):
    s = np.array([[[1 + 0j, 2], [3, 4]]])  # S11 = 1, S12 = 2, S21 = 3, S22 = 4
    path = SMatrix(np.array([1.0]), ("a", "b"), s).write_touchstone(tmp_path / "x.s2p", unit="nm")
    lines = path.read_text().splitlines()
    assert "# HZ S RI R 50" in lines and "! port 2: b" in lines
    nums = [float(v) for v in lines[-1].split()]
    assert nums[0] == pytest.approx(C0 / 1e-9)
    assert nums[1::2] == [1.0, 3.0, 2.0, 4.0]  # S11 S21 S12 S22


def test_touchstone_refuses_bad_input(tmp_path):
    with pytest.raises(ConfigError, match="unit"):
        write_touchstone(tmp_path / "x.s1p", [1.0], np.ones((1, 1, 1)), unit="parsec")
    with pytest.raises(ConfigError, match="n_freq"):
        write_touchstone(tmp_path / "x.s2p", [1.0, 2.0], np.ones((1, 2, 2)))


def test_scikit_rf_reads_it(tmp_path):
    skrf = pytest.importorskip("skrf")  # not a dependency: run where scikit-rf is installed
    s = _random_s(5, nf=4, seed=1)
    f = np.linspace(0.6, 0.7, 4)
    net = skrf.Network(str(write_touchstone(tmp_path / "r.s5p", f, s)))
    np.testing.assert_allclose(net.s, s.conj(), atol=1e-11)
    np.testing.assert_allclose(net.f, f * C0 / 1e-6, rtol=1e-11)
