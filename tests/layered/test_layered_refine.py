"""The groups' quadratures refined together (emjax.layered.refine): the same paths as each
group refined alone, node tables kept across rounds equal to tables computed afresh, and a
map of several groups on 2 devices equal to one device's bit for bit."""

import numpy as np
import pytest
from multidevice import run_with_devices

from emjax.backend import precision_scope
from emjax.layered import Stack, refine
from emjax.layered.groups import build


def _ctx(pts, rtol=1e-6):
    stack = Stack(eps=[2.25, 1.0])
    src = np.array([0.0, 0.0, 10.0])
    wavelength = 600.0
    return dict(
        stack=stack,
        src=src,
        pts=pts,
        s=int(stack.layer_of(src[2])),
        layer=stack.layer_of(pts[:, 2]),
        k0=2 * np.pi / wavelength,
        eps=stack.permittivities(wavelength),
        rtol=rtol,
        wavelength=wavelength,
        cdtype=np.complex128,
        rdtype=np.float64,
        rng=np.random.default_rng(3),
        layout=None,
    )


def _map():
    """A 100 x 100 map in glass only (above the interface): 10^4 points, several octaves of
    the decay distance, so several groups."""
    x, z = np.meshgrid(np.linspace(-300, 300, 100), np.linspace(1, 400, 100), indexing="ij")
    return np.stack([x.ravel(), np.zeros(x.size), z.ravel()], 1)


def test_groups_refined_together_as_each_alone(monkeypatch):
    """Together with three slots per call (as on a GPU: calls of several groups' slots, the
    last one padded), alone with one per call (the CPU's way)."""
    pts = _map()
    with precision_scope():
        together = build(_ctx(pts), (2, 4))
        assert len(together) >= 4
        # the second group gets extra sample points (as in a second pass): two point tiles
        extras = [()] * len(together)
        extras[1] = np.arange(0, len(together[1].idx), 97)[:64]
        monkeypatch.setattr(refine, "slots_per_call", lambda device: 3)
        refine.refine_groups(together, extras)
        monkeypatch.undo()
        alone = build(_ctx(pts), (2, 4))
        for g, extra in zip(alone, extras):
            refine.refine_groups([g], [extra])
    assert max(g.rounds for g in together) >= 2  # some groups bisected panels
    for a, b in zip(together, alone):
        assert a.rounds == b.rounds
        for which in ("ellipse", "tail"):
            assert np.array_equal(getattr(a.path, which)[0], getattr(b.path, which)[0])
            assert np.array_equal(getattr(a.path, which)[1], getattr(b.path, which)[1])
    # the tables kept panel by panel across the rounds: those of the final path computed afresh
    for g in together:
        kept = g._tables()
        g._cache = {}
        fresh = g._tables()
        for k, f in zip(kept, fresh):
            for x, y in zip(k[:5], f[:5]):
                np.testing.assert_allclose(x, y, rtol=1e-15, atol=0)


CODE = """
import numpy as np, jax
from emjax.layered import Stack, dipole_fields, green_tensor
x, z = np.meshgrid(np.linspace(-300, 300, 100), np.linspace(-200, 200, 200), indexing="ij")
pts = np.stack([x.ravel(), np.zeros(x.size), z.ravel() + 0.5], 1)  # both media, several groups
st = Stack(eps=[2.25, 1.0])
kw = dict(p=(1, 0, 1j), part="total", rtol=1e-6, batch=1024)
f1 = dipole_fields(st, 600.0, (0.0, 0.0, 10.0), pts, **kw)
f2 = dipole_fields(st, 600.0, (0.0, 0.0, 10.0), pts, layout=2, **kw)
print("groups", len(f1.stats), "stages", sorted(f2.timings))
for k in ("E", "H", "error"):
    a, b = getattr(f1, k), getattr(f2, k)
    print(k, float(np.abs(a - b).max() / np.abs(a).max()))
G1 = green_tensor(st, 600.0, (0.0, 0.0, 10.0), pts[::7], rtol=1e-6, batch=64)
G2 = green_tensor(st, 600.0, (0.0, 0.0, 10.0), pts[::7], rtol=1e-6, layout=2, batch=64)
print("G", float(np.abs(G1 - G2).max() / np.abs(G1).max()))
"""


@pytest.mark.slow
def test_map_of_several_groups_on_two_devices_is_bit_for_bit():
    """A 20000-point map across the interface (source medium: the direct term) on 2
    virtual CPU devices: E, H, the error estimates and G equal to one device's (the same
    per-device batch: chunks of one size on either layout)."""
    out = run_with_devices(2, CODE, timeout=1800)
    lines = {ln.split()[0]: ln.split() for ln in out.splitlines() if ln.strip()}
    assert int(lines["groups"][1]) >= 4, out
    assert "refine" in out and "device_wait" in out, out
    for k in ("E", "H", "error", "G"):
        assert float(lines[k][-1]) == 0.0, out


@pytest.mark.parametrize("block", [None, 1000])
def test_groups_hold_each_octave_in_index_order_with_its_geometry(block, monkeypatch):
    """The points are put in group order before their geometry is computed: every group
    holds one octave of the decay distance h, its points in increasing index order, and its
    geometry equals :func:`groups._geometry` of exactly those points; together the groups
    cover each medium's points once. ``block``: the set-up's blocks of points (1000: the
    counting sort and the geometry over many blocks in threads)."""
    from emjax.layered import blocks, groups

    if block:
        monkeypatch.setattr(blocks, "SETUP_BLOCK", block)

    x, z = np.meshgrid(np.linspace(-300, 300, 180), np.linspace(-200, 400, 180), indexing="ij")
    pts = np.stack([x.ravel(), np.zeros(x.size), z.ravel()], 1)  # both media, > 8192 points
    ctx = _ctx(pts)
    for m in groups._all_octaves(ctx):
        idx, octave, parts = groups._octaves(ctx, m)
        assert len(idx) >= 8192 and len(parts) > 1  # grouped by octave, several of them
        got = np.concatenate([p[0] for p in parts])
        assert np.array_equal(np.sort(got), idx)
        octs = []
        for gidx, geo in parts:
            assert np.all(np.diff(gidx) > 0)
            ref = groups._geometry(ctx["stack"], ctx["src"], pts[gidx], ctx["s"], m)
            for a, b in zip(geo, ref, strict=True):
                assert np.array_equal(a, b)
            o = octave[np.searchsorted(idx, gidx)]
            assert np.all(o == o[0])
            octs.append(int(o[0]))
        assert octs == sorted(set(octs))
