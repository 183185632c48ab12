"""The blocked kernel's choices by precision: the CPML's face rows aligned
(:data:`.split.ALIGNED`) in float32, the spent rows left out (:data:`.cuda.SKIP_SPENT_ROWS`)
in float64; either flag set holds for both precisions."""

import jax.numpy as jnp
from test_blocked_spent_rows import cuda_spec

from emjax.fdtd.blocked import cuda


def test_rows_left_out_by_precision(monkeypatch):
    """By default float64 leaves the spent rows out and float32 computes them; the flag set
    either way holds for both."""
    assert "#define SKIP_SPENT 1" in cuda.source(cuda_spec())
    assert "#define SKIP_SPENT 0" in cuda.source(cuda_spec("float32"))
    monkeypatch.setattr(cuda, "SKIP_SPENT_ROWS", True)
    assert "#define SKIP_SPENT 1" in cuda.source(cuda_spec("float32"))


def test_aligned_by_precision(monkeypatch):
    """The face rows aligned by default in float32 (the 512^3 benchmark: the bulk over the
    interior from 16 cells) and in float64; the flag set holds for both."""
    from emjax.fdtd import step as engine
    from emjax.fdtd.bench import benchmark_simulation
    from emjax.fdtd.blocked import cuda_advance
    from emjax.fdtd.blocked import split as cpml_split

    sim = benchmark_simulation(512)[0]
    specs = {}
    for dtype in (jnp.float32, jnp.float64):
        arrays, pml = engine.coefficients(sim, dtype)
        plan = engine.make_plan(sim, 8, dtype, arrays, pml)
        specs[dtype] = cuda_advance.make_spec(plan, arrays, dtype, 4, (24, 24))
    assert cpml_split.aligned(specs[jnp.float32]) == (((16, 480), (16, 480)), (16, 16))
    assert cpml_split.aligned(specs[jnp.float64]) is not None
    monkeypatch.setattr(cpml_split, "ALIGNED_DEFAULT", {4: True})
    assert cpml_split.aligned(specs[jnp.float64]) is None
    monkeypatch.setattr(cpml_split, "ALIGNED", True)
    assert cpml_split.aligned(specs[jnp.float64]) is not None
    monkeypatch.setattr(cpml_split, "ALIGNED", False)
    assert cpml_split.aligned(specs[jnp.float32]) is None and cpml_split.aligned(specs[jnp.float64]) is None
