"""Shared by the training tests: a recipe run in-process on the tiny Llama and the word corpus."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from lm_eval_longmem_training.loop.training_loop import train
from lm_eval_longmem_training.recipes.loading import load_recipe


def tiny_overrides(model_dir, corpus_file, output_dir, **extra) -> list[str]:
    values = {
        "model": model_dir,
        "data": corpus_file,
        "output_dir": output_dir,
        "seq_len": 32,
        "max_steps": 4,
        "micro_batch_size": 2,
        "grad_accum_steps": 2,
        "save_every": 2,
        "warmup_steps": 1,
        "lr": 1e-3,
        "progress_bar": False,
        **extra,
    }
    return [f"{k}={v}" for k, v in values.items()]


def run_recipe(name: str, model_dir, corpus_file, output_dir: Path, **extra) -> dict:
    recipe = load_recipe(name, tiny_overrides(model_dir, corpus_file, output_dir, **extra))
    return train(recipe, recipe_source=name)


TRAINING_DOCS = Path(__file__).resolve().parents[2] / "docs" / "training.md"


def shipped_deepspeed_configs() -> list[dict]:
    """The accelerate configs with `distributed_type: DEEPSPEED` that docs/training.md ships."""
    blocks = re.findall(r"```yaml\n(.*?)```", TRAINING_DOCS.read_text(), flags=re.S)
    configs = [yaml.safe_load(b) for b in blocks]
    return [c for c in configs if isinstance(c, dict) and c.get("distributed_type") == "DEEPSPEED"]
