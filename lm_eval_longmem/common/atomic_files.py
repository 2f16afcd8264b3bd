"""Write what a later step trusts beside its final place, then rename it there whole.

A process killed while writing (Ctrl-C is handled, SIGKILL, out of memory, a full disk, a
scheduler's time limit) must never leave a half-written cache or results file under the name a
reader trusts. So every such file is written to `<name>.<host>-<pid>-<token>.partial` in the
same folder, flushed and synced, and renamed onto `<name>` (atomic on one file system): a reader
sees the old file, no file, or the whole new one. A folder (a converted model) is built the same
way and carries a list of its files and their sizes, so a folder that later loses or truncates
a file is recognised as damaged. Readers that find a damaged file rebuild it after one warning
(`warn_rebuilding`). A `.partial` left by a writer that died is removed by the next writer of
the same file on the same host.

A folder with one owner that runs as several processes (a training run, whose ranks fill one
checkpoint folder together) uses fixed names instead, that every process agrees on: the new
version is written to `<name>.partial` (`fixed_partial_path`), a folder being replaced is first
renamed to `<name>.old`, and one being deleted to `<name>.deleting`. The owner's next start calls
`tidy_leftovers`, which removes that debris and puts back a `.old` folder whose replacement never
arrived: a kill at any moment leaves the previous version or none, never half of one.
"""

from __future__ import annotations

import contextlib
import glob
import json
import logging
import os
import re
import shutil
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

logger = logging.getLogger(__name__)

FOLDER_MANIFEST = ".lm_eval_longmem_files.json"  # {"files": {relative path: size in bytes}}
_HOST = re.sub(r"[^A-Za-z0-9_.]", "_", socket.gethostname()) or "host"
PARTIAL, OLD, DELETING = ".partial", ".old", ".deleting"  # the fixed names of a folder with one owner


def partial_path(final: Path) -> Path:
    """The name a writer of `final` writes to: unique per writer, never matched by readers' globs."""
    return final.with_name(f"{final.name}.{_HOST}-{os.getpid()}-{uuid.uuid4().hex[:8]}.partial")


def fixed_partial_path(final: Path) -> Path:
    """`<name>.partial`: the one name every process of a single owner writes `final` to; the
    owner's next start removes it if it is left over (`tidy_leftovers`)."""
    return final.with_name(final.name + PARTIAL)


@contextlib.contextmanager
def atomic_write(
    path: str | os.PathLike, mode: str = "wb", encoding: str | None = None, partial: Path | None = None
) -> Iterator[IO]:
    """An open file that becomes `path` on a clean exit (replacing any old one); on an error it
    is removed and `path` is left as it was. `mode` is "wb" or "w". It is written to `partial`
    (default: a name unique to this writer, `partial_path`)."""
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_partials(final)
    partial = partial or partial_path(final)
    try:
        with open(partial, mode, encoding=encoding if "b" not in mode else None) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, final)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    _sync_folder(final.parent)


def write_text(path: str | os.PathLike, text: str, partial: Path | None = None) -> None:
    with atomic_write(path, "w", encoding="utf-8", partial=partial) as handle:
        handle.write(text)


def write_json(path: str | os.PathLike, data: Any, **dump_options) -> None:
    """`data` as JSON (indented, a final newline), written whole or not at all."""
    dump_options.setdefault("indent", 2)
    write_text(path, json.dumps(data, **dump_options) + "\n")


@contextlib.contextmanager
def atomic_directory(path: str | os.PathLike) -> Iterator[Path]:
    """A folder to fill that becomes `path` on a clean exit, with its file list (FOLDER_MANIFEST);
    a damaged folder already at `path` is replaced. Callers hold a lock when writers may race."""
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_partials(final)
    staging = partial_path(final)
    staging.mkdir()
    try:
        yield staging
        sizes = {}
        for file in sorted(p for p in staging.rglob("*") if p.is_file()):
            with open(file, "rb") as handle:
                os.fsync(handle.fileno())
            sizes[file.relative_to(staging).as_posix()] = file.stat().st_size
        write_json(staging / FOLDER_MANIFEST, {"files": sizes}, sort_keys=True)
        replace_folder(staging, final, aside=partial_path(final))
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    _sync_folder(final.parent)


