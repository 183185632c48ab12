"""The DDA system matrix as a device-resident linear operator.

ADDA's symmetric Jacobi-preconditioned form is used: with ``s = sqrt(alpha)`` per dipole,
the coupled-dipole equations ``alpha^-1 P - G P = E_inc`` become

    (I - s G s) x = s E_inc,     P = s x,

a complex-symmetric system, so QMR and BiCG for complex-symmetric matrices apply. Vectors
live on the whole lattice, shape (3, nx, ny, nz); ``s = 0`` on empty cells keeps them zero
there, so no gather/scatter is needed around the FFTs.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .interaction import LAYOUTS, convolve, convolve_full


class DDAOperator:
    """``x -> x - s * (G * (s * x))``; a JAX pytree (Dhat and s are its leaves).

    ``variant`` "pruned" (default) needs ``Dhat`` in the "yzx" layout, "full" in "xyz"
    (``interaction_fft(..., layout=LAYOUTS[variant])``). Measured (BENCHMARKS.md): "pruned"
    is 10-20% faster than "full" (one padded 3-D FFT call) on an H100 and as fast or faster
    on a 2-core CPU; "full" is kept as the plain reference.
    """

    def __init__(self, Dhat, s, variant: str = "pruned"):
        if variant not in LAYOUTS:
            raise ValueError(f"variant must be one of {sorted(LAYOUTS)}, got {variant!r}")
        self.Dhat, self.s, self.variant = Dhat, s, variant

    def interact(self, p):
        # the FFTs run in Dhat's precision (complex64 for precision="single"), the Krylov
        # vectors may be wider (see solve.py)
        q = p.astype(self.Dhat.dtype)
        y = convolve_full(self.Dhat, q) if self.variant == "full" else convolve(self.Dhat, q)
        return y.astype(p.dtype)

    def __call__(self, x):
        return x - self.s * self.interact(self.s * x)


jax.tree_util.register_pytree_node(
    DDAOperator,
    lambda op: ((op.Dhat, op.s), op.variant),
    lambda variant, children: DDAOperator(*children, variant=variant),
)


@jax.jit
def apply(op: DDAOperator, x):
    """One matvec (jitted), for benchmarks and tests."""
    return op(x)


def sqrt_alpha_grid(domains, alpha_per_domain, dtype):
    """``sqrt(alpha)`` on the lattice (0 on empty cells), shape (nx, ny, nz)."""
    a = jnp.asarray(alpha_per_domain, dtype=dtype)
    d = jnp.asarray(domains)
    return jnp.where(d >= 0, jnp.sqrt(a)[jnp.clip(d, 0)], 0).astype(dtype)
