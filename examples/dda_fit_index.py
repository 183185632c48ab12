"""Fit a particle's refractive index and size to a measured phase function with DDA gradients.

    python examples/dda_fit_index.py [--out out/dda_fit_index] [--steps 60] [--grid 12]

The "measurement", as a polar nephelometer takes it: the phase function S11(theta) and the
degree of linear polarization -S12/S11 of a sphere of size parameter x = 2 (radius 0.318
wavelengths) and m = 1.5 + 0.02i from the Mie series (Bohren & Huffman's BHMIE, written out
below), at 19 angles 0..180 deg, with 2% multiplicative Gaussian noise on S11 and 0.01 on
the polarization. The model is the user's own call: ``dda.solve`` of a ``DDAProblem`` (a
sphere of ``--grid`` dipoles across, LDR) whose ``m = n + ik`` and ``eq_rad`` are JAX
tracers; the lattice is held fixed and its spacing scales with the size. The loss is the
mean squared log ratio of the model's and the measured S11 plus the mean squared difference
of the polarizations; its gradient with respect to (n, k, x) comes from ``jax.grad``
through the solve (adjoint QMR solves, no differentiation through the iterations). The
optimizer is optax's Adam with a cosine-decayed step (``pip install optax``, or emjax's
``examples`` extra), k kept >= 0. A phase function has several local optima in (m, x) (a
larger index at a smaller size shifts its lobes alike: from x = 1.6 Adam settles at m =
1.85, x = 1.42 with a loss 130 times the truth's), so the fit starts from m = 1.33 + 0.1i
at x = 1.3, 1.9 and 2.5 (``--starts``) and keeps the best. Prints the loss per step and
writes ``fit.png`` (measured vs fitted phase function and polarization, loss curve) and
``history.json`` into ``--out``.

Measured on the 2-core box (grid 12, 60 steps per start, ~11 s each after compiling): from
x = 2.5 the loss falls from 0.8 to 2.5e-3 and the fit is m = 1.512 + 0.018i, x = 1.997
(true 1.5 + 0.02i, 2); the starts at 1.3 and 1.9 end at losses 0.92 and 3.9e-2. The true
values have the higher loss 7.6e-3 on this lattice: the fit is the DDA model's optimum,
moved from the truth by the lattice's discretization error (~16% in S11 near its minimum at
120 deg for 12 dipoles across) and the noise; a finer ``--grid`` moves it toward the truth.
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

from emjax import dda, geometry, krylov
from emjax.backend import precision_scope

M_TRUE = 1.5 + 0.02j
X = 2.0  # size parameter 2 pi a / wavelength
WAVELENGTH = 1.0
THETA = tuple(np.arange(0.0, 181.0, 10.0))


def mie_s1_s2(m: complex, x: float, theta_deg) -> tuple[np.ndarray, np.ndarray]:
    """Amplitude functions S1, S2 of a homogeneous sphere (Bohren & Huffman, BHMIE)."""
    mu = np.cos(np.deg2rad(np.asarray(theta_deg, dtype=float)))
    nstop = int(x + 4 * x ** (1 / 3) + 2)
    y = m * x
    nmx = int(max(nstop, abs(y))) + 16
    D = np.zeros(nmx + 1, dtype=complex)  # logarithmic derivative, downward recurrence
    for n in range(nmx, 0, -1):
        D[n - 1] = n / y - 1 / (D[n] + n / y)
    psi0, psi1 = np.cos(x), np.sin(x)
    chi0, chi1 = -np.sin(x), np.cos(x)
    xi1 = psi1 - 1j * chi1
    pi0, pi1 = np.zeros_like(mu), np.ones_like(mu)
    S1 = np.zeros_like(mu, dtype=complex)
    S2 = np.zeros_like(mu, dtype=complex)
    for n in range(1, nstop + 1):
        psi = (2 * n - 1) / x * psi1 - psi0
        chi = (2 * n - 1) / x * chi1 - chi0
        xi = psi - 1j * chi
        a = ((D[n] / m + n / x) * psi - psi1) / ((D[n] / m + n / x) * xi - xi1)
        b = ((m * D[n] + n / x) * psi - psi1) / ((m * D[n] + n / x) * xi - xi1)
        tau = n * mu * pi1 - (n + 1) * pi0
        f = (2 * n + 1) / (n * (n + 1))
        S1 += f * (a * pi1 + b * tau)
        S2 += f * (a * tau + b * pi1)
        pi0, pi1 = pi1, ((2 * n + 1) * mu * pi1 - (n + 1) * pi0) / n
        psi0, psi1, chi0, chi1, xi1 = psi1, psi, chi1, chi, xi
    return S1, S2


def measured(noise: float = 0.02, noise_pol: float = 0.01, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(S11, -S12/S11) of the Mie sphere at THETA, with noise."""
    s1, s2 = mie_s1_s2(M_TRUE, X, THETA)
    s11 = 0.5 * (np.abs(s1) ** 2 + np.abs(s2) ** 2)
    pol = 0.5 * (np.abs(s1) ** 2 - np.abs(s2) ** 2) / s11
    rng = np.random.default_rng(seed)
    return s11 * (1 + noise * rng.standard_normal(s11.shape)), pol + noise_pol * rng.standard_normal(
        pol.shape
    )


def model(n, k, x, grid: int):
    """(S11, -S12/S11) of the DDA sphere of size parameter ``x``, averaged over two
    scattering planes: the public dda.solve (traced inputs make it differentiable)."""
    prob = dda.DDAProblem(
        geometry.Sphere(),
        m=n + 1j * k,
        eq_rad=x * WAVELENGTH / (2 * np.pi),
        wavelength=WAVELENGTH,
        grid=grid,
        theta=THETA,
        phi=(0.0, 90.0),
    )
    r = dda.solve(prob, krylov.QMR(rtol=1e-8), progress=False)
    M = jnp.mean(jnp.asarray(r.mueller), axis=0)
    return M[:, 0, 0], -M[:, 0, 1] / M[:, 0, 0]


