"""Run ADDA's surface mode on the cases below and write adda_surface.json.

Usage (through regenerate.sh, which checks the environment):

    ADDA=/path/to/adda bash tests/dda/data/adda_surface/regenerate.sh

ADDA (https://github.com/adda-team/adda) is built by the user outside this repository; this script
only runs it. Optionally ADDA_CRIT=/path/to/adda_patched is a second ADDA binary built with a
tighter Sommerfeld-integral tolerance (src/somnec.c: ``#define CRIT 1E-7`` instead of 1E-4); its
Qext/Qabs are then stored per case under "crit_check" as an estimate of the stock ADDA's own
error from its Sommerfeld tables. Conventions and the meaning of every number: README.md.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "adda_surface.json"

S30, C30 = 0.5, math.sqrt(3) / 2  # 30 deg from the surface normal
DOWN_NORMAL = (0.0, 0.0, -1.0)  # from above (vacuum side), towards -z
DOWN_30 = (S30, 0.0, -C30)  # from above, plane of incidence xz
DOWN_30_AZ30 = (S30 * C30, S30 * 0.5, -C30)  # from above, plane of incidence at azimuth 30 deg
UP_NORMAL = (0.0, 0.0, 1.0)  # from below (inside the substrate), towards +z
UP_30 = (S30, 0.0, C30)

GLASS = (1.5, 0.0)
METAL = (0.2, 3.0)  # gold-like (Au near 600-650 nm is ~0.2+3.3i); here a generic Drude-metal index

SPHERE_M = (1.5, 0.01)
SPHERE_EQRAD = 5.0  # x = k a = 5 with ADDA's default lambda = 2 pi
CUBE_M = (2.0, 1.0)
CUBE_SIZE = 1.0
GAP = 0.05  # surface -> bottom of the geometric particle (sphere of radius 5 / cube face)

# integration grid for -Csca (alldir_params.dat); ADDA's Romberg returns the MEAN over the given
# (cos theta, phi) domain times 4 pi, so a hemisphere run gives 2 x the hemisphere's Csca.
ALLDIR = """theta:
min={tmin}
max={tmax}
Jmin=2
Jmax={jmax}
eps=0
equiv=false
periodic=false

