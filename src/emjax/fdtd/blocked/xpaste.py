"""Copies between the grid's x ends and the small grid of :mod:`.xvirtual`, as kernels of
their own on the GPU.

The small grid holds the grid's x ends with x and y swapped. Written with ``jnp.transpose``
and ``.at[].set``, XLA's layout assignment gives whole fields a transposed layout and
copies all six of them twice per pass (0.35 ms each at 512^3 on an H100), more than the
small grid saves. Here each copy is a kernel launched like the blocked kernel (NVRTC, the
custom call ``triton_kernel_call_ffi``) whose operands have the row-major layout fixed, so
only the x ends' cells move; the copy back writes in place into the field (an aliased
operand). On the host the same copies are array operations.

``gather(f, d, sign)``: ``f`` (NX, NY, NZ) -> ``sign`` times its planes ``[0, d)`` and
``[NX - d, NX)`` side by side, x and y swapped: (NY, 2 d, NZ).
``scatter(f, s, own, rect, sign)``: ``f`` with its cells ``[0, own)`` and ``[NX - own, NX)``
in x, ``rect = (y0, y1, z0, z1)`` in y and z, replaced by ``sign`` times the small grid
``s``'s (planes ``[0, own)`` and ``[2 d - own, 2 d)`` of its y).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from .nvrtc import compile_ptx

_THREADS = 128

_SOURCE = """
extern "C" __global__ void __launch_bounds__(128) xpaste(const REAL *__restrict__ a, PARAMS) {
  const long k = (long)blockIdx.x * 128 + threadIdx.x + Z0;
  if (k >= Z1) return;
  const long j = (long)blockIdx.y + Y0;
  const int o = blockIdx.z;  // the small grid's plane: [0, OWN) then [W2 - OWN, W2)
  const long q = o < OWN ? o : o + W2 - 2 * OWN;
  const long x = q < W2 / 2 ? q : q + NXB - W2;  // the grid's plane
  const long big = (x * NY + j) * NZ + k, small = (j * W2 + q) * NZ + k;
#if SCATTER
  out[big] = SIGN * a[small];
#else
  out[small] = SIGN * a[big];
#endif
}
"""


@dataclass(frozen=True)
class Copy:
    """One copy's constants: the grid's x size ``nxb``, the small grid's y size ``w2``
    (= 2 d), the planes per end it moves ``own``, the (y, z) rectangle, the direction and
    the sign."""

    nxb: int
    ny: int
    nz: int
    w2: int
    own: int
    rect: tuple
    scatter: bool
    sign: float
    dtype: str

    def source(self) -> str:
        real = "double" if self.dtype == "float64" else "float"
        y0, y1, z0, z1 = self.rect
        params = f"{real} *__restrict__ out"
        if self.scatter:  # the field's buffer comes in as an operand and goes out as the result
            params = f"{real} *__restrict__ alias, " + params
        d = dict(REAL=real, NXB=self.nxb, NY=self.ny, NZ=self.nz, W2=self.w2, OWN=self.own)
        d.update(Y0=y0, Y1=y1, Z0=z0, Z1=z1, SCATTER=int(self.scatter), PARAMS=params)
        d["SIGN"] = f"(({real}){self.sign!r})"
        return "\n".join(f"#define {k} {v}" for k, v in d.items()) + _SOURCE

    def grid(self) -> tuple:
        y0, y1, z0, z1 = self.rect
        return (-(-(z1 - z0) // _THREADS), y1 - y0, 2 * self.own)

    def out_shape(self) -> tuple:
        return (self.nxb, self.ny, self.nz) if self.scatter else (self.ny, self.w2, self.nz)


_prim = None


def _register():
    global _prim
    if _prim is not None:
        return _prim
    from jax._src.interpreters import mlir
    from jax.extend.core import Primitive

    p = Primitive("emjax_xpaste")

    def abstract(*args, copy):
        return jax.core.ShapedArray(copy.out_shape(), np.dtype(copy.dtype))

    def lowering(ctx, *args, copy):
        from jax._src.lib import gpu_triton as lib
        from jax._src.lib.mlir import ir

        dev = jax.devices("gpu")[0]
        arch = int(str(dev.compute_capability).replace(".", ""))
        kernel = lib.TritonKernel("xpaste", _THREADS // 32, 1, 0, compile_ptx(copy.source(), arch), "", arch)
        params = [lib.create_array_parameter(0, 0) for _ in range(len(args) + 1)]
        call = lib.TritonKernelCall(kernel, *copy.grid(), params)
        opaque = zlib.compress(call.to_proto("emjax_xpaste", b""))
        try:  # JAX >= 0.11 takes the module context first
            out_type = mlir.aval_to_ir_type(ctx.module_context, ctx.avals_out[0])
        except TypeError:
            out_type = mlir.aval_to_ir_type(ctx.avals_out[0])
        row_major = lambda a: tuple(range(len(a.shape) - 1, -1, -1))  # noqa: E731
        return mlir.custom_call(
            call_target_name="triton_kernel_call_ffi",
            result_types=[out_type],
            operands=list(args),
            backend_config=dict(name=ir.StringAttr.get("emjax_xpaste"), opaque=ir.StringAttr.get(opaque)),
            operand_layouts=[row_major(a) for a in ctx.avals_in],
            result_layouts=[row_major(ctx.avals_out[0])],
            operand_output_aliases={1: 0} if copy.scatter else {},
        ).results

    p.def_abstract_eval(abstract)
    mlir.register_lowering(p, lowering, platform="cuda")
    _prim = p
    return p


def gather(f, d: int, sign: float = 1.0, gpu: bool = False):
    """``sign`` times ``f``'s x ends (``d`` planes each), x and y swapped (see the module)."""
    nx, ny, nz = f.shape
    if not gpu:
        both = jnp.concatenate([f[:d], f[nx - d :]], axis=0)
        return sign * jnp.transpose(both, (1, 0, 2))
    c = Copy(nx, ny, nz, 2 * d, d, (0, ny, 0, nz), False, float(sign), str(np.dtype(f.dtype)))
    return _register().bind(f, copy=c)


def scatter(f, s, own: int, rect: tuple, sign: float = 1.0, gpu: bool = False):
    """``f`` with its x ends' cells ``own`` deep in ``rect`` from the small grid ``s`` (see
    the module); on the GPU in ``f``'s buffer."""
    nx, ny, nz = f.shape
    w2 = s.shape[1]
    y0, y1, z0, z1 = rect
    if not gpu:
        back = jnp.transpose(s[y0:y1, :, z0:z1], (1, 0, 2))
        f = f.at[:own, y0:y1, z0:z1].set(sign * back[:own])
        return f.at[nx - own :, y0:y1, z0:z1].set(sign * back[w2 - own :])
    c = Copy(nx, ny, nz, w2, own, tuple(rect), True, float(sign), str(np.dtype(f.dtype)))
    return _register().bind(s, f, copy=c)
