"""The 2-D TM matrix assembly of emjax.fdfd.stencil2d (stencil coefficients straight into CSR, NumPy
only) against the sparse-matrix algebra it replaced (Kronecker products of the 1-D operators,
``(M E + E M) / 2``, row selections by diagonal products: written out again below as the
reference), bit for bit: the same matrix (pattern and values); the right sides to the last
bit or two (the sums in another order). Also: the device solver's blocks taken from the stencil
equal those read out of the matrix (blocksolve.block_layout)."""

import numpy as np
import pytest
import scipy.sparse as sp

from emjax import fdfd, geometry, scene
from emjax.fdfd import blocksolve, grid2d, permittivity2d, stencil2d, tm
from emjax.fdfd.pec2d import pec_index, tm_rows


def _reference(size, res, source, sc, L, stencil, averaging="subpixel"):
    """(A, b) of solve_tm as the sparse-algebra assembly (before the stencil arrays) built it."""
    g = grid2d._grid(size, res, 1.0, fdfd.SCPML(L), (0.0, 0.0), averaging, half=False)
    omega, shape = g.omega, g.shape
    eps = permittivity2d.node_permittivity(sc, shape, g.dx, g.origin, omega, averaging)
    inside = np.isinf(eps)
    eps_rows = np.where(inside, 1.0, eps)
    yee_rows = stencil2d._near(inside)
    nx, ny = shape
    L1 = [stencil2d._second_difference_1d(n, g.dx, omega, g.pml) for n in shape]
    Ix, Iy = sp.identity(nx, format="csr"), sp.identity(ny, format="csr")
    if stencil == "yee":
        lap = sp.kron(L1[0], Iy) + sp.kron(Ix, L1[1])
    else:
        lap = sp.kron(L1[0], stencil2d._average_1d(ny)) + sp.kron(stencil2d._average_1d(nx), L1[1])
        if yee_rows.any():
            lap = stencil2d._rows(yee_rows, sp.kron(L1[0], Iy) + sp.kron(Ix, L1[1]), lap)

    def mass(e):
        E = sp.diags(omega**2 * e.ravel())
        if stencil == "yee":
            return E
        M = stencil2d._compact_parts(shape)[2]
        spread = (M @ E + E @ M) / 2
        return stencil2d._rows(yee_rows, E, spread) if yee_rows.any() else spread

    A = (lap + mass(eps_rows)).tocsr()
    waves = grid2d._plane_waves(source)
    if isinstance(source, tm.LineSource):
        i, j = grid2d._source_node(source, g)
        b = np.zeros(shape, complex)
        b[i, j] = 1j * omega * complex(source.current) / g.dx**2
        if stencil == "compact" and not yee_rows[i, j]:
            b = (stencil2d._compact_parts(shape)[2] @ b.ravel()).reshape(shape)
        b = b.reshape(-1, 1)
    else:
        K = mass(eps_rows - 1.0)
        b = np.stack([-(K @ e.ravel()) for e in grid2d._incident_waves(source, g)], 1)
    if inside.any():

        def boundary(X, Y):
            if not waves:
                return np.zeros((np.size(X), 1), complex)
            return np.stack([-grid2d._incident(w, omega, X, Y) for w in waves], -1)

        stretch = [(g.pml.stretch(n, g.dx, omega, False), g.pml.stretch(n, g.dx, omega, True)) for n in shape]
        rows, _, near, rhs = tm_rows(
            inside, g.x, g.y, g.dx, sc, pec_index(sc), boundary, averaging == "subpixel", stretch
        )
        taken = (inside | near).ravel()
        A = sp.diags((~taken).astype(float)) @ A + rows + sp.diags(omega**2 * (eps_rows * near).ravel())
        b = np.where(inside.reshape(-1, 1), rhs, b + rhs)
    return A.tocsr(), b, shape


def _new(size, res, source, sc, L, stencil, averaging="subpixel"):
    got = {}

    def capture(A, b, g, *args, stencil=None, **kwargs):
        got.update(A=A, b=b, shape=g.shape, C=stencil)
        raise StopIteration

    orig = tm._solve
    tm._solve = capture
    try:
        fdfd.solve_tm(
            size, res, 1.0, source, scene=sc, pml=fdfd.SCPML(L), stencil=stencil, averaging=averaging
        )
    except StopIteration:
        pass
    finally:
        tm._solve = orig
    return got


def _scene(kind):
    if kind == "none":
        return None
    if kind == "eps":
        return scene.Scene([scene.Object(geometry.Disk(), 4.0 + 0.5j, size=1.2)])
    if kind == "pec":
        return scene.Scene([scene.Object(geometry.Disk(), scene.PEC, size=1.0)])
    # a coated conductor next to a dielectric block: interface, conformal and Yee rows meet
    return scene.Scene(
        [
            scene.Object(geometry.Disk(), 2.25, size=1.2),
            scene.Object(geometry.Disk(), scene.PEC, size=0.7),
            scene.Object(geometry.Rectangle(5 / 3), 3.0, size=0.3, center=(0.75, 0.2, 0.0)),
        ]
    )


