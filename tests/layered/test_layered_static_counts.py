"""Static block counts (what a GPU runs, see emjax.layered.sommerfeld): the loops' bounds
rounded up to a multiple of BLOCK_STEP over zero-weight padding give the same map as the
traced bounds, bit for bit."""

import jax
import numpy as np

from emjax.layered import Stack, dipole_fields
from emjax.layered import sommerfeld as som


def _map():
    st = Stack(eps=[2.25, 1.0])
    rng = np.random.default_rng(3)
    p = rng.uniform(-40, 40, (96, 3))
    p[:, 2] = np.where(np.arange(96) % 2, 1, -1) * (np.abs(p[:, 2]) + 2.0)
    kw = dict(p=(0, 0, 1), part="scattered", fields="E", precision="double", rtol=1e-8)
    return dipole_fields(st, 600.0, (0.0, 0.0, 10.0), p, **kw)


def test_static_counts_equal_traced_counts(monkeypatch):
    traced = _map()
    calls = []
    blocks = som._blocks

    def spy(fn, args, n_blocks, device):
        out = blocks(fn, args, n_blocks, device)
        if n_blocks is not None and not isinstance(n_blocks, jax.ShapeDtypeStruct):
            calls.append((fn.__name__, int(n_blocks), out[1]))
        return out

    monkeypatch.setattr(som, "STATIC_COUNTS", ("cpu", "gpu"))
    monkeypatch.setattr(som, "_blocks", spy)
    static = _map()
    assert calls, "no kernel took a static count"
    # rounded up to the step, never below the valid blocks, some actually padded
    assert all(c >= n and c % som.BLOCK_STEP == 0 for _, n, c in calls), calls
    assert any(c > n for _, n, c in calls), calls
    assert {name for name, _, _ in calls} == {"refine_sums", "integrate"}
    np.testing.assert_array_equal(np.asarray(static.E), np.asarray(traced.E))
    np.testing.assert_array_equal(static.error, traced.error)
