"""The output folder of a command: which folder a run writes to, never two runs' files mixed,
nothing left behind by a run that is refused or interrupted.

- ``--out DIR`` names the folder. A folder that already holds emjax results (a
  :data:`MANIFEST`, or NetCDF/HDF5 files) is refused unless ``--overwrite`` is given; then
  the new files replace the old ones and the files of the previous run that this one does
  not write again are removed, so the folder holds one run.
- Without ``--out``, as ADDA does, every run gets a fresh folder
  ``runNNN_<method>_<description>`` in the current directory (NNN: one more than the
  largest number there, from 000).
- :meth:`OutputFolder.check` runs before the computation and creates nothing. The files
  are written into a hidden staging folder (:meth:`OutputFolder.writing`); only when all of
  them are written does the staging folder become the run folder (one rename), or, for an
  existing folder, each file replace its namesake (``os.replace``). On an error or Ctrl-C
  the staging folder and any parent folder this run created are removed again.

Each run folder holds :data:`MANIFEST` (emjax version, command, time, the files written).
This module names no method: each slice's ``cli`` passes its name and a short description.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

from .errors import ConfigError

__all__ = [
    "MANIFEST",
    "OutputFolder",
    "add_output_arguments",
    "config_description",
    "next_run_folder",
    "results_in",
]

#: the record of a run that every run folder holds
MANIFEST = "emjax-run.json"
_RESULT_SUFFIXES = (".nc", ".h5", ".hdf5")
_RUN = re.compile(r"^run(\d{3,})_")


def add_output_arguments(p, writes: str) -> None:
    """``--out DIR`` and ``--overwrite`` on the parser (or argument group) ``p``; ``writes``
    lists the files a run writes."""
    p.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help=f"write {writes} in DIR (default: a fresh folder runNNN_... in the current one); "
        "a DIR that holds another run's results is refused without --overwrite",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="let --out name a folder that holds earlier results: they are replaced",
    )


def config_description(config, method: str) -> str:
    """A run folder's description from its config file: the file's stem without a leading
    ``<method>_`` (``fdtd_sphere.toml`` -> ``sphere``)."""
    if config is None:
        return ""
    stem = Path(config).stem
    return stem[len(method) + 1 :] if stem.startswith(f"{method}_") and len(stem) > len(method) + 1 else stem


def results_in(folder) -> list[str]:
    """The emjax results in ``folder``: the files its :data:`MANIFEST` lists (and the manifest)
    that still exist, and any NetCDF/HDF5 file; [] for a folder without any."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    names = set()
    listed = _manifest_files(folder)
    if listed is not None:
        names.add(MANIFEST)
        names.update(n for n in listed if (folder / n).is_file())
    with contextlib.suppress(OSError):
        names.update(p.name for p in folder.iterdir() if p.suffix.lower() in _RESULT_SUFFIXES and p.is_file())
    return sorted(names)


def _manifest_files(folder: Path):
    """The file names a folder's manifest lists, or None without a (readable) manifest."""
    path = folder / MANIFEST
    if not path.is_file():
        return None
    try:
        files = json.loads(path.read_text()).get("files", [])
    except (OSError, ValueError, AttributeError):
        return []
    return [f for f in files if isinstance(f, str) and f and "/" not in f and f not in (".", "..")]


def _slug(text: str, limit: int = 60) -> str:
    """``text`` as a piece of a folder name: letters, digits and ``._+-``, the rest ``_``."""
    s = re.sub(r"[^A-Za-z0-9._+-]+", "_", str(text)).strip("._")
    return s[:limit].rstrip("._") or "run"


def next_run_folder(parent, method: str, description: str = "") -> Path:
    """``parent / runNNN_<method>_<description>``, NNN one more than the largest number of
    a ``runNNN_`` entry in ``parent`` (000 in a folder without one)."""
    parent = Path(parent)
    numbers = [-1]
    with contextlib.suppress(OSError):
        for p in parent.iterdir():
            m = _RUN.match(p.name)
            if m:
                numbers.append(int(m.group(1)))
    name = f"run{max(numbers) + 1:03d}_{_slug(method)}"
    if description:
        name += f"_{_slug(description)}"
    return parent / name


def _writable(folder: Path, what: str, shown: Path) -> None:
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".emjax-write-check-"):
            pass
    except OSError as exc:
        raise ConfigError(f"{what}: cannot write to {str(shown)!r}: {exc.strerror or exc}") from None


def _staging_folder(parent: Path) -> Path:
    """A new hidden folder in ``parent``, with the permissions of any new folder (mkdtemp's
    are 0700, and the staging folder becomes the run folder)."""
    import secrets

    while True:
        stage = parent / f".emjax-staging-{secrets.token_hex(4)}"
        try:
            stage.mkdir()
            return stage
        except FileExistsError:
            continue


