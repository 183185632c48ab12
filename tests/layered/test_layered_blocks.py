"""The map set-up's block helpers (emjax.layered.blocks) equal NumPy's whole-array results,
over one block, many blocks, and a last partial block."""

import numpy as np
import pytest

from emjax.layered import blocks


@pytest.mark.parametrize("n, block", [(0, 8), (5, 1 << 18), (10, 4), (100_003, 1000)])
def test_block_helpers_equal_numpy(n, block, monkeypatch):
    monkeypatch.setattr(blocks, "SETUP_BLOCK", block)
    rng = np.random.default_rng(n)
    a = rng.integers(0, 4, n)
    a[a == 1] = 3  # a value that never occurs
    for v in range(4):
        assert np.array_equal(blocks.where_equal(a, v), np.flatnonzero(a == v))
    assert blocks.present(a, 5) == [int(v) for v in np.flatnonzero(np.bincount(a, minlength=5))]
    x = rng.normal(size=n)
    assert np.array_equal(blocks.negated(x), -x)
    if n:
        assert blocks.extreme(x, np.max) == x.max() and blocks.extreme(x, np.min) == x.min()
