"""The 2-D near-to-far-field sum of emjax.fdfd.scattering_width (Horner's rule in the phase
step along each side of the contour) against the same contour integral written with one
exponential per sample and angle (the form it replaced)."""

import math

import numpy as np

from emjax import fdfd, geometry, scene


def _direct(result, phi_deg, pml, margin=3):
    u, x, y = result.Es, result.x, result.y
    i0, i1 = pml + margin, len(x) - 1 - pml - margin
    j0, j1 = pml + margin, len(y) - 1 - pml - margin
    dx = x[1] - x[0]
    k = 2 * math.pi * result.frequency
    phi = np.deg2rad(np.asarray(phi_deg, float))
    rhat = np.stack([np.cos(phi), np.sin(phi)], -1)

    def trap(n):
        w = np.ones(n)
        w[0] = w[-1] = 0.5
        return w * dx

    X, Y = x[i0 : i1 + 1], y[j0 : j1 + 1]
    sides = [
        (np.stack([X, np.full(len(X), y[j0])], -1), u[i0 : i1 + 1, j0],
         -(u[i0 : i1 + 1, j0 + 1] - u[i0 : i1 + 1, j0 - 1]) / (2 * dx), (0.0, -1.0)),
        (np.stack([X, np.full(len(X), y[j1])], -1), u[i0 : i1 + 1, j1],
         (u[i0 : i1 + 1, j1 + 1] - u[i0 : i1 + 1, j1 - 1]) / (2 * dx), (0.0, 1.0)),
        (np.stack([np.full(len(Y), x[i0]), Y], -1), u[i0, j0 : j1 + 1],
         -(u[i0 + 1, j0 : j1 + 1] - u[i0 - 1, j0 : j1 + 1]) / (2 * dx), (-1.0, 0.0)),
        (np.stack([np.full(len(Y), x[i1]), Y], -1), u[i1, j0 : j1 + 1],
         (u[i1 + 1, j0 : j1 + 1] - u[i1 - 1, j0 : j1 + 1]) / (2 * dx), (1.0, 0.0)),
    ]  # fmt: skip
    total = np.zeros(len(phi), complex)
    for pos, val, dn, normal in sides:
        w = trap(len(val))
        phase = np.exp(-1j * k * pos @ rhat.T)
        total += (dn * w) @ phase + 1j * k * (rhat @ np.asarray(normal)) * ((val * w) @ phase)
    return np.abs(total) ** 2 / (4 * k)


def test_horner_sum_equals_direct_exponentials():
    """An off-centre disk (eps = 4) and rectangle (eps = 2 + 0.3i), two incidences, 721
    angles, two contours: measured 3.2e-15 of sigma's peak apart, 3.1e-14 relative at any
    angle (rounding); bounds 1e-13 and 1e-12."""
    sc = scene.Scene(
        [
            scene.Object(geometry.Disk(), 4.0, size=0.6, center=(0.3, -0.2, 0.0)),
            scene.Object(geometry.Rectangle(1.5), 2.0 + 0.3j, size=0.4, center=(-0.4, 0.35, 0.0)),
        ]
    )
    phi = np.linspace(0, 360, 721)
    for r in fdfd.solve_tm(
        (2.6, 2.3), 16, 1.0, [fdfd.PlaneWave2D(0.0), fdfd.PlaneWave2D(117.0)], scene=sc, pml=fdfd.SCPML(8)
    ):
        for margin in (3, 5):
            new = fdfd.scattering_width(r, phi, margin=margin)
            ref = _direct(r, phi, 8, margin)
            assert np.abs(new - ref).max() < 1e-13 * ref.max()
            assert np.all(np.abs(new - ref) <= 1e-12 * ref)
