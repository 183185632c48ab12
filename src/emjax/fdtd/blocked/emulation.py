"""The blocked pass on the host: :func:`.cuda.source`'s kernel compiled by the host's C++
compiler with ``emulate.h`` (one thread per CUDA thread, ``__syncthreads`` a barrier, the
CTAs in turn, an asynchronous copy landing only at the wait that covers it) and run through
``ctypes``. Slow, and exact: CI checks the kernel's logic against the XLA step on small grids
without a GPU. The libraries are kept on disk (``$EMJAX_CACHE``, default ``emjax-kernels`` in
the temporary folder), keyed on the source and the build's flags."""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from functools import lru_cache
from pathlib import Path

import numpy as np

from .cuda import HERE, INTS, Spec, aliased, inputs, outputs, source


def _cxx():
    return os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")


def available() -> bool:
    """Whether a host C++ compiler is there (``$CXX``, g++, c++ or clang++)."""
    return _cxx() is not None


_build_lock = threading.Lock()


def _emulated_library(text: str):
    with _build_lock:  # several devices' callbacks may ask at once
        return _emulated_library_cached(text, _flags())


FLAGS = ("-std=c++20", "-O1", "-fPIC", "-pthread")
#: with ``EMJAX_EMULATE_SANITIZE`` set, the kernels are built with AddressSanitizer: a read or
#: write outside the arrays the kernel is given stops the process with a report (the process
#: must preload the sanitizer's runtime: ``LD_PRELOAD=$(gcc -print-file-name=libasan.so)``)
SANITIZE = ("-fsanitize=address", "-fno-omit-frame-pointer")


def _flags() -> tuple:
    """The build's flags: :data:`FLAGS`, :data:`SANITIZE` with ``EMJAX_EMULATE_SANITIZE``, and
    with ``EMJAX_EMULATE_COPIES=early`` an asynchronous copy landing as it is issued, not at
    the wait that covers it (emulate.h): the two ends of what a GPU may do."""
    out = FLAGS + (SANITIZE if os.environ.get("EMJAX_EMULATE_SANITIZE") else ())
    copies = os.environ.get("EMJAX_EMULATE_COPIES", "late")
    if copies not in ("late", "early"):
        raise ValueError(f"EMJAX_EMULATE_COPIES={copies!r}: late or early")
    return out + (("-DEMU_COPIES_EARLY",) if copies == "early" else ())


def _header(cache: Path, text: str, flags: tuple) -> str | None:
    """``emulate.h`` (``text``) as a precompiled header in ``cache`` (its name, to #include;
    about 0.4 s of the 1 s a kernel takes to build with GCC is its standard headers), or None
    where the compiler builds none. Keyed on the header's text, the compiler and ``flags``."""
    key = hashlib.sha256((text + _cxx() + " ".join(flags)).encode()).hexdigest()[:16]
    name = f"emjax_emulate_{key}.h"
    if not (cache / f"{name}.gch").exists():
        head = cache / f"{name}.{os.getpid()}.tmp"
        head.write_text(text)
        tmp = cache / f"{name}.gch.{os.getpid()}.tmp"
        cmd = [_cxx(), *flags, "-x", "c++-header", str(head), "-o", str(tmp)]
        ok = subprocess.run(cmd, capture_output=True).returncode == 0 and tmp.exists()
        if ok:  # the header beside its precompiled form (what the compiler falls back on)
            os.replace(head, cache / name)
            os.replace(tmp, cache / f"{name}.gch")
        head.unlink(missing_ok=True)
        tmp.unlink(missing_ok=True)
        if not ok:
            return None
    return name


def _build(cache: Path, text: str, out: Path, flags: tuple) -> subprocess.CompletedProcess:
    """Compile ``text`` (``emulate.h`` + a kernel) into the library ``out``: through the
    precompiled header where there is one, else (or where that fails) the whole text."""
    src = cache / f"{out.name}.cpp"
    head = (HERE / "emulate.h").read_text()
    name = _header(cache, head, flags) if text.startswith(head) else None
    res = None
    if name is not None:
        src.write_text(f'#include "{name}"\n' + text[len(head) :])
        cmd = [_cxx(), *flags, "-shared", "-I", str(cache), "-o", str(out), str(src)]
        res = subprocess.run(cmd, capture_output=True, text=True)
    if res is None or res.returncode != 0:
        src.write_text(text)
        res = subprocess.run(
            [_cxx(), *flags, "-shared", "-o", str(out), str(src)], capture_output=True, text=True
        )
    src.unlink(missing_ok=True)
    return res


