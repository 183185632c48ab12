"""Files a user may hand every command by mistake, and grids too big for the machine: one
line ``emjax: error: ...`` (exit status 1), never a traceback, and nothing grid-sized
allocated before the refusal."""

import tracemalloc
from pathlib import Path

import pytest

from emjax import ResourceError, fdtd
from emjax.cli import main
from emjax.config import load_toml

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
COMMANDS = [["dda", "--config"], ["dda"], ["fdtd"], ["fdfd"], ["layered"]]
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10\x00\x00\x00\x10\x08\x02\x00\x00\x00"


def _one_error_line(capsys, rc) -> str:
    out = capsys.readouterr()
    assert rc == 1 and out.out == "", out
    assert "Traceback" not in out.err
    lines = out.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("emjax: error: "), out.err
    return lines[0]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_latin1_config_names_the_byte_line_and_encoding(tmp_path, capsys, command):
    cfg = tmp_path / "latin1.toml"
    cfg.write_bytes(b"# a config\n# sizes in \xb5m\nwavelength = 1.0\n")
    line = _one_error_line(capsys, main([*command, str(cfg)]))
    assert str(cfg) in line
    assert "not UTF-8 text: byte 0xb5 at offset 22 (line 2, column 12)" in line
    assert "expected UTF-8" in line


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_binary_file_as_config_is_named_binary(tmp_path, capsys, command):
    cfg = tmp_path / "figure.png"
    cfg.write_bytes(PNG)
    line = _one_error_line(capsys, main([*command, str(cfg)]))
    assert str(cfg) in line and "is a binary file, not a TOML config" in line
    assert "offset 0" in line and "expected a UTF-8 text file" in line


def test_nul_bytes_in_an_otherwise_utf8_file_are_binary(tmp_path):
    cfg = tmp_path / "x.toml"
    cfg.write_bytes(b"a = 1\n\x00\x00")
    with pytest.raises(Exception, match=r"binary file, not a TOML config \(byte 0x00 at offset 6\)"):
        load_toml(cfg)


def test_utf8_config_with_micro_sign_still_reads(tmp_path):
    cfg = tmp_path / "ok.toml"
    cfg.write_text("# sizes in µm\nwavelength = 1.0\n", encoding="utf-8")
    assert load_toml(cfg) == {"wavelength": 1.0}


def test_dda_takes_the_config_as_an_argument_like_the_other_commands(tmp_path, capsys):
    cfg = tmp_path / "bad.toml"
    cfg.write_text("grid = 0\n")
    line = _one_error_line(capsys, main(["dda", str(cfg)]))
    assert "grid" in line
    rc = main(["dda", str(cfg), "--config", str(cfg)])
    assert "give the config file once" in _one_error_line(capsys, rc)


def _huge_sphere():
    """examples/fdtd_sphere.toml at resolution 2000: a 1940^3 grid (7.3e9 cells; the scene's
    node labels alone are 27 GB)."""
    from emjax.fdtd.scene_config import build_physical

    cfg = load_toml(EXAMPLES / "fdtd_sphere.toml")
    cfg["simulation"]["resolution"] = 2000
    return cfg, build_physical(cfg)[0]


def test_huge_physical_grid_cli_refused_with_the_size(tmp_path, capsys):
    src = (EXAMPLES / "fdtd_sphere.toml").read_text()
    cfg = tmp_path / "huge.toml"
    cfg.write_text(src.replace("resolution = 41.9 ", "resolution = 2000 "))
    assert "resolution = 2000" in cfg.read_text()
    out = tmp_path / "out"
    tracemalloc.start()
    try:
        rc = main(["fdtd", str(cfg), "--out", str(out)])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    line = _one_error_line(capsys, rc)
    assert "FDTD grid 1940x1940x1940" in line and "GB of host memory" in line
    assert "to rasterize the scene" in line and "GB are available" in line
    assert peak < 200e6  # nothing grid-sized was allocated
    assert not out.exists()


def test_huge_physical_grid_python_refused_before_rasterizing(monkeypatch):
    _, sim = _huge_sphere()
    tracemalloc.start()
    try:
        message = r"needs about [\d.]+ GB of host memory .* but [\d.]+ GB are"
        with pytest.raises(ResourceError, match=message) as e:
            fdtd.run(sim, 10)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "\n" not in str(e.value) and peak < 200e6
    with pytest.raises(ResourceError):
        sim.to_grid()


def test_memory_check_counts_the_available_memory(monkeypatch):
    """The refusal follows the machine: a 116^3 grid passes with plenty of memory, and is
    refused when the host reports 10 MB free."""
    from emjax import backend
    from emjax.fdtd.scene_config import build_physical
    from emjax.fdtd.scene_raster import check_memory

    cfg = load_toml(EXAMPLES / "fdtd_sphere.toml")
    cfg["simulation"]["resolution"] = 100
    sim = build_physical(cfg)[0]
    monkeypatch.setattr(backend, "host_available_bytes", lambda: 64 * 2**30)
    check_memory(sim)
    monkeypatch.setattr(backend, "host_available_bytes", lambda: 10_000_000)
    with pytest.raises(ResourceError, match=r"FDTD grid 116x116x116 .* but 0.0 GB are available"):
        check_memory(sim)
