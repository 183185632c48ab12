"""Design a thin-film stack that speeds up a dipole's emission, with layered gradients.

    python examples/layered_film_emission.py [--out out/layered_film_emission] [--steps 40]

A horizontal (x) dipole in air 0.1 wavelengths above a stack of four films, TiO2 (eps
5.76) / SiO2 (2.1) / TiO2 / SiO2, on glass (2.25). Its emission rate relative to free
space (the Purcell factor, from the local density of states) is

    Gamma / Gamma_0 = 1 + Im G_xx^scat(r0, r0) / (k0 / 6 pi),

with G^scat the reflected part of the stack's Green tensor at the dipole
(:func:`emjax.layered.green_tensor`, ``part="scattered"``). The objective: maximize it over
the four thicknesses, each kept in [0.02, 0.6] wavelengths, by optax's Adam on the gradient
``jax.grad`` takes through the Sommerfeld integrals (``pip install optax``, or emjax's
``examples`` extra). The rate counts all the power the dipole gives: to the far field in
air and in the glass, and to the films' guided modes (the stack is lossless). Writes
``design.png`` (the stack before and after, and the objective's history) and
``history.json`` into ``--out``.

Measured on the 2-core box (40 steps, 29 s with the traced integrand's compilation): from
the start's 0.747 (thicknesses 0.10, 0.20, 0.10, 0.20 wavelengths) the rate rises to 1.301
(0.208, 0.172, 0.106, 0.178): a 1.74x faster emission from thicknesses alone.
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

from emjax import layered
from emjax.backend import precision_scope

WAVELENGTH = 1.0
EPS = [1.0, 5.76, 2.1, 5.76, 2.1, 2.25]  # air, TiO2, SiO2, TiO2, SiO2, glass
SOURCE = (0.0, 0.0, 0.1)
BOUNDS = (0.02, 0.6)


def rate(d):
    """Gamma / Gamma_0 of the x dipole above the films of thicknesses ``d``."""
    stack = layered.Stack(eps=EPS, thickness=list(d), z_top=0.0)
    G = layered.green_tensor(stack, WAVELENGTH, SOURCE, np.array([SOURCE]), part="scattered", progress=False)
    k0 = 2 * np.pi / WAVELENGTH
    return 1.0 + jnp.imag(G[0, 0, 0]) / (k0 / (6 * np.pi))


def optimize(steps: int, lr: float = 0.02, start=(0.10, 0.20, 0.10, 0.20)) -> dict:
    import optax

    with precision_scope():
        opt = optax.adam(optax.cosine_decay_schedule(lr, steps))
        d = jnp.asarray(start, jnp.float64)
        state = opt.init(d)
        hist, params = [], []
        vg = jax.value_and_grad(rate)
        t0 = time.perf_counter()
        for _ in range(steps):
            value, g = vg(d)
            hist.append(float(value))
            params.append([float(v) for v in d])
            updates, state = opt.update(-g, state, d)  # ascend
            d = jnp.clip(optax.apply_updates(d, updates), *BOUNDS)
        final = float(rate(d))
        seconds = time.perf_counter() - t0
    return dict(
        rate=hist + [final], thickness=params + [[float(v) for v in d]], start=list(start), seconds=seconds
    )


def plot(r: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(11, 4), constrained_layout=True)
    colors = {5.76: "C3", 2.1: "C0"}
    for i, d in enumerate((r["start"], r["thickness"][-1])):
        z = 0.0
        for eps, t in zip(EPS[1:-1], d):
            ax[0].bar(i, t, bottom=-z - t, color=colors[eps], edgecolor="k", width=0.6)
            z += t
        ax[0].bar(i, 0.3, bottom=-z - 0.3, color="0.85", edgecolor="k", width=0.6)
        ax[0].plot([i], [SOURCE[2]], "k*", ms=12)
    ax[0].set_xticks([0, 1], ["start", "designed"])
    ax[0].set_ylabel("z (wavelengths); star: the dipole")
    ax[0].set_title("TiO2 (red) / SiO2 (blue) on glass (grey)")
    ax[1].plot(r["rate"], "C0.-")
    ax[1].set_xlabel("Adam step")
    ax[1].set_ylabel("emission rate / free space")
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="out/layered_film_emission", help="output folder (created)")
    ap.add_argument("--steps", type=int, default=40)
    args = ap.parse_args(argv)
    if args.steps < 1:
        print("error: --steps must be >= 1", file=sys.stderr)
        return 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    r = optimize(args.steps)
    for i, (v, d) in enumerate(zip(r["rate"], r["thickness"])):
        print(f"step {i:3d}  rate {v:.5f}  thicknesses " + ", ".join(f"{t:.4f}" for t in d))
    print(f"rate {r['rate'][0]:.4f} -> {r['rate'][-1]:.4f} in {r['seconds']:.1f} s (compile included)")
    plot(r, out / "design.png")
    (out / "history.json").write_text(json.dumps(r))
    print(f"wrote {out / 'design.png'}, {out / 'history.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
