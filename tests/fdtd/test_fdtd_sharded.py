"""FDTD on several (virtual CPU) devices: the grid split in slabs along x equals the one-device
run to rounding, for each feature; checkpoints cross layouts; no whole-field all-gather.

Virtual devices need XLA_FLAGS before JAX starts: the checks run in subprocesses
(tests/multidevice.py), several per subprocess to share its start-up."""

import json

import pytest
from multidevice import run_with_devices

COMMON = r"""
import json, re, collections, tempfile, pathlib, time
import numpy as np, jax
from emjax import fdtd
from emjax.fdtd import sharded
from emjax.materials import Dispersive, DrudePole, LorentzPole
from emjax.scattering import PlaneWave

out = {}

def rel(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-30))

def compare(name, sim, steps, n, chunk=None, tol=2e-5):
    t0 = time.perf_counter()
    one = fdtd.run(sim, steps, chunk=chunk)
    many = fdtd.run(sim, steps, chunk=chunk, layout=n)
    d = {"E": rel(many.E, one.E), "H": rel(many.H, one.H)}
    if sim.probes:
        d["probes"] = rel(many.probes, one.probes)
    for i, (a, b) in enumerate(zip(many.dft, one.dft)):
        d[f"dft{i}"] = max(rel(a["E"], b["E"]), rel(a["H"], b["H"]))
        if sim.monitors[i].__class__.__name__ == "DFTPlane":
            d[f"flux{i}"] = rel(many.flux(i), one.flux(i))
    assert many.total_steps == one.total_steps == steps
    assert np.shape(many.E) == np.shape(one.E)
    bad = {k: v for k, v in d.items() if not v <= tol}
    assert not bad, (name, d)
    d["seconds"] = round(time.perf_counter() - t0, 1)
    out[name] = d
    return one, many

def collectives(sim, steps, n):
    cap = {}
    orig = sharded.advance
    def spy(plan, arrays, state, k, axes):
        cap["args"] = (plan, arrays, state, k, axes)
        return orig(plan, arrays, state, k, axes)
    sharded.advance = spy
    try:
        fdtd.run(sim, steps, chunk=steps, layout=n)
    finally:
        sharded.advance = orig
    txt = orig.lower(*cap["args"]).compile().as_text()
    ops = re.findall(r" (all-gather|collective-permute|all-reduce|all-to-all)(?:-start)?\(", txt)
    return dict(collections.Counter(ops))

dip = lambda c: fdtd.PointDipole(c, 2, fdtd.Ricker(frequency=0.8))
"""

FOUR = (
    COMMON
    + r"""
n = 4
# every feature in one run (compiles dominate on this box): an x size that does not divide
# by 4 (stored padded to 24), CPML, a TF/SF plane wave along x through the slabs, a point
# dipole, probes on several devices, DFT planes normal to x and z (flux), a Drude + Lorentz
# block across device boundaries
g = fdtd.Grid((23, 18, 16), dx=0.05, boundary=fdtd.CPML(4))
mask = np.zeros(g.shape, bool)
mask[9:15, 7:12, 6:10] = True
mat = Dispersive(eps_inf=2.0, poles=(DrudePole(omega_p=3.0, gamma=0.5), LorentzPole(1.0, 2.0, 0.1)))
tf = fdtd.TFSF((6, 5, 5), (17, 13, 11), PlaneWave((1, 0, 0), (0, 0, 1)), fdtd.GaussianPulse(1.0, 0.5))
probes = tuple(fdtd.Probe((i, 9, 8), 2) for i in (1, 7, 12, 21))
mons = (fdtd.DFTPlane(0, 19, (0.8, 1.0)), fdtd.DFTPlane(2, 12, (1.0,)))
sim = fdtd.GridSimulation(
    g, sources=(tf, dip((4, 9, 8))), probes=probes, monitors=mons, dispersive=(mat, mask)
)
one, _ = compare("odd_nx_cpml_tfsf_dipole_monitors_poles", sim, 40, n, chunk=20)
out["collectives_odd_nx"] = col = collectives(sim, 5, n)
assert col.get("all-gather", 0) == 0 and col.get("all-to-all", 0) == 0, col

# checkpoints: written on 4 devices, resumed on 1; written on 1, resumed on 4 (same chunk
# programs as above: no new compiles)
d = pathlib.Path(tempfile.mkdtemp())
class Stop(Exception):
    pass
def stop(done, total):
    raise Stop
for a, b in ((n, None), (None, n)):
    ck = d / f"ck_{a}_{b}.npz"
    try:  # interrupted after the first chunk (TF/SF's 1-D grid is sized by the run's steps)
        fdtd.run(sim, 40, chunk=20, checkpoint=ck, layout=a, progress=stop)
    except Stop:
        pass
    if a:
        assert len(list(d.glob(ck.name + ".step20.shard*of4.npz"))) == 4
    res = fdtd.run(sim, 40, chunk=20, checkpoint=ck, layout=b)
    r = {"E": rel(res.E, one.E), "probes": rel(res.probes, one.probes)}
    r["dft0"] = rel(res.dft[0]["E"], one.dft[0]["E"])
    out[f"checkpoint_{a}_to_{b}"] = r
    assert res.total_steps == 40 and res.probes.shape == one.probes.shape
    assert max(r.values()) <= 2e-5, r
    if b:  # the one-device checkpoint replaced by a sharded one; no stale shard files
        names = sorted(p.name for p in d.glob(ck.name + ".*shard*"))
        assert names == [f"{ck.name}.step40.shard{k}of4.npz" for k in range(4)], names

# the compiled step of a divisible CPML grid: halo planes by collective-permute, the x-CPML
# windows by all-reduce, no all-gather
g = fdtd.Grid((24, 16, 16), dx=0.1, boundary=fdtd.CPML(4))
mons = (fdtd.DFTPlane(0, 17, (0.5,)),)
sim = fdtd.GridSimulation(g, sources=(dip((12, 8, 8)),), probes=(fdtd.Probe((3, 5, 7), 2),), monitors=mons)
out["collectives_cpml"] = col = collectives(sim, 5, n)
assert col.get("all-gather", 0) == 0 and col.get("all-to-all", 0) == 0, col
assert col.get("collective-permute", 0) >= 4, col
print(json.dumps(out))
"""
)

