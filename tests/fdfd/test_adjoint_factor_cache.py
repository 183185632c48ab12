"""The adjoints' cache of sparse factorizations is keyed on everything that makes the
matrix: the arrays' bytes, dtypes and shapes, and the grid key. Equal bytes of another dtype
or shape are another matrix (a reused factorization would be a silently wrong gradient)."""

import numpy as np

from emjax.fdfd import adjoint


def test_equal_bytes_of_another_dtype_or_shape_are_another_entry():
    made = []

    def factor():
        made.append(object())
        return made[-1]

    a = np.zeros(4, np.float64)  # 32 zero bytes
    b = np.zeros(4, np.complex64)  # the same 32 zero bytes
    c = np.zeros((2, 2), np.float64)
    key = ("test-cache-key", (4,), 0.1, 1.0)
    first = adjoint._cached_factor((a,), key, factor)
    assert adjoint._cached_factor((a.copy(),), key, factor) is first  # equal input: reused
    assert adjoint._cached_factor((b,), key, factor) is not first
    assert adjoint._cached_factor((c,), key, factor) is not first
    assert adjoint._cached_factor((a,), key[:-1] + (2.0,), factor) is not first
    assert len(made) == 4
