"""A directional coupler in the FDTD: S-parameters from ports against the coupled-mode estimate.

Two 0.5 um silicon-nitride strips in silica (2-D, invariant along z; the mode with E along
z) run side by side with a 0.25 um gap over a straight length of 2 um; cosine S-bends 8 um
long take them 1.9 um apart at the four ports, where each port sees one guide alone. Port
1 (upper left) is excited; port 3 (upper right) is the through port, port 4 (lower right)
the cross port and port 2 (lower left) the isolated one.

The coupled-mode estimate: the power crossing over is ``sin^2(Phi)``, with ``Phi`` the sum
of ``kappa = (beta_even - beta_odd) / 2`` along the device, the two lowest supermodes of
each cross-section solved by ``emjax.modes`` (the straight section's, and every column of
the S-bends, where the coupling dies out as the guides part). The supermodes are solved on
the FDTD's own nodes and time step (``beta`` as the leapfrog grid propagates it), so the
estimate and the FDTD see the same staircased guides and what differs between them is
coupled-mode theory's own error: measured, the straight section's coupling is right to
0.6% and the S-bends' local estimate is 10-15% short (the cross power 0.06-0.07 low; see
docs/ports.md). The staircased S-bends radiate 4-5% at 20 cells per um.

Figure waveguide_coupler.png in --out (default out/waveguide_coupler; the docs' copy is
examples/figures/waveguide_coupler.png: ``--out examples/figures`` regenerates it): a
snapshot of E_z at the centre frequency and |S|^2 over frequency with the estimate. About a
minute on a 2-core CPU.

    python examples/waveguide_coupler.py
"""

from __future__ import annotations

import math
import os

# the mode solves are small sparse eigenproblems: BLAS threads only get in each other's way
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from emjax import fdtd, geometry, modes, scene

FREQS = 1 / np.linspace(1.65, 1.45, 9)  # 1 / wavelength (1/um)
UNTIL = 150.0  # each run's time (um / c): the pulse has left every port by then


@dataclass(frozen=True)
class Coupler:
    """The device (lengths in um): two strips of index ``n_core`` and ``width`` in a
    cladding of ``n_clad``, ``gap`` apart over the straight ``length``, each led out by a
    cosine S-bend of ``bend`` length (``bend_out`` on the output side, x > 0, if given) and
    lateral ``offset``, then ``feed`` of straight guide to its port. Ports are
    ``port_width`` across; the grid has ``resolution`` cells per um and a CPML of ``pml``
    cells."""

    n_core: float = 1.996  # Si3N4
    n_clad: float = 1.444  # SiO2
    width: float = 0.5
    gap: float = 0.25
    length: float = 2.0
    bend: float = 8.0
    bend_out: float | None = None
    offset: float = 0.825
    feed: float = 0.4
    port_width: float = 2.4
    margin: float = 0.3
    resolution: float = 20
    pml: int = 12

    def centerline(self, x):
        """The upper guide's centre ``y(x)`` and slope."""
        x = np.asarray(x, float)
        bend = np.where(x > 0, self.bends[1], self.bends[0])
        s = np.clip((np.abs(x) - self.length / 2) / bend, 0.0, 1.0)
        y = (self.gap + self.width) / 2 + self.offset * (1 - np.cos(np.pi * s)) / 2
        slope = np.where((s > 0) & (s < 1), self.offset * np.pi / (2 * bend) * np.sin(np.pi * s), 0.0)
        return y, slope * np.sign(x)

    @property
    def bends(self) -> tuple:
        """The S-bends' lengths on the input (x < 0) and the output side."""
        return (self.bend, self.bend if self.bend_out is None else self.bend_out)

    def vertices(self, sign: int, reach: float = 50.0) -> np.ndarray:
        """One guide's outline (``sign`` +1 upper, -1 lower): the centre line offset by half
        the width along its normal, straight out to ``|x| = reach``."""
        t = np.linspace(0, 1, 101)
        x = np.concatenate(
            [
                [-reach],
                -self.length / 2 - self.bends[0] * t[::-1],
                self.length / 2 + self.bends[1] * t,
                [reach],
            ]
        )
        y, slope = self.centerline(x)
        nx, ny = -slope / np.hypot(1, slope), 1 / np.hypot(1, slope)
        top = np.stack([x + nx * self.width / 2, y + ny * self.width / 2], 1)
        bottom = np.stack([x - nx * self.width / 2, y - ny * self.width / 2], 1)
        return np.concatenate([bottom, top[::-1]]) * np.array([1, sign])

    def scene(self) -> scene.Scene:
        objs = []
        for sign in (1, -1):
            v = self.vertices(sign)
            mid = (v.max(0) + v.min(0)) / 2
            poly = geometry.Polygon(vertices=v)
            objs.append(
                scene.Object(poly, self.n_core**2, size=float(np.ptp(v[:, 0])), center=(mid[0], mid[1], 0))
            )
        return scene.Scene(objs, background=self.n_clad**2)

    @property
    def port_x(self) -> tuple:
        """The input and output ports' distance from x = 0."""
        return tuple(self.length / 2 + b + self.feed for b in self.bends)

    @property
    def port_y(self) -> float:
        return (self.gap + self.width) / 2 + self.offset

    def simulation(self) -> fdtd.Simulation:
        """The 2-D simulation (staircase: the guides run into the CPML). The region's sides
        are even numbers of cells, so x = 0 and y = 0 are nodes and the grid is the device's
        mirror image about both (about x = 0 if the S-bends are alike)."""
        dx = 1 / self.resolution
        lx = 2 * (max(self.port_x) + self.margin)
        ly = 2 * (self.port_y + self.port_width / 2 + self.margin)
        lx, ly = (2 * dx * math.ceil(s / (2 * dx) - 1e-9) for s in (lx, ly))
        return fdtd.Simulation(
            size=(lx, ly, dx),
            resolution=self.resolution,
            scene=self.scene(),
            boundary=(fdtd.CPML(self.pml), fdtd.CPML(self.pml), fdtd.Periodic()),
            averaging="staircase",
        )

    def ports(self) -> list:
        """Ports 1 (upper left), 2 (lower left), 3 (upper right), 4 (lower right)."""
        (xi, xo), yp, size = self.port_x, self.port_y, (0, self.port_width, 1 / self.resolution)
        return [
            fdtd.Port("1", (-xi, yp, 0), size, "+"),
            fdtd.Port("2", (-xi, -yp, 0), size, "+"),
            fdtd.Port("3", (xo, yp, 0), size, "-"),
            fdtd.Port("4", (xo, -yp, 0), size, "-"),
        ]


