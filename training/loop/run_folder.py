"""A run's folder (`output_dir`): where an earlier run in it stands before this one starts. It is
tidied of what a killed run left half-written; its newest intact checkpoint is the one to resume
(checked against the recipe); a run already done to its last step with its export in place is
left as it is; and an earlier run that cannot be resumed (resume=never, or no checkpoint) is
moved aside into `previous-<time>/`, never deleted."""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

from lm_eval_longmem.common.atomic_files import tidy_leftovers

from ..approaches.base import TRAINING_RECORD_KEY
from ..checkpoints.resumable import (
    CHECKPOINTS,
    check_resumable,
    newest_intact_checkpoint,
    read_run_record,
    step_of,
    tidy_checkpoints,
)
from ..errors import TrainingError
from ..recipes.recipe import Recipe
from .progress import METRICS_FILE

EXPORT = "export"


def prepare_output_dir(accelerator, output_dir: Path, recipe: Recipe) -> Path | None:
    """The checkpoint to resume from (intact, and checked against the recipe), or None for a fresh
    run; with resume=never, or no checkpoint at all, an earlier run in the folder is moved aside,
    never deleted. What a killed run left half-written is tidied away first."""
    if accelerator.is_main_process:
        tidy_checkpoints(output_dir)
        tidy_leftovers(output_dir, f"{re.escape(EXPORT)}|{re.escape(METRICS_FILE)}")
    accelerator.wait_for_everyone()
    if recipe.resume == "auto":
        latest = newest_intact_checkpoint(accelerator, output_dir)
        if latest is not None:
            check_resumable(latest, recipe)
            return latest
    if accelerator.is_main_process:
        output_dir.mkdir(parents=True, exist_ok=True)
        earlier = [output_dir / name for name in (CHECKPOINTS, METRICS_FILE, EXPORT) if (output_dir / name).exists()]
        if earlier:
            aside = unused_path(output_dir / f"previous-{time.strftime('%Y%m%d-%H%M%S')}")
            aside.mkdir()
            for path in earlier:
                shutil.move(str(path), str(aside / path.name))
            print(f"An earlier run in {output_dir} was moved to {aside}.")
    accelerator.wait_for_everyone()
    return None


def unused_path(path: Path) -> Path:
    """`path`, or `path-2`, `path-3`, ... whichever does not exist yet."""
    candidate, number = path, 1
    while candidate.exists():
        number += 1
        candidate = path.with_name(f"{path.name}-{number}")
    return candidate


def finished_run(checkpoint: Path, recipe: Recipe, last_step: int) -> dict | None:
    """The summary of a run that `checkpoint` shows done up to `last_step`, with the export the
    recipe asks for in place: nothing is left to train or write. None: there is work left.
    A checkpoint past max_steps cannot be trained back: TrainingError."""
    step = step_of(checkpoint)
    if step > recipe.max_steps:
        raise TrainingError(
            f"{checkpoint} is at step {step}, past max_steps={recipe.max_steps}: a run cannot be trained back. "
            f"Give max_steps={step} or more, or start a new run (output_dir=<new folder> or resume=never)."
        )
    export = Path(recipe.output_dir) / EXPORT
    if step < last_step or (step == recipe.max_steps and recipe.export and exported_step(export) != step):
        return None
    tokens = read_run_record(checkpoint)["tokens"]
    summary = {"steps": step, "tokens": tokens, "tokens_per_second": 0.0, "finished": True}
    if step < recipe.max_steps:
        summary["message"] = (
            f"Already at step {step} (stop_after_steps={recipe.stop_after_steps}): nothing to do. "
            "Resume without stop_after_steps (or with a larger one) to continue."
        )
    else:
        summary["message"] = (
            f"Already finished: {step} of max_steps={recipe.max_steps} steps"
            f"{', exported to ' + str(export) if recipe.export else ''}; nothing trained or written. "
            "A larger max_steps= continues this run."
        )
        if recipe.export:
            summary["export"] = str(export)
    return summary


def exported_step(export: Path) -> int | None:
    """The step an export was written at (its config records the run), or None."""
    try:
        return json.loads((export / "config.json").read_text("utf-8"))[TRAINING_RECORD_KEY]["steps"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
