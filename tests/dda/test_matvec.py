"""The FFT matvec against a dense O(N^2) product (tests/reference.py)."""

import numpy as np
import pytest
from reference import dense_interaction_matrix

from emjax.backend import precision_scope
from emjax.dda import interaction
from emjax.dda.matvec import DDAOperator, apply, sqrt_alpha_grid


def test_fft_size_is_smallest_7_smooth():
    def smooth(n):
        for p in (2, 3, 5, 7):
            while n % p == 0:
                n //= p
        return n == 1

    for n in list(range(1, 70)) + [128, 150, 250, 256]:
        m = interaction.fft_size(n)
        assert m >= 2 * n - 1 and smooth(m)
        assert not any(smooth(j) for j in range(2 * n - 1, m))
    assert interaction.fft_size(250) == 500 and interaction.fft_size(64) == 128


@pytest.mark.parametrize("variant", ["pruned", "full"])
def test_fft_matvec_equals_dense_product(variant):
    """An irregular particle (random cells of a 5x6x7 box, two domains), k d = 0.7,
    complex alpha: (I - s G s) x by FFT vs the dense 3N x 3N matrix built independently
    from the textbook dipole field. Double precision: agreement to 1e-12 relative."""
    rng = np.random.default_rng(1)
    grid = (5, 6, 7)
    domains = np.where(rng.random(grid) < 0.6, rng.integers(0, 2, grid), -1).astype(np.int16)
    d, k = 0.35, 2.0
    alpha = np.array([0.01 + 0.002j, 0.02 + 0.0005j])
    with precision_scope():
        Dhat = interaction.interaction_fft(grid, d, k, np.complex128, layout=interaction.LAYOUTS[variant])
        s = sqrt_alpha_grid(domains, alpha, np.complex128)
        op = DDAOperator(Dhat, s, variant)
        x = rng.normal(size=(3,) + grid) + 1j * rng.normal(size=(3,) + grid)
        x = x * (domains >= 0)
        y = np.asarray(apply(op, x))
    idx = np.argwhere(domains >= 0)
    pos = (idx + 0.5 - np.array(grid) / 2) * d
    G = dense_interaction_matrix(pos, k)
    sq = np.sqrt(alpha[domains[tuple(idx.T)]])
    svec = np.repeat(sq, 3)
    xv = x[:, idx[:, 0], idx[:, 1], idx[:, 2]].T.ravel()
    ref = xv - svec * (G @ (svec * xv))
    got = y[:, idx[:, 0], idx[:, 1], idx[:, 2]].T.ravel()
    assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < 1e-12
    # empty cells stay empty
    assert np.all(y[:, domains < 0] == x[:, domains < 0])
