"""emjax.modes side by side with an independent mode solver: EMpy's VFDModeSolver
(ElectroMagneticPython 2.2.3 from PyPI: Fallahkhair, Li and Murphy's vector finite
differences for H on the mesh nodes, J. Lightwave Technol. 26, 1423 (2008)).

The section: a 500 x 220 nm silicon wire (n = 3.476) in silica (n = 1.444) at 1.55 um, in a
2.0 x 1.6 um window; both solvers take the same pixels of permittivity (cells of 1 /
resolution; the wire's edges on cell edges), emjax with PEC walls, EMpy with '0000' (H zero
beyond the edges; the window is wide enough that the walls do not matter at the digits
shown). Each column is the TE0 / TM0 effective index; the last row is Richardson's
second-order extrapolation of the two finest.

Measured 2026-11-26 (2-core CPU shared with other jobs; wall seconds for TE0 + TM0, emjax
including its group index; commit e88bae7's solver)::

    res/um   emjax TE0   EMpy TE0    emjax TM0   EMpy TM0    t_emjax  t_EMpy
        50   2.443786    2.450258    1.777837    1.784562      11.8      1.5
       100   2.445015    2.448913    1.773023    1.778008      44.9    126.1
       200   2.445297    2.447600    1.771761    1.774101     315.5    376.9

emjax's TE0 converges at second order (differences 1.23e-3, 2.8e-4: ratio 4.4), to
2.44539 by Richardson's extrapolation; EMpy's at first order here (differences 1.35e-3,
1.31e-3), towards ~2.4463. The two agree to 2.3e-3 at 5 nm cells and approach each other
as the cells shrink; both are the published ~2.44 (TM0: 1.771 and 1.774, approaching
likewise). At 25 cells per um the 220 nm height is not a whole number of cells (rounded to
240 nm), so that resolution is not in the table.

Run: ``python benchmarks/modes_crosscheck.py`` with emjax and EMpy importable. Install
it apart from the project's environment (``pip install --no-deps --target /tmp/empy
electromagneticpython``, then ``PYTHONPATH=src:/tmp/empy``): its wheel ships a
top-level ``tests`` package that shadows this repository's ``tests`` folder.
"""

from __future__ import annotations

import time

import numpy as np

N_SI, N_OX, WAVELENGTH = 3.476, 1.444, 1.55
WIDTH, HEIGHT = 0.5, 0.22
WINDOW = (2.0, 1.6)


def pixels(resolution: int) -> np.ndarray:
    """eps of the cells (nx, ny), the wire centred with its edges on cell edges."""
    nx, ny = round(WINDOW[0] * resolution), round(WINDOW[1] * resolution)
    cw, ch = round(WIDTH * resolution), round(HEIGHT * resolution)
    eps = np.full((nx, ny), N_OX**2)
    x0, y0 = (nx - cw) // 2, (ny - ch) // 2
    eps[x0 : x0 + cw, y0 : y0 + ch] = N_SI**2
    return eps


def with_emjax(eps: np.ndarray, resolution: int):
    from emjax import modes

    t = time.perf_counter()
    r = modes.solve(eps, resolution, 1 / WAVELENGTH, num_modes=2)
    dt = time.perf_counter() - t
    te = r.n_eff[np.argmax(r.te_fraction)].real
    tm = r.n_eff[np.argmin(r.te_fraction)].real
    return te, tm, dt


def with_empy(eps: np.ndarray, resolution: int):
    from EMpy.modesolvers.FD import VFDModeSolver

    nx, ny = eps.shape
    x = np.arange(nx + 1) / resolution
    y = np.arange(ny + 1) / resolution

    def epsfunc(xc, yc):
        return eps

    t = time.perf_counter()
    solver = VFDModeSolver(WAVELENGTH, x, y, epsfunc, "0000").solve(2, 1e-12)
    dt = time.perf_counter() - t
    found = []
    for m in solver.modes:
        found.append((float(np.real(m.neff)), float(m.TEfrac())))
    te = max(found, key=lambda f: f[1])[0]
    tm = min(found, key=lambda f: f[1])[0]
    return te, tm, dt


def main(resolutions=(50, 100, 200)) -> None:
    print("res/um   emjax TE0   EMpy TE0    emjax TM0   EMpy TM0    t_emjax  t_EMpy")
    rows = []
    for res in resolutions:
        eps = pixels(res)
        a = with_emjax(eps, res)
        b = with_empy(eps, res)
        rows.append((a, b))
        print(f"{res:6d}   {a[0]:.6f}    {b[0]:.6f}    {a[1]:.6f}    {b[1]:.6f}    {a[2]:6.1f}   {b[2]:6.1f}")
    if len(rows) < 2:
        return
    (a1, b1), (a2, b2) = rows[-2], rows[-1]
    extra = [(4 * u[i] - v[i]) / 3 for u, v in ((a2, a1), (b2, b1)) for i in (0, 1)]
    print(f"  extr   {extra[0]:.6f}    {extra[2]:.6f}    {extra[1]:.6f}    {extra[3]:.6f}")


if __name__ == "__main__":
    main()
