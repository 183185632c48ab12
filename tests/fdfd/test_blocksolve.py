"""The block-tridiagonal direct solver (emjax.fdfd.blocksolve) against SciPy's spsolve on the
2-D FDFD matrices of tm.py (taken from solve_tm / solve_te by standing in for their SuperLU
step), on the JAX CPU backend.

Grids of 31 x 31 nodes (region 2.4 wavelengths at 10 cells per wavelength, PML 3 cells: the
same block shapes in most tests, so each program compiles once), an eps = 4 or PEC cylinder
of radius 0.6, plane waves at 0 and 45 degrees. Measured relative residuals max_k ||A x_k -
b_k|| / ||b_k|| there: 7e-21 to 7.9e-15 (cyclic reduction and Thomas, TM and TE, compact
and Yee stencils, eps = 4 and PEC; 5.2e-15 on the 32 x 31 grid with three right sides),
differences from spsolve relative to max |x| 1.8e-15 to 9.3e-15; the bounds below are 1e-12
and 1e-11. Larger grids (89^2 to 400^2, module docstring of blocksolve.py): up to 3.3e-13.
"""

from functools import cache

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from emjax import ConfigError, ResourceError, fdfd, geometry, scene
from emjax.fdfd import blocksolve, tm

RESIDUAL = 1e-12
AGREE = 1e-11


@cache
def _problem(te=False, material=4.0, stencil="compact", size=(2.4, 2.4), angles=(0.0, 45.0)):
    """(A, B, shape) exactly as solve_tm / solve_te would hand them to SuperLU."""
    got = {}

    def capture(A, b, g, *args, **kwargs):
        got.update(A=A.tocsr(), B=b.reshape(g.shape[0] * g.shape[1], -1), shape=g.shape)
        raise StopIteration

    mat = scene.PEC if material == "pec" else material
    sc = scene.Scene([scene.Object(geometry.Disk(), mat, size=1.2)])
    solve = fdfd.solve_te if te else fdfd.solve_tm
    waves = [fdfd.PlaneWave2D(a) for a in angles]
    orig = tm._solve
    tm._solve = capture
    try:
        solve(size, 10, 1.0, waves, scene=sc, pml=fdfd.SCPML(3), stencil=stencil)
    except StopIteration:
        pass
    finally:
        tm._solve = orig
    return got["A"], got["B"], got["shape"]


def _check(A, B, shape, **kw):
    X, info = blocksolve.solve_block_tridiagonal(A, shape, B, **kw)
    ref = spla.spsolve(A.tocsc(), B)
    assert X.shape == B.shape
    assert info["residual"] < RESIDUAL
    assert np.abs(X - ref).max() < AGREE * np.abs(ref).max()
    return info


@pytest.mark.parametrize("method", ["cr", "thomas"])
@pytest.mark.parametrize("te", [False, True], ids=["TM", "TE"])
@pytest.mark.parametrize("material", [4.0, "pec"], ids=["eps4", "pec"])
def test_matches_spsolve(method, te, material):
    """Compact stencil (the default), two plane waves: one solve, residual and spsolve
    agreement at rounding level, no refinement needed."""
    A, B, shape = _problem(te, material)
    info = _check(A, B, shape, method=method)
    assert info["refinements"] == 0 and info["method"] == method
    assert shape == (31, 31) and info["levels"] == (5 if info["group"] == 1 else 4)  # ceil(log2(31 or 16))


@pytest.mark.parametrize("te", [False, True], ids=["TM", "TE"])
def test_yee_stencil(te):
    A, B, shape = _problem(te, 4.0, "yee")
    info = _check(A, B, shape, method="cr")
    assert info["kind"] == "banded" and info["group"] == 1


def test_te_compact_couples_two_rows():
    """TE's compact rows at dielectric interfaces (Kottke's off-diagonal terms averaged over
    neighbouring rows) reach two x-rows away: pairs of rows become one block (dense blocks
    of 2 ny, measured residual 3e-15) and ``max_group=1`` refuses the matrix."""
    A, B, shape = _problem(True, 4.0)
    info = _check(A, B, shape, method="cr")
    assert info["kind"] == "dense" and info["group"] == 2 and info["block"] == 2 * shape[1]
    with pytest.raises(ConfigError, match="not block tridiagonal on the grid 31 x 31"):
        blocksolve.solve_block_tridiagonal(A, shape, B, max_group=1)


@pytest.mark.parametrize("method", ["cr", "thomas"])
def test_even_rows_three_right_sides(method):
    """nx even (32 x 31 grid) and three plane waves."""
    A, B, shape = _problem(size=(2.5, 2.4), angles=(0.0, 45.0, 90.0))
    assert shape == (32, 31) and B.shape[1] == 3
    _check(A, B, shape, method=method)