def supermode_kappa(sim: fdtd.Simulation, x: float, freqs) -> np.ndarray:
    """``kappa = (beta_even - beta_odd) / 2`` (1/um) of the section at ``x`` (a column of
    the FDTD's nodes) at each frequency: the two best-guided modes with E along z from
    ``emjax.modes.solve_scene`` on the FDTD's nodes, at the frequency the leapfrog time step
    sees, each ``beta`` turned into the grid's propagation constant (as the FDTD's mode
    monitors do: :mod:`emjax.fdtd.mode_plane`)."""
    dx, dt = sim.dx, sim.grid.dt
    plane = modes.Plane((x, 0.0, 1.5 * dx), (0.0, sim.size[1], 3 * dx))
    out = []
    for f in np.atleast_1d(freqs):
        f_tilde = math.sin(math.pi * f * dt) / (math.pi * dt)
        r = modes.solve_scene(
            sim.scene,
            plane,
            sim.resolution,
            f_tilde,
            2,
            boundary="pec",
            group_index=False,
            averaging="staircase",
        )
        beta = 2 * np.pi * f_tilde * r.n_eff.real
        beta_d = 2 / dx * np.arcsin(beta * dx / 2)
        out.append((beta_d[0] - beta_d[1]) / 2)
    return np.array(out)


