"""benchmarks/fdtd_kernel_parts.py's subsets: a pass's CPML kernels' CTAs grouped by the CPML
they reach (no GPU: the task tables are planned on the host)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_y_faces_ctas_over_the_z_cpml_corners(monkeypatch):
    from emjax.fdtd.blocked import split

    monkeypatch.setattr(split, "SLOTS", 132)  # (an H100's or H200's SMs, whatever runs this)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from fdtd_kernel_parts import kernels, subsets
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    parts = {name: tab for name, _, tab in kernels(512, "float32", 4, 24, 2, 10) if tab is not None}
    # the y faces' rows: 2 faces x 22 windows along z x 3 x pieces; every one reaches the
    # y-CPML (not a subset), 3 windows a face reach the z-CPML, 2 of 3 pieces the x-CPML
    y = subsets(parts["cpml xyz wall 1"], 512, 10)
    assert {k: int(m.sum()) for k, m in y.items()} == {"reach x": 88, "reach z": 18}
    z = subsets(parts["cpml xyz wall 2"], 512, 10)  # the interior's y only: no corners
    assert "reach y" not in z and int(z["reach x"].sum()) == 80