def fit(steps: int = 60, grid: int = 12, lr: float = 0.03, start=(1.33, 0.1, 1.9)) -> dict:
    """optax Adam (cosine-decayed step) on (n, k, x) of the mean squared log ratio plus the
    polarization's squared difference; returns the history and the curves."""
    import optax

    meas, meas_pol = measured()
    with precision_scope():
        target = jnp.log(jnp.asarray(meas))

        def loss(p):
            s11, pol = model(p[0], p[1], p[2], grid)
            return jnp.mean((jnp.log(s11) - target) ** 2) + jnp.mean((pol - meas_pol) ** 2)

        vg = jax.jit(jax.value_and_grad(loss))
        opt = optax.adam(optax.cosine_decay_schedule(lr, steps))
        p = jnp.asarray(start, dtype=jnp.float64)
        state = opt.init(p)
        hist, params = [], []
        t0 = time.perf_counter()
        for _ in range(steps):
            value, g = vg(p)
            hist.append(float(value))
            params.append([float(v) for v in p])
            updates, state = opt.update(g, state, p)
            p = optax.apply_updates(p, updates)
            p = p.at[1].set(jnp.maximum(p[1], 0.0))  # k >= 0
        final = float(loss(p))
        seconds = time.perf_counter() - t0
        fitted = [np.asarray(v) for v in model(p[0], p[1], p[2], grid)]
        initial = [np.asarray(v) for v in model(*start, grid)]
        s1, s2 = mie_s1_s2(M_TRUE, X, THETA)
        s11 = 0.5 * (np.abs(s1) ** 2 + np.abs(s2) ** 2)
        exact = [s11, 0.5 * (np.abs(s1) ** 2 - np.abs(s2) ** 2) / s11]
        at_true = float(loss(jnp.asarray([M_TRUE.real, M_TRUE.imag, X])))
    return dict(
        loss=hist + [final],
        params=params + [[float(v) for v in p]],
        m_fit=complex(float(p[0]), float(p[1])),
        x_fit=float(p[2]),
        m_true=M_TRUE,
        x_true=X,
        start=start,
        theta=np.asarray(THETA),
        measured=[meas, meas_pol],
        fitted=fitted,
        initial=initial,
        exact=exact,
        loss_at_true=at_true,
        seconds=seconds,
    )


def plot(r: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 3, figsize=(14, 4), constrained_layout=True)
    th = r["theta"]
    for i, (name, log) in enumerate((("S11", True), ("-S12 / S11", False))):
        a = ax[i]
        a.plot(th, r["measured"][i], "ko", label=f"measured (Mie, m = {r['m_true']:.3g}, + noise)")
        n0, k0, x0 = r["start"]
        a.plot(th, r["initial"][i], "C1--", label=f"DDA, initial m = {n0} + {k0}i, x = {x0}")
        a.plot(th, r["fitted"][i], "C0-", label=f"DDA, fitted m = {r['m_fit']:.4g}, x = {r['x_fit']:.3f}")
        if log:
            a.set_yscale("log")
        a.set_xlabel("scattering angle (deg)")
        a.set_ylabel(name)
    ax[0].legend(fontsize=8)
    ax[2].semilogy(r["loss"], "C0.-", label="loss")
    ax[2].axhline(r["loss_at_true"], color="k", ls=":", label="loss at the true m and x (DDA model)")
    ax[2].set_xlabel("Adam step")
    ax[2].set_ylabel("loss")
    ax[2].legend(fontsize=8)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="out/dda_fit_index", help="output folder (created)")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--grid", type=int, default=12, help="dipoles across the sphere")
    ap.add_argument(
        "--starts", type=float, nargs="+", default=[1.3, 1.9, 2.5], help="initial size parameters"
    )
    args = ap.parse_args(argv)
    if args.steps < 1 or args.grid < 2:
        print("error: --steps must be >= 1 and --grid >= 2", file=sys.stderr)
        return 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    runs = [fit(args.steps, args.grid, start=(1.33, 0.1, x0)) for x0 in args.starts]
    for run in runs:
        print(
            f"from x = {run['start'][2]}: loss {run['loss'][-1]:.3e}, m = {run['m_fit']:.4f}, "
            f"x = {run['x_fit']:.4f}"
        )
    r = min(runs, key=lambda run: run["loss"][-1])
    for i, (value, (n, k, x)) in enumerate(zip(r["loss"], r["params"])):
        print(f"step {i:3d}  loss {value:.4e}  m = {n:.5f} + {k:.5f}i  x = {x:.4f}")
    print(
        f"fitted m = {r['m_fit']:.5f}, x = {r['x_fit']:.4f} (true {r['m_true']}, {r['x_true']}) in "
        f"{r['seconds']:.1f} s (compile included)"
    )
    print(
        f"loss at the fit {r['loss'][-1]:.3e}, at the true m and x {r['loss_at_true']:.3e} (the DDA "
        "lattice's discretization error and the noise move the optimum along the n-k valley)"
    )
    plot(r, out / "fit.png")
    keys = ("loss", "params", "seconds")
    hist = {k: r[k] for k in keys} | {"m_fit": [r["m_fit"].real, r["m_fit"].imag], "x_fit": r["x_fit"]}
    (out / "history.json").write_text(json.dumps(hist))
    print(f"wrote {out / 'fit.png'}, {out / 'history.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
