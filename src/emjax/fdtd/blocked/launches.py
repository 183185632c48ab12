"""Several of a pass's kernels in one launch (:attr:`.kernel_spec.Spec.merged`,
:func:`.cuda.merged_source`): within a pass every kernel reads the pass's input and writes
cells no other writes, so their CTAs may run in any order, and one launch lets the SMs that
one kernel's short CTAs free take the next kernel's, where launches one after another each
wait for their slowest CTA."""

from __future__ import annotations

from dataclasses import replace

from . import cuda

#: the CPML's y and z face rows' kernels (:data:`.split.ALIGNED`) in one launch, the y faces'
#: CTAs first. At 512^3 in float32 each fills about one wave of CTAs: the y faces' 132 took
#: 0.82 ms, set by their 12 over the z-CPML's corners (the others about 0.68), and the z
#: faces' 120 (12 SMs idle) 0.59 (H200, Nsight Compute). Not yet timed: off
MERGE_FACES = False


def merge_faces(fixes: list, tags: list) -> list:
    """``fixes`` ((spec, table rows), ...) of :func:`.split.split` with the y and z faces'
    kernels (``tags`` "y" and "z", one each, one after the other) as one launch where
    :data:`MERGE_FACES` and they take the same parameters; else ``fixes``."""
    ys = [i for i, t in enumerate(tags) if t == "y"]
    zs = [i for i, t in enumerate(tags) if t == "z"]
    if not MERGE_FACES or len(ys) != 1 or len(zs) != 1 or zs[0] != ys[0] + 1:
        return fixes
    (a, ia), (b, ib) = fixes[ys[0]], fixes[zs[0]]
    if cuda.kernel_params(a) != cuda.kernel_params(b) or a.min_ctas != b.min_ctas:
        return fixes
    one = replace(a, ntask=a.ntask + b.ntask, merged=(a, b))
    return fixes[: ys[0]] + [(one, ia + ib)] + fixes[zs[0] + 1 :]
