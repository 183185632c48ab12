"""Shape a dielectric box for the largest backscatter, with 3-D FDFD gradients.

    python examples/fdfd_backscatter_box.py [--out out/fdfd_backscatter_box] [--steps 10]
                                            [--resolution 12]

A plane wave (wavelength 1) travels along +z, polarized along x, onto a dielectric box
(side ratios 1 : 0.5 : 0.8) at the origin. The objective is the monostatic radar cross
section, sigma(180 deg) over the wavelength squared, from ``fdfd.rcs_3d``. Its gradient with
respect to the box's size, its tilt about y (degrees) and its permittivity goes through the
user's own calls: an ``emjax.scene`` with a traced ``Object``, ``fdfd.solve_3d`` (subpixel
averaging as JAX functions of the geometry, one adjoint solve per gradient) and ``rcs_3d``.
optax's Adam (``pip install optax``, or emjax's ``examples`` extra) climbs it from size 0.4,
tilt 40 deg and eps 2, keeping 0.2 <= size <= 0.8, 0 <= tilt <= 90 and 1.5 <= eps <= 6.
Writes ``backscatter.png`` (the design before and after, the objective's history) and
``history.json`` into ``--out``.

A new set of interface nodes (the box's surface crossing a node) compiles the permittivity's
JAX functions again: seconds on a GPU, longer on a CPU.

Measured on an H100 (16 steps, resolution 16, 40.7 s with the compiles; the figure is
``examples/figures/fdfd_backscatter_box.png``): sigma(180) / wavelength^2 rises from 0.0125 to
0.0907 (7.3x): eps climbs to 4.67, the tilt settles near 20 deg and the size near 0.38,
where the objective levels off.
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

from emjax import fdfd, geometry, scene
from emjax.backend import precision_scope

RATIOS = (0.5, 0.8)  # y / x and z / x
BOUNDS = ((0.2, 0.8), (0.0, 90.0), (1.5, 6.0))
SCALE = np.array([1.0, 100.0, 4.0])  # each parameter's step size to Adam: size, tilt, eps


def backscatter(p, resolution: float):
    """sigma(180 deg) / wavelength^2 of the box (size p[0], tilt p[1] degrees, eps p[2])."""
    box = scene.Object(
        geometry.Box(*RATIOS), p[2], center=(0.0, 0.0, 0.0), size=p[0], rotation=(0.0, p[1], 0.0)
    )
    wave = fdfd.PlaneWave3D((0, 0, 1), (1, 0, 0))
    r = fdfd.solve_3d(
        (1.6, 1.6, 1.6), resolution, 1.0, wave, scene.Scene([box]), pml=fdfd.SCPML(6), progress=False
    )
    return fdfd.rcs_3d(r, [180.0], margin=2)[0]


def optimize(n_steps: int, resolution: float, lr: float = 0.08, start=(0.4, 40.0, 2.0)) -> dict:
    import optax

    opt = optax.adam(optax.cosine_decay_schedule(lr, n_steps))
    scale = jnp.asarray(SCALE)
    u = jnp.asarray(start) / scale  # Adam works on the scaled parameters
    state = opt.init(u)
    lo = jnp.asarray([b[0] for b in BOUNDS]) / scale
    hi = jnp.asarray([b[1] for b in BOUNDS]) / scale
    vg = jax.value_and_grad(lambda v: backscatter(v * scale, resolution))
    hist, params, t0 = [], [], time.perf_counter()
    for i in range(n_steps):
        value, g = vg(u)
        p = [float(v) for v in u * scale]
        hist.append(float(value))
        params.append(p)
        print(
            f"step {i:3d}  sigma/lambda^2 {float(value):.5f}  size {p[0]:.4f}  "
            f"tilt {p[1]:.2f}  eps {p[2]:.3f}",
            flush=True,
        )
        updates, state = opt.update(-g, state, u)  # ascend
        u = jnp.clip(optax.apply_updates(u, updates), lo, hi)
    final = float(backscatter(u * scale, resolution))
    return dict(
        rcs=hist + [final],
        params=params + [[float(v) for v in u * scale]],
        start=list(start),
        seconds=time.perf_counter() - t0,
        resolution=resolution,
    )


def plot(r: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(11, 4), constrained_layout=True)
    for (size, tilt, eps), style, label in (
        (r["start"], "C1--", "start"),
        (r["params"][-1], "C0-", "designed"),
    ):
        hx, hz = size / 2, size * RATIOS[1] / 2  # the box's x-z section, turned about y
        c, s = np.cos(np.radians(tilt)), np.sin(np.radians(tilt))
        corners = np.array([[-hx, -hz], [hx, -hz], [hx, hz], [-hx, hz], [-hx, -hz]])
        xz = corners @ np.array([[c, -s], [s, c]])
        ax[0].plot(
            xz[:, 1], xz[:, 0], style, label=f"{label}: size {size:.3f}, tilt {tilt:.1f}, eps {eps:.2f}"
        )
    ax[0].annotate("", xy=(-0.45, 0.55), xytext=(-0.75, 0.55), arrowprops=dict(arrowstyle="->"))
    ax[0].text(-0.78, 0.6, "plane wave")
    ax[0].set_aspect("equal")
    ax[0].set_xlim(-0.8, 0.8)
    ax[0].set_ylim(-0.7, 0.7)
    ax[0].set_xlabel("z (wavelengths)")
    ax[0].set_ylabel("x")
    ax[0].legend(fontsize=8, loc="lower left")
    ax[1].plot(r["rcs"], "C0.-")
    ax[1].set_xlabel("Adam step")
    ax[1].set_ylabel("backscatter RCS / wavelength^2")
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="out/fdfd_backscatter_box", help="output folder (created)")
    ap.add_argument("--steps", type=int, default=10, help="optimizer steps")
    ap.add_argument("--resolution", type=float, default=12.0, help="cells per wavelength")
    args = ap.parse_args(argv)
    if args.steps < 1 or args.resolution < 6:
        print("error: --steps must be >= 1 and --resolution >= 6", file=sys.stderr)
        return 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with precision_scope():
        r = optimize(args.steps, args.resolution)
    print(
        f"sigma/lambda^2 {r['rcs'][0]:.5f} -> {r['rcs'][-1]:.5f} (size, tilt, eps: {r['start']} -> "
        f"{[round(v, 4) for v in r['params'][-1]]}) in {r['seconds']:.1f} s (compiles included)"
    )
    plot(r, out / "backscatter.png")
    (out / "history.json").write_text(json.dumps(r))
    print(f"wrote {out / 'backscatter.png'}, {out / 'history.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
