"""A copy of a config dict with one entry replaced or removed: the bad-input suites'
(tests/*/test_*_bad_config.py) way of making one wrong value at a time."""

import copy


def edited(base: dict, path, value) -> dict:
    """``base`` deep-copied with the entry at ``path`` (keys and list indices) set to
    ``value``, or removed when ``value`` is ``KeyError``."""
    cfg = copy.deepcopy(base)
    *head, last = path
    t = cfg
    for k in head:
        t = t[k]
    if value is KeyError:
        del t[last]
    else:
        t[last] = value
    return cfg
