"""rasterize(..., components=...) computes only the E components asked for, identical to the
full raster's, and refuses a bad selection."""

import numpy as np
import pytest

from emjax import ConfigError, geometry, scene


def test_components_subset_equals_full():
    sc = scene.Scene(
        [
            scene.Object(geometry.Disk(), 4.0, size=0.9),
            scene.Object(geometry.Disk(), 2.0, center=(0.6, 0.1, 0), size=0.5),
        ]
    )
    args = (sc, (41, 37, 1), 0.05, (-1.0, -0.9, -0.025))
    full = scene.rasterize(*args)
    part = scene.rasterize(*args, components=(2,))
    assert part.label[0] is None and part.interface[1] is None
    np.testing.assert_array_equal(part.label[2], full.label[2])
    for k in full.interface[2]:
        np.testing.assert_array_equal(part.interface[2][k], full.interface[2][k])
    assert len(full.interface[2]["fill"]) > 0
    with pytest.raises(ConfigError, match="components must be"):
        scene.rasterize(*args, components=(3,))
