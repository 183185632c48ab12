"""An orientation-average checkpoint resumes only the problem it was written for: change one
input (m, wavelength, the particle's shape, size or lattice, the polarizability, the
precision, the scattering angles, the alpha count, the solver's tolerance or iteration
limit) and the resume is refused with one line naming it; an earlier format and a missing
folder are refused; the same problem resumes to the uninterrupted answer. Python API and
``emjax dda``. Tiny lattices: fast."""

import json
import re

import numpy as np
import pytest

from emjax import ConfigError, dda, geometry
from emjax.dda import OrientationAverage, average

RULE = OrientationAverage(beta_levels=(2, 2), gamma_levels=(2, 2), eps=0, n_alpha=2)


def _prob(**change):
    kw = dict(
        shape=geometry.Sphere(), m=(1.5 + 0.01j,), eq_rad=1.0, grid=4, theta=(0.0, 90.0), integrate=False
    )
    kw.update(change)
    return dda.DDAProblem(**kw)


CHANGES = {
    "m": (dict(m=(1.6 + 0.01j,)), r"refractive index per domain \(m\) differs \(\[\(1\.5\+0\.01j\)\] there"),
    "wavelength": (dict(wavelength=6.0), r"wavelength differs \(6\.28\d* there, 6\.0 here\)"),
    "size": (dict(eq_rad=1.1), r"particle \(shape, size, dipole lattice\) differs"),
    "lattice": (dict(grid=5), r"particle \(shape, size, dipole lattice\) differs"),
    "shape": (dict(shape=geometry.Box()), r"particle \(shape, size, dipole lattice\) differs"),
    "polarizability": (dict(polarizability=dda.CM()), r"polarizability differs"),
    "precision": (dict(precision="single"), r"precision differs \(double there, single here\)"),
    "theta": (dict(theta=(0.0, 45.0, 90.0)), r"scattering angles \(theta, integrate\) differs"),
}


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """A checkpoint of the base problem (no orientation solved yet: the refusals come before
    any set-up, so these tests compile nothing)."""
    from emjax.dda import average_checkpoint

    path = tmp_path_factory.mktemp("avg") / "avg.npz"
    prob = _prob()
    average_checkpoint.save(
        path, average_checkpoint.fingerprint(prob, prob.lattice(), 2, dda.QMR(rtol=1e-8)), {}
    )
    return path, None


@pytest.mark.parametrize("case", list(CHANGES))
def test_a_changed_problem_is_refused_naming_what_differs(written, case):
    path, _ = written
    change, message = CHANGES[case]
    before = path.read_bytes()
    with pytest.raises(ConfigError, match=message) as e:
        average(_prob(**change), RULE, dda.QMR(rtol=1e-8), checkpoint=path)
    text = str(e.value)
    assert "\n" not in text and text.startswith(
        f"checkpoint {str(path)!r} was written for a different problem: "
    )
    assert text.endswith("; delete it to start afresh, or name another file") and text.count("delete") == 1
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    "solver, rule, message",
    [
        (dda.QMR(rtol=1e-6), RULE, r"solver \(method, rtol, atol, maxiter\) differs \(qmr rtol 1e-08"),
        (dda.QMR(rtol=1e-8, maxiter=50), RULE, r"solver .* maxiter 10000 there, .* maxiter 50 here"),
        (dda.BiCGStab(rtol=1e-8), RULE, r"solver .* differs \(qmr .* there, bicgstab .* here\)"),
        (
            dda.QMR(rtol=1e-8),
            OrientationAverage(beta_levels=(2, 2), gamma_levels=(2, 2), eps=0, n_alpha=4),
            r"number of scattering planes \(avg_alpha\) differs \(2 there, 4 here\)",
        ),
    ],
)
def test_a_changed_solver_or_alpha_count_is_refused(written, solver, rule, message):
    with pytest.raises(ConfigError, match=message):
        average(_prob(), rule, solver, checkpoint=written[0])


def test_an_old_format_checkpoint_is_refused(written, tmp_path):
    old = tmp_path / "old.npz"
    with np.load(written[0]) as f:
        data = {k: f[k] for k in f.files}
    data["fingerprint"] = np.array(repr(("Sphere()", [1.5 + 0.01j], 6.283185307179586)))
    np.savez(old, **data)
    with pytest.raises(
        ConfigError, match=r"^checkpoint .* written by an earlier emjax .* cannot be checked"
    ) as e:
        average(_prob(), RULE, dda.QMR(rtol=1e-8), checkpoint=old)
    assert str(old) in str(e.value) and "\n" not in str(e.value) and "cannot be read" not in str(e.value)


def test_a_checkpoint_in_a_missing_folder_is_refused_before_any_solve(tmp_path):
    path = tmp_path / "nodir" / "avg.npz"
    with pytest.raises(ConfigError, match=r"^checkpoint: the folder '.*nodir' of .* does not exist"):
        average(_prob(), RULE, checkpoint=path)
    assert not (tmp_path / "nodir").exists()


CLI = ["dda", "--shape", "sphere", "--eq-rad", "1", "--grid", "4", "--orient", "avg", "--ntheta", "3"]
CLI += ["--no-integrate", "--avg-beta-levels", "2", "2", "--avg-gamma-levels", "2", "2", "--avg-alpha", "2"]
CLI += ["--avg-eps", "0", "--json"]


def test_cli_refuses_a_changed_m_and_a_missing_folder(written, tmp_path, capsys):
    """``emjax dda --checkpoint`` on the base problem's checkpoint with another m: one line
    naming m, before any solve."""
    import shutil

    from emjax.cli import main

    ck = tmp_path / "avg.npz"
    shutil.copy(written[0], ck)
    assert main([*CLI, "--m", "1.6+0.01j", "--checkpoint", str(ck)]) == 1
    out = capsys.readouterr()
    lines = [line for line in out.err.splitlines() if not line.startswith("emjax: warning:")]
    assert out.out == "" and len(lines) == 1 and "Traceback" not in out.err
    assert re.match(
        r"emjax: error: checkpoint '[^']*' was written for a different problem: refractive index per domain",
        lines[0],
    )
    assert main([*CLI, "--m", "1.5+0.01j", "--checkpoint", str(tmp_path / "nodir" / "a.npz")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("emjax: error: --checkpoint: the folder ") and "does not exist" in err
    assert not (tmp_path / "nodir").exists()


@pytest.mark.slow
def test_cli_resumes_the_same_problem(tmp_path, capsys):
    """Written by one command, resumed by a second with nothing left to solve, to the same
    answer (the fingerprint is the same across processes)."""
    from emjax.cli import main

    ck = tmp_path / "avg.npz"
    assert main([*CLI, "--m", "1.5", "--checkpoint", str(ck)]) == 0
    first = json.loads(capsys.readouterr().out)
    assert main([*CLI, "--m", "1.5", "--checkpoint", str(ck)]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["Qext"] == first["Qext"] and again["Qabs"] == first["Qabs"]