@lru_cache(maxsize=16)
def _emulated_library_cached(text: str, flags: tuple):
    cache = Path(os.environ.get("EMJAX_CACHE", Path(tempfile.gettempdir()) / "emjax-kernels"))
    cache.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha256((text + " ".join(flags)).encode()).hexdigest()[:16]
    lib = cache / f"yee_blocked_emu_{key}.so"
    if not lib.exists():  # each process builds from its own files, then renames (atomic)
        tmp = cache / f"{lib.name}.{os.getpid()}.tmp"
        res = _build(cache, text, tmp, flags)
        if res.returncode != 0:
            raise RuntimeError(
                "the host compiler could not build the emulated kernel:\n" + res.stderr[-4000:]
            )
        os.replace(tmp, lib)
    return ctypes.CDLL(str(lib))


def emulated_source(spec: Spec) -> str:
    names = [n for n, _ in inputs(spec)] + ["alias_" + n for n, _ in aliased(spec)]
    names += [n for n, _ in outputs(spec)]
    real = "float" if spec.dtype == "float32" else "double"
    params = ", ".join(f"void *{n}" for n in names)
    args = ", ".join(f"({'int' if n in INTS else real} *){n}" for n in names)
    # one thread per CUDA thread for the whole launch, the CTAs one after another (a barrier
    # between them: the shared memory is the next CTA's only when every thread is done).
    # Fibers (ucontext) on one thread instead ran as fast, no faster, on 2 cores (the slabs'
    # emulated test warm: 31.6 s against 32.8): each switch makes system calls for the
    # signal mask.
    launcher = f"""
extern "C" int emulate_launch({params}) {{
  std::vector<unsigned char> shared({spec.smem_bytes});
  std::vector<EmuShadow> shadow({spec.smem_bytes // spec.itemsize});
  std::atomic<long> races{{0}};
  std::barrier<> bar({spec.threads});
  std::vector<std::thread> pool;
  for (int t = 0; t < {spec.threads}; ++t)
    pool.emplace_back([&, t] {{
      threadIdx = {{t, 0, 0}};
      emu_barrier = &bar;
      emu_smem = shared.data();
      emu_shadow = shadow.data();
      emu_races = &races;
      for (int by = 0; by < {spec.grid[1]}; ++by)
        for (int bx = 0; bx < {spec.grid[0]}; ++bx) {{
          blockIdx = {{bx, by, 0}};
          emu_cta_start();
          yee_blocked({args});
          ++emu_epoch;
          bar.arrive_and_wait();
        }}
    }});
  for (auto &th : pool) th.join();
  return (int)std::min<long>(races, 1 << 30);
}}
"""
    return (HERE / "emulate.h").read_text() + "\n" + source(spec) + launcher


def emulate_pass(spec: Spec, args: list, dest: list | None = None) -> list:
    """One pass on the host (NumPy arrays in, NumPy arrays out): the same kernel text.
    ``dest``: the values of :func:`aliased` 's buffers before the pass (what the kernel does
    not write keeps them); None: NaN."""
    lib = _emulated_library(emulated_source(spec))
    dt = np.dtype(spec.dtype)
    ins = [
        np.ascontiguousarray(np.asarray(a, np.int32 if n in INTS else dt).reshape(s))
        for a, (n, s) in zip(args, inputs(spec))
    ]
    outs = [np.full(s, np.nan, dt) for _, s in outputs(spec)]
    for o, v in zip(outs, dest or []):
        o[...] = np.asarray(v, dt).reshape(o.shape)
    if spec.probes:
        outs[-1][...] = 0
    dest = [o for o, (n, _) in zip(outs, outputs(spec)) if n != "rec"]
    ptrs = [a.ctypes.data_as(ctypes.c_void_p) for a in ins + dest + outs]
    lib.emulate_launch.argtypes = [ctypes.c_void_p] * len(ptrs)
    lib.emulate_launch.restype = ctypes.c_int
    races = lib.emulate_launch(*ptrs)
    if races:
        raise RuntimeError(
            f"the emulated blocked kernel raced on its shared-memory buffers {races} times "
            "(a value read and written by two threads with no barrier between)"
        )
    return outs
