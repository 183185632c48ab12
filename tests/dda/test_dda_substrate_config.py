"""Bad ``[substrate]`` tables of ``emjax dda --config``: refused while reading, naming the
field by its table path."""

import pytest

from emjax import ConfigError
from emjax.dda.cli import _incidence

GOOD = {"height": 0.55, "n": ["1", "1.7", "1.5"], "thickness": [0.1]}


@pytest.mark.parametrize(
    "change,message",
    [
        ({"height": "high"}, r"^\[substrate\]\.height must be a finite number"),
        ({"height": None}, r"^\[substrate\]\.height is required"),
        ({"depth": 1.0}, r"^\[substrate\]: unknown key\(s\) \['depth'\]"),
        ({"eps": [1, 2.25]}, r"^\[substrate\]: give the media as n = \[...\] or as eps"),
        ({"n": ["1"]}, r"^\[substrate\]\.n must list >= 2 media"),
        ({"n": ["1", "glass"], "thickness": []}, r"^\[substrate\]\.n\[1\]: cannot read 'glass'"),
        ({"thickness": [0.1, 0.2]}, r"^\[substrate\]\.thickness needs one value per finite layer: 1"),
        ({"thickness": [-0.1]}, r"^\[substrate\]\.thickness\[0\] must be a number in \(0, inf\]"),
    ],
)
def test_bad_substrate_table(change, message):
    table = {**GOOD, **change}
    table = {k: v for k, v in table.items() if v is not None}
    with pytest.raises(ConfigError, match=message):
        _incidence({"substrate": table})


def test_good_substrate_table():
    kw = _incidence({"substrate": dict(GOOD)})
    assert kw["height"] == 0.55 and kw["substrate"].thickness == (0.1,)
