"""TOML ``material = "Au"`` in ``[[objects]]`` of ``emjax fdtd`` and ``emjax fdfd``: resolved
through the material library in the config's ``unit``; refused in one line otherwise."""

from pathlib import Path

import pytest

from emjax import ConfigError, materials
from emjax.config import load_toml
from emjax.fdfd.config import build_fdfd
from emjax.fdtd.scene_config import build_physical

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _fdtd(tmp_path, material: str, unit: str | None):
    text = (EXAMPLES / "fdtd_sphere.toml").read_text().replace("eps = 6.0", f"material = {material}")
    if unit is not None:
        text = text.replace("[simulation]\n", f'[simulation]\nunit = "{unit}"\n')
    path = tmp_path / "c.toml"
    path.write_text(text)
    return build_physical(load_toml(path))


def _fdfd(tmp_path, material: str, unit: str | None):
    text = (EXAMPLES / "fdfd_cylinder.toml").read_text().replace('material = "pec"', f"material = {material}")
    if unit is not None:
        text = f'unit = "{unit}"\n' + text
    path = tmp_path / "c.toml"
    path.write_text(text)
    return build_fdfd(load_toml(path))


def test_fdtd_object_takes_a_library_material(tmp_path):
    sim = _fdtd(tmp_path, '"Au"', "um")[0]
    (obj,) = sim.scene.objects
    assert obj.material == (materials.library("Au", "um"),)
    sim = _fdtd(tmp_path, '"sio2"', "nm")[0]
    assert sim.scene.objects[0].material == (materials.library("SiO2", "nm"),)


def test_fdfd_object_takes_a_library_material_or_pec(tmp_path):
    problem = _fdfd(tmp_path, '"SiO2"', "um")
    assert problem.scene.objects[0].material == (materials.library("SiO2", "um"),)
    from emjax.scene import PEC

    assert _fdfd(tmp_path, '"pec"', None).scene.objects[0].material == (PEC,)


@pytest.mark.parametrize("build", [_fdtd, _fdfd])
def test_unknown_name_or_missing_unit_is_one_line(tmp_path, build):
    with pytest.raises(
        ConfigError, match=r"objects\[0\]\.material: unknown material 'Gold'; known: .*Ag, Al, Au"
    ):
        build(tmp_path, '"Gold"', "um")
    with pytest.raises(
        ConfigError, match=r'objects\[0\]\.material = "Au" needs the length unit.*unit = "um"'
    ):
        build(tmp_path, '"Au"', None)
    with pytest.raises(ConfigError, match=r"unit must be one of nm, um, mm, cm, m, got 'inch'"):
        build(tmp_path, '"Au"', "inch")
