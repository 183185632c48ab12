"""The 2-D TM FDFD's waveguide modes: a one-way mode source and mode amplitudes."""

import numpy as np
import pytest

from emjax import fdfd, geometry, scene
from emjax.errors import ConfigError

F0 = 1 / 1.55
N_SI, N_OX = 3.476, 1.444


def _strip(axis="x"):
    # a 0.52 um strip along ``axis``, its edges between the nodes
    v = np.array([[-10, -0.26], [10, -0.26], [10, 0.26], [-10, 0.26]])
    if axis == "y":
        v = v[:, ::-1]
    size = 20.0 if axis == "x" else 0.52
    return scene.Scene([scene.Object(geometry.Polygon(vertices=v), N_SI**2, size=size)], background=N_OX**2)


@pytest.mark.parametrize("stencil", ["yee", "compact"])
@pytest.mark.parametrize("direction", ["+", "-"])
def test_mode_source_is_one_way_with_unit_power(stencil, direction):
    s = 1 if direction == "+" else -1
    src = fdfd.ModeSource2D((-0.8 * s, 0), 2.0, "x", direction)
    r = fdfd.solve_tm(
        (3.0, 2.4), 20, F0, src, scene=_strip(), pml=fdfd.SCPML(12), stencil=stencil, progress=False
    )
    fwd, back = (0, 1) if s > 0 else (1, 0)
    behind = fdfd.mode_amplitudes(r, (-1.1 * s, 0), 2.0, "x")[0]
    ahead = fdfd.mode_amplitudes(r, (1.1 * s, 0), 2.0, "x")[0]
    assert abs(behind[fwd]) ** 2 < 1e-12  # the source sends nothing the other way
    assert abs(abs(ahead[fwd]) ** 2 - 1) < 1e-6  # unit power launched, carried on
    # what comes back is the far PML's reflection, passing through the source
    assert abs(ahead[back]) ** 2 < 1e-7
    assert abs(abs(behind[back]) - abs(ahead[back])) < 1e-6


#: TE0 (E along z) of the 0.52 um Si slab in SiO2 at 1.55 um: emjax.modes at 100 cells per
#: um (52 cells of core; 3.28306 at 50), PEC walls along the invariant axis
N_EFF_TE0 = 3.28349


@pytest.mark.parametrize("stencil", ["compact", "yee"])
def test_guide_along_y_and_its_effective_index(stencil):
    src = fdfd.ModeSource2D((0, -0.8), 2.0, "y", "+")
    r = fdfd.solve_tm(
        (2.4, 3.0), 20, F0, src, scene=_strip("y"), pml=fdfd.SCPML(12), stencil=stencil, progress=False
    )
    dx = r.y[1] - r.y[0]
    a0 = fdfd.mode_amplitudes(r, (0, 0.2), 2.0, "y")[0, 0]
    a1 = fdfd.mode_amplitudes(r, (0, 0.2 + dx), 2.0, "y")[0, 0]
    assert abs(abs(a1 / a0) - 1) < 1e-6 and abs(abs(a0) - 1) < 1e-6
    beta_dx = np.angle(a1 / a0)  # the phase one node on: beta dx of the grid's mode
    k0 = 2 * np.pi * F0
    if stencil == "compact":  # fourth-order bulk dispersion
        assert beta_dx / dx / k0 == pytest.approx(N_EFF_TE0, rel=3e-3)
    else:  # Yee's second difference: (2 / dx) sin(beta dx / 2) is the continuum's beta
        assert 2 / dx * np.sin(beta_dx / 2) / k0 == pytest.approx(N_EFF_TE0, rel=5e-3)


def test_bad_mode_sources_are_refused():
    with pytest.raises(ConfigError, match="axis"):
        fdfd.ModeSource2D((0, 0), 1.0, "z")
    with pytest.raises(ConfigError, match="size"):
        fdfd.ModeSource2D((0, 0), -1.0)
    with pytest.raises(ConfigError, match="center"):
        fdfd.ModeSource2D((0, np.nan), 1.0)
    with pytest.raises(ConfigError, match="outside the grid"):
        fdfd.solve_tm((3.0, 2.4), 20, F0, fdfd.ModeSource2D((9, 0), 2.0), scene=_strip(), progress=False)
    r = fdfd.solve_tm((2.0, 2.0), 10, F0, fdfd.LineSource((0, 0)), progress=False)
    with pytest.raises(ConfigError, match="ModeSource2D"):
        fdfd.mode_amplitudes(r, (0, 0), 1.0)
