"""Resumable checkpoints: accelerate's state (model, optimizer, RNG of every process, and the
registered scheduler and progress counter) plus `run.json` with the recipe it was made under.

The data position is the step: `BatchOrder` derives every batch from it. A checkpoint is written
to a `.partial` folder and renamed when complete, so a run killed while saving leaves the
previous one intact. A recipe whose trajectory-deciding keys differ is refused, never overwritten.
"""

from __future__ import annotations

import json
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path

from lm_eval_longmem_training.errors import TrainingError
from lm_eval_longmem_training.recipe import Recipe

CHECKPOINTS = "checkpoints"
RUN_FILE = "run.json"


class _SharedTensorNotice(logging.Filter):
    """accelerate says "Removed shared tensor {...} while saving" at every checkpoint of a model
    with tied input/output embeddings (SmolLM2): safetensors stores a shared tensor once. The tie
    is one Parameter, so loading the kept name restores both and a resumed run stays on the same
    trajectory (tests/test_training_resume.py, tied model). The line only broke the progress bar."""

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
    root = output_dir / CHECKPOINTS
    found = [p for p in root.glob("step-*") if p.is_dir() and not p.name.endswith(".partial") and (p / RUN_FILE).is_file()]
    return sorted(found, key=lambda p: int(p.name.removeprefix("step-")))


def latest_checkpoint(output_dir: Path) -> Path | None:
    found = checkpoint_dirs(output_dir)
    return found[-1] if found else None


def check_resumable(checkpoint: Path, recipe: Recipe) -> None:
    saved = json.loads((checkpoint / RUN_FILE).read_text())["fingerprint"]
    current = json.loads(json.dumps(recipe.fingerprint()))
    differing = sorted(k for k in set(saved) | set(current) if saved.get(k) != current.get(k))
    if differing:
        changes = ", ".join(f"{k}: checkpoint {saved.get(k)!r} vs recipe {current.get(k)!r}" for k in differing)
        raise TrainingError(
            f"The checkpoint {checkpoint} was made with another recipe ({changes}). It is left as it is. "
            "Resume with the recipe it was made with, or start a new run: output_dir=<new folder> or resume=never "
            "(which also leaves the old checkpoints untouched)."
        )


def save_checkpoint(accelerator, output_dir: Path, recipe: Recipe, progress: RunProgress) -> Path:
    final = output_dir / CHECKPOINTS / f"step-{progress.step:07d}"
    partial = final.with_name(final.name + ".partial")
    if accelerator.is_main_process:
        shutil.rmtree(partial, ignore_errors=True)
    accelerator.wait_for_everyone()
    accelerator.save_state(str(partial))
    # every rank writes its own RNG file into `partial`: rename only once all have finished
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        run = {"recipe": recipe.name, "step": progress.step, "tokens": progress.tokens, "fingerprint": recipe.fingerprint()}
        (partial / RUN_FILE).write_text(json.dumps(run, indent=2))
        shutil.rmtree(final, ignore_errors=True)
        partial.rename(final)
        for old in checkpoint_dirs(output_dir)[: -recipe.keep_checkpoints]:
            shutil.rmtree(old, ignore_errors=True)
    accelerator.wait_for_everyone()
    return final
