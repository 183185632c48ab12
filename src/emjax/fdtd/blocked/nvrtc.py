"""NVRTC through ``ctypes``: the blocked kernel's CUDA source to PTX at run time. The library
comes from the ``nvidia-cuda-nvrtc`` wheel that JAX's CUDA extras install, or from the CUDA
toolkit (``CUDA_HOME``); and the device's shared-memory limit the kernels are sized for."""

from __future__ import annotations

import ctypes
import glob
import os
import sys
from functools import lru_cache


def _find_nvrtc():
    names = ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"]
    for name in names:
        try:
            return ctypes.CDLL(name)
        except OSError:
            pass
    roots = [p for p in sys.path if p and os.path.isdir(os.path.join(p, "nvidia"))]
    for root in roots:
        for lib in sorted(glob.glob(os.path.join(root, "nvidia", "**", "libnvrtc.so*"), recursive=True)):
            if "builtins" in lib:
                continue
            try:
                return ctypes.CDLL(lib)
            except OSError:
                pass
    cuda = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    for lib in sorted(glob.glob(os.path.join(cuda, "lib64", "libnvrtc.so*"))):
        try:
            return ctypes.CDLL(lib)
        except OSError:
            pass
    return None


@lru_cache(maxsize=1)
def nvrtc():
    """The NVRTC library (ctypes), or None when none is installed."""
    return _find_nvrtc()


def compile_ptx(text: str, arch: int) -> str:
    """PTX of ``text`` for compute capability ``arch`` (e.g. 90) with NVRTC."""
    lib = nvrtc()
    if lib is None:
        raise RuntimeError("NVRTC (libnvrtc) not found: install JAX's CUDA extras (pip install emjax[cuda])")
    return _compile_cached(text, arch)


@lru_cache(maxsize=32)
def _compile_cached(text: str, arch: int) -> str:
    lib = nvrtc()
    prog = ctypes.c_void_p()
    check = _nvrtc_check(lib)
    check(lib.nvrtcCreateProgram(ctypes.byref(prog), text.encode(), b"yee_blocked.cu", 0, None, None))
    opts = [f"--gpu-architecture=compute_{arch}".encode(), b"--std=c++17", b"-default-device", b"-lineinfo"]
    arr = (ctypes.c_char_p * len(opts))(*opts)
    rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
    if rc != 0:
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, log)
        raise RuntimeError(
            "NVRTC could not compile the blocked FDTD kernel:\n" + log.value.decode(errors="replace")
        )
    size = ctypes.c_size_t()
    check(lib.nvrtcGetPTXSize(prog, ctypes.byref(size)))
    buf = ctypes.create_string_buffer(size.value)
    check(lib.nvrtcGetPTX(prog, buf))
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return buf.value.decode()


def _nvrtc_check(lib):
    def check(rc):
        if rc != 0:
            lib.nvrtcGetErrorString.restype = ctypes.c_char_p
            raise RuntimeError(f"NVRTC: {lib.nvrtcGetErrorString(rc).decode()}")

    return check


#: shared memory a block may opt into, KB, by compute capability (CUDA's table); others 99
_SMEM_OPTIN_KB = {(7, 0): 96, (7, 5): 64, (8, 0): 163, (8, 7): 163, (9, 0): 227, (10, 0): 227}


def smem_optin() -> int | None:
    """The shared memory (bytes) a block may opt into on this process's first GPU; None
    without a GPU backend."""
    try:
        import jax

        cc = str(jax.devices("gpu")[0].compute_capability)
    except Exception:  # no GPU backend: the emulation
        return None
    major, minor = (int(v) for v in cc.split(".")[:2])
    return _SMEM_OPTIN_KB.get((major, minor), 99) * 1024