EIGHT = (
    COMMON
    + r"""
n = 8
# 4th order with CPML along x: two halo planes, the CPML windows span three devices (3
# planes each)
g = fdtd.Grid((24, 16, 16), dx=0.1, order=4, boundary=fdtd.CPML(4))
probes = (fdtd.Probe((20, 9, 9), 2), fdtd.Probe((2, 9, 9), 2))
sim = fdtd.GridSimulation(g, sources=(dip((11, 8, 8)),), probes=probes)
compare("order4_cpml", sim, 30, n)
print(json.dumps(out))
"""
)

MORE = (
    COMMON
    + r"""
n = 4
g = fdtd.Grid((24, 24, 24), dx=0.1, boundary=fdtd.Periodic())
p = (fdtd.Probe((3, 5, 7), 2),)
compare("periodic", fdtd.GridSimulation(g, sources=(dip((12, 12, 12)),), probes=p), 40, n)
g = fdtd.Grid((24, 16, 16), dx=0.05, boundary=(fdtd.Bloch(3.0), fdtd.Periodic(), fdtd.CPML(4)))
src = fdtd.PlaneSource(2, 8, 0, fdtd.GaussianPulse(1.0, 0.5), k=(3.0, 0.0, 0.0))
compare("bloch_x", fdtd.GridSimulation(g, sources=(src,), probes=(fdtd.Probe((3, 5, 12), 0),)), 40, n)
g = fdtd.Grid((24, 16, 16), dx=0.1, order=4, boundary=fdtd.PEC())
p = (fdtd.Probe((20, 9, 9), 2),)
compare("order4_pec", fdtd.GridSimulation(g, sources=(dip((11, 8, 8)),), probes=p), 40, n)
g = fdtd.Grid((21, 16, 16), dx=0.1, order=4, boundary=fdtd.CPML(6))
p = (fdtd.Probe((17, 9, 9), 2),)
compare("order4_cpml_odd_nx", fdtd.GridSimulation(g, sources=(dip((10, 8, 8)),), probes=p), 40, n)
print(json.dumps(out))
"""
)


def _report(stdout):
    res = json.loads(stdout.strip().splitlines()[-1])
    for k, v in res.items():
        print(k, v)
    return res


def test_sharded_equals_one_device_on_four_devices():
    _report(run_with_devices(4, FOUR))


@pytest.mark.slow  # 4th order with CPML windows over three devices (the fast suite: four devices)
def test_sharded_equals_one_device_on_eight_devices():
    _report(run_with_devices(8, EIGHT))


@pytest.mark.slow
def test_sharded_periodic_bloch_and_fourth_order():
    _report(run_with_devices(4, MORE))


@pytest.mark.slow
def test_bench_scaling_cli_on_two_devices():
    out = run_with_devices(
        2,
        """
import sys
from emjax.cli import main
args = "bench fdtd --size 16 --devices 2 --steps 5 --boundary pec --json".split()
sys.exit(main(args))
""",
    )
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    runs = [(r["mode"], r["devices"]) for r in rows]
    assert runs == [("strong", 1), ("strong", 2), ("weak", 1), ("weak", 2)]
    assert rows[3]["shape"] == [32, 16, 16] and rows[0]["efficiency"] == 1.0
    assert all(r["cells_per_s"] > 0 for r in rows)
