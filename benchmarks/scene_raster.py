"""Time emjax.scene.rasterize for one sphere on N^3 grids (radius N/5 cells... N/2.56):
node labels for the three E components and the interface nodes' fill fractions, normals.

    PYTHONPATH=src python3 benchmarks/scene_raster.py 256 512
"""

import json
import sys
import time

import numpy as np

from emjax import geometry, scene
from emjax.backend import device_description

for n in [int(a) for a in sys.argv[1:]] or [256]:
    radius = n / 2.56  # 100 cells at 256^3, 200 at 512^3
    sc = scene.Scene([scene.Object(geometry.Sphere(), 6.0, size=2 * radius)])
    t0 = time.perf_counter()
    r = scene.rasterize(sc, (n, n, n), 1.0, origin=(-n / 2,) * 3)
    dt = time.perf_counter() - t0
    nodes = sum(len(r.interface[c]["fill"]) for c in range(3))
    print(
        json.dumps(
            {
                "grid": n,
                "radius_cells": radius,
                "seconds": round(dt, 2),
                "interface_nodes": nodes,
                "device": device_description(),
                "note": "numpy on the host",
            }
        ),
        flush=True,
    )
    del r
    np.zeros(1)
