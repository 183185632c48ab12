"""jax.grad (and forward mode) of a scene's material values through the physical FDTD API:
``fdtd.run(fdtd.Simulation(scene=...)).cross_sections()`` with a dielectric's eps or a
Drude pole's plasma frequency traced, against central differences of the same concrete
runs; and the refusal of what is not traced yet."""

import jax
import jax.numpy as jnp
import pytest

from emjax import ConfigError, fdtd, geometry, materials, scene
from emjax.backend import precision_scope


def _sim(material, averaging="staircase"):
    radius, res = 0.2, 10
    box = 2 * radius + 8 / res
    return fdtd.Simulation(
        size=(box + 12 / res,) * 3,
        resolution=res,
        scene=scene.Scene([scene.Object(geometry.Sphere(), material, size=2 * radius)]),
        averaging=averaging,
        sources=[fdtd.PlaneWaveSource((0, 0, 0), (box,) * 3, waveform=fdtd.GaussianPulse(1.0, 0.5))],
        monitors=[fdtd.CrossSections([1.0])],
        precision="double",
    )


def _eps_loss(e):
    cs = fdtd.run(_sim(materials.Constant.from_permittivity(e)), until=6, progress=False).cross_sections()
    return jnp.sum(cs["Csca"])


def _drude_loss(wp):
    m = materials.Drude(1.0, omega_p=wp, gamma=0.5)
    cs = fdtd.run(_sim(m), until=6, progress=False).cross_sections()
    return jnp.sum(cs["Csca"] + cs["Cabs"])


@pytest.mark.slow  # each run compiles its loop (~60 s on a busy 2-core CPU)
@pytest.mark.parametrize("loss,x0", [(_eps_loss, 3.0), (_drude_loss, 6.0)])
def test_material_gradient_matches_central_differences(loss, x0):
    with precision_scope():
        value, grad = jax.value_and_grad(loss)(x0)
        assert abs(value - loss(x0)) < 1e-12 * abs(value)  # the traced run is the concrete one
        h = 1e-4 * x0
        fd = (loss(x0 + h) - loss(x0 - h)) / (2 * h)
        assert abs(grad - fd) < 1e-6 * abs(fd)


@pytest.mark.slow
def test_forward_mode_jit_and_vmap_equal_reverse_mode():
    """jax.jvp and jax.jacfwd equal jax.grad; jax.jit of the gradient (cross_sections()
    inside a jitted loss) and jax.vmap over two permittivities equal the plain calls."""
    with precision_scope():
        g = jax.grad(_eps_loss)(3.0)
        _, t = jax.jvp(_eps_loss, (3.0,), (1.0,))
        assert abs(t - g) < 1e-10 * abs(g)
        assert abs(jax.jacfwd(_eps_loss)(3.0) - g) < 1e-10 * abs(g)
        assert abs(jax.jit(jax.grad(_eps_loss))(3.0) - g) < 1e-9 * abs(g)
        grads = jax.vmap(jax.grad(_eps_loss))(jnp.array([2.0, 3.0]))
        assert abs(grads[1] - g) < 1e-10 * abs(g)


def test_subpixel_with_a_traced_material_is_refused_naming_staircase():
    with precision_scope():
        with pytest.raises(ConfigError, match="staircase"):
            jax.grad(
                lambda e: jnp.sum(
                    fdtd.run(
                        _sim(materials.Constant.from_permittivity(e), "subpixel"), until=1, progress=False
                    ).cross_sections()["Csca"]
                )
            )(3.0)


SCRIPT_32 = r"""
import json, jax, jax.numpy as jnp
from emjax import ConfigError, fdtd, geometry, materials, scene
assert not jax.config.jax_enable_x64

def sim(wp, precision):
    radius, res = 0.2, 10
    box = 2 * radius + 8 / res
    return fdtd.Simulation(
        size=(box + 12 / res,) * 3, resolution=res, averaging="staircase", precision=precision,
        scene=scene.Scene([scene.Object(geometry.Sphere(), materials.Drude(1.0, omega_p=wp, gamma=0.5),
                                        size=0.4)]),
        sources=[fdtd.PlaneWaveSource((0, 0, 0), (box,) * 3, waveform=fdtd.GaussianPulse(1.0, 0.5))],
        monitors=[fdtd.CrossSections([1.0])],
    )

def loss(wp, precision="single"):
    cs = fdtd.run(sim(wp, precision), until=6, progress=False).cross_sections()
    return jnp.sum(cs["Csca"] + cs["Cabs"])

g = jax.grad(loss)(6.0)
try:
    jax.grad(lambda wp: loss(wp, "double"))(6.0)
    refusal = ""
except ConfigError as e:
    refusal = str(e)
print(json.dumps({"grad": float(g), "dtype": str(g.dtype), "refusal": refusal}))
"""


@pytest.mark.slow
def test_drude_gradient_in_a_32bit_session():
    """Without JAX_ENABLE_X64 a single-precision run's gradient works (float32, equal to the
    float64 one to 1e-3); a double-precision one is refused in one line saying what to set."""
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    env["PYTHONPATH"] = os.path.join(os.path.dirname(__file__), "..", "..", "src")
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT_32], capture_output=True, text=True, env=env, timeout=900
    )
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["dtype"] == "float32"
    assert "jax_enable_x64" in got["refusal"]
    with precision_scope():
        ref = jax.grad(_drude_loss)(6.0)
    assert abs(got["grad"] - ref) < 1e-3 * abs(ref)
