"""Resumable checkpoints: accelerate's state (model, optimizer, RNG of every process, and the
registered scheduler and progress counter) plus `run.json` with the recipe it was made under and
the size of every file written.

The data position is the step: `BatchOrder` derives every batch from it. A checkpoint is written
to a `.partial` folder and renamed when complete (lm_eval_longmem.common.atomic_files), so a
run killed while saving leaves the previous one intact. A damaged checkpoint (a file missing or
cut short, run.json unreadable, or accelerate failing to load it) is never trained over in
silence: the run falls back to the newest intact one, with a warning, and sets the damaged one
aside as `step-N.unusable`; when none is intact it stops with one message and changes nothing.
A recipe whose trajectory-deciding keys differ is refused, never overwritten.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from lm_eval_longmem.common.atomic_files import fixed_partial_path, remove_folder, replace_folder, tidy_leftovers

from ..errors import TrainingError
from ..recipes.recipe import Recipe
from .tied_weights_notice import quiet_declared_ties

CHECKPOINTS = "checkpoints"
RUN_FILE = "run.json"
CHECKPOINT_NAME = r"step-\d+"
UNUSABLE = ".unusable"


class _SharedTensorNotice(logging.Filter):
    """accelerate says "Removed shared tensor {...} while saving" at every checkpoint of a model
    with tied input/output embeddings (SmolLM2): safetensors stores a shared tensor once. The tie
    is one Parameter, so loading the kept name restores both and a resumed run stays on the same
    trajectory (tests/training/test_resume.py, tied model). The line only breaks the progress bar."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Removed shared tensor")


logging.getLogger("accelerate.utils.other").addFilter(_SharedTensorNotice())


@dataclass
class RunProgress:
    """Counters saved with the accelerate state (`register_for_checkpointing`)."""

    step: int = 0
    tokens: int = 0

    def state_dict(self) -> dict:
        return {"step": self.step, "tokens": self.tokens}

    def load_state_dict(self, state: dict) -> None:
        self.step, self.tokens = int(state["step"]), int(state["tokens"])


def checkpoint_dirs(output_dir: Path) -> list[Path]:
    """Complete checkpoint folders (`step-N`), oldest first; intact or not."""
    root = output_dir / CHECKPOINTS
    found = [p for p in root.glob("step-*") if re.fullmatch(CHECKPOINT_NAME, p.name) and p.is_dir()]
    return sorted(found, key=lambda p: int(p.name.removeprefix("step-")))


def step_of(checkpoint: Path) -> int:
    return int(checkpoint.name.removeprefix("step-"))


def read_run_record(checkpoint: Path) -> dict:
    """run.json of a checkpoint (TrainingError if missing or unreadable)."""
    try:
        record = json.loads((checkpoint / RUN_FILE).read_text("utf-8"))
    except FileNotFoundError:
        raise TrainingError(f"{RUN_FILE} is missing") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise TrainingError(f"{RUN_FILE} cannot be read ({err})") from None
    if (
        not isinstance(record, dict)
        or not isinstance(record.get("fingerprint"), dict)
        or record.get("step") != step_of(checkpoint)
    ):
        raise TrainingError(f"{RUN_FILE} is damaged (no recipe fingerprint, or not this step's)")
    return record


def damage(checkpoint: Path) -> str | None:
    """What is wrong with a checkpoint's files (None: intact as far as sizes tell)."""
    try:
        record = read_run_record(checkpoint)
    except TrainingError as err:
        return str(err)
    for name, size in record.get("files", {}).items():  # checkpoints from before the file list: not checked
        path = checkpoint / name
        if not path.is_file():
            return f"{name} is missing"
        if path.stat().st_size != size:
            return f"{name} has {path.stat().st_size:,} bytes where {size:,} were written"
    return None


def newest_intact_checkpoint(accelerator, output_dir: Path) -> Path | None:
    """The newest intact checkpoint (None when there is none at all). Damaged newer ones are set
    aside with a warning; if every one is damaged, TrainingError and nothing is changed."""
    damaged = []
    for checkpoint in reversed(checkpoint_dirs(output_dir)):
        problem = damage(checkpoint)
        if problem is None:
            for bad, why in damaged:
                set_aside(accelerator, bad, why, checkpoint)
            return checkpoint
        damaged.append((checkpoint, problem))
    if damaged:
        raise_unusable(output_dir, damaged)
    return None


