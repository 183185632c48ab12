"""Layered maps with the points spread over 4 and 8 virtual CPU devices (emjax.layout):
equal to the one-device map. Point counts that do not divide by the device count, and a
per-device batch smaller than the map (several chunks, the last one padded), are covered.

The two media's groups are refined on two devices side by side. Measured (this box: 4, 8
and 3 devices, points in 2 media): max |G_sharded - G_one| = 0 exactly
(bit for bit: each point's integrals are the same operations on either layout). The
compiled integration of point-split chunks has no collective at all."""

import pytest
from multidevice import run_with_devices

CODE = """
import numpy as np, jax
from emjax.layered import Stack, dipole_fields, green_tensor
from emjax.layout import Layout
n = len(jax.devices())
FULL = {full}
st = Stack(eps=[2.25, 1.0])
rng = np.random.default_rng(1)
pts = rng.uniform(-0.4, 0.4, (21, 3))
pts[:, 2] = np.where(pts[:, 2] > 0, pts[:, 2] + 0.05, pts[:, 2] - 0.05)
src = (0.0, 0.0, 0.08)
G1 = green_tensor(st, 0.6, src, pts, rtol=1e-6)
# the groups' refinement dealt out over the devices (one group per medium here: two)
from emjax.layered import mapping
refined_on = set()
_refine_groups = mapping.refine_groups
def spy(gs, extras, device=None):
    refined_on.add(device.id)
    return _refine_groups(gs, extras, device)
mapping.refine_groups = spy
# 21 points, 2 per device and call: chunks of 8 (4 devices) or 16 (8), the last one padded
G = green_tensor(st, 0.6, src, pts, rtol=1e-6, layout=n, batch=2)
print("G", n, float(np.abs(G - G1).max() / np.abs(G1).max()))
print("refined on", len(refined_on))
# the compiled integration of point-split chunks: no collective (each device its own points)
import re
from emjax.backend import precision_scope
from emjax.layered import distributed, sommerfeld as som
lay = Layout.of(n)
with precision_scope():
    acc = tuple(distributed.zeros((4 * n, 2), t, lay) for t in ("complex128", "float64", "complex128"))
    rep = lambda a: lay.put(a, None)
    nodes = (rep(np.linspace(0.1, 3, 120) + 0j), rep(np.ones((4, 30, 5))), rep(np.ones((120, 2, 2), complex)),
             rep(np.ones(120, complex)))
    at = [distributed.put_points(np.linspace(0.1, 1, 4 * n), 4 * n, np.float64, lay) for _ in range(3)]
    hlo = som.integrate.lower(acc, *nodes, *at, (0, 1), False, True, True).compile().as_text()
names = ("all-to-all", "all-gather", "all-reduce", "collective-permute")
print("hlo", sum(len(re.findall(r"\\b" + c + r"(-start)?\\(", hlo)) for c in names))
if not FULL:
    raise SystemExit
G = green_tensor(st, 0.6, src, pts, rtol=1e-6, layout=Layout.of(3))
print("G", 3, float(np.abs(G - G1).max() / np.abs(G1).max()))
f1 = dipole_fields(st, 0.6, src, pts[:5], p=(1, 0, 1j), rtol=1e-6)
f = dipole_fields(st, 0.6, src, pts[:5], p=(1, 0, 1j), rtol=1e-6, layout=n)
print("E", float(np.abs(f.E - f1.E).max() / np.abs(f1.E).max()))
print("H", float(np.abs(f.H - f1.H).max() / np.abs(f1.H).max()))
"""


def _check(out, count):
    assert "hlo 0" in out, out
    assert "refined on 2" in out, out
    lines = [ln.split() for ln in out.splitlines() if ln[:1] in "GEH"]
    assert len(lines) == count, out
    for ln in lines:
        assert float(ln[-1]) <= 1e-14, out


def test_layered_points_on_four_devices():
    _check(run_with_devices(4, CODE.replace("{full}", "False")), 1)


@pytest.mark.slow
def test_layered_points_on_eight_devices():
    """Also a 3-device layout (21 points: 7 each, padded chunks), E and H of a dipole."""
    # each device compiles its own kernels (the points are dealt out whole): 8 devices, 8 times
    _check(run_with_devices(8, CODE.replace("{full}", "True"), timeout=1800), 4)
