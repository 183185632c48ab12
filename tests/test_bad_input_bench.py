"""``emjax bench METHOD`` with absurd option values (negative, zero, huge, NaN): exit status
1, one line ``emjax: error: ...`` naming the option as typed (``--size``, never an internal
name) and its allowed range, before any grid exists or any case runs."""

import re

import pytest

from emjax.cli import main

CASES = [
    # emjax bench fdtd
    ("fdtd --size 5000", r"^--size must be an integer in \[22, \d+\] \(the largest grid that fits"),
    ("fdtd --size -5", r"^--size must be an integer in \[22, \d+\] .*got -5"),
    ("fdtd --size 0 --boundary pec", r"^--size must be an integer in \[8, \d+\] .*got 0"),
    ("fdtd --size 21", r"^--size must be an integer in \[22, \d+\] \(--boundary cpml .* needs >= 22\)"),
    ("fdtd --size 40 --material sphere", r"^--size must be an integer in \[52, \d+\]"),
    ("fdtd --size 30 --steps 0", r"^--steps must be an integer in \[1, 1000000\], got 0"),
    ("fdtd --size 30 --steps -3", r"^--steps must be an integer in \[1, 1000000\], got -3"),
    ("fdtd --size 30 --steps 100000000", r"^--steps must be an integer in \[1, 1000000\]"),
    ("fdtd --size 30 --devices 0", r"^--devices must be an integer in \[1, \d+\] \(the devices JAX sees\)"),
    ("fdtd --size 30 --devices 100000", r"^--devices must be an integer in \[1, \d+\]"),
    ("fdtd --size 30 --devices 1 --scaling sideways", r"^--scaling must be strong, weak or strong,weak"),
    ("fdtd --size 30 --out-of-core --th 0", r"^--th must be an integer in \[1, 1024\], got 0"),
    ("fdtd --size 30 --out-of-core --th 4 -2", r"^--th must be an integer in \[1, 1024\], got -2"),
    ("fdtd --size 30 --out-of-core --slab -1", r"^--slab must be an integer in \[1, 30\]"),
    ("fdtd --size 30 --out-of-core --slab 31", r"^--slab must be an integer in \[1, 30\]"),
    ("fdtd --size 30 --out-of-core --device-gb nan", r"^--device-gb must be in \(0, 100000\] .*got nan"),
    ("fdtd --size 30 --out-of-core --device-gb -1", r"^--device-gb must be in \(0, 100000\]"),
    ("fdtd --size 30 --out-of-core --device-gb inf", r"^--device-gb must be in \(0, 100000\]"),
    ("fdtd --size 5000 --out-of-core", r"^--size must be an integer in \[22, \d+\] .*host memory"),
    # emjax bench dda
    ("dda --grid 5000", r"^--grid must be an integer in \[1, \d+\] \(the largest double-precision lattice"),
    ("dda --grid 5000 --precision single", r"^--grid must be an integer in \[1, \d+\] \(the largest single"),
    ("dda --grid 0", r"^--grid must be an integer in \[1, \d+\]"),
    ("dda --grid -1", r"^--grid must be an integer in \[1, \d+\]"),
    ("dda --grid 8 --repeats 0", r"^--repeats must be an integer in \[1, 100000\], got 0"),
    ("dda --grid 8 --repeats 99999999", r"^--repeats must be an integer in \[1, 100000\]"),
    ("dda --grid 8 --devices 0", r"^--devices must be an integer in \[1, \d+\]"),
    ("dda --grid 8 --devices 100000", r"^--devices must be an integer in \[1, \d+\]"),
    ("dda --grid 8 --precision half", r"^--precision must be one of single, double, got 'half'"),
    # emjax bench layered
    ("layered --size 5000", r"^--size must be an integer in \[1, 4096\]"),
    ("layered --size 0", r"^--size must be an integer in \[1, 4096\]"),
    ("layered --size 4 --rtol nan", r"^--rtol must be in \[1e-13, 0.1\], got nan"),
    ("layered --size 4 --rtol -1", r"^--rtol must be in \[1e-13, 0.1\]"),
    ("layered --size 4 --rtol 5", r"^--rtol must be in \[1e-13, 0.1\]"),
    ("layered --size 4 --rtol 1e-9 --precision single", r"^--rtol must be in \[1e-06, 0.1\]"),
    ("layered --size 4 --devices 0", r"^--devices must be an integer in \[1, \d+\]"),
    # emjax bench fdfd
    ("fdfd --size 5000", r"^--size 5000: FDFD 2-D grid 5000x5000 .* needs about [\d.]+ GiB of host memory"),
    ("fdfd --size 81 --size 5000", r"^--size 5000: FDFD 2-D grid"),  # checked before 81 runs
    ("fdfd --size -3", r"^--size must be an integer in \[1, 100000\], got -3"),
    ("fdfd --size 10", r"^--size: 2-D benchmark grids need N >= 71, got 10"),
    ("fdfd --dims 3 --size 5000", r"^--size 5000: FDFD 3-D grid \(5000, 5000, 5000\) .* needs about"),
]