phi:
min=0
max=360
Jmin=2
Jmax=6
eps=0
equiv=true
periodic=true
"""
# lower hemisphere starts just below 90 deg: ADDA's CalcFieldSurf treats nF_z > -1e-15 as "above"
# and returns 0 at exactly 90 deg, which would put a spurious zero at the lower range's end point.
# (theta min, theta max, Romberg levels in cos theta): the lower hemisphere has the square-root
# kink of the critical angle, so Romberg converges slowly there (Jmax 7 -> 11 moved one Csca by 3.4%).
HEMISPHERES = {"up": (0, 90, 7), "down": (90.000001, 180, 11), "all": (0, 180, 8)}


def fmt(v: float) -> str:
    return repr(float(v))


def sphere(name, grid, prop, sub, csca=(), group="parity"):
    args = (
        f"-shape sphere -eq_rad {fmt(SPHERE_EQRAD)} -m {SPHERE_M[0]} {SPHERE_M[1]} -grid {grid}"
        f" -prop {' '.join(fmt(p) for p in prop)}"
    )
    emjax = dict(shape="sphere", eq_rad=SPHERE_EQRAD, grid=grid, m=[f"{SPHERE_M[0]}+{SPHERE_M[1]}j"])
    if sub is not None:
        height = SPHERE_EQRAD + GAP
        args += f" -surf {fmt(height)} {sub[0]} {sub[1]} -int_surf som"
        emjax.update(substrate_m=f"{sub[0]}+{sub[1]}j", height=height)
    emjax["prop"] = list(prop)
    return name, dict(group=group, adda_args=args, emjax=emjax, csca=list(csca))


def cube(name, prop, sub, csca=(), group="parity"):
    height = CUBE_SIZE / 2 + GAP
    args = (
        f"-shape box -size {fmt(CUBE_SIZE)} -m {CUBE_M[0]} {CUBE_M[1]} -grid 6"
        f" -prop {' '.join(fmt(p) for p in prop)} -surf {fmt(height)} {sub[0]} {sub[1]} -int_surf som"
    )
    emjax = dict(
        shape="box",
        size_x=CUBE_SIZE,
        grid=6,
        m=[f"{CUBE_M[0]}+{CUBE_M[1]}j"],
        substrate_m=f"{sub[0]}+{sub[1]}j",
        height=height,
        prop=list(prop),
    )
    return name, dict(group=group, adda_args=args, emjax=emjax, csca=list(csca))


CASES = dict(
    [
        # parity cases: sphere x = 5, m = 1.5+0.01i, 0.05 above glass / metal, normal and 30 deg
        sphere("sphere_g16_glass_normal", 16, DOWN_NORMAL, GLASS, ("up", "down")),
        sphere("sphere_g16_glass_oblique30", 16, DOWN_30, GLASS, ("up", "down")),
        sphere("sphere_g16_metal_normal", 16, DOWN_NORMAL, METAL, ("up",)),
        sphere("sphere_g16_metal_oblique30", 16, DOWN_30, METAL, ("up",)),
        # the same on a finer lattice (dpl 15.06 = ADDA's default 10|m|)
        sphere("sphere_g24_glass_normal", 24, DOWN_NORMAL, GLASS, group="parity_fine"),
        sphere("sphere_g24_glass_oblique30", 24, DOWN_30, GLASS, group="parity_fine"),
        sphere("sphere_g24_metal_normal", 24, DOWN_NORMAL, METAL, group="parity_fine"),
        sphere("sphere_g24_metal_oblique30", 24, DOWN_30, METAL, group="parity_fine"),
        # parity cases: small absorbing cube (6^3 dipoles, m = 2+1i, k*edge = 1)
        cube("cube_metal_oblique30", DOWN_30, METAL, ("up",)),
        cube("cube_glass_normal", DOWN_NORMAL, GLASS, ("up", "down")),
        cube("cube_glass_oblique30_az30", DOWN_30_AZ30, GLASS, ("up", "down")),
        # incidence from below (through the substrate), lossless substrate only
        sphere("sphere_g16_glass_below_normal", 16, UP_NORMAL, GLASS, ("up", "down"), group="below"),
        sphere("sphere_g16_glass_below_oblique30", 16, UP_30, GLASS, ("up", "down"), group="below"),
        cube("cube_glass_below_oblique30", UP_30, GLASS, ("up", "down"), group="below"),
        # no substrate, -prop only (--prop also without a substrate)
        sphere("sphere_g16_free_oblique30", 16, DOWN_30, None, ("all",), group="free_prop"),
    ]
)
COMMON = "-pol ldr -sym no -eps 10"  # LDR, no symmetries, relative residual 1e-10 (default QMR)
MAIN_EXTRA = "-scat_matr both -ntheta 18"  # 18 intervals over 0..180: theta step 10 deg
CSCA_EXTRA = "-scat_matr none -Csca"


def crosssec(path: Path) -> dict:
    out = {}
    for line in path.read_text().splitlines():
        if "=" in line:
            key, val = line.split("=", 1)
            out[key.strip()] = float(val.split()[0])
    return out


def table(path: Path) -> dict:
    lines = path.read_text().splitlines()
    return {"columns": lines[0].split(), "rows": [[float(v) for v in ln.split()] for ln in lines[1:] if ln]}


def log_info(folder: Path, adda: str) -> dict:
    text = (folder / "log").read_text().replace(adda, "adda").replace(str(folder.parent), "<tmp>")

    def grab(pattern, conv=str):
        m = re.search(pattern, text, re.M)
        return conv(m.group(1)) if m else None

    def vec(label):
        s = grab(rf"^{re.escape(label)}: \(([^)]*)\)")
        return [float(v) for v in s.split(",")] if s else None

    info = {
        "command": grab(r"^command: '(.*)'$").strip(),
        "lambda": grab(r"^lambda: (\S+)", float),
        "box": [int(v) for v in grab(r"^box dimensions: (\S+)").split("x")],
        "dipole_size": grab(r"^Dipole size: (\S+)", float),
        "dipoles_per_lambda": grab(r"^Dipoles/lambda: (\S+)", float),
        "n_dipoles": grab(r"^Total number of occupied dipoles: (\d+)", int),
        "ka_eq": grab(r"^Volume-equivalent size parameter: (\S+)", float),
        "height_of_centre": grab(r"height of the particle center: (\S+)", float),
        "prop": vec("Incident propagation vector"),
        "incpol_Y": vec("Incident polarization Y(par)"),
        "incpol_X": vec("Incident polarization X(per)"),
        "prop_reflected": vec("Reflected propagation vector"),
        "prop_transmitted": vec("Transmitted propagation vector"),
        "fft_grid": grab(r"^The FFT grid is: (\S+)"),
        "iterations_total": grab(r"^Total number of iterations: (\d+)", int),
        "adda_wall_time_s": grab(r"^Total wall time:\s+(\S+)", float),
        # ADDA's processor-time breakdown: 'init interaction' includes the Sommerfeld table
        "adda_timing_s": {
            key: grab(rf"^\s+{key}:\s+(\S+)", float)
            for key in ("Initialization time", "init interaction", "Internal fields", "one iteration")
        },
    }
    # per-polarization iteration count and final residual (ADDA solves Y first, then X)
    for block in re.split(r"^here we go, calc ", text, flags=re.M)[1:]:
        pol = block[0]
        res = re.findall(r"^RE_(\d+) = (\S+)", block, re.M)
        info[f"iterations_{pol}"] = int(res[-1][0])
        info[f"final_residual_{pol}"] = float(res[-1][1])
    return info


def geometry(folder: Path) -> dict:
    (geom,) = folder.glob("*.geom")
    pos = [
        tuple(int(v) for v in ln.split()[:3]) for ln in geom.read_text().splitlines() if ln and ln[0] != "#"
    ]
    zs = sorted({p[2] for p in pos})
    return {
        "n_dipoles": len(pos),
        "z_layers": [sum(1 for p in pos if p[2] == z) for z in zs],
        "index_min": [min(p[i] for p in pos) for i in range(3)],
        "index_max": [max(p[i] for p in pos) for i in range(3)],
        "index_sum": [sum(p[i] for p in pos) for i in range(3)],
    }


def romberg_reached(path: Path):
    m = re.search(r"The outer integration reached d=(\S+)", path.read_text())
    return float(m.group(1)) if m else None


def run(adda: str, args: str, folder: Path, cwd: Path) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run([adda, *args.split(), "-dir", str(folder)], cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"ADDA failed ({proc.returncode}) on: {args}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return time.perf_counter() - t0


def _one_line(m: re.Match) -> str:
    return "[" + " ".join(m.group(1).split()).replace(",", ", ").replace(",  ", ", ") + "]"


def main() -> None:
    adda = os.environ.get("ADDA")
    if not adda:
        sys.exit("set ADDA to the path of an adda executable (sequential, double precision)")
    adda_crit = os.environ.get("ADDA_CRIT")
    version = subprocess.run([adda, "-V"], capture_output=True, text=True).stdout.splitlines()
    result = {
        "adda_version": version[:2],
        "common_args": COMMON,
        "main_run_args": MAIN_EXTRA,
        "csca_run_args": CSCA_EXTRA + " -alldir_inp <file>",
        "alldir_params": {k: ALLDIR.format(tmin=a, tmax=b, jmax=j) for k, (a, b, j) in HEMISPHERES.items()},
        "cases": {},
    }
    only = set(sys.argv[1:])
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for key, (a, b, j) in HEMISPHERES.items():
            (tmp / f"alldir_{key}.dat").write_text(ALLDIR.format(tmin=a, tmax=b, jmax=j))
        for name, spec in CASES.items():
            if only and name not in only:
                continue
            base = f"{spec['adda_args']} {COMMON}"
            folder = tmp / name
            wall = run(adda, f"{base} {MAIN_EXTRA} -save_geom", folder, tmp)
            case = {
                "group": spec["group"],
                "adda_args": base,
                "main_run": f"{base} {MAIN_EXTRA}",
                "emjax": spec["emjax"],
                "X": crosssec(folder / "CrossSec-X"),
                "Y": crosssec(folder / "CrossSec-Y"),
                "log": log_info(folder, adda),
                "geometry": geometry(folder),
                "wall_time_s": round(wall, 3),
                "mueller": table(folder / "mueller"),
                "ampl": table(folder / "ampl"),
            }
            if "height" in spec["emjax"]:
                g, h, lg = case["log"]["box"], spec["emjax"]["height"], case["log"]
                # d from ka_eq (10 digits) rather than the log's 6-digit "Dipole size"
                a_eq = lg["ka_eq"] * lg["lambda"] / (2 * math.pi)
                d = (4 * math.pi / 3 * a_eq**3 / lg["n_dipoles"]) ** (1 / 3)
                zmin = case["geometry"]["index_min"][2]
                case["surface_distances"] = {
                    "lowest_dipole_centre": h + (zmin - (g[2] - 1) / 2) * d,
                    "lowest_voxel_face": h + (zmin - (g[2] - 1) / 2 - 0.5) * d,
                    "geometric_particle_bottom": GAP,
                }
            for hemi in spec["csca"]:
                f2 = tmp / f"{name}_csca_{hemi}"
                wall2 = run(adda, f"{base} {CSCA_EXTRA} -alldir_inp alldir_{hemi}.dat", f2, tmp)
                entry = {"wall_time_s": round(wall2, 3)}
                for pol in "XY":
                    cs = crosssec(f2 / f"CrossSec-{pol}")
                    assert cs["Cext"] == case[pol]["Cext"] and cs["Cabs"] == case[pol]["Cabs"], (name, hemi)
                    a_, b_, _ = HEMISPHERES[hemi]
                    frac = (math.cos(math.radians(a_)) - math.cos(math.radians(b_))) / 2  # solid angle / 4 pi
                    entry[pol] = {
                        "Csca_adda_printed": cs["Csca"],
                        "Csca": cs["Csca"] * frac,
                        "Qsca": cs["Qsca"] * frac,
                        "romberg_outer_d": romberg_reached(f2 / f"log_int_Csca-{pol}"),
                    }
                case.setdefault("Csca", {})[hemi] = entry
            if adda_crit and "height" in spec["emjax"]:
                f3 = tmp / f"{name}_crit"
                run(adda_crit, f"{base} -scat_matr none", f3, tmp)
                case["crit_check"] = {
                    "note": "same case with ADDA built with somnec.c CRIT 1E-7 (stock: 1E-4)",
                    "X": crosssec(f3 / "CrossSec-X"),
                    "Y": crosssec(f3 / "CrossSec-Y"),
                }
            result["cases"][name] = case
            print(f"{name}: QextX={case['X']['Qext']:.10g} QextY={case['Y']['Qext']:.10g} ({wall:.1f} s)")
    if only and OUT.exists():
        old = json.loads(OUT.read_text())
        old["cases"].update(result["cases"])
        result["cases"] = old["cases"]
    text = json.dumps(result, indent=1)
    # one line per list of numbers (Mueller/amplitude rows, vectors, layer counts)
    text = re.sub(r"\[\s*([-+0-9.eE,\s]+?)\s*\]", _one_line, text)
    OUT.write_text(text + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
