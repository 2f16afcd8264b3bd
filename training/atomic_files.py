"""Files and folders that appear whole or not at all, whenever the process is killed.

Each is written beside its final place (`<name>.partial`) and renamed into it; a folder being
replaced is first renamed to `<name>.old`, and one being deleted to `<name>.deleting`. A run
killed at any moment therefore leaves the previous version or none, never half of one, and
`tidy_leftovers` (at the start of the next run) removes the debris and puts back a `.old`
folder whose replacement never arrived."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

PARTIAL, OLD, DELETING = ".partial", ".old", ".deleting"


def partial_path(final: Path) -> Path:
    return final.with_name(final.name + PARTIAL)


def replace_folder(new: Path, final: Path) -> None:
    """Put the complete folder `new` at `final`, replacing what is there."""
    old = final.with_name(final.name + OLD)
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        final.rename(old)
    new.rename(final)
    shutil.rmtree(old, ignore_errors=True)


def remove_folder(path: Path) -> None:
    """Delete a folder without ever leaving it half-deleted under its own name."""
    doomed = path.with_name(path.name + DELETING)
    shutil.rmtree(doomed, ignore_errors=True)
    path.rename(doomed)
    shutil.rmtree(doomed, ignore_errors=True)


def write_text(path: Path, text: str) -> None:
    """Replace a file's text in one rename (a kill leaves the old text or the new)."""
    partial = partial_path(path)
    partial.write_text(text)
    os.replace(partial, path)


def tidy_leftovers(folder: Path, names: str) -> None:
    """Remove what a killed run left half-done in `folder` among the entries whose final names
    fully match the regular expression `names` (nothing else is touched); put back a `.old`
    folder whose replacement never arrived."""
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