def test_one_right_side_as_a_vector():
    A, B, shape = _problem()
    x, info = blocksolve.solve_block_tridiagonal(A, shape, B[:, 1], method="cr")
    assert x.shape == (B.shape[0],) and info["residual"] < RESIDUAL
    np.testing.assert_allclose(x, spla.spsolve(A.tocsc(), B[:, 1]), rtol=0, atol=AGREE * np.abs(x).max())


@pytest.mark.parametrize("nx", [1, 2, 5])
def test_small_block_counts(nx):
    """Random block-tridiagonal matrices (diagonally dominant) with 1, 2 and 5 block rows:
    the cyclic reduction's edge cases (a single row, no dense level, a chunk of 2 that
    is padded at the last levels)."""
    ny, K = 4, 2
    rng = np.random.default_rng(nx)
    N = nx * ny
    full = rng.uniform(size=(N, N)) + 1j * rng.uniform(size=(N, N))
    rows, cols = np.indices((N, N))
    band = (np.abs(rows // ny - cols // ny) <= 1) & (np.abs(rows % ny - cols % ny) <= 1)
    A = sp.csr_matrix(np.where(band, full, 0) + 8 * np.eye(N))
    B = rng.normal(size=(N, K)) + 1j * rng.normal(size=(N, K))
    for method in ("cr", "thomas") if nx == 2 else ("cr",):
        _check(A, B, (nx, ny), method=method, chunk=2)


def test_layout_round_trip():
    """The banded blocks hold exactly A's entries: A rebuilt from them is A."""
    A, _, (nx, ny) = _problem()
    kind, bands, group = blocksolve.block_layout(A, (nx, ny))
    assert kind == "banded" and group == 1 and bands.shape == (nx, 3, 3, ny)
    rebuilt = sp.lil_matrix(A.shape, dtype=complex)
    for i in range(nx):
        for d, j in enumerate((i - 1, i, i + 1)):
            if 0 <= j < nx:
                blk = sp.diags([bands[i, d, 0, 1:], bands[i, d, 1], bands[i, d, 2, :-1]], [-1, 0, 1])
                rebuilt[i * ny : (i + 1) * ny, j * ny : (j + 1) * ny] = blk
    assert abs(rebuilt.tocsr() - A).max() == 0


def test_not_block_tridiagonal_is_refused():
    """A coupling three x-rows away (here: node (0, 0) to (3, 0)) is refused, naming it."""
    A, B, shape = _problem()
    A = A.tolil()
    A[0, 3 * shape[1]] = 1.0
    with pytest.raises(ConfigError, match=r"not block tridiagonal.*node 0, 0.*node 3, 0"):
        blocksolve.solve_block_tridiagonal(A.tocsr(), shape, B)


def test_bad_inputs():
    A, B, shape = _problem()
    with pytest.raises(ConfigError, match="grid 30 x 31"):
        blocksolve.solve_block_tridiagonal(A, (30, 31), B)
    with pytest.raises(ConfigError, match="method"):
        blocksolve.solve_block_tridiagonal(A, shape, B, method="lu")
    with pytest.raises(ConfigError, match="rows"):
        blocksolve.solve_block_tridiagonal(A, shape, B[:-1])
    with pytest.raises(ConfigError, match="scipy.sparse"):
        blocksolve.solve_block_tridiagonal(A.toarray(), shape, B)


def test_memory_check():
    """The estimate is checked before anything goes to the device; too little memory is a
    ResourceError that is also a ConfigError, and names the grid."""
    A, B, shape = _problem()
    need = blocksolve.estimate_bytes("banded", 31, 31, 2, "cr", 4)
    assert 3 * 16 * 31**3 / 2 < need < 1e8
    for limit in (1e5, need):
        with pytest.raises(ResourceError, match=r"grid 31 x 31 .* needs about") as err:
            blocksolve.solve_block_tridiagonal(A, shape, B, method="cr", chunk=4, memory_limit=limit)
        assert isinstance(err.value, ConfigError)
    _, info = blocksolve.solve_block_tridiagonal(A, shape, B, method="cr", chunk=4, memory_limit=2 * need)
    assert info["bytes"] == need


def test_refinement_and_info():
    """tol = 0 forces the refinement steps (each a full solve of the residual equation):
    they keep the residual at rounding level. The program compiles once per shapes."""
    A, B, shape = _problem()
    blocksolve.solve_block_tridiagonal(A, shape, B, method="thomas")
    _, info = blocksolve.solve_block_tridiagonal(A, shape, B, method="thomas", refine=2, tol=0.0)
    assert info["refinements"] == 2 and len(info["residuals"]) == 3
    assert max(info["residuals"]) < RESIDUAL
    assert info["compile_s"] == 0.0
    assert info["seconds"] > 0 and info["total_s"] >= info["seconds"]
