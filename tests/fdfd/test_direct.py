"""emjax.fdfd.direct: the host direct solvers (SuperLU, and PARDISO when py-mkl-pardiso is
installed) on the 2-D FDFD matrices, against SciPy's spsolve; the backend choice and its
checks. The PARDISO cases are skipped where the package is missing."""

import numpy as np
import pytest
import scipy.sparse.linalg as spla

from emjax import ConfigError, fdfd, geometry, scene
from emjax.fdfd import direct, tm


def _problem(te=False, stencil="compact"):
    got = {}

    def capture(A, b, g, *args, **kwargs):
        got.update(A=A, B=b.reshape(g.shape[0] * g.shape[1], -1))
        raise StopIteration

    sc = scene.Scene(
        [
            scene.Object(geometry.Disk(), 2.25 + 0.1j, size=1.2),
            scene.Object(geometry.Disk(), scene.PEC, size=0.5),
        ]
    )
    orig = tm._solve
    tm._solve = capture
    try:
        solve = fdfd.solve_te if te else fdfd.solve_tm
        solve((1.5, 1.5), 16, 1.0, [fdfd.PlaneWave2D(0.0), fdfd.PlaneWave2D(50.0)], scene=sc, stencil=stencil)
    except StopIteration:
        pass
    finally:
        tm._solve = orig
    return got["A"], got["B"]


def test_backend_choice(monkeypatch):
    monkeypatch.setenv("EMJAX_DIRECT", "superlu")
    assert direct.resolve("auto") == "superlu"
    assert direct.preferred_format("auto") == "csc"
    monkeypatch.delenv("EMJAX_DIRECT")
    assert direct.resolve("auto") == ("pardiso" if direct.pardiso_available() else "superlu")
    assert direct.resolve("superlu") == "superlu"
    with pytest.raises(ConfigError, match="backend must be one of auto, superlu, pardiso"):
        direct.resolve("mumps")
    if not direct.pardiso_available():
        with pytest.raises(ConfigError, match="py-mkl-pardiso"):
            direct.resolve("pardiso")
        with pytest.raises(ConfigError, match="py-mkl-pardiso"):
            fdfd.solve_tm((1.0, 1.0), 10, 1.0, fdfd.PlaneWave2D(0.0), solver="pardiso")


@pytest.mark.parametrize("te", [False, True], ids=["TM", "TE"])
def test_superlu_matches_spsolve(te):
    A, B = _problem(te)
    X, residual, factor_s, solve_s, name = direct.factor_solve(A, B, "superlu")
    ref = spla.spsolve(A.tocsc(), B)
    assert "SuperLU" in name and residual < 1e-12 and factor_s >= 0 and solve_s >= 0
    np.testing.assert_allclose(X, ref, rtol=0, atol=1e-11 * np.abs(ref).max())


@pytest.mark.parametrize("stencil", ["compact", "yee"])
@pytest.mark.parametrize("te", [False, True], ids=["TM", "TE"])
def test_pardiso_matches_superlu(te, stencil):
    """PARDISO (complex non-symmetric, minimum degree) and SuperLU on the same matrices
    (conductor rows, TE's compact off-diagonal rows): residuals below 1e-12, the solutions
    1e-11 of the peak apart."""
    pytest.importorskip("pymklpardiso")
    A, B = _problem(te, stencil)
    X, residual, _, _, name = direct.factor_solve(A, B, "pardiso")
    ref, res_ref, _, _, _ = direct.factor_solve(A, B, "superlu")
    assert "PARDISO" in name and residual < 1e-12 and res_ref < 1e-12
    np.testing.assert_allclose(X, ref, rtol=0, atol=1e-11 * np.abs(ref).max())
    # a CSC matrix (SuperLU's format) is accepted too, and one right side as a vector
    x1, residual1, _, _, _ = direct.factor_solve(A.tocsc(), B[:, 1], "pardiso")
    assert x1.shape == B[:, 1].shape and residual1 < 1e-12
    np.testing.assert_allclose(x1, ref[:, 1], rtol=0, atol=1e-11 * np.abs(ref).max())


def test_solve_tm_with_pardiso():
    pytest.importorskip("pymklpardiso")
    sc = scene.Scene([scene.Object(geometry.Disk(), 4.0, size=1.0)])
    args = ((1.5, 1.5), 20, 1.0, fdfd.PlaneWave2D(30.0))
    p = fdfd.solve_tm(*args, scene=sc, solver="pardiso")
    s = fdfd.solve_tm(*args, scene=sc, solver="superlu")
    assert "PARDISO" in p.stats["solver"] and "SuperLU" in s.stats["solver"]
    np.testing.assert_allclose(p.Ez, s.Ez, rtol=0, atol=1e-11 * np.abs(s.Ez).max())


def test_host_solve_leaves_jax_alone():
    """A 2-D solve on the host neither imports JAX nor starts its runtime (that cost 0.3-1.4 s
    of the first call), where no accelerator plugin is installed or JAX_PLATFORMS=cpu."""
    import os
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from emjax import fdfd, geometry, scene\n"
        "sc = scene.Scene([scene.Object(geometry.Disk(), 4.0, size=1.0)])\n"
        "r = fdfd.solve_tm((1.5, 1.5), 10, 1.0, fdfd.PlaneWave2D(0.0), scene=sc)\n"
        "print('jax' in sys.modules, r.stats['solver'])\n"
    )
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("False "), out.stdout
