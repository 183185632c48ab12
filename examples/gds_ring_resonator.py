"""A GDSII layout to a result: a silicon add-drop ring filter (a ring between two bus
waveguides) drawn with gdstk into a layout file, read back with ``geometry.from_gds``
(layer 1, z-invariant polygons for a 2-D grid), given the library's silicon
(``materials.library("Si")``, Salzberg & Villa's Sellmeier fit) and solved with the 2-D
FDFD (TM, E_z) for a line source in the lower bus, wavelength by wavelength: where the ring
resonates, the power leaves through the upper bus's drop port instead of the lower bus's
through port. Figure gds_ring_resonator.png in --out (default out/gds_ring_resonator;
`--out examples/figures` regenerates the docs' copy): the two ports' spectra and |E_z| on
resonance. About two minutes on a 2-core CPU (needs ``pip install emjax[cad]``).

    python examples/gds_ring_resonator.py
"""

import tempfile
from pathlib import Path

import numpy as np

from emjax import fdfd, geometry, materials, scene

R_OUT, WIDTH, GAP = 1.5, 0.4, 0.12  # um: ring outer radius, waveguide widths, coupling gap
SIZE = (6.0, 5.0)  # the region, um (PML outside)
RESOLUTION = 20  # cells per um
WAVELENGTHS = np.linspace(1.53, 1.57, 21)
Y_BUS = R_OUT + GAP + WIDTH / 2  # the buses' centres at -Y_BUS and +Y_BUS


def write_layout(path: Path) -> None:
    """The layout: layer 1 holds the ring (a keyhole polygon) and the two buses (running
    into the PML, which absorbs their guided waves)."""
    import gdstk

    lib = gdstk.Library(unit=1e-6, precision=1e-9)
    cell = lib.new_cell("RING")
    cell.add(gdstk.ellipse((0, 0), R_OUT, inner_radius=R_OUT - WIDTH, tolerance=5e-3, layer=1))
    for y in (-Y_BUS, Y_BUS):
        cell.add(
            gdstk.rectangle((-SIZE[0] / 2 - 1, y - WIDTH / 2), (SIZE[0] / 2 + 1, y + WIDTH / 2), layer=1)
        )
    cell.add(*gdstk.text("emjax", 0.3, (-2.8, 2.0), layer=63))  # a label layer, not read
    lib.write_gds(path)


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--out", type=Path, default=Path(__file__).resolve().parents[1] / "out" / "gds_ring_resonator"
    )
    out_dir = ap.parse_args(argv).out
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:  # the layout file, as a layout tool would write it
        layout = Path(tmp) / "ring.gds"
        write_layout(layout)
        shapes = geometry.from_gds(layout, layer=1, z=None)  # 2-D: polygons invariant along z

    silicon = materials.library("Si", unit="um")
    sc = scene.Scene([scene.Object(s, silicon) for s in shapes])  # placed where the layout puts them
    source = fdfd.LineSource((-2.6, -Y_BUS))
    ports, fields = [], []
    for wl in WAVELENGTHS:
        r = fdfd.solve_tm(SIZE, RESOLUTION, 1 / wl, source, sc, progress=False)
        ports.append([_port(r, 2.6, -Y_BUS), _port(r, -2.6, Y_BUS)])  # through, drop
        fields.append(r)
    ports = np.asarray(ports) / np.max(ports)
    k = int(np.argmax(ports[:, 1]))
    print(
        f"{len(shapes)} polygons from {layout.name}; resonance at {WAVELENGTHS[k]:.4f} um: drop "
        f"{ports[k, 1]:.3f}, through {ports[k, 0]:.3f} (of the largest port value)"
    )
    _plot(out_dir / "gds_ring_resonator.png", ports, fields[k], WAVELENGTHS[k])


def _port(r, x, y) -> float:
    """|E_z|^2 summed across a bus at ``x`` (a measure of the guided power there)."""
    i = int(np.argmin(np.abs(r.x - x)))
    return float(np.sum(np.abs(r.Ez[i, np.abs(r.y - y) < 0.5]) ** 2))


def _plot(path, ports, r, wl):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4), gridspec_kw={"width_ratios": [1, 1.3]})
    a.plot(WAVELENGTHS * 1e3, ports[:, 0], "o-", ms=3, label="through (lower bus, right)")
    a.plot(WAVELENGTHS * 1e3, ports[:, 1], "s-", ms=3, label="drop (upper bus, left)")
    a.set(xlabel="wavelength (nm)", ylabel="|E_z|^2 across the bus (normalized)", title="ports")
    a.legend()
    X, Y = np.meshgrid(r.x, r.y, indexing="ij")
    im = b.pcolormesh(X, Y, np.abs(r.Ez), shading="auto", cmap="magma")
    b.contour(X, Y, np.real(r.eps), levels=[6.0], colors="w", linewidths=0.5)
    b.set(aspect="equal", xlabel="x (um)", ylabel="y (um)", title=f"|E_z| at {wl * 1e3:.1f} nm")
    fig.colorbar(im, ax=b)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
