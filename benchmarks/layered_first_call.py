"""Where the layered map's first call goes: one fresh process per run,
timing the import, the backend's start, the first and the second call of
``dipole_fields`` for ``examples/layered_dipole.toml``, and each compilation (JAX's
log of compiles). ``--cache DIR`` names the persistent-cache folder (fresh: a first
run; reused: a second run).

    PYTHONPATH=src python3 benchmarks/layered_first_call.py --cache /tmp/c1 --json
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import time

T0 = time.perf_counter()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cache", default=None)
    ap.add_argument("--config", default="examples/layered_dipole.toml")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()

    compiles: list[tuple[str, float]] = []

    class H(logging.Handler):
        def emit(self, rec):
            m = re.search(r"Finished XLA compilation of (.*?) in ([0-9.eE+-]+) sec", rec.getMessage())
            if m:
                compiles.append((m.group(1)[:60], float(m.group(2))))

    logging.getLogger("jax").addHandler(H())
    logging.getLogger("jax").setLevel(logging.DEBUG)
    import jax

    jax.config.update("jax_log_compiles", True)
    import emjax  # noqa: F401
    from emjax.backend import enable_compilation_cache
    from emjax.config import load_toml
    from emjax.layered.config import build_layered
    from emjax.layered.green import dipole_fields

    t_import = time.perf_counter() - T0
    if a.cache:
        enable_compilation_cache(a.cache)
    t = time.perf_counter()
    dev = jax.devices()[0]
    jax.block_until_ready(jax.numpy.zeros(4) + 1)
    t_backend = time.perf_counter() - t
    kw = build_layered(load_toml(a.config))
    kw = kw[0] if isinstance(kw, tuple) else kw
    t = time.perf_counter()
    r = dipole_fields(**kw)
    jax.block_until_ready(r.E if hasattr(r, "E") else r)
    t_first = time.perf_counter() - t
    n_first = len(compiles)
    t = time.perf_counter()
    r = dipole_fields(**kw)
    jax.block_until_ready(r.E if hasattr(r, "E") else r)
    t_second = time.perf_counter() - t
    out = dict(
        device=str(dev),
        import_s=round(t_import, 2),
        backend_s=round(t_backend, 2),
        first_call_s=round(t_first, 2),
        second_call_s=round(t_second, 2),
        process_s=round(time.perf_counter() - T0, 2),
        compiles_first=n_first,
        compile_s_sum=round(sum(c for _, c in compiles[:n_first]), 2),
        slowest=sorted(compiles[:n_first], key=lambda x: -x[1])[:8],
    )
    print(json.dumps(out) if a.json else out)


if __name__ == "__main__":
    main()
