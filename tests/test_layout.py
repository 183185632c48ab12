"""The device layout (emjax.layout): built, validated and used on virtual CPU devices.

Virtual devices need XLA_FLAGS before JAX starts, so the multi-device checks run in a
subprocess (tests/multidevice.py's helper)."""

import pytest
from multidevice import run_with_devices

from emjax.errors import ConfigError
from emjax.layout import Layout, as_layout, initialize_distributed


def test_single_device_default_costs_nothing():
    assert as_layout(None) is None
    assert as_layout(1) is None
    lay = Layout.of(None)
    assert lay.single and lay.n == 1


@pytest.mark.parametrize("bad", [0, -1, 10_000, "two", 2.5])
def test_bad_device_counts_are_refused(bad):
    with pytest.raises(ConfigError, match="devices"):
        Layout.of(bad)


def test_no_environment_means_one_process(monkeypatch):
    for k in ("EMJAX_COORDINATOR", "JAX_COORDINATOR_ADDRESS", "MASTER_ADDR", "SLURM_JOB_ID"):
        monkeypatch.delenv(k, raising=False)
    assert initialize_distributed() is False


def test_bad_process_id_is_refused():
    with pytest.raises(ConfigError, match="process_id"):
        initialize_distributed("localhost:1", num_processes=2, process_id=2)


def test_layout_on_four_virtual_devices():
    out = run_with_devices(
        4,
        """
import numpy as np, jax
from emjax.layout import Layout
from emjax.errors import ConfigError
lay = Layout.of(4)
assert lay.n == 4 and lay.describe() == "4 x cpu", lay.describe()
x = np.arange(8 * 3, dtype=np.float32).reshape(8, 3)
y = lay.put(x, 0)
assert len(y.sharding.device_set) == 4 and np.array_equal(np.asarray(y), x)
assert y.addressable_shards[0].data.shape == (2, 3)
z = lay.put(x, None)
assert z.addressable_shards[0].data.shape == (8, 3)
assert lay.padded(10) == 12 and lay.padded(12) == 12
try:
    lay.put(np.zeros((10, 3)), 0)
except ConfigError as e:
    assert "pad it to 12" in str(e)
else:
    raise AssertionError("uneven split accepted")
print("ok")
""",
    )
    assert out.strip().endswith("ok")
