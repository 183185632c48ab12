"""Devices, precision and memory estimates.

emjax's library code never changes JAX's global configuration. Public entry points run their
work inside :func:`precision_scope`, which enables 64-bit types locally, and give every array
an explicit dtype, so ``precision="double"`` works whatever the user's JAX settings are.

The one exception is an application's choice: :func:`enable_compilation_cache` turns on JAX's
persistent compilation cache (the ``emjax`` command does it at start; Python users may call
it), so a second run of the same problem loads its compiled kernels instead of compiling.
"""

from __future__ import annotations

import contextlib
import os
import platform
from dataclasses import dataclass

import jax
import numpy as np

from .errors import ConfigError, ResourceError
from .hostinfo import host_available_bytes  # noqa: F401 (part of this module's API)

PRECISIONS = ("single", "double")


@dataclass(frozen=True)
class Precision:
    """Real and complex dtypes of one precision."""

    name: str
    real: type
    complex: type


def precision(name: str) -> Precision:
    """Map ``"single"``/``"double"`` to dtypes; anything else is a :class:`ConfigError`."""
    if not isinstance(name, str):
        raise ConfigError(f"precision must be one of {PRECISIONS}, got {name!r}")
    if name == "single":
        return Precision("single", np.float32, np.complex64)
    if name == "double":
        return Precision("double", np.float64, np.complex128)
    raise ConfigError(f"precision must be one of {PRECISIONS}, got {name!r}")


@contextlib.contextmanager
def precision_scope():
    """Enable 64-bit types inside the block (without touching the global config)."""
    enable = getattr(jax, "enable_x64", None)
    if enable is None:  # older JAX
        from jax.experimental import enable_x64 as enable
    with enable(True):
        yield


#: environment variables: EMJAX_COMPILATION_CACHE=0 turns the cache off; the folder is
#: EMJAX_COMPILATION_CACHE_DIR, else $XDG_CACHE_HOME/emjax/jax (~/.cache/emjax/jax)
CACHE_ENV, CACHE_DIR_ENV = "EMJAX_COMPILATION_CACHE", "EMJAX_COMPILATION_CACHE_DIR"


