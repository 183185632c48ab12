"""print(result) fits a screen: arrays shown as shape and dtype."""

import dataclasses

import numpy as np

from emjax._repr import concise_repr


@dataclasses.dataclass(frozen=True)
class _R:
    E: np.ndarray
    freq: float
    stats: dict
    names: tuple

    __repr__ = concise_repr


def test_arrays_are_summarized():
    r = _R(np.zeros((3, 200, 200, 200), np.float32), 1.25, {"a": 1, "b": np.ones(5)}, tuple("abcdefgh"))
    s = repr(r)
    assert s == (
        "_R(E=array(3, 200, 200, 200) float32, freq=1.25, "
        "stats={'a': 1, 'b': array(5,) float64}, names=tuple of 8)"
    )


def test_result_classes_use_it():
    from emjax.dda.results import AveragedResult, DDAResult
    from emjax.fdfd.results import RCSResult
    from emjax.fdfd.tm import TMResult
    from emjax.fdtd.results import FDTDResult
    from emjax.layered.results import DipoleFields, GreenResult

    for cls in (DDAResult, AveragedResult, FDTDResult, GreenResult, DipoleFields, RCSResult, TMResult):
        assert cls.__repr__ is concise_repr, cls
