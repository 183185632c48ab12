"""The ``emjax`` command's XLA flags for several devices: set only where the user set none."""

import os

from emjax.backend import OVERLAP_FLAGS, overlap_collectives


def test_overlap_collectives_only_without_user_flags(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    assert overlap_collectives()
    assert os.environ["XLA_FLAGS"] == OVERLAP_FLAGS == "--xla_gpu_enable_latency_hiding_scheduler=true"
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=2")
    assert not overlap_collectives()
    assert os.environ["XLA_FLAGS"] == "--xla_force_host_platform_device_count=2"


def test_flag_known_to_this_xla():
    """XLA aborts at start-up on a flag it does not know: this one starts and computes."""
    import subprocess
    import sys

    env = {**os.environ, "XLA_FLAGS": OVERLAP_FLAGS, "JAX_PLATFORMS": "cpu"}
    code = "import jax.numpy as jnp; print(float(jnp.arange(4.0).sum()))"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "6.0", p.stderr[-2000:]
