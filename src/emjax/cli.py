"""The ``emjax`` command: ``info``, ``bench``, and one subcommand per method.

This module only assembles: every method slice in :data:`SLICES` has a ``cli`` module with
``add_command(sub)``, ``add_bench(bench)``, ``run(args, argv)`` and ``run_bench(args, argv)``
(``emjax.dda.cli``, ``emjax.fdtd.cli``, ...). Adding a method is one entry in ``SLICES``.

Exit status: 0 success, 1 invalid input or not enough memory (one line
``emjax: error: ...``), 2 a solve that did not converge (results are still written).
JAX, xarray and matplotlib are imported inside the commands, so ``emjax --help`` is fast.

A method's command started as one of several processes (``--coordinator``,
``--num-processes``, ``--process-id``, or the environment: :func:`emjax.layout.initialize_distributed`)
joins the others first and runs on every process's devices; process 0 prints and writes.

Every command but ``info`` turns on JAX's persistent compilation cache
(:func:`emjax.backend.enable_compilation_cache`; ``EMJAX_COMPILATION_CACHE=0`` turns it off,
``EMJAX_COMPILATION_CACHE_DIR`` moves it): the second run of a command loads its kernels.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys
import warnings

from . import __version__
from .config import ArgumentParser, UsageError
from .errors import ConfigError, EmjaxError

__all__ = ["SLICES", "build_parser", "main"]

#: the method slices, in the order of ``emjax --help``; each has a ``cli`` module
SLICES = ("dda", "fdtd", "layered", "fdfd")


def _slice_cli(name: str):
    return importlib.import_module(f"emjax.{name}.cli")


def build_parser() -> ArgumentParser:
    """The whole ``emjax`` parser: ``info``, each slice's command, ``bench`` with each slice's."""
    parser = ArgumentParser(prog="emjax", description="Computational electromagnetics with JAX.")
    parser.add_argument("--version", action="version", version=f"emjax {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p = sub.add_parser("info", help="versions and devices")
    p.add_argument("--json", action="store_true", help="print JSON")
    for name in SLICES:
        _slice_cli(name).add_command(sub)
        _add_process_arguments(sub.choices[name])
    bench = sub.add_parser("bench", help="benchmarks").add_subparsers(dest="bench_command", metavar="WHAT")
    for name in SLICES:
        _slice_cli(name).add_bench(bench)
    return parser


def _add_process_arguments(p) -> None:
    """The flags of one process among several (``jax.distributed``) on a method's command."""
    g = p.add_argument_group(
        "several processes (jax.distributed; or EMJAX_COORDINATOR, EMJAX_NUM_PROCESSES, "
        "EMJAX_PROCESS_ID; or inside srun with several tasks)"
    )
    g.add_argument("--coordinator", metavar="HOST:PORT", help="process 0's host and a free port")
    g.add_argument("--num-processes", type=int, metavar="N", help="how many processes run together")
    g.add_argument("--process-id", type=int, metavar="I", help="this process's id, 0 .. N - 1")


def _start_processes(args) -> bool:
    """Join the other processes when the flags or the environment say there are several
    (before anything touches a device); then the run spans every process's devices
    (``--devices`` left out or all of them). True when this is one of several."""
    from .layout import initialize_distributed

    several = initialize_distributed(
        getattr(args, "coordinator", None),
        getattr(args, "num_processes", None),
        getattr(args, "process_id", None),
        names=("--coordinator", "--num-processes", "--process-id"),
    )
    if not several or not hasattr(args, "devices"):
        return several
    import jax

    n, procs = jax.device_count(), jax.process_count()
    if args.devices is None:
        args.devices = n
    elif args.devices != n:
        raise ConfigError(
            f"--devices: with {procs} processes the run spans every process's devices: give {n} "
            f"(all of them) or leave it out, got {args.devices}"
        )
    return several


def _format_info(info: dict) -> str:
    out = [f"emjax {info['emjax']}"]
    for key in ("python", "jax", "jaxlib", "numpy", "scipy"):
        out.append(f"  {key:16s}{info.get(key)}")
    out.append(f"  {'default backend':16s}{info.get('default_backend')}")
    out.append("devices:")
    for d in info.get("devices", []):
        mem = d.get("memory_bytes")
        mem = f", {mem / 2**30:.1f} GiB" if mem else ""
        out.append(f"  {d['id']}: {d['platform']} {d.get('kind', '')}{mem}")
    return "\n".join(out)


def _cmd_info(args, argv) -> int:
    from .backend import info

    data = info()
    print(json.dumps(data) if args.json else _format_info(data))
    return 0


def _dispatch(args, argv) -> int:
    if args.command == "info":
        return _cmd_info(args, argv)
    from .backend import enable_compilation_cache, raise_pinned_host_limit

    raise_pinned_host_limit()  # before any device starts: the FDTD window's pinned chunks
    enable_compilation_cache()
    if args.command == "bench":
        return _slice_cli(args.bench_command).run_bench(args, argv)
    if not _start_processes(args):
        return _slice_cli(args.command).run(args, argv)
    import jax

    with _native_stdout_to_stderr():
        if jax.process_index() == 0:
            return _slice_cli(args.command).run(args, argv)
        # process 0 prints the summary and writes the files (outdir, io); the others compute
        with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
            return _slice_cli(args.command).run(args, argv)


@contextlib.contextmanager
def _native_stdout_to_stderr():
    """Libraries' own lines on the process's standard output (gloo, JAX's CPU collectives,
    prints "[Gloo] Rank 0 is connected to 1 peer ranks ...") go to stderr; Python's
    ``sys.stdout`` (the summary, ``--json``) stays on the standard output."""
    sys.stdout.flush()
    keep = os.dup(1)
    saved = sys.stdout
    os.dup2(2, 1)
    sys.stdout = os.fdopen(keep, "w", buffering=1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(keep, 1)
        sys.stdout.close()
        sys.stdout = saved


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """emjax's own warnings (coarse grids, thin features) as one line ``emjax: warning: ...``;
    other libraries' as Python prints them."""
    if "emjax" in str(filename).replace("\\", "/").split("/site-packages/")[-1]:
        print(f"emjax: warning: {message}", file=sys.stderr if file is None else file, flush=True)
    else:
        _default_showwarning(message, category, filename, lineno, file, line)


_default_showwarning = warnings.showwarning


def main(argv: list[str] | None = None) -> int:
    """Run the ``emjax`` command line ``argv`` (default ``sys.argv[1:]``); return the status."""
    argv = sys.argv[1:] if argv is None else [str(a) for a in argv]
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:
        print(f"{exc.usage}emjax: error: {exc}", file=sys.stderr)
        return 1
    if args.command is None:
        parser.print_help(sys.stderr)
        return 1
    if args.command == "bench" and args.bench_command is None:
        print("emjax: error: say what to benchmark: emjax bench dda --grid N ...", file=sys.stderr)
        return 1
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            return _dispatch(args, argv)
    except (EmjaxError, ImportError, OSError) as exc:
        msg = (
            str(exc)
            if not isinstance(exc, OSError) or not exc.filename
            else (f"{exc.strerror}: {exc.filename}")
        )
        print(f"emjax: error: {msg}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("emjax: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
