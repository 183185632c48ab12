"""Shape a dielectric sphere to focus light onto a small patch, with FDTD gradients.

    python examples/fdtd_focus_sphere.py [--out out/fdtd_focus_sphere] [--steps 12]
                                         [--resolution 10]

A plane wave (a Gaussian pulse centred at frequency 1, i.e. wavelength 1) travels along +z
through a sphere of radius r and permittivity eps at the origin. The objective: the power
through a 0.3 x 0.3 patch 0.55 behind the sphere's centre at frequency 1 (a ``FluxPlane``
inside the plane wave's box, so the total field's flux), over the plane wave's intensity:
an effective area, which a lens-like sphere concentrates. ``jax.grad`` of it with respect to
(r, eps) goes through the user's own calls: an ``emjax.scene`` with a traced sphere,
``fdtd.Simulation`` and ``fdtd.run`` (subpixel averaging as JAX functions of the geometry).
optax's Adam (``pip install optax``, or emjax's ``examples`` extra) climbs it from r = 0.25,
eps = 2, keeping 0.1 <= r <= 0.45 and 1.2 <= eps <= 6. Writes ``focus.png`` (the design
before and after, the objective's history) and ``history.json`` into ``--out``.

Each step compiles the time loop again when the sphere's surface moves across a node
(tens of seconds on a CPU, a few on a GPU); run it on a GPU for more steps or a finer grid.

Measured on an H100 (12 steps, resolution 10, 106 s with the compiles): the patch's power
over the intensity rises from 0.078 (the small sphere shades the 0.09 patch a little) to
0.319, 3.5 times the patch's own area: the radius goes to its bound 0.45 (a larger lens
gathers more) and eps settles at 2.31, where the sphere's focus falls on the patch.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from emjax import fdtd, geometry, scene

PATCH = dict(center=(0.0, 0.0, 0.55), size=(0.3, 0.3, 0.0))
BOUNDS = ((0.1, 0.45), (1.2, 6.0))


def simulation(radius, eps, resolution: float):
    sphere = scene.Object(geometry.Sphere(), eps, center=(0.0, 0.0, 0.0), size=2 * radius)
    return fdtd.Simulation(
        size=(2.0, 2.0, 2.0),
        resolution=resolution,
        scene=scene.Scene([sphere]),
        sources=[
            fdtd.PlaneWaveSource(
                center=(0, 0, 0),
                size=(1.4, 1.4, 1.4),
                waveform=fdtd.GaussianPulse(frequency=1.0, bandwidth=0.5),
            )
        ],
        monitors=[fdtd.FluxPlane(**PATCH, frequencies=(1.0,), name="patch")],
        boundary=fdtd.CPML(6),
    )


def objective(p, resolution: float, steps: int):
    """Power through the patch over the incident intensity (an area, length^2)."""
    res = fdtd.run(simulation(p[0], p[1], resolution), steps, progress=False)
    return res.flux("patch")[0] / res.incident_intensity((1.0,))[0]


def optimize(n_steps: int, resolution: float, lr: float = 0.05, start=(0.25, 2.0)) -> dict:
    import optax

    time_steps = int(round(14 * resolution))  # ~14 periods of the pulse's centre frequency / 2
    opt = optax.adam(optax.cosine_decay_schedule(lr, n_steps))
    p = jnp.asarray(start, jnp.float32)
    state = opt.init(p)
    lo = jnp.asarray([b[0] for b in BOUNDS], jnp.float32)
    hi = jnp.asarray([b[1] for b in BOUNDS], jnp.float32)
    vg = jax.value_and_grad(lambda q: objective(q, resolution, time_steps))
    hist, params, t0 = [], [], time.perf_counter()
    for i in range(n_steps):
        value, g = vg(p)
        hist.append(float(value))
        params.append([float(v) for v in p])
        print(
            f"step {i:3d}  area {float(value):.5f}  r = {float(p[0]):.4f}  eps = {float(p[1]):.4f}",
            flush=True,
        )
        updates, state = opt.update(-g * jnp.asarray([1.0, 0.1]), state, p)  # ascend; eps on its own scale
        p = jnp.clip(optax.apply_updates(p, updates), lo, hi)
    final = float(objective(p, resolution, time_steps))
    return dict(
        area=hist + [final],
        params=params + [[float(v) for v in p]],
        start=list(start),
        seconds=time.perf_counter() - t0,
        resolution=resolution,
        time_steps=time_steps,
    )


def plot(r: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(11, 4), constrained_layout=True)
    for (rad, eps), style, label in ((r["start"], "C1--", "start"), (r["params"][-1], "C0-", "designed")):
        t = np.linspace(0, 2 * np.pi, 200)
        ax[0].plot(rad * np.cos(t), rad * np.sin(t), style, label=f"{label}: r = {rad:.3f}, eps = {eps:.2f}")
    c, s = PATCH["center"], PATCH["size"]
    ax[0].plot([c[2], c[2]], [-s[0] / 2, s[0] / 2], "k-", lw=4, label="patch")
    ax[0].annotate("", xy=(-0.6, 0.5), xytext=(-0.95, 0.5), arrowprops=dict(arrowstyle="->"))
    ax[0].text(-0.95, 0.55, "plane wave")
    ax[0].set_aspect("equal")
    ax[0].set_xlim(-1, 1)
    ax[0].set_ylim(-0.7, 0.7)
    ax[0].set_xlabel("z (wavelengths)")
    ax[0].set_ylabel("x")
    ax[0].legend(fontsize=8, loc="lower left")
    ax[1].plot(r["area"], "C0.-")
    ax[1].set_xlabel("Adam step")
    ax[1].set_ylabel("power through the patch / intensity")
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="out/fdtd_focus_sphere", help="output folder (created)")
    ap.add_argument("--steps", type=int, default=12, help="optimizer steps")
    ap.add_argument("--resolution", type=float, default=10.0, help="cells per wavelength")
    args = ap.parse_args(argv)
    if args.steps < 1 or args.resolution < 6:
        print("error: --steps must be >= 1 and --resolution >= 6", file=sys.stderr)
        return 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    r = optimize(args.steps, args.resolution)
    print(
        f"area {r['area'][0]:.5f} -> {r['area'][-1]:.5f} (r, eps: {r['start']} -> "
        f"{[round(v, 4) for v in r['params'][-1]]}) in {r['seconds']:.1f} s (compiles included)"
    )
    plot(r, out / "focus.png")
    (out / "history.json").write_text(json.dumps(r))
    print(f"wrote {out / 'focus.png'}, {out / 'history.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