class OutputFolder:
    """Where a command's run writes its files.

    ``out``: the folder the user named (``--out``), or None for a fresh
    ``runNNN_<method>_<description>`` in ``parent`` (default: the current directory).
    ``overwrite``: an ``out`` that holds earlier results may be written over.
    ``what``: how the user named the folder, for messages (``--out``, ``out``).
    """

    def __init__(self, out, *, method: str, overwrite: bool = False, parent=None, what: str = "--out"):
        self.out = None if out is None else Path(out)
        self.method = method
        self.overwrite = bool(overwrite)
        self.parent = Path(".") if parent is None else Path(parent)
        self.what = what
        self.path: Path | None = self.out  # the run folder, once known
        self.files: list[str] = []  # the files the run wrote

    def check(self) -> OutputFolder:
        """Before the computation: the folder can be written and holds no other run's results
        (unless ``overwrite``); a :class:`ConfigError` naming ``--out`` otherwise. Creates
        nothing."""
        if self.out is None:
            if not self.parent.is_dir():
                raise ConfigError(f"the current folder {str(self.parent)!r} is not a folder")
            _writable(self.parent, "the run folder", self.parent)
            return self
        out, what = self.out, self.what
        if out.exists() and not out.is_dir():
            raise ConfigError(f"{what}: {str(out)!r} is a file; give a folder (it is created if missing)")
        if out.is_dir():
            found = results_in(out)
            if found and not self.overwrite:
                found = [f for f in found if f != MANIFEST] or found
                shown = ", ".join(found[:4]) + (", ..." if len(found) > 4 else "")
                raise ConfigError(
                    f"{what}: {str(out)!r} already holds emjax results ({shown}); pass --overwrite "
                    "to replace them, or give another folder"
                )
            _writable(out, what, out)
            return self
        ancestor = out.parent
        while not ancestor.exists() and ancestor != ancestor.parent:
            ancestor = ancestor.parent
        if not ancestor.is_dir():
            raise ConfigError(f"{what}: cannot write to {str(out)!r}: {str(ancestor)!r} is a file")
        _writable(ancestor, what, out)
        return self

    @contextlib.contextmanager
    def writing(self, description: str = "", command: str | None = None):
        """Yield a staging folder to write every file of the run into; when the block ends
        without an exception they become the run folder's (:attr:`path`), with the manifest.
        ``description``: the ``runNNN_<method>_<description>`` part of a fresh folder.
        When several processes run together (``jax.distributed``), only process 0's files
        become the run folder; the others write into a private temporary folder that is
        removed (the same files, never two writers of one file)."""
        from .io import main_process

        if not main_process():
            stage = Path(tempfile.mkdtemp(prefix=".emjax-other-process-"))
            try:
                yield stage
                self.files = sorted(p.name for p in stage.iterdir() if p.is_file())
            finally:
                shutil.rmtree(stage, ignore_errors=True)
            return
        created: list[Path] = []
        if self.out is not None and self.out.is_dir():
            stage = _staging_folder(self.out)
        else:
            base = home = self.parent if self.out is None else self.out.parent
            missing = []
            while not base.exists():
                missing.append(base)
                base = base.parent
            for folder in reversed(missing):
                folder.mkdir()
                created.append(folder)
            stage = _staging_folder(home)
        try:
            yield stage
            self.files = sorted(p.name for p in stage.iterdir() if p.is_file())
            self._manifest(stage, command)
            self.path = self._commit(stage, description)
        except BaseException:
            shutil.rmtree(stage, ignore_errors=True)
            for folder in reversed(created):
                with contextlib.suppress(OSError):
                    folder.rmdir()  # only if still empty
            raise
        finally:
            shutil.rmtree(stage, ignore_errors=True)

    def _manifest(self, stage: Path, command: str | None) -> None:
        from .io import version

        record = {
            "emjax": version(),
            "method": self.method,
            "command": command,
            "finished": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "files": self.files,
        }
        (stage / MANIFEST).write_text(json.dumps(record, indent=1) + "\n")

    def _commit(self, stage: Path, description: str) -> Path:
        if self.out is None:
            while True:  # claim a fresh name (another run may take the same number)
                target = next_run_folder(self.parent, self.method, description)
                try:
                    target.mkdir()
                    break
                except FileExistsError:
                    continue
            try:
                return self._move_into(stage, target)
            except BaseException:
                with contextlib.suppress(OSError):
                    target.rmdir()  # the claimed name, if nothing reached it
                raise
        if not self.out.exists():
            try:
                os.rename(stage, self.out)
                return self.out
            except OSError:  # created meanwhile: write into it file by file
                pass
        return self._move_into(stage, self.out)

    def _move_into(self, stage: Path, folder: Path) -> Path:
        old = _manifest_files(folder) or []
        try:
            os.rename(stage, folder)  # an empty folder (one just claimed) is replaced at once
            return folder
        except OSError:
            pass
        for src in sorted(stage.iterdir()):
            if src.is_file():
                os.replace(src, folder / src.name)
        for name in old:  # the previous run's files that this one did not write again
            if name not in self.files and name != MANIFEST:
                with contextlib.suppress(OSError):
                    (folder / name).unlink()
        return folder
