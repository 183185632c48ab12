"""Several of a pass's kernels in one launch (:attr:`.kernel_spec.Spec.merged`,
:func:`.cuda.merged_source`): within a pass every kernel reads the pass's input and writes
cells no other writes, so their CTAs may run in any order, and one launch lets the SMs that
one kernel's short CTAs free take the next kernel's, where launches one after another each
wait for their slowest CTA."""

from __future__ import annotations

from dataclasses import replace

from . import cuda

#: the CPML's y and z face rows' kernels (:data:`.split.ALIGNED`) in one launch, the y faces'
#: CTAs first (None: :data:`MERGE_FACES_DEFAULT` by the item size). At 512^3 in float32 each
#: fills about one wave of CTAs: the y faces' 132 took 0.82 ms, set by their 12 over the
#: z-CPML's corners (the others about 0.68), and the z faces' 120 (12 SMs idle) 0.59 (H200,
#: Nsight Compute).
MERGE_FACES = None
#: timed on an H200 at 512^3 with a 10-cell CPML, 200 steps (G cell/s, apart / merged):
#: float32 121.12, 121.14, 121.14 / 122.91, 122.89, 123.02; the eps 2.25 sphere 102.68,
#: 103.31, 102.84 / 105.82, 105.68, 105.68; float64 56.57 / 54.57 (by ptxas the merged
#: kernel spills 176 / 252 bytes where its parts spill 80 / 60 and 68 / 128)
MERGE_FACES_DEFAULT = {4: True, 8: False}


def merge_on(itemsize: int) -> bool:
    """Whether :data:`MERGE_FACES` holds for kernels of ``itemsize`` bytes a value."""
    return MERGE_FACES if MERGE_FACES is not None else MERGE_FACES_DEFAULT.get(itemsize, False)


def merge_faces(fixes: list, tags: list) -> list:
    """``fixes`` ((spec, table rows), ...) of :func:`.split.split` with the y and z faces'
    kernels (``tags`` "y" and "z", one each, one after the other) as one launch where
    :func:`merge_on` and they take the same parameters; else ``fixes``."""
    ys = [i for i, t in enumerate(tags) if t == "y"]
    zs = [i for i, t in enumerate(tags) if t == "z"]
    if len(ys) != 1 or len(zs) != 1 or zs[0] != ys[0] + 1:
        return fixes
    (a, ia), (b, ib) = fixes[ys[0]], fixes[zs[0]]
    if not merge_on(a.itemsize):
        return fixes
    if cuda.kernel_params(a) != cuda.kernel_params(b) or a.min_ctas != b.min_ctas:
        return fixes
    one = replace(a, ntask=a.ntask + b.ntask, merged=(a, b))
    return fixes[: ys[0]] + [(one, ia + ib)] + fixes[zs[0] + 1 :]
