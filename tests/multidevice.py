"""Run a snippet in a subprocess with N virtual CPU devices (XLA must see the flag before
JAX starts, so it cannot be set inside the test process)."""

import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).parents[1] / "src"


def run_with_devices(n: int, code: str, timeout: float = 600, env: dict | None = None) -> str:
    """Run ``code`` with ``n`` virtual CPU devices; return its stdout, fail with its stderr."""
    e = dict(os.environ)
    e["XLA_FLAGS"] = (e.get("XLA_FLAGS", "") + f" --xla_force_host_platform_device_count={n}").strip()
    e["JAX_PLATFORMS"] = "cpu"
    e["PYTHONPATH"] = os.pathsep.join([str(SRC), e.get("PYTHONPATH", "")])
    e.setdefault("OPENBLAS_NUM_THREADS", "1")
    e["EMJAX_COMPILATION_CACHE"] = "0"
    if env:
        e.update(env)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, env=e)
    if p.returncode:
        raise AssertionError(f"subprocess with {n} devices failed:\n{p.stdout[-3000:]}\n{p.stderr[-5000:]}")
    return p.stdout
