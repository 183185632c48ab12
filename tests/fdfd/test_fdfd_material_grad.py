"""jax.grad of a scene's material values through the user's API: ``solve_tm`` / ``solve_te`` /
``solve_3d`` on a scene whose material holds a tracer, then ``scattering_width``,
``rcs_3d`` and ``cross_sections_3d``; against central differences of the same (concrete)
calls, and the traced forward value against the concrete one."""

import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import pytest

from emjax import fdfd, geometry, materials, scene
from emjax.backend import precision_scope
from emjax.errors import ConfigError
from emjax.krylov import QMR


def _disk(material):
    return scene.Scene([scene.Object(geometry.Disk(), material, size=0.6)])


def _width(eps, solve=fdfd.solve_tm, averaging="subpixel"):
    r = solve(
        (1.4, 1.4),
        15,
        1.0,
        fdfd.PlaneWave2D(30.0),
        _disk(materials.Constant.from_permittivity(eps)),
        pml=fdfd.SCPML(6),
        averaging=averaging,
        progress=False,
    )
    return jnp.sum(fdfd.scattering_width(r, [0.0, 100.0, 180.0]))


def _central(f, x, h):
    return (f(x + h) - f(x - h)) / (2 * h)


@pytest.mark.parametrize("solve,averaging", [(fdfd.solve_tm, "subpixel"), (fdfd.solve_te, "staircase")])
def test_2d_material_eps_gradient_matches_central_differences(solve, averaging):
    with precision_scope():
        f = lambda e: _width(e, solve, averaging)  # noqa: E731
        value, grad = jax.value_and_grad(f)(2.5)
        assert abs(value - f(2.5)) < 1e-10 * abs(f(2.5))  # the traced solve is the concrete one
        fd = _central(f, 2.5, 1e-4)
        assert abs(grad - fd) < 1e-6 * abs(fd)
        # a complex eps: the imaginary part's derivative too
        g_im = jax.grad(lambda a: f(2.5 + 1j * a))(0.2)
        fd_im = _central(lambda a: f(2.5 + 1j * a), 0.2, 1e-4)
        assert abs(g_im - fd_im) < 1e-6 * abs(fd_im)


def test_2d_drude_parameter_gradient_matches_central_differences():
    def f(wp):
        m = materials.Drude(1.0, omega_p=wp, gamma=0.5)
        r = fdfd.solve_tm(
            (1.4, 1.4), 15, 1.0, fdfd.PlaneWave2D(0.0), _disk(m), pml=fdfd.SCPML(6), progress=False
        )
        return jnp.sum(fdfd.scattering_width(r, [0.0, 180.0]))

    with precision_scope():
        grad = jax.grad(f)(4.0)
        fd = _central(f, 4.0, 1e-4)
        assert abs(grad - fd) < 1e-6 * abs(fd)


@pytest.mark.slow  # eight 3-D Krylov solves (~60 s on a busy 2-core CPU)
def test_3d_material_eps_gradient_matches_central_differences():
    def f(e):
        sc = scene.Scene(
            [scene.Object(geometry.Sphere(), materials.Constant.from_permittivity(e), size=0.25)]
        )
        wave = fdfd.PlaneWave3D((0, 0, 1), (1, 0, 0))
        solver = fdfd.Iterative(QMR(rtol=1e-11, maxiter=20000))
        r = fdfd.solve_3d((1.2, 1.2, 1.2), 6, 1.0, wave, sc, pml=fdfd.SCPML(3), solver=solver, progress=False)
        return jnp.sum(fdfd.rcs_3d(r, [0.0, 180.0], margin=1)) + fdfd.cross_sections_3d(r, margin=1)["Csca"]

    with precision_scope():
        value, grad = jax.value_and_grad(f)(2.25)
        assert abs(value - f(2.25)) < 1e-7 * abs(value)
        fd = _central(f, 2.25, 1e-3)
        assert abs(grad - fd) < 1e-5 * abs(fd)
        _, t = jax.jvp(f, (2.25,), (1.0,))  # forward mode: the tangent solve, run eagerly
        assert abs(t - grad) < 1e-9 * abs(grad)
        with pytest.raises(ConfigError, match="jax.jvp"):  # jacfwd is a vmap: refused, naming jvp
            jax.jacfwd(f)(2.25)


def test_traced_scene_refusals_name_the_alternative():
    with precision_scope():
        with pytest.raises(ConfigError, match="solver='auto'"):
            jax.grad(
                lambda e: jnp.abs(
                    fdfd.solve_tm(
                        (1.4, 1.4),
                        15,
                        1.0,
                        fdfd.PlaneWave2D(0.0),
                        _disk(materials.Constant.from_permittivity(e)),
                        pml=fdfd.SCPML(6),
                        solver="device",
                        progress=False,
                    ).Ez[10, 10]
                )
            )(2.0)
        with pytest.raises(ConfigError, match="staircase"):  # TE subpixel at an oblique interface
            jax.grad(lambda e: _width(e, fdfd.solve_te, "subpixel"))(2.0)


SCRIPT = r"""
import json, jax, jax.numpy as jnp
from emjax import fdfd, geometry, materials, scene
assert not jax.config.jax_enable_x64

def f(e):
    sc = scene.Scene([scene.Object(geometry.Disk(), materials.Constant.from_permittivity(e), size=0.6)])
    r = fdfd.solve_tm((1.4, 1.4), 15, 1.0, fdfd.PlaneWave2D(30.0), sc, pml=fdfd.SCPML(6), progress=False)
    return jnp.sum(fdfd.scattering_width(r, [0.0, 100.0, 180.0]))

v, g = jax.value_and_grad(f)(2.5)
print(json.dumps({"value": float(v), "grad": float(g), "dtype": str(g.dtype)}))
"""


def test_material_gradient_in_a_32bit_session():
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    env["PYTHONPATH"] = os.path.join(os.path.dirname(__file__), "..", "..", "src")
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["dtype"] == "float32"
    with precision_scope():
        ref = jax.grad(_width)(2.5)
    assert abs(got["grad"] - ref) < 1e-3 * abs(ref)


@pytest.mark.slow  # 20-30 s: the fast suite keeps the gradient checks
@pytest.mark.parametrize("solve,averaging", [(fdfd.solve_tm, "subpixel"), (fdfd.solve_te, "staircase")])
def test_2d_forward_mode_jit_and_vmap_through_the_scene_solve(solve, averaging):
    """jax.jvp and jax.jacfwd equal jax.grad; jax.jit of the gradient and jax.vmap over a
    batch of permittivities (values and gradients) equal the one-by-one calls."""
    f = lambda e: _width(e, solve, averaging)  # noqa: E731
    with precision_scope():
        g = jax.grad(f)(2.5)
        _, t = jax.jvp(f, (2.5,), (1.0,))
        assert abs(t - g) < 1e-10 * abs(g)
        assert abs(jax.jacfwd(f)(2.5) - g) < 1e-10 * abs(g)
        # jitted inside precision_scope (64-bit by context, not globally) TM's differs by
        # ~3e-8 relative (measured; with jax_enable_x64 set globally, by rounding only)
        assert abs(jax.jit(jax.grad(f))(2.5) - g) < 1e-6 * abs(g)
        batch = jnp.array([2.0, 2.5])
        values = jax.vmap(f)(batch)
        grads = jax.vmap(jax.grad(f))(batch)
        assert abs(values[0] - f(2.0)) < 1e-10 * abs(values[0])
        assert abs(grads[1] - g) < 1e-10 * abs(g)
