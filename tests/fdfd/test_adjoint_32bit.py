"""The differentiable FDFD entry points in JAX's default 32-bit mode: ``jax.grad`` of an
objective written in the caller's own 32-bit arithmetic works, eagerly and under
``jax.jit``, and agrees with the same gradient taken with 64-bit JAX on. Run in a subprocess without
JAX_ENABLE_X64, as a new user's Python starts."""

import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np

from emjax import fdfd
from emjax.backend import precision_scope

SCRIPT = r"""
import json, jax, jax.numpy as jnp, numpy as np
from emjax import fdfd
assert not jax.config.jax_enable_x64

def tm(radius):
    eps = fdfd.disk_permittivity((37, 37), 20, (0.0, 0.0), radius, 4.0)
    E = fdfd.tm_field(eps, 20, 1.0, fdfd.PlaneWave2D(30.0), fdfd.SCPML(8))
    assert eps.dtype == jnp.complex64 and E.dtype == jnp.complex64, (eps.dtype, E.dtype)
    return jnp.sum(jnp.abs(E[9:14, 20:26]) ** 2)

def te(e):
    H = fdfd.te_field(e, 20, 1.0, fdfd.PlaneWave2D(30.0), fdfd.SCPML(8))
    assert H.dtype == jnp.complex64
    return jnp.sum(jnp.abs(H[9:14, 20:26]) ** 2)

eps = np.ones((37, 37)); eps[15:22, 15:22] = 3.0
out = {
    "tm": float(jax.grad(tm)(0.3)),
    "tm_jit": float(jax.jit(jax.grad(tm))(0.3)),
    "te": float(jax.grad(te)(jnp.asarray(eps))[18, 18]),
}
print(json.dumps(out))
"""


def test_gradients_in_32_bit_mode():
    """The gradients of a disk's radius (TM) and of one node's eps (TE) in 32-bit mode
    equal the 64-bit ones to 1e-4 relative: the solve runs in double precision either way,
    and the 32-bit objective rounds the complex64 field (measured ~1e-6)."""
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(os.path.dirname(__file__), "..", "..", "src")])
    p = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])

    def tm(radius):
        eps = fdfd.disk_permittivity((37, 37), 20, (0.0, 0.0), radius, 4.0)
        E = fdfd.tm_field(eps, 20, 1.0, fdfd.PlaneWave2D(30.0), fdfd.SCPML(8))
        return jnp.sum(jnp.abs(E[9:14, 20:26]) ** 2)

    def te(e):
        H = fdfd.te_field(e, 20, 1.0, fdfd.PlaneWave2D(30.0), fdfd.SCPML(8))
        return jnp.sum(jnp.abs(H[9:14, 20:26]) ** 2)

    eps = np.ones((37, 37))
    eps[15:22, 15:22] = 3.0
    with precision_scope():
        ref_tm = float(jax.grad(tm)(jnp.float64(0.3)))
        ref_te = float(jax.grad(te)(jnp.asarray(eps))[18, 18])
    assert abs(got["tm"] - ref_tm) <= 1e-4 * abs(ref_tm), (got, ref_tm)
    assert abs(got["tm_jit"] - ref_tm) <= 1e-4 * abs(ref_tm), (got, ref_tm)
    assert abs(got["te"] - ref_te) <= 1e-4 * abs(ref_te), (got, ref_te)
