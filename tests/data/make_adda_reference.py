"""Regenerate adda_reference.json by running an ADDA executable (not part of emjax).

Usage: ADDA=/path/to/adda python tests/data/make_adda_reference.py

ADDA (https://github.com/adda-team/adda) must be built separately by the user; this script
only runs it on the cases below and records cross sections and selected Mueller rows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CASES = {
    # name: (ADDA arguments, emjax keyword arguments)
    "sphere_grid16_ldr": (
        "-shape sphere -eq_rad 1 -m 1.5 0.01 -grid 16 -sym no",
        dict(shape="sphere", eq_rad=1.0, m=["1.5+0.01j"], grid=16),
    ),
    "sphere_grid16_cm": (
        "-shape sphere -eq_rad 1 -m 1.5 0.01 -grid 16 -pol cm -sym no",
        dict(shape="sphere", eq_rad=1.0, m=["1.5+0.01j"], grid=16, polarizability="cm"),
    ),
    "sphere_grid16_rr": (
        "-shape sphere -eq_rad 1 -m 1.5 0.01 -grid 16 -pol rrc -sym no",
        dict(shape="sphere", eq_rad=1.0, m=["1.5+0.01j"], grid=16, polarizability="rr"),
    ),
    "sphere_grid16_fcd": (
        "-shape sphere -eq_rad 1 -m 1.5 0.01 -grid 16 -pol fcd -int fcd -sym no",
        dict(shape="sphere", eq_rad=1.0, m=["1.5+0.01j"], grid=16, polarizability="fcd"),
    ),
    "sphere_grid16_only": (
        "-grid 16 -m 1.5 0.01 -sym no",  # no size: d = lambda / (10 |m|)
        dict(shape="sphere", m=["1.5+0.01j"], grid=16),
    ),
    "sphere_eqrad05_dpl15": (
        "-shape sphere -eq_rad 0.5 -lambda 0.6283185307 -m 1.5 0.01 -dpl 15 -sym no",
        dict(shape="sphere", eq_rad=0.5, wavelength=0.6283185307, m=["1.5+0.01j"], dipoles_per_wavelength=15),
    ),
    "cylinder_orient_ldr": (
        "-shape cylinder 2 -eq_rad 1 -m 1.5 0.01 -grid 12 -orient 30 40 50",
        dict(shape="cylinder", aspect=2.0, eq_rad=1.0, m=["1.5+0.01j"], grid=12, orientation=[30, 40, 50]),
    ),
    "cylinder_orient_cm": (
        "-shape cylinder 2 -eq_rad 1 -m 1.5 0.01 -grid 12 -orient 30 40 50 -pol cm",
        dict(
            shape="cylinder",
            aspect=2.0,
            eq_rad=1.0,
            m=["1.5+0.01j"],
            grid=12,
            orientation=[30, 40, 50],
            polarizability="cm",
        ),
    ),
    "ellipsoid": (
        "-shape ellipsoid 1.5 2.0 -grid 14 -size 2 -m 1.33 0 -sym no",
        dict(shape="ellipsoid", y_over_x=1.5, z_over_x=2.0, size_x=2.0, grid=14, m=["1.33"]),
    ),
    "coated": (
        "-shape coated 0.7 -grid 16 -size 2 -m 1.5 0.01 1.33 0 -sym no",
        dict(shape="coated", core_ratio=0.7, size_x=2.0, grid=16, m=["1.5+0.01j", "1.33"]),
    ),
}
MUELLER_ROWS = {"sphere_eqrad05_dpl15", "cylinder_orient_ldr"}


def parse_crosssec(path: Path) -> dict:
    out = {}
    for line in path.read_text().splitlines():
        if "=" in line:
            key, val = line.split("=", 1)
            try:
                out[key.strip()] = float(val.split()[0])
            except (ValueError, IndexError):
                pass
    return out


def main() -> None:
    adda = os.environ.get("ADDA")
    if not adda:
        sys.exit("set ADDA to the path of an adda executable")
    version = subprocess.run([adda, "-V"], capture_output=True, text=True).stdout.splitlines()[:1]
    result = {"adda_version": version, "cases": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (args, emjax_kwargs) in CASES.items():
            folder = Path(tmp) / name
            subprocess.run([adda, *args.split(), "-dir", str(folder)], check=True, capture_output=True)
            case = {
                "adda_args": args,
                "emjax": emjax_kwargs,
                "X": parse_crosssec(folder / "CrossSec-X") if (folder / "CrossSec-X").exists() else None,
                "Y": parse_crosssec(folder / "CrossSec-Y"),
            }
            if name in MUELLER_ROWS:
                rows = [r.split() for r in (folder / "mueller").read_text().splitlines()[1:]]
                case["mueller"] = [[float(v) for v in r] for r in rows if float(r[0]) % 30 == 0]
            result["cases"][name] = case
    out = Path(__file__).with_name("adda_reference.json")
    out.write_text(json.dumps(result, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
