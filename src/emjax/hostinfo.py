"""The host's available memory, without importing JAX (the 2-D FDFD solve on the host
checks it and never starts JAX's runtime)."""

from __future__ import annotations

import os


def host_available_bytes() -> int:
    """Available host RAM from /proc/meminfo (falls back to total physical memory)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 * 1024**3