def _same_rhs(b1, b0):
    """The right sides agree to the last bit or two: the old one came from a matrix product
    whose columns were unsorted (SciPy's csr_matmat), so its sums ran in another order
    (measured: at most 2.3e-16 relative)."""
    assert b1.shape == b0.shape
    np.testing.assert_allclose(b1, b0, rtol=1e-15, atol=1e-15 * np.abs(b0).max())


CASES = [
    ("eps", "plane"),
    ("pec", "plane"),
    ("mixed", "plane"),
    ("none", "line"),
    ("eps", "line"),
    ("pec", "line"),
]


@pytest.mark.parametrize("stencil", ["compact", "yee"])
@pytest.mark.parametrize("kind,src", CASES, ids=[f"{k}-{s}" for k, s in CASES])
def test_assembly_equals_sparse_algebra_bit_for_bit(stencil, kind, src):
    sc = _scene(kind)
    source = (
        [fdfd.PlaneWave2D(0.0), fdfd.PlaneWave2D(35.0)]
        if src == "plane"
        else fdfd.LineSource((-0.9, 0.13), 1.0 + 0.5j)
    )
    args = ((2.3, 2.1), 12, source, sc, 5, stencil)
    A0, b0, shape = _reference(*args)
    got = _new(*args)
    A1, b1 = got["A"].tocsr(), got["b"]  # CSC for SuperLU: compared as CSR
    assert got["shape"] == shape
    A0.sort_indices()
    assert A1.shape == A0.shape
    np.testing.assert_array_equal(A1.indptr, A0.indptr)
    np.testing.assert_array_equal(A1.indices, A0.indices)
    np.testing.assert_array_equal(A1.data, A0.data)  # bit for bit (NaN-free)
    _same_rhs(b1, b0)
    # the device solver's blocks from the stencil are the ones read out of the matrix
    kind_, blocks, group = blocksolve.block_layout(A0, shape)
    assert (kind_, group) == ("banded", 1)
    np.testing.assert_array_equal(blocksolve.stencil_blocks(got["C"], shape), blocks)
    # and the stencil round-trips through CSR
    np.testing.assert_array_equal(stencil2d.sparse_stencil(A1, shape), got["C"])


def test_staircase_and_pml_free_grid():
    """Staircased conductor (no conformal rows, no Yee rows next to it) and no PML at all."""
    sc = _scene("mixed")
    src = [fdfd.PlaneWave2D(10.0)]
    for L in (0, 4):
        args = ((2.3, 2.1), 10, src, sc, L, "compact", "staircase")
        if L == 0:  # a plane wave needs the region free of the scene only inside the PML
            args = ((2.3, 2.1), 10, fdfd.LineSource((-1.0, 0.9)), sc, L, "compact", "staircase")
        A0, b0, shape = _reference(*args)
        got = _new(*args)
        A0.sort_indices()
        np.testing.assert_array_equal(got["A"].tocsr().indices, A0.indices)
        np.testing.assert_array_equal(got["A"].tocsr().data, A0.data)
        _same_rhs(got["b"], b0)


def test_stencil_csr_refuses_wrapping_entries():
    C = np.zeros((4, 5, 3, 3), complex)
    C[:, :, 1, 1] = 1.0
    A = stencil2d.stencil_csr(C)
    assert A.nnz == 20 and np.all(A.diagonal() == 1)
    C[0, 4, 1, 2] = 2.0  # the node (0, 5) does not exist: it would wrap to (1, 0)
    with pytest.raises(ValueError, match="edge"):
        stencil2d.stencil_csr(C)
    with pytest.raises(ValueError, match="footprint"):
        stencil2d.sparse_stencil(sp.csr_matrix(([1.0], ([0], [7])), shape=(20, 20)), (4, 5))


def test_csc_and_apply_match_the_csr_matrix():
    """The CSC built from the transposed stencil is SciPy's conversion of the CSR, array for
    array; apply_stencil is the matrix product."""
    got = _new((2.3, 2.1), 12, [fdfd.PlaneWave2D(20.0)], _scene("mixed"), 5, "compact")
    C = got["C"]
    A = stencil2d.stencil_csr(C)
    ref, csc = A.tocsc(), stencil2d.stencil_csc(C)
    assert csc.format == "csc"
    np.testing.assert_array_equal(csc.indptr, ref.indptr)
    np.testing.assert_array_equal(csc.indices, ref.indices)
    np.testing.assert_array_equal(csc.data, ref.data)
    np.testing.assert_array_equal(stencil2d.sparse_stencil(A.T, got["shape"]), stencil2d.transpose_stencil(C))
    u = np.random.default_rng(3).standard_normal(got["shape"]) + 1j
    np.testing.assert_allclose(stencil2d.apply_stencil(C, u).ravel(), A @ u.ravel(), rtol=1e-14, atol=1e-12)
