"""Mirror symmetry planes in the 2-D FDFD: the folded solve against the full domain's, and
the refusals.

The folded solve is the full one except at the PML's outer ends (the low end's zero padding
differs from the high end's): with SCPML R = 1e-12 what the outer wall lets back is below
rounding, and the fields outside the PML agree to 1e-12 relative (measured 1e-14); with
the default R = 1e-8 they differ by 1e-10 to 1e-8 of the largest field (grid and scene
dependent: benchmarks/fdfd_symmetry_cpu.py).
"""

import numpy as np
import pytest

from emjax import ConfigError, fdfd, geometry, scene

PML = fdfd.SCPML(12, R=1e-12)
RES, F = 20, 1.0
BLOCK = scene.Scene([scene.Object(geometry.Rectangle(), 4.0, size=0.6, rotation=(0, 0, 0))])


def _guide(axis):
    """A guide 0.5 wide through the whole region along ``axis``."""
    if axis == "y":
        return scene.Scene([scene.Object(geometry.Rectangle(y_over_x=12.0), 4.0, size=0.5)])
    return scene.Scene([scene.Object(geometry.Rectangle(y_over_x=1 / 12), 4.0, size=6.0)])


def _pair(fn, size, source, symmetry, sc=BLOCK, **kw):
    kw = dict(scene=sc, pml=PML, progress=False, **kw)
    full = fn(size, RES, F, source, **kw)
    half = fn(size, RES, F, source, symmetry=symmetry, **kw)
    return full, half


def _interior_close(full, half, rtol=1e-12):
    L = full.pml_cells
    d = np.abs(half.Ez - full.Ez)[L:-L, L:-L].max()
    assert d <= rtol * np.abs(full.Ez).max(), d / np.abs(full.Ez).max()


@pytest.mark.parametrize(
    "size, symmetry",
    [
        ((2.0, 1.6), (1, 1)),  # both planes through nodes (even: PMC)
        ((2.0, 1.6), (1, 0)),
        ((2.0, 1.6), (0, 1)),
    ],
)
def test_tm_line_source(size, symmetry):
    """A line current at the centre of a centred block: E_z is even under both mirrors."""
    full, half = _pair(fdfd.solve_tm, size, fdfd.LineSource((0, 0)), symmetry)
    _interior_close(full, half)
    n = sum(1 for s in symmetry if s)
    assert half.stats["unknowns"] == full.stats["unknowns"]
    assert half.stats["unknowns_solved"] < full.stats["unknowns"] / 2**n + 2 * sum(full.Ez.shape)
    assert half.stats["symmetry"] == list(symmetry)


@pytest.mark.parametrize("sx", [2.0, 2.05])  # the x plane through nodes, and between them
def test_tm_plane_wave_scattering_width(sx):
    """A plane wave along +y on a centred block is even under the x mirror: the field and
    the scattering width equal the full domain's."""
    full, half = _pair(fdfd.solve_tm, (sx, 1.6), fdfd.PlaneWave2D(90), (1, 0))
    _interior_close(full, half)
    phi = np.linspace(0, 360, 13)
    sw_f, sw_h = fdfd.scattering_width(full, phi), fdfd.scattering_width(half, phi)
    np.testing.assert_allclose(sw_h, sw_f, rtol=1e-10)
    np.testing.assert_allclose(sw_f[[1, 2]], sw_f[[5, 4]], rtol=1e-8)  # phi and 180 - phi


@pytest.mark.parametrize(
    "size, source, symmetry, sc, rtol",
    [
        ((2.0, 1.6), fdfd.PlaneWave2D(90), (-1, 0), BLOCK, 1e-12),  # H_z even: a PEC plane (E_y odd)
        ((2.0, 1.6), fdfd.PlaneWave2D(0), (0, -1), BLOCK, 1e-12),
        ((2.05, 1.65), fdfd.LineSource((0, 0)), (-1, -1), None, 1e-12),  # H_z nodes on both planes
        # on this grid the rasterizer's fill fractions at the block's E_y edges are mirror
        # images to 6e-10 only (not bit for bit): the full solve itself is that asymmetric
        ((2.05, 1.65), fdfd.LineSource((0, 0)), (-1, -1), BLOCK, 1e-9),
    ],
)
def test_te(size, source, symmetry, sc, rtol):
    """TE (H_z has the opposite parity of the value): a plane wave along each plane, and a
    magnetic line current at the centre."""
    full, half = _pair(fdfd.solve_te, size, source, symmetry, sc=sc)
    _interior_close(full, half, rtol)


