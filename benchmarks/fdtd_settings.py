"""``emjax bench fdtd`` under module settings of the blocked kernel, each in a process of its
own (the settings are read while the kernels are built and traced), one JSON line per run
with the setting named: A/B runs of the settings that are off by default, in one lease.

    PYTHONPATH=src python3 benchmarks/fdtd_settings.py --repeat 2 \\
        --set "" --set "cuda.STEADY_LOOP=True" \\
        --set "cuda.STEADY_LOOP=True; cuda.STEADY={**cuda.STEADY, 'between': {4: 2, 8: 2}}" \\
        --out rows.jsonl -- --size 512 --kernel blocked --steps 200

A setting is ``module.NAME=VALUE`` pairs joined by ``;``: ``module`` one of
``emjax.fdtd.blocked``'s (``cuda``, ``split``, ``bulk``, ...), VALUE a Python expression in
which the modules are names. The arguments after ``--`` go to ``emjax bench fdtd`` (its
``--json`` is added). The settings run in turn, ``--repeat`` rounds of them.
"""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
from pathlib import Path

_CHILD = """
import sys
sys.path.insert(0, sys.argv[1])
from fdtd_settings import apply
from emjax.cli import main
apply(sys.argv[2])
sys.exit(main(["bench", "fdtd", "--json"] + sys.argv[3:]))
"""
_MODULES = ("bulk", "cuda", "split", "shards", "tiling", "coef_box", "halos", "choice")


def _items(setting: str) -> list:
    """(module, name, VALUE's text) per ``module.NAME=VALUE`` of ``setting``; one line naming
    what is wrong where an item is no such pair or names no setting."""
    out = []
    for item in filter(None, (x.strip() for x in setting.split(";"))):
        if "=" not in item or "." not in item.split("=", 1)[0]:
            raise SystemExit(f"--set: {item!r} is not module.NAME=VALUE")
        name, value = item.split("=", 1)
        mod, attr = name.strip().rsplit(".", 1)
        m = importlib.import_module("emjax.fdtd.blocked." + mod)
        if not hasattr(m, attr):
            raise SystemExit(f"--set: {mod} has no setting {attr}")
        out.append((m, attr, value))
    return out


def check(setting: str) -> None:
    """Fail early, in one line, on a setting that names no module or no setting."""
    _items(setting)


def apply(setting: str) -> None:
    """Set ``setting``'s values (Python expressions over the blocked kernel's modules)."""
    names = {k: importlib.import_module("emjax.fdtd.blocked." + k) for k in _MODULES}
    for m, attr, value in _items(setting):
        setattr(m, attr, eval(value, {}, names))


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    rest = argv[argv.index("--") + 1 :] if "--" in argv else []
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", action="append", default=[], help="a setting (repeatable; '' the defaults)")
    ap.add_argument("--repeat", type=int, default=1, help="rounds of all the settings (1)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds a run may take (300)")
    ap.add_argument("--out", help="append the rows to this file")
    a = ap.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    if a.repeat < 1:
        raise SystemExit(f"--repeat must be >= 1, got {a.repeat}")
    settings = a.set or [""]
    for s in settings:
        check(s)
    for _ in range(a.repeat):
        for s in settings:
            try:
                cmd = [sys.executable, "-c", _CHILD, str(Path(__file__).resolve().parent), s, *rest]
                run = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
            except subprocess.TimeoutExpired:
                print(json.dumps({"setting": s, "error": f"over {a.timeout} s"}), flush=True)
                continue
            rows = [json.loads(ln) for ln in run.stdout.splitlines() if ln.startswith("{")]
            if run.returncode or not rows:
                tail = (run.stderr.strip().splitlines() or ["no output"])[-1]
                rows = [{"error": tail}]
            for row in rows:
                row["setting"] = s
                print(json.dumps(row), flush=True)
                if a.out:
                    with open(a.out, "a") as f:
                        f.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
