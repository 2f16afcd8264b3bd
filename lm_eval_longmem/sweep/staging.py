"""A sweep run's files are written aside and moved into its results folder only once lm_eval
has exited successfully, results file last.

The sweep counts a run as done when its folder holds a results file that records it (plan.py).
lm-eval writes that file in place, then the `--log_samples` files after it, so a run killed at
the wrong moment (SIGKILL, out of memory, a scheduler's hard limit) could leave a half-written
results file, or a whole one without its samples. So each run gets `--output_path
<output_path>/.sweep_partial/<run>/`; after a clean exit every file moves (one rename each, on
the same file system) to where plain `lm_eval --output_path <output_path>` would have put it,
the results files last. A killed run leaves only its `.sweep_partial` folder, which the next
attempt of that run clears.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

STAGING_DIR = ".sweep_partial"


def staging_folder(output_path: Path, cell: str) -> Path:
    """Where the run named `cell` writes until it has finished (cleared first)."""
    folder = output_path / STAGING_DIR / cell
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


def publish(staging: Path, output_path: Path) -> list[Path]:
    """Move every file under `staging` to the same place under `output_path`, results files
    last; remove the emptied staging folders. Returns the moved results files."""
    files = sorted(p for p in staging.rglob("*") if p.is_file())
    results = [p for p in files if _is_results_file(p)]
    moved = []
    for file in [p for p in files if not _is_results_file(p)] + results:
        target = output_path / file.relative_to(staging)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(file, target)
        if _is_results_file(file):
            moved.append(target)
    discard(staging)
    return moved


def discard(staging: Path) -> None:
    """Remove a run's staging folder, and the `.sweep_partial` folder once it is empty."""
    shutil.rmtree(staging, ignore_errors=True)
    try:
        staging.parent.rmdir()
    except OSError:
        pass  # other runs' folders are still there


def _is_results_file(path: Path) -> bool:
    return path.name.startswith("results_") and path.suffix == ".json"
