"""The subpixel corrections on several (virtual CPU) devices, each device correcting the
interface nodes of its own slab (emjax.fdtd.subpixel_slabs): the same fields as one device
to rounding (float64), for spheres across slab boundaries, inside one slab (the other
devices hold no node), x sizes that do not divide, and dispersive (Drude) interface nodes;
the compiled step holds no collective over the node lists; checkpoints cross layouts."""

import json

import pytest
from multidevice import run_with_devices

COMMON = r"""
import json, re, tempfile, pathlib
import numpy as np, jax
from emjax import fdtd, geometry, scene
from emjax.fdtd import sharded, subpixel_slabs
from emjax.materials import Drude

out = {}
used = {}
_localize = subpixel_slabs.localize
def spy(plan, arrays, state):
    r = _localize(plan, arrays, state)
    used["slabs"] = r.plan.subpixel_slabs
    return r
subpixel_slabs.localize = spy

def sphere(shape, center, radius, drude=False, vacuum=False):
    mat = Drude(1.0, omega_p=0.3, gamma=0.01) if drude else 2.25
    sc = scene.Scene([scene.Object(geometry.Sphere(), mat, center=center, size=2 * radius)])
    phys = fdtd.Simulation(size=shape, resolution=1.0, scene=sc, boundary=fdtd.Periodic(),
                           center=tuple(s / 2 for s in shape), averaging="subpixel")
    spec, _ = phys.to_grid()
    g = fdtd.Grid(shape, dx=1.0, boundary=fdtd.PEC(), precision="double")
    c = tuple(int(v) for v in center)
    src = fdtd.PointDipole(c, 2, fdtd.GaussianPulse(frequency=0.1, bandwidth=0.1))
    probes = (fdtd.Probe((c[0], c[1] + 2, c[2]), 2),)
    if vacuum:
        return fdtd.GridSimulation(g, sources=(src,), probes=probes)
    return fdtd.GridSimulation(g, eps=spec.eps, dispersive=spec.dispersive, sources=(src,),
                               probes=probes, subpixel=spec.subpixel)

def rel(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-300))

def compare(name, sim, n, steps=40, one=None):
    one = one or fdtd.run(sim, steps)
    used.clear()
    many = fdtd.run(sim, steps, layout=n)
    sl = used["slabs"]
    assert sl is not None, (name, "the nodes were not dealt out by slab")
    d = {k: rel(getattr(many, k), getattr(one, k)) for k in ("E", "H", "probes")}
    assert max(d.values()) <= 1e-12, (name, d)
    out[name] = {**d, "groups": sl.groups, "poles": sl.poles, "left": sl.left, "right": sl.right}
    return one

def collectives(sim, n, steps=3):
    cap = {}
    orig = sharded.advance
    def grab(plan, arrays, state, k, axes):
        cap["args"] = (plan, arrays, state, k, axes)
        return orig(plan, arrays, state, k, axes)
    sharded.advance = grab
    try:
        fdtd.run(sim, steps, chunk=steps, layout=n)
    finally:
        sharded.advance = orig
    with jax.enable_x64(True):
        txt = orig.lower(*cap["args"]).compile().as_text()
    ops = re.findall(r"= (.*?) (all-gather|collective-permute|all-reduce|all-to-all)(?:-start)?\(", txt)
    dims = lambda s: re.findall(r"\[([\d,]*)\]", s)
    size = lambda s: sum(int(np.prod([int(v) for v in d.split(",") if v])) for d in dims(s))
    return sorted((op, size(s)) for s, op in ops)
"""

TWO = (
    COMMON
    + r"""
# a Drude sphere across the slab boundary x = 12: interface nodes and dispersive nodes
# in both slabs and on the boundary planes (the window with the neighbours' planes)
sim = sphere((24, 14, 14), (12.3, 7, 7), 3.5, drude=True)
compare("drude_across", sim, 2)
assert out["drude_across"]["groups"] == ("int", "edge") and out["drude_across"]["poles"] == ("int", "edge")
# the compiled step against the same run without the sphere: the same all-reduces (the
# probe's number, the finite check), no all-gather, exchanges of at most one plane each
plane = 14 * 14
col, vac = collectives(sim, 2), collectives(sphere((24, 14, 14), (12.3, 7, 7), 3.5, vacuum=True), 2)
out["collectives"], out["collectives_vacuum"] = col, vac
ar = lambda c: [x for x in c if x[0] == "all-reduce"]
assert ar(col) == ar(vac), (col, vac)
assert not [x for x in col if x[0] in ("all-gather", "all-to-all")], col
assert all(s <= plane for op, s in col if op == "collective-permute"), col
print(json.dumps(out))
"""
)

FOUR = (
    COMMON
    + r"""
# across three slab boundaries (6 planes per device), and an x size that does not divide
compare("across_4", sphere((24, 14, 14), (12, 7, 7), 3.5), 4)
compare("uneven_4", sphere((30, 14, 14), (15, 7, 7), 4.0), 4)
one = compare("drude_uneven_4", sphere((30, 14, 14), (15.5, 7, 7), 4.0, drude=True), 4)
# inside one slab of two: the other device holds no node; no exchange for the corrections
inside = sphere((32, 14, 14), (7.5, 7, 7), 3.0)
compare("inside_one_slab_2", inside, 2)
assert out["inside_one_slab_2"]["groups"] == ("int",) and not out["inside_one_slab_2"]["left"]
vac = sphere((32, 14, 14), (7.5, 7, 7), 3.0, vacuum=True)
assert collectives(inside, 2) == collectives(vac, 2)
# checkpoints of the dispersive nodes' state cross layouts (4 devices <-> one)
sim = sphere((30, 14, 14), (15.5, 7, 7), 4.0, drude=True)
d = pathlib.Path(tempfile.mkdtemp())
class Stop(Exception):
    pass
def stop(done, total):
    raise Stop
for a, b in ((4, None), (None, 4)):
    ck = d / f"ck_{a}_{b}.npz"
    try:
        fdtd.run(sim, 40, chunk=20, checkpoint=ck, layout=a, progress=stop)
    except Stop:
        pass
    res = fdtd.run(sim, 40, chunk=20, checkpoint=ck, layout=b)
    r = {"E": rel(res.E, one.E), "H": rel(res.H, one.H)}
    out[f"checkpoint_{a}_to_{b}"] = r
    assert max(r.values()) <= 1e-12, r
print(json.dumps(out))
"""
)


def _report(stdout):
    res = json.loads(stdout.strip().splitlines()[-1])
    for k, v in res.items():
        print(k, v)
    return res


def test_subpixel_nodes_per_slab_on_two_devices():
    _report(run_with_devices(2, TWO))


@pytest.mark.slow
def test_subpixel_nodes_per_slab_four_devices_uneven_inside_one_slab_checkpoints():
    _report(run_with_devices(4, FOUR))
