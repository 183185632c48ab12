"""The emulated kernel's build: ``emulate.h`` precompiled once per cache (GCC), each kernel
built through it; where the precompiled header is unusable the build still succeeds from
the header's text, and the kernels run the same."""

import jax.numpy as jnp
import pytest
from test_blocked import _setup
from test_blocked_cuda import _cpml_all_faces

from emjax.fdtd.blocked import cuda_advance, emulation
from emjax.fdtd.blocked import split as cpml_split


@pytest.mark.skipif(not emulation.available(), reason="no host C++ compiler")
def test_kernels_build_through_the_precompiled_header_or_without(monkeypatch, tmp_path):
    monkeypatch.setenv("EMJAX_CACHE", str(tmp_path))
    emulation._emulated_library_cached.cache_clear()
    plan, arrays, _ = _setup(_cpml_all_faces(), 5)
    spec = cuda_advance.make_spec(plan, arrays, jnp.float64, 2, (5, 4))
    bulk, _, fixes, _ = cpml_split.split(spec)
    emulation._emulated_library(emulation.emulated_source(bulk))
    gch = list(tmp_path.glob("*.h.gch"))
    if not gch:  # a compiler that builds no precompiled header: the whole text each time
        assert list(tmp_path.glob("yee_blocked_emu_*.so"))
        return
    gch[0].write_bytes(b"not a precompiled header")  # unusable: GCC falls back on the header
    emulation._emulated_library_cached.cache_clear()
    emulation._emulated_library(emulation.emulated_source(fixes[0][0]))
    assert len(list(tmp_path.glob("yee_blocked_emu_*.so"))) == 2
    assert not [p for p in tmp_path.iterdir() if p.suffix in (".cpp", ".tmp")]


@pytest.mark.skipif(not emulation.available(), reason="no host C++ compiler")
def test_asynchronous_copies_land_at_the_wait_that_covers_them():
    """``emulate.h``'s cp.async: the source read when the copy is issued, the slot unchanged
    until a wait covers the copy's group (after one commit and a wait for all but the newest:
    not yet; after the next: landed); a new CTA drops what is pending."""
    probe = r"""
extern "C" int probe() {
  double slot = 1.0, src = 2.0;
  emu_cta_start();
  emu_cp_async(&slot, &src);
  src = 3.0;
  int out = slot == 1.0;
  emu_commit(); emu_wait(1);
  out |= (slot == 1.0) << 1;
  emu_commit(); emu_wait(1);
  out |= (slot == 2.0) << 2;
  emu_cp_async(&slot, &src);
  emu_commit();
  emu_cta_start();
  emu_commit(); emu_wait(0);
  out |= (slot == 2.0) << 3;
  return out;
}
"""
    lib = emulation._emulated_library((emulation.HERE / "emulate.h").read_text() + probe)
    assert lib.probe() == 15


@pytest.mark.skipif(not emulation.available(), reason="no host C++ compiler")
def test_asynchronous_copies_may_land_as_issued(monkeypatch):
    """``EMJAX_EMULATE_COPIES=early``: a copy lands as it is issued (a library of its own);
    a value the variable does not know is refused."""
    probe = r"""
extern "C" int probe() {
  double slot = 1.0, src = 2.0;
  emu_cta_start();
  emu_cp_async(&slot, &src);
  return slot == 2.0;
}
"""
    text = (emulation.HERE / "emulate.h").read_text() + probe
    monkeypatch.setenv("EMJAX_EMULATE_COPIES", "early")
    assert emulation._emulated_library(text).probe() == 1
    monkeypatch.setenv("EMJAX_EMULATE_COPIES", "late")
    assert emulation._emulated_library(text).probe() == 0
    monkeypatch.setenv("EMJAX_EMULATE_COPIES", "soon")
    with pytest.raises(ValueError, match="late or early"):
        emulation._emulated_library(text)
