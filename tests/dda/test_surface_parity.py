"""emjax's DDA on a substrate against ADDA's surface mode on equal inputs.

Reference: tests/dda/data/adda_surface/adda_surface.json (ADDA 1.5.0-alpha3, ``-pol ldr -sym
no -int_surf som``, QMR to 1e-10; see that folder's README for the conventions). emjax runs
the same lattice, prop, substrate index and height, LDR, QMR to 1e-10, and compares Qext and
Qabs per polarization (X = p, Y = s).

Measured |emjax - ADDA| (Qext, Qabs; worst of X and Y), with the reflected table at
layered's rtol 1e-8:

==================================  ========  ========  =========================
case                                dQext     dQabs     vs ADDA with CRIT 1e-7
==================================  ========  ========  =========================
cube_glass_normal                   3.7e-07   3.4e-07   1.6e-09, 8.9e-10
cube_glass_oblique30_az30           4.3e-07   3.7e-07   2.2e-09, 5.6e-10
cube_metal_oblique30                5.1e-06   5.4e-06   3.2e-09, 1.9e-08
cube_glass_below_oblique30          6.0e-07   5.1e-07   3.3e-09, 2.6e-09
sphere_g16_glass_normal             9.1e-07   2.3e-07   1.4e-06, 3.2e-07
sphere_g16_glass_oblique30          2.2e-06   3.7e-07   2.8e-06, 1.6e-07
sphere_g16_metal_normal             5.8e-06   8.5e-07   8.0e-06, 1.6e-06
sphere_g16_metal_oblique30          1.5e-05   2.0e-06   1.5e-05, 3.0e-06
sphere_g16_glass_below_normal       3.1e-06   5.1e-07   2.5e-06, 3.5e-07
sphere_g16_glass_below_oblique30    2.3e-06   1.4e-07   9.4e-07, 1.7e-07
sphere_g24_glass_normal             7.3e-06   1.9e-07   1.8e-06, 3.3e-07
sphere_g24_glass_oblique30          3.6e-06   3.0e-07   2.7e-06, 1.6e-07
sphere_g24_metal_normal             7.6e-07   2.2e-06   6.7e-06, 2.1e-06
sphere_g24_metal_oblique30          5.0e-06   2.9e-06   1.3e-05, 3.3e-06
sphere_g16_free_oblique30 (-prop)   2.9e-11   4.8e-11   (no substrate)
==================================  ========  ========  =========================

The cubes agree with the tighter ADDA build to 2e-8, which pins the reflected interaction,
the incident fields and the normalization; the spheres (70-120 QMR iterations at 1e-10 in
both codes, ADDA's 10-digit somnec constants) scatter at 1e-6..1.5e-5. The target is
1e-3; the bound here is 5e-5, three times the worst measured difference, so a wrong sign or
factor anywhere in G_R (its effect on Qext is 0.1..0.9) fails loudly.
"""

import json
from pathlib import Path

import pytest

from emjax import dda, geometry, krylov

DATA = json.loads((Path(__file__).parent / "data" / "adda_surface" / "adda_surface.json").read_text())
CASES = DATA["cases"]
TOL = 5e-5
FAST = {
    "cube_glass_normal",
    "cube_glass_oblique30_az30",
    "cube_metal_oblique30",
    "cube_glass_below_oblique30",
}


def problem_from(spec: dict, **extra) -> dda.DDAProblem:
    spec = dict(spec)
    shape = geometry.SHAPES[spec.pop("shape")]()
    m = tuple(complex(v) for v in spec.pop("m"))
    kw = {"prop": tuple(spec.pop("prop"))}
    if "substrate_m" in spec:
        kw["substrate"] = complex(spec.pop("substrate_m"))
        kw["height"] = spec.pop("height")
    return dda.DDAProblem(shape, m, **spec, **kw, **extra)


def _params():
    for name in sorted(CASES):
        marks = () if name in FAST else (pytest.mark.slow,)
        yield pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("name", list(_params()))
def test_qext_qabs_match_adda_surface(name):
    case = CASES[name]
    prob = problem_from(case["emjax"], integrate=False, theta=(0.0,))
    assert prob.lattice().n_dipoles == case["geometry"]["n_dipoles"]
    res = dda.solve(prob, krylov.QMR(rtol=1e-10))
    assert res.all_converged
    G = res.geometric_cross_section
    for i, pol in enumerate("XY"):
        assert abs(res.Cext_xy[i] / G - case[pol]["Qext"]) < TOL, (pol, "Qext")
        assert abs(res.Cabs_xy[i] / G - case[pol]["Qabs"]) < TOL, (pol, "Qabs")
