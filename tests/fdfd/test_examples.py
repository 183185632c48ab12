"""The paper examples of emjax fdfd (Zainud-Deen et al., PIER B 16, 2009): each config
parses and builds (no solve); a coarse copy of the PEC cube satisfies the optical theorem;
the full runs (about a minute each on a 2-core CPU) are marked slow."""

import math
from pathlib import Path

import numpy as np
import pytest

from emjax import scene
from emjax.config import load_toml
from emjax.fdfd.config import build_fdfd, resolution_warnings

EXAMPLES = Path(__file__).parents[2] / "examples"
NAMES = ("fdfd_pec_cube", "fdfd_c_cylinders", "fdfd_sphere_in_cube")


def _config(name: str) -> dict:
    return load_toml(EXAMPLES / f"{name}.toml")


@pytest.mark.parametrize("name", NAMES)
def test_example_builds(name):
    p = build_fdfd(_config(name))
    assert resolution_warnings(p) == []
    text = (EXAMPLES / f"{name}.toml").read_text()
    assert f"emjax fdfd examples/{name}.toml --out" in text.splitlines()[0]
    assert (EXAMPLES / "figures" / f"{name}.png").stat().st_size < 200_000


def test_cube_geometry():
    p = build_fdfd(_config("fdfd_pec_cube"))
    (cube,) = p.scene.objects
    lo, hi = cube.bounds()
    assert cube.material == (scene.PEC,)
    np.testing.assert_allclose(hi - lo, 0.755)
    assert p.dims == 3 and p.direction == (0.0, 0.0, 1.0) and p.polarization == (1.0, 0.0, 0.0)


def test_c_cylinders_geometry():
    """Nine C's: annuli rb = 0.1, ra = 0.08 at spacing 0.3 with a 0.02 slot towards +x."""
    p = build_fdfd(_config("fdfd_c_cylinders"))
    objs = p.scene.objects
    assert len(objs) == 9 and all(o.material == (scene.PEC,) for o in objs)
    centers = sorted((round(o.center[0], 6), round(o.center[1], 6)) for o in objs)
    # the bounding box of a C is cut on the +x side by the slot: centred 0.0025 left of the ring's
    assert [c[1] for c in centers] == [-0.3, 0.0, 0.3] * 3
    sc, (cx, cy) = p.scene, (0.3, 0.3)
    r = np.array([0.07, 0.09, 0.11])
    inside = lambda x, y: sc.label(np.asarray(x), np.asarray(y), np.zeros_like(x)) > 0  # noqa: E731
    assert inside(cx - r, np.full(3, cy)).tolist() == [False, True, False]  # -x side: closed ring
    assert inside(cx + r, np.full(3, cy)).tolist() == [False, False, False]  # +x side: the slot
    assert inside(cx + r, np.full(3, cy + 0.015)).tolist() == [False, True, False]  # beside the slot


def test_sphere_in_cube_geometry():
    p = build_fdfd(_config("fdfd_sphere_in_cube"))
    cube, sphere = p.scene.objects
    assert cube.material == (4.0,) and sphere.material == (scene.PEC,)
    np.testing.assert_allclose(cube.bounds()[1] - cube.bounds()[0], 0.755)
    np.testing.assert_allclose(sphere.bounds()[1] - sphere.bounds()[0], 0.5)
    # later objects override earlier ones: the centre is PEC, between sphere and cube eps 4
    assert p.scene.label(0.0, 0.0, 0.0) == p.scene.material_index(scene.PEC)
    assert p.scene.label(0.3, 0.0, 0.0) == p.scene.material_index(4.0)


def _cross_sections(result):
    """(C_ext from the far field's optical theorem, the flux cross sections) of a 3-D result."""
    from emjax.fdfd.farfield3d import cross_sections_3d, far_field_3d

    f = result.field
    k = 2 * math.pi * f.frequency
    d = np.asarray(f.wave.direction)
    e = np.asarray(f.wave.polarization, complex)
    c_ext = 4 * math.pi / k * float(np.imag(np.vdot(e, far_field_3d(f, d[None])[0])))
    return c_ext, cross_sections_3d(f)


@pytest.mark.slow  # 11-17 s on 2 cores: the fast suite's budget
def test_cube_optical_theorem_coarse():
    """The example's cube at 10 cells per wavelength (108k unknowns, ~8 s): a lossless
    scatterer absorbs nothing (|Cabs| / Cext below 1e-3, measured 2.2e-7 with the solver's
    rtol 1e-6), the far field's optical theorem equals the flux extinction (1e-3, measured
    5.5e-8), and sigma is mirror-symmetric: sigma(theta, phi) = sigma(theta, phi + 180 deg)."""
    from emjax.fdfd.farfield3d import far_field_3d
    from emjax.fdfd.rcs import solve_rcs

    cfg = _config("fdfd_pec_cube")
    cfg.update(resolution=10, size=[1.6] * 3, pml_cells=8)
    cfg["rcs"] = {"angles": [0.0, 60.0, 120.0, 180.0]}
    r = solve_rcs(build_fdfd(cfg))
    assert r.converged
    c_ext, cs = _cross_sections(r)
    assert cs["Cext"] > 0 and abs(cs["Cabs"]) < 1e-3 * cs["Cext"], cs
    assert abs(c_ext / cs["Cext"] - 1) < 1e-3, (c_ext, cs)
    np.testing.assert_allclose(r.rcs_E[[0, 3]], r.rcs_H[[0, 3]], rtol=1e-12)  # the same directions
    t = np.deg2rad(60.0)
    dirs = np.array([[np.sin(t), 0, np.cos(t)], [-np.sin(t), 0, np.cos(t)], [0, np.sin(t), np.cos(t)]])
    F = far_field_3d(r.field, dirs)
    s = np.sum(np.abs(F - dirs * np.sum(dirs * F, 1, keepdims=True)) ** 2, 1)
    assert abs(s[1] / s[0] - 1) < 0.01
    np.testing.assert_allclose(4 * math.pi * s[[0, 2]], [r.rcs_E[1], r.rcs_H[1]], rtol=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_example_runs(name, tmp_path):
    """The whole example through the CLI (30-60 s each on 2 cores): converged, files written."""
    from emjax.cli import main

    out = tmp_path / name
    assert main(["fdfd", str(EXAMPLES / f"{name}.toml"), "--out", str(out), "--json"]) == 0
    assert (out / "rcs.png").exists() and (out / "rcs.nc").exists()
