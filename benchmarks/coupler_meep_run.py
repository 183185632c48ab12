"""The Meep half of ``benchmarks/coupler_meep.py``: one run of Meep on the directional
coupler described by a JSON file, port 1 excited, |S_i1|^2 from MPB eigenmode coefficients.

Run with the system Python that Debian's python3-meep installs into (not the project's
environment, which has no Meep):

    /usr/bin/python3 benchmarks/coupler_meep_run.py SPEC.json OUT.json

SPEC.json (written by coupler_meep.py) holds the guides' outlines, indices, the region, the
ports, the frequencies, the resolution and whether to smooth the permittivity (Meep's
subpixel averaging, its default) or not (a staircase, like emjax's).
"""

import json
import sys
import time

import meep as mp
import numpy as np


def main(spec_path, out_path):
    spec = json.load(open(spec_path))
    res, pml = spec["resolution"], spec["pml"]
    lx, ly = spec["size"]
    clad = mp.Medium(index=spec["n_clad"])
    core = mp.Medium(index=spec["n_core"])
    geometry = [
        mp.Prism([mp.Vector3(x, y) for x, y in v], height=mp.inf, material=core) for v in spec["guides"]
    ]
    freqs = np.array(spec["frequencies"])
    fmin, fmax = freqs.min(), freqs.max()
    fcen, df = 0.5 * (fmin + fmax), 1.5 * (fmax - fmin)
    ports = spec["ports"]  # name, center (x, y), width, direction (+1 / -1 into the device)
    p1 = ports[0]
    src_x = p1["center"][0] - p1["direction"] * 2 / res  # two cells behind port 1's plane
    sources = [
        mp.EigenModeSource(
            mp.GaussianSource(fcen, fwidth=df),
            center=mp.Vector3(src_x, p1["center"][1]),
            size=mp.Vector3(0, p1["width"]),
            direction=mp.X,
            eig_band=1,
            eig_parity=mp.ODD_Z,  # E along z
            eig_match_freq=True,
        )
    ]
    sim = mp.Simulation(
        cell_size=mp.Vector3(lx + 2 * pml, ly + 2 * pml),
        resolution=res,
        boundary_layers=[mp.PML(pml)],
        geometry=geometry,
        sources=sources,
        default_material=clad,
        eps_averaging=spec["smooth"],
    )
    monitors = [
        sim.add_mode_monitor(
            freqs, mp.ModeRegion(center=mp.Vector3(*p["center"]), size=mp.Vector3(0, p["width"]))
        )
        for p in ports
    ]
    t0 = time.perf_counter()
    sim.init_sim()
    t_init = time.perf_counter() - t0
    check = mp.Vector3(*ports[3]["center"])
    sim.run(until_after_sources=mp.stop_when_fields_decayed(20, mp.Ez, check, 1e-6))
    t_run = time.perf_counter() - t0 - t_init
    coef = [sim.get_eigenmode_coefficients(m, [1], eig_parity=mp.ODD_Z).alpha[0] for m in monitors]
    # alpha[f, 0]: towards +x, alpha[f, 1]: towards -x; a wave leaves port i against its direction
    a_in = coef[0][:, 0 if p1["direction"] > 0 else 1]
    s = [c[:, 1 if p["direction"] > 0 else 0] / a_in for c, p in zip(coef, ports)]
    out = {
        "code": f"Meep {mp.__version__}",
        "resolution": res,
        "smooth": spec["smooth"],
        "frequencies": freqs.tolist(),
        "abs_s_squared": {f"S[{p['name']},1]": (np.abs(x) ** 2).tolist() for p, x in zip(ports, s)},
        "seconds": {"init": t_init, "run": t_run, "meep_time": sim.meep_time()},
    }
    json.dump(out, open(out_path, "w"), indent=1)


if __name__ == "__main__":
    main(*sys.argv[1:3])