def replace_folder(new: Path, final: Path, aside: Path | None = None) -> None:
    """Put the complete folder `new` at `final`, replacing what is there: that is renamed to
    `aside` first (default `<name>.old`, which `tidy_leftovers` puts back), so the swap is one
    rename, and deleted after."""
    aside = aside or final.with_name(final.name + OLD)
    shutil.rmtree(aside, ignore_errors=True)
    if final.exists():
        final.rename(aside)
    new.rename(final)
    shutil.rmtree(aside, ignore_errors=True)


def remove_folder(path: Path) -> None:
    """Delete a folder without ever leaving it half-deleted under its own name (`<name>.deleting`)."""
    doomed = path.with_name(path.name + DELETING)
    shutil.rmtree(doomed, ignore_errors=True)
    path.rename(doomed)
    shutil.rmtree(doomed, ignore_errors=True)


def tidy_leftovers(folder: Path, names: str) -> None:
    """Remove what a killed owner left half-done in `folder` (`.partial`, `.old`, `.deleting`)
    among the entries whose final names fully match the regular expression `names` (nothing else
    is touched); put back a `.old` folder whose replacement never arrived."""
    if not folder.is_dir():
        return
    for path in sorted(folder.iterdir()):
        final_name, suffix = os.path.splitext(path.name)
        if suffix not in (PARTIAL, OLD, DELETING) or not re.fullmatch(names, final_name):
            continue
        final = path.with_name(final_name)
        if suffix == OLD and not final.exists():
            path.rename(final)
        elif path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def folder_problem(path: str | os.PathLike) -> str | None:
    """Why the folder written by `atomic_directory` at `path` is not whole (None when it is)."""
    folder = Path(path)
    if not folder.is_dir():
        return "missing"
    try:
        listed = json.loads((folder / FOLDER_MANIFEST).read_text(encoding="utf-8"))["files"]
    except FileNotFoundError:
        return f"no {FOLDER_MANIFEST} (not written whole)"
    except (OSError, ValueError, KeyError, TypeError) as err:
        return f"unreadable {FOLDER_MANIFEST}: {err}"
    for name, size in sorted(listed.items()):
        file = folder / name
        if not file.is_file():
            return f"{name} is missing"
        if file.stat().st_size != size:
            return f"{name} has {file.stat().st_size} bytes, {size} were written"
    return None


def record_folder(path: str | os.PathLike) -> None:
    """Write the file list of a folder already known to be whole (one made before lists existed)."""
    folder = Path(path)
    sizes = {
        p.relative_to(folder).as_posix(): p.stat().st_size
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != FOLDER_MANIFEST
    }
    write_json(folder / FOLDER_MANIFEST, {"files": sizes}, sort_keys=True)


def warn_rebuilding(path: str | os.PathLike, reason: str, log: logging.Logger | None = None) -> None:
    """The one warning a reader gives for a damaged cache file before building it again."""
    (log or logger).warning("%s is damaged (%s); rebuilding it.", path, reason)


def remove_stale_partials(final: Path) -> None:
    """Remove `final`'s partial files and folders left by writers on this host that have died."""
    pattern = re.compile(re.escape(final.name) + r"\.(?P<host>.+)-(?P<pid>\d+)-[0-9a-f]{8}\.partial$")
    try:
        candidates = list(final.parent.glob(f"{glob.escape(final.name)}.*.partial"))
    except OSError:
        return
    for candidate in candidates:
        match = pattern.match(candidate.name)
        if match is None or match["host"] != _HOST or _alive(int(match["pid"])):
            continue
        if candidate.is_dir():
            shutil.rmtree(candidate, ignore_errors=True)
        else:
            candidate.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True  # another writer in this process (a thread): not ours to remove
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: alive, someone else's
        return True
    return True


def _sync_folder(folder: Path) -> None:
    """Make a rename durable (POSIX); where folders cannot be opened it is simply skipped."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)