def compilation_cache_dir() -> str | None:
    """The folder :func:`enable_compilation_cache` uses (None: turned off by the environment)."""
    if os.environ.get(CACHE_ENV, "1").strip().lower() in ("0", "off", "no", "false"):
        return None
    if os.environ.get(CACHE_DIR_ENV):
        return os.path.expanduser(os.environ[CACHE_DIR_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "emjax", "jax")


def enable_compilation_cache(path: str | None = None) -> str | None:
    """Turn on JAX's persistent compilation cache in ``path`` (default
    :func:`compilation_cache_dir`) (every compilation); returns the folder in use, or
    None when turned off (``EMJAX_COMPILATION_CACHE=0``) or the folder cannot be created (a
    warning then; nothing else changes). A cache the user configured for JAX already
    (``JAX_COMPILATION_CACHE_DIR`` or ``jax.config``) is left as it is."""
    import warnings

    current = getattr(jax.config, "jax_compilation_cache_dir", None)
    if current:
        return current
    path = path or compilation_cache_dir()
    if path is None:
        return None
    try:
        os.makedirs(path, exist_ok=True)
        if not os.access(path, os.W_OK):
            raise PermissionError(f"not writable: {path}")
    except OSError as exc:
        warnings.warn(
            f"emjax: compilation cache off ({exc}); set {CACHE_DIR_ENV} to a writable folder", stacklevel=2
        )
        return None
    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    return path


PINNED_LIMIT_ENV = "XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB"


def raise_pinned_host_limit(fraction: float = 0.9) -> None:
    """Set ``XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB`` to ``fraction`` of the host's RAM when it is
    unset, so that the FDTD window's pinned chunks may use the host's memory rather than
    XLA's default 64 GiB cap (which sends bigger grids to the slower NumPy path). XLA reads
    it when the GPU backend starts: the ``emjax`` command calls this first; a Python user
    calls it (or exports the variable) before JAX touches a device."""
    if PINNED_LIMIT_ENV in os.environ:
        return
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return
    os.environ[PINNED_LIMIT_ENV] = str(max(1, int(fraction * ram / 2**30)))


def default_device() -> jax.Device:
    """This process's first device (with several processes ``jax.devices()[0]`` belongs to
    process 0 and is not addressable from the others)."""
    return jax.local_devices()[0]


def device_memory_bytes(device: jax.Device | None = None) -> int:
    """Memory available for arrays on ``device`` (GPU: free bytes; CPU: available RAM)."""
    device = device or default_device()
    if device.platform != "cpu":
        try:
            stats = device.memory_stats() or {}
            limit = stats.get("bytes_limit")
            used = stats.get("bytes_in_use", 0)
            if limit:
                return int(limit - used)
        except Exception:  # noqa: BLE001 - some backends don't report
            pass
    return host_available_bytes()


def check_memory(
    needed_bytes: int, what: str, device: jax.Device | None = None, fraction: float = 0.9
) -> None:
    """Raise :class:`ResourceError` if ``needed_bytes`` exceeds ``fraction`` of free memory."""
    available = device_memory_bytes(device)
    if needed_bytes > fraction * available:
        raise ResourceError(
            f"{what} needs about {needed_bytes / 1e9:.2f} GB but only "
            f"{available / 1e9:.2f} GB are available on {device or default_device()} "
            f"(limit {fraction:.0%} of free memory); use a smaller grid, single precision, "
            "or a device with more memory"
        )


def largest_fitting(bytes_of, available: int, lo: int, hi: int, fraction: float = 0.9) -> int:
    """The largest ``n`` in [lo, hi] with ``bytes_of(n) <= fraction * available`` (``bytes_of``
    increasing in ``n``), or ``lo - 1`` if none: the bound a size option's message states."""
    if bytes_of(lo) > fraction * available:
        return lo - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if bytes_of(mid) <= fraction * available:
            lo = mid
        else:
            hi = mid - 1
    return lo


# Copy bandwidth (read+write, bytes/s) of known devices, for roofline fractions. Measured
# values belong in BENCHMARKS.md; these are the vendors' peak figures.
PEAK_BANDWIDTH = {
    "H100": 3.35e12,  # H100 SXM5 HBM3
    "H200": 4.8e12,
    "A100": 2.0e12,
}


def peak_bandwidth(device: jax.Device | None = None) -> float | None:
    """Vendor peak memory bandwidth of a GPU in bytes/s, or None if unknown (e.g. CPU)."""
    device = device or default_device()
    kind = getattr(device, "device_kind", "")
    for key, bw in PEAK_BANDWIDTH.items():
        if key in kind:
            return bw
    return None


def device_description(device: jax.Device | None = None) -> str:
    device = device or default_device()
    kind = getattr(device, "device_kind", device.platform)
    if device.platform == "cpu":
        return f"cpu ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)"
    return f"{device.platform}:{kind}"


def info() -> dict:
    """Versions and devices, as printed by ``emjax info``."""
    import scipy

    from . import __version__

    devices = []
    for d in jax.devices():
        entry = {"id": d.id, "platform": d.platform, "kind": getattr(d, "device_kind", "")}
        if d.platform != "cpu":
            try:
                stats = d.memory_stats() or {}
                entry["memory_bytes"] = int(stats.get("bytes_limit", 0))
            except Exception:  # noqa: BLE001
                pass
        devices.append(entry)
    return {
        "emjax": __version__,
        "jax": jax.__version__,
        "jaxlib": getattr(jax.lib, "__version__", None) or _jaxlib_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "python": platform.python_version(),
        "default_backend": jax.default_backend(),
        "devices": devices,
    }


def _jaxlib_version() -> str | None:
    try:
        import jaxlib

        return jaxlib.__version__
    except Exception:  # noqa: BLE001
        return None
