"""FDTD in physical units: the plasmon of a 40 nm gold nanosphere, against the Mie series.

Gold as a Drude metal (eps_inf 9.84, plasma energy 9.01 eV, damping 0.072 eV: a fit of the
free-electron part; interband absorption below 520 nm is not in it, and the same model is
given to Mie), lengths in micrometres, 10 cells per radius. Extinction, scattering and
absorption spectra next to Mie's; figure fdtd_gold_nanosphere.png in --out (default
out/fdtd_gold_nanosphere; `--out examples/figures` regenerates the README's copy).
About two minutes on a 2-core CPU.

Measured at 10 cells per radius with subpixel averaging (the default; the metal's interface
nodes are anisotropic two-pole media, see src/emjax/fdtd/subpixel.py): the plasmon peak at
Mie's wavelength (475 nm) and Cext's peak 1.9% low. Staircased, the peak is 27% low. The
run lasts 40 um/c: the plasmon rings for ~1/gamma; cut at 12 um/c the DFTs are truncated and
the peak comes out 7% low.

    python examples/fdtd_gold_nanosphere.py
"""

from pathlib import Path

import numpy as np

from emjax import fdtd, geometry, materials, scene

HBAR_C = 0.19733  # eV um: omega [rad / um] = E [eV] / HBAR_C
GOLD = materials.Drude(9.84, omega_p=9.01 / HBAR_C, gamma=0.072 / HBAR_C)
R = 0.020  # radius, um
WAVELENGTHS = np.linspace(0.40, 0.70, 61)
FREQS = 1 / WAVELENGTHS


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--out", type=Path, default=Path(__file__).resolve().parents[1] / "out" / "fdtd_gold_nanosphere"
    )
    out_dir = ap.parse_args(argv).out
    res = 10 / R
    tfsf = 2 * R + 8 / res
    sim = fdtd.Simulation(
        size=(tfsf + 12 / res,) * 3,
        resolution=res,
        scene=scene.Scene([scene.Object(geometry.Sphere(), GOLD, size=2 * R)]),
        sources=[fdtd.PlaneWaveSource((0, 0, 0), (tfsf,) * 3, waveform=fdtd.GaussianPulse(2.0, 0.9))],
        monitors=[fdtd.CrossSections(FREQS)],
    )
    cs = fdtd.run(sim, until=40).cross_sections()  # the plasmon rings for ~1/gamma = 3 um/c
    try:
        import miepython

        eps = GOLD.permittivity(2 * np.pi * FREQS)
        m = np.sqrt(eps)
        m = np.where(m.imag < 0, -m, m)
        q = np.array(
            [miepython.efficiencies_mx(np.conj(mi), 2 * np.pi * f * R)[:2] for mi, f in zip(m, FREQS)]
        )
        mie = {"Cext": q[:, 0] * np.pi * R**2, "Csca": q[:, 1] * np.pi * R**2}  # miepython: m = n - ik
    except ImportError:
        mie = None
    k = int(np.argmax(cs["Cext"]))
    print(f"FDTD peak: {WAVELENGTHS[k] * 1e3:.0f} nm, Cext {cs['Cext'][k] * 1e6:.0f} nm^2")
    if mie is not None:
        j = int(np.argmax(mie["Cext"]))
        print(f"Mie peak:  {WAVELENGTHS[j] * 1e3:.0f} nm, Cext {mie['Cext'][j] * 1e6:.0f} nm^2")
    from emjax.plot import new_figure, save_figure

    fig = new_figure((7, 4))
    ax = fig.subplots()
    for key, color in (("Cext", "k"), ("Csca", "C0"), ("Cabs", "C3")):
        ax.plot(WAVELENGTHS * 1e3, cs[key] * 1e6, "o", ms=3, color=color, label=f"FDTD {key}")
    if mie is not None:
        ax.plot(WAVELENGTHS * 1e3, mie["Cext"] * 1e6, "k-", label="Mie Cext")
        ax.plot(WAVELENGTHS * 1e3, mie["Csca"] * 1e6, "C0-", label="Mie Csca")
        ax.plot(WAVELENGTHS * 1e3, (mie["Cext"] - mie["Csca"]) * 1e6, "C3-", label="Mie Cabs")
    ax.set(
        xlabel="wavelength (nm)",
        ylabel="cross section (nm^2)",
        title="40 nm Drude-gold sphere, 10 cells per radius",
    )
    ax.legend(fontsize="small")
    print("figure:", save_figure(fig, out_dir / "fdtd_gold_nanosphere.png", dpi=110))


if __name__ == "__main__":
    main()