@pytest.mark.parametrize("axis, symmetry", [("y", (-1, 0)), ("x", (0, -1))])
def test_tm_odd_mode(axis, symmetry):
    """The guide's second mode is odd across it: E_z vanishes on the guide's axis, a PEC
    plane (symmetry -1); the even value is refused."""
    src = fdfd.ModeSource2D((0, -0.4) if axis == "y" else (-0.6, 0), 1.4, axis=axis, mode=1)
    size = (2.0, 1.6)
    full, half = _pair(fdfd.solve_tm, size, src, symmetry, sc=_guide(axis))
    _interior_close(full, half)
    ax = "xy".index(axis) ^ 1  # the axis across the guide
    mid = full.Ez.shape[ax] // 2
    assert np.abs(np.take(half.Ez, mid, axis=ax)).max() == 0  # the PEC plane's nodes
    even = tuple(-s for s in symmetry)
    with pytest.raises(ConfigError, match=r"symmetry \[.*\]: the source \(its right side\) is not symmetric"):
        fdfd.solve_tm(size, RES, F, src, scene=_guide(axis), pml=PML, symmetry=even, progress=False)


@pytest.mark.parametrize(
    "fn, kw, match",
    [
        (fdfd.solve_tm, dict(symmetry=(-1, 0)), "the source .* is not symmetric with this parity"),
        (fdfd.solve_te, dict(symmetry=(1, 0)), "the source .* is not symmetric with this parity"),
        (fdfd.solve_tm, dict(source=fdfd.PlaneWave2D(45), symmetry=(1, 0)), "the incident plane wave"),
        (
            fdfd.solve_tm,
            dict(source=fdfd.PlaneWave2D(90), scene=None, symmetry=(0, 1)),
            "incident plane wave",
        ),
        (fdfd.solve_tm, dict(source=fdfd.LineSource((0.2, 0)), symmetry=(1, 0)), "the source"),
        (
            fdfd.solve_tm,
            dict(source=fdfd.LineSource((0, 0)), size=(2.05, 1.6), symmetry=(1, 0)),
            "the source",
        ),
        (
            fdfd.solve_tm,
            dict(
                scene=scene.Scene([scene.Object(geometry.Disk(), 4.0, size=0.4, center=(0.1, 0, 0))]),
                symmetry=(1, 0),
            ),
            "scene is not symmetric under the x mirror",
        ),
        (fdfd.solve_tm, dict(symmetry=(2, 0)), r"symmetry must be two values \(x, y\), each 0 \(none\), -1"),
        (fdfd.solve_tm, dict(symmetry=(1, 0, 0)), "symmetry must be two values"),
        (fdfd.solve_te, dict(symmetry=(True, 0)), "symmetry must be two values"),
    ],
)
def test_refused(fn, kw, match):
    """A source or scene without the declared parity, and bad values: one line naming
    symmetry."""
    args = dict(size=(2.0, 1.6), source=fdfd.LineSource((0, 0)), scene=BLOCK)
    args.update(kw)
    with pytest.raises(ConfigError, match=match) as info:
        fn(args.pop("size"), RES, F, args.pop("source"), pml=PML, progress=False, **args)
    assert "\n" not in str(info.value) and "symmetry" in str(info.value)


def test_wrong_parity_differs():
    """Forcing the other parity on the operator (a PEC plane where the field is even) gives
    another field: the comparison above can fail."""
    from emjax.fdfd import symmetry as fsym

    full = fdfd.solve_tm((2.0, 1.6), RES, F, fdfd.PlaneWave2D(90), scene=BLOCK, pml=PML, progress=False)
    orig = fsym.Fold.check
    try:
        fsym.Fold.check = lambda self, v, what: None  # skip the parity refusal
        wrong = fdfd.solve_tm(
            (2.0, 1.6), RES, F, fdfd.PlaneWave2D(90), scene=BLOCK, pml=PML, symmetry=(-1, 0), progress=False
        )
    finally:
        fsym.Fold.check = orig
    L = full.pml_cells
    assert np.abs(wrong.Ez - full.Ez)[L:-L, L:-L].max() > 0.1 * np.abs(full.Ez).max()


def test_device_solver_on_the_folded_grid():
    """The block Thomas solver (JAX's device; here the CPU) takes the folded matrix on the
    reduced grid's shape."""
    full = fdfd.solve_tm((2.0, 1.6), RES, F, fdfd.LineSource((0, 0)), scene=BLOCK, pml=PML, progress=False)
    half = fdfd.solve_tm(
        (2.0, 1.6),
        RES,
        F,
        fdfd.LineSource((0, 0)),
        scene=BLOCK,
        pml=PML,
        progress=False,
        solver="device",
        symmetry=(1, 1),
    )
    assert "block Thomas" in half.stats["solver"]
    _interior_close(full, half)
