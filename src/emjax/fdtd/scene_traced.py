"""A physical :class:`~emjax.fdtd.Simulation` whose scene holds traced material values
(``jax.grad`` over a dielectric's eps or index, or a Drude/Lorentz medium's ``eps_inf`` and
pole parameters): the cell-index materials as JAX functions of them.

The rasterization (which node sees which material) is geometry and stays NumPy; the
per-node permittivities ``eps`` (3, nx, ny, nz) are gathered from a JAX table of the
materials' values, the dispersive medium goes to the step with its traced poles (its
coefficients are then JAX, emjax.fdtd.dispersive). The run is then a traced
GridSimulation (:func:`emjax.fdtd.run`: the hand-written adjoint for dielectrics, JAX's
reverse mode of the checkpointed loop with poles). The same arrays as
:func:`emjax.fdtd.scene_raster.materials` with ``averaging="staircase"`` (per node rather
than the cell array plus a box of differing nodes: the same update).

Subpixel averaging (Kottke's interface tensors, the poles' interface mixtures) is NumPy
here: a traced material with ``averaging="subpixel"`` is refused in one line naming
``averaging="staircase"``; so is a traced complex permittivity (no time-domain model).
"""

from __future__ import annotations

import numpy as np

from ..errors import ConfigError
from ..materials import Constant, Dispersive, DrudePole, LorentzPole, has_tracer, is_traced

__all__ = ["traced_scene", "materials_traced"]


def traced_scene(scene) -> bool:
    return scene is not None and any(has_tracer(m) for m in scene.materials)


def _value(m):
    """The real permittivity of a dielectric (a number or a Constant), traced or not."""
    import jax.numpy as jnp

    from ..materials import Material

    if isinstance(m, Material) and not isinstance(m, Constant):
        raise ConfigError(
            f"FDTD cannot step material {m!r}: use real eps >= 1, materials.Drude/Lorentz, or scene.PEC"
        )
    v = m.m**2 if isinstance(m, Constant) else m
    if is_traced(v):
        if jnp.iscomplexobj(v):
            raise ConfigError(
                "FDTD: a traced complex permittivity has no time-domain model; trace a real eps "
                "(materials.Constant.from_permittivity of a real value) or a Drude/Lorentz parameter"
            )
        return v
    z = complex(v)
    if z.imag != 0:
        raise ConfigError(
            "FDTD: a complex permittivity has no time-domain model; fit it with materials.Drude/Lorentz"
        )
    if z.real < 1:
        raise ConfigError(
            f"FDTD: permittivity {z.real} < 1: give metals as materials.Drude(...) or scene.PEC"
        )
    return z.real


def materials_traced(sim, tf=None) -> dict:
    """Keyword arguments ``eps``, ``subpixel``, ``dispersive``, ``pec`` for GridSimulation,
    ``eps`` a JAX array of the scene's traced materials (module docstring)."""
    import jax.numpy as jnp

    from ..scene import PEC, rasterize

    if sim.averaging != "staircase":
        raise ConfigError(
            "FDTD: jax.grad through a material object's parameters (Constant, Drude, Lorentz) needs "
            'averaging="staircase": set Simulation(averaging="staircase"), or give a dielectric\'s '
            "permittivity as a plain (traced) number, which subpixel averaging differentiates"
        )
    mats = sim.scene.materials
    disp = [i for i, m in enumerate(mats) if isinstance(m, Dispersive)]
    if len(disp) > 1:
        raise ConfigError("FDTD: at most one Drude/Lorentz material per scene (this version)")
    for i in disp:
        if not all(isinstance(p, (DrudePole, LorentzPole)) for p in mats[i].poles):
            raise ConfigError(f"FDTD cannot step material {mats[i]!r}: use materials.Drude/Lorentz")
    is_pec = np.array([m is PEC for m in mats])
    lut = jnp.stack(
        [
            jnp.asarray(1.0) if (m is PEC or i in disp) else jnp.asarray(_value(m), float)
            for i, m in enumerate(mats)
        ]
    )
    r = rasterize(sim.scene, sim.grid.shape, sim.grid.dx, sim.origin, averaging="staircase")
    out = {"eps": jnp.stack([lut[lab] for lab in r.label]), "subpixel": None}
    pec = np.stack([is_pec[lab] for lab in r.label])
    if np.any(pec):
        out["pec"] = pec
    if disp:
        w = np.stack([(lab == disp[0]).astype(float) for lab in r.label])
        if np.any(w):
            out["dispersive"] = (mats[disp[0]], w)
    return out
