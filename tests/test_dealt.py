"""Work dealt out whole over the devices of one process (emjax.layout.on_each): an
orientation average (each device its own orientations, batch and solver loop) and a layered
map (each device its own points of every group, the groups' refinements shared out), each
against the one-device run in the same process on 2 virtual CPU devices; also a map whose
refinement sample misses points, so that some group is refined and integrated a second time.

Measured on this box: both bit for bit (max difference 0): every orientation's systems and
every point's integrals are the same operations on either device; the refinement of a
group depends on its points and its own random sample only."""

from multidevice import run_with_devices

from emjax.layout import Layout, on_each

CODE = """
import threading
import numpy as np, jax
from emjax import dda, geometry
from emjax.dda import OrientationAverage, average
from emjax.layered import Stack, dipole_fields
from emjax.layered.groups import reporting
from emjax.layout import Layout, on_each

devs = jax.devices()
# on_each: one thread per device, that device the default one, 64-bit types on, errors raised
names = on_each(devs, lambda d, x: (threading.current_thread().name, jax.numpy.zeros(1).devices(), x,
                                    jax.numpy.zeros(1).dtype.name), [1, 2])
assert [n[1] for n in names] == [{devs[0]}, {devs[1]}] and [n[2] for n in names] == [1, 2], names
assert {n[3] for n in names} == {"float64"} and names[0][0] != names[1][0], names
try:
    on_each(devs, lambda d: 1 / (d.id - 1))
except ZeroDivisionError:
    print("error raised")

# an orientation average: 6 orientations, 3 per device
prob = dda.DDAProblem(geometry.Prism(6, 1.0), m=(1.31 + 0.01j,), size_x=0.8, wavelength=1.0, grid=4,
                      theta=np.arange(0.0, 181.0, 30.0))
q = OrientationAverage(beta_levels=(1, 1), gamma_levels=(2, 2), eps=0, n_alpha=2, n_fold=6)
solver = dda.QMR(rtol=1e-8)
a1 = average(prob, q, solver, batch=3)
seen = []
a2 = average(prob, q, solver, batch=6, layout=2, progress=lambda *a: seen.append(a))
assert len(a1.beta) == 6 and np.array_equal(a1.iterations, a2.iterations)
# one report line for the batch (the slower device's iterations, the worse residual)
assert {s[0] for s in seen} == {"orientations 1-6 of 6 (levels 1,2)"}, seen
assert seen[-1][1] == a1.iterations.max() and seen[-1][2] <= 1e-8, seen
print("average", np.abs(a2.Cext_xy - a1.Cext_xy).max() / np.abs(a1.Cext_xy).max(),
      np.abs(a2.mueller - a1.mueller).max() / np.abs(a1.mueller[:, 0, 0]).max())

# a layered map in both media: 23 points (12 + 11 per device, in chunks of 4), total E
st = Stack(eps=[2.25, 1.0])
rng = np.random.default_rng(1)
pts = rng.uniform(-0.4, 0.4, (23, 3))
pts[:, 2] = np.where(pts[:, 2] > 0, pts[:, 2] + 0.05, pts[:, 2] - 0.05)
kw = dict(p=(0, 0, 1), fields="E", rtol=1e-6, part="total")
f1 = dipole_fields(st, 0.6, (0.0, 0.0, 0.08), pts, **kw)
reports = []
with reporting(reports.append):
    f2 = dipole_fields(st, 0.6, (0.0, 0.0, 0.08), pts, layout=2, batch=4, **kw)
done = [r["done"] for r in reports]
assert done == sorted(done) and done[-1] == 23 and reports[-1]["stage"] == "done", reports
assert [s["nodes"] for s in f1.stats] == [s["nodes"] for s in f2.stats]
rel = lambda a, b: np.abs(a - b).max() / np.abs(b).max()
print("layered", rel(f2.E, f1.E))

# a sample that misses the demanding points (only the fastest-decaying one): the second pass
# (refined again with the points above rtol, integrated again) runs, alike on both layouts
import emjax.layered.refine as rf
rf._sample = lambda rho, h, size, rng: np.array([int(np.argmax(h))])
kw = dict(p=(0, 0, 1), fields="E", rtol=1e-9, part="scattered")
f1 = dipole_fields(st, 0.6, (0.0, 0.0, 0.08), pts, **kw)
f2 = dipole_fields(st, 0.6, (0.0, 0.0, 0.08), pts, layout=2, batch=4, **kw)
passes = [s["second_pass"] for s in f1.stats]
assert any(passes) and passes == [s["second_pass"] for s in f2.stats], (f1.stats, f2.stats)
print("second", rel(f2.E, f1.E))
"""


def test_deal_runs_are_contiguous_and_balanced():
    lay = Layout.of(None)
    assert lay.local and lay.deal(5) == [range(0, 5)]
    lay3 = Layout((*lay.devices, *[_Fake(i) for i in (7, 8)]))
    assert lay3.deal(7) == [range(0, 3), range(3, 5), range(5, 7)]
    assert lay3.deal(2) == [range(0, 1), range(1, 2), range(2, 2)]
    assert lay3.deal(0) == [range(0, 0)] * 3
    assert on_each(lay.devices, lambda d, a, b: (a, b), [1], ["x"]) == [(1, "x")]


class _Fake:
    """Stands for a device where only the count and ids matter."""

    def __init__(self, i):
        self.id = i


def test_orientations_and_points_dealt_over_two_devices():
    out = run_with_devices(2, CODE)
    assert "error raised" in out, out
    rows = {ln.split()[0]: [float(v) for v in ln.split()[1:]] for ln in out.splitlines() if ln[:1] in "als"}
    assert set(rows) == {"average", "layered", "second"}, out
    for key, diffs in rows.items():
        assert max(diffs) <= 1e-13, (key, diffs)