def coupled_mode_estimate(device: Coupler, sim: fdtd.Simulation, freqs, tail=1e-2, stride=3):
    """``(P_cross, Phi_straight, Phi_bends)`` over ``freqs``: ``P_cross = sin^2(Phi)``,
    ``Phi`` the sum of the local ``kappa dx`` over the FDTD's columns of nodes: the
    straight section's (all alike) and the S-bends' (the middle one of each ``stride`` (odd)
    columns solved and weighted ``stride dx``, one side doubled where the two sides are
    alike, until ``kappa`` falls below ``tail`` of the straight section's; what lies beyond
    adds less than ``tail`` times kappa's decay length, about 0.5 um, per side)."""
    dx = sim.dx
    k0 = supermode_kappa(sim, 0.0, freqs)
    half = int(math.floor(device.length / 2 / dx + 1e-9))  # nodes with |x| <= L / 2
    phi_bends = np.zeros_like(k0)
    alike = device.bends[0] == device.bends[1]
    for side, bend in zip((-1, 1), device.bends):
        if alike and side < 0:
            continue
        i = half + 1
        while i * dx < device.length / 2 + bend:
            k = supermode_kappa(sim, side * (i + stride // 2) * dx, freqs)  # the middle column
            phi_bends += (2 if alike else 1) * k * stride * dx
            if np.all(np.abs(k) < tail * np.abs(k0)):
                break
            i += stride
    phi_straight = k0 * (2 * half + 1) * dx
    return np.sin(phi_straight + phi_bends) ** 2, phi_straight, phi_bends


def field_map(device: Coupler, sim: fdtd.Simulation, frequency: float, until: float):
    """``(x, y, E_z)``: a snapshot at ``until`` of port 1's mode launched as a continuous
    wave at ``frequency`` (a run of its own; on a grid one cell thick along z the field
    plane normal to z is the whole grid)."""
    p = device.ports()[0]
    center = (p.center[0] - 2 * sim.dx, p.center[1], 0)
    src = fdtd.ModeSource(center, p.size, "+", 0, fdtd.ContinuousWave(frequency))
    r = fdtd.run(replace(sim, sources=(src,), monitors=()), until=until)
    (lx, hx), (ly, hy) = sim.pml_cells[0], sim.pml_cells[1]
    ez = np.asarray(r.raw.E[2, :, :, 0])[lx : sim.grid.shape[0] - hx, ly : sim.grid.shape[1] - hy]
    x = sim.origin[0] + np.arange(lx, sim.grid.shape[0] - hx) * sim.dx
    y = sim.origin[1] + np.arange(ly, sim.grid.shape[1] - hy) * sim.dx
    return x, y, ez


def main(argv=None):
    import argparse
    import time

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--out", type=Path, default=Path(__file__).resolve().parents[1] / "out" / "waveguide_coupler"
    )
    out_dir = ap.parse_args(argv).out
    t0 = time.perf_counter()
    device = Coupler()
    sim = device.simulation()
    S = fdtd.s_matrix(sim, device.ports(), FREQS, until=UNTIL, excite=["1"])
    p = np.abs(S.s[:, :, 0]) ** 2  # rows: ports 1..4
    est_freqs = FREQS[::2]
    p_cross, phi_straight, phi_bends = coupled_mode_estimate(device, sim, est_freqs)
    print(f"S-matrix column and estimate: {time.perf_counter() - t0:.0f} s")
    split = p[:, 3] / (p[:, 2] + p[:, 3])  # the share crossing over among what arrives
    heads = ("|S11|^2", "|S21|^2", "|S31|^2", "|S41|^2", "sum", "cross share")
    print(f"{'lambda':>7s} " + " ".join(f"{h:>9s}" for h in heads))
    for f, row, c in zip(FREQS, p, split):
        print(
            f"{1 / f:7.3f} {row[0]:9.2e} {row[1]:9.2e} {row[2]:9.4f} {row[3]:9.4f} {row.sum():9.3f} {c:9.4f}"
        )
    print("coupled-mode estimate sin^2(Phi), Phi = straight + bends:")
    for f, pc, a, b in zip(est_freqs, p_cross, phi_straight, phi_bends):
        print(f"{1 / f:7.3f} {pc:8.4f}  Phi {a:.4f} + {b:.4f}")
    x, y, ez = field_map(device, sim, FREQS[len(FREQS) // 2], 100.0)

    from emjax.plot import new_figure, save_figure

    fig = new_figure((8, 6.5))
    top, bottom = fig.subfigures(2, 1, height_ratios=[1, 1.25])
    ax = top.subplots()
    lim = np.abs(ez).max()
    ax.pcolormesh(x, y, ez.T, shading="auto", cmap="RdBu_r", vmin=-lim, vmax=lim)
    for sign in (1, -1):
        v = device.vertices(sign, reach=sim.size[0] / 2)
        ax.plot(*np.vstack([v, v[:1]]).T, color="k", lw=0.4, alpha=0.5)
    for port in device.ports():
        c, h = port.center, port.size[1] / 2
        ax.plot([c[0], c[0]], [c[1] - h, c[1] + h], color="c", lw=1)
        inward = 0.3 if port.direction == "+" else -0.3
        ax.annotate(port.name, (c[0] + inward, c[1] + 0.6), color="c", ha="center", fontsize=9)
    ax.set_aspect("equal")
    ax.set_xlabel("x (um)")
    ax.set_ylabel("y (um)")
    ax.set_title(f"E_z, port 1 driven at {1 / FREQS[len(FREQS) // 2]:.2f} um (continuous wave)")
    ax1, ax2 = bottom.subplots(1, 2)
    lam = 1 / FREQS
    ax1.plot(lam, p[:, 2], "o-", label="|S31|^2 through (FDTD)")
    ax1.plot(lam, p[:, 3], "s-", label="|S41|^2 cross (FDTD)")
    ax1.plot(lam, p.sum(1), "k.:", label="sum over the ports")
    ax1.plot(1 / est_freqs, p_cross, "r--", label="sin^2(Phi), supermodes")
    ax1.plot(1 / est_freqs, 1 - p_cross, "b--", label="cos^2(Phi)")
    ax1.set_xlabel("wavelength (um)")
    ax1.set_ylim(0, 1.05)
    ax1.legend(fontsize=7)
    ax2.semilogy(lam, p[:, 0], "o-", label="|S11|^2 reflected")
    ax2.semilogy(lam, p[:, 1], "s-", label="|S21|^2 isolated")
    ax2.semilogy(lam, np.maximum(1 - p.sum(1), 1e-12), "k.:", label="1 - sum (radiated)")
    ax2.set_xlabel("wavelength (um)")
    ax2.legend(fontsize=7)
    print("figure:", save_figure(fig, out_dir / "waveguide_coupler.png", dpi=110))


if __name__ == "__main__":
    main()