@pytest.mark.parametrize("argv,message", CASES, ids=[c[0] for c in CASES])
def test_absurd_bench_option_is_one_line_naming_the_flag(capsys, argv, message):
    rc = main(["bench", *argv.split()])
    out = capsys.readouterr()
    assert rc == 1 and out.out == "", out
    assert "Traceback" not in out.err
    lines = out.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("emjax: error: "), out.err
    assert re.search(message, lines[0][len("emjax: error: ") :]), (message, lines[0])
    assert not re.search(r"\b(size_x|shape\[0\]|steps must be an integer >= 1)", lines[0])


def test_the_largest_fdtd_size_is_accepted_and_the_next_refused(capsys, monkeypatch):
    """The bound the message states is the one applied: with the host reporting 1 GB free,
    the largest N fits 90% of it and N + 1 does not."""
    from emjax import backend
    from emjax.fdtd import bench

    monkeypatch.setattr(backend, "host_available_bytes", lambda: 10**9)
    hi, why = bench.max_size("single", "cpml", 2, "vacuum")
    assert "1.0 GB" in why and 100 < hi < 400
    main(["bench", "fdtd", "--size", str(hi + 1)])
    line = capsys.readouterr().err
    assert f"--size must be an integer in [22, {hi}]" in line and f"got {hi + 1}" in line


RUN_CASES = [
    ("dda --size -1", r"^--size must be > 0, got -1.0"),
    ("dda --size nan", r"^--size must be finite"),
    ("dda --grid 0", r"^--grid must be an integer in \[1, 65535\]"),
    ("dda --size 1 --dpl -3", r"^--dpl must be > 0"),
    ("dda --eq-rad -1", r"^--eq-rad must be > 0"),
    ("dda --size 1 --grid 8 --ntheta 1", r"^--ntheta must be an integer in \[2, "),
    ("dda --size 1 --grid 8 --rtol 5", r"^--rtol must be in \[0, 1\)"),
    ("dda --size 1 --grid 8 --maxiter 0", r"^--maxiter must be an integer >= 1"),
    (
        "dda --size 1 --grid 8 --devices 0",
        r"^--devices must be an integer in \[1, \d+\] \(the devices JAX sees\)",
    ),
    ("fdtd {ex}/fdtd_dipole_cells.toml --devices 0", r"^--devices must be an integer in \[1, \d+\]"),
    ("layered {ex}/layered_dipole.toml --devices 0", r"^--devices must be an integer in \[1, \d+\]"),
]


@pytest.mark.parametrize("argv,message", RUN_CASES, ids=[c[0].replace("{ex}/", "") for c in RUN_CASES])
def test_run_options_are_named_as_typed(capsys, argv, message):
    """``emjax dda --size -1`` says ``--size``, not DDAProblem's ``size_x``."""
    from pathlib import Path

    examples = Path(__file__).resolve().parent.parent / "examples"
    rc = main(argv.format(ex=examples).split())
    out = capsys.readouterr()
    assert rc == 1 and out.out == "" and "Traceback" not in out.err, out
    lines = out.err.splitlines()
    assert len(lines) == 1 and re.search(message, lines[0][len("emjax: error: ") :]), lines