def load_newest_loadable(accelerator, output_dir: Path, checkpoint: Path) -> Path:
    """Load `checkpoint` into the registered objects; if accelerate cannot (on any process), set
    it aside and fall back to the next older intact one. TrainingError when none loads."""
    import torch

    while True:
        try:
            load_state_strictly(accelerator, checkpoint)
            loaded, reason = True, ""
        except Exception as err:  # noqa: BLE001 (whatever a damaged file raises: the fallback decides)
            loaded, reason = False, f"accelerate could not load it ({type(err).__name__}: {err})"
        everywhere = accelerator.reduce(torch.tensor(float(loaded), device=accelerator.device), reduction="sum")
        if int(everywhere.item()) == accelerator.num_processes:
            return checkpoint
        older = [
            c for c in reversed(checkpoint_dirs(output_dir)) if step_of(c) < step_of(checkpoint) and damage(c) is None
        ]
        if not older:
            raise_unusable(output_dir, [(checkpoint, reason or "another process could not load it")])
        set_aside(accelerator, checkpoint, reason or "another process could not load it", older[0])
        checkpoint = older[0]


def load_state_strictly(accelerator, checkpoint: Path) -> None:
    """accelerate's load_state, except that random states it cannot read raise: accelerate would
    only log that at info level and go on with fresh ones, on another trajectory."""
    from accelerate.utils import load

    load(checkpoint / f"random_states_{accelerator.process_index}.pkl")
    accelerator.load_state(str(checkpoint))


def set_aside(accelerator, checkpoint: Path, why: str, fallback: Path) -> None:
    """Rename a damaged checkpoint `step-N.unusable` (kept for inspection) and say so."""
    aside, number = checkpoint.with_name(checkpoint.name + UNUSABLE), 1
    while aside.exists():  # an earlier damaged copy of the same step: keep both
        number += 1
        aside = checkpoint.with_name(f"{checkpoint.name}{UNUSABLE}-{number}")
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        checkpoint.rename(aside)
        print(
            f"warning: checkpoint {checkpoint} is damaged ({why}); resuming from {fallback.name} instead. "
            f"The damaged one was moved to {aside} (delete it once inspected).",
            flush=True,
        )
    accelerator.wait_for_everyone()


def raise_unusable(output_dir: Path, damaged: list[tuple[Path, str]]) -> None:
    listed = "; ".join(f"{c.name}: {why}" for c, why in damaged)
    raise TrainingError(
        f"No checkpoint in {output_dir / CHECKPOINTS} can be resumed ({listed}). Nothing was changed. "
        "Continue from scratch without losing them with resume=never (moves this run aside) or output_dir=<new folder>."
    )


def check_resumable(checkpoint: Path, recipe: Recipe) -> None:
    saved = read_run_record(checkpoint)["fingerprint"]
    current = json.loads(json.dumps(recipe.fingerprint()))
    differing = sorted(k for k in set(saved) | set(current) if saved.get(k) != current.get(k))
    if differing:
        changes = ", ".join(f"{k}: checkpoint {saved.get(k)!r} vs recipe {current.get(k)!r}" for k in differing)
        raise TrainingError(
            f"The checkpoint {checkpoint} was made with another recipe ({changes}). It is left as it is. "
            "Resume with the recipe it was made with, or start a new run: output_dir=<new folder> or resume=never "
            "(which also leaves the old checkpoints untouched)."
        )


def tidy_checkpoints(output_dir: Path) -> None:
    """Remove the half-written or half-deleted checkpoints a killed run left (main process)."""
    tidy_leftovers(output_dir / CHECKPOINTS, CHECKPOINT_NAME)


def save_checkpoint(accelerator, model, output_dir: Path, recipe: Recipe, progress: RunProgress) -> Path:
    """`model` as the loop trains it (prepared); its declared weight ties keep a save quiet."""
    final = output_dir / CHECKPOINTS / f"step-{progress.step:07d}"
    partial = fixed_partial_path(final)
    if accelerator.is_main_process:
        shutil.rmtree(partial, ignore_errors=True)
    accelerator.wait_for_everyone()
    with quiet_declared_ties(accelerator.unwrap_model(model)):
        accelerator.save_state(str(partial))
    # every rank writes its own RNG file into `partial`: list and rename only once all have finished
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        files = {str(p.relative_to(partial)): p.stat().st_size for p in sorted(partial.rglob("*")) if p.is_file()}
        run = {
            "recipe": recipe.name,
            "step": progress.step,
            "tokens": progress.tokens,
            "fingerprint": recipe.fingerprint(),
            "files": files,
        }
        (partial / RUN_FILE).write_text(json.dumps(run, indent=2))
        replace_folder(partial, final)
        for old in checkpoint_dirs(output_dir)[: -recipe.keep_checkpoints]:
            remove_folder(old)
    accelerator.wait_for_everyone()
    return final
