"""AdamW and the learning-rate schedule: linear warmup, then constant (the controlled study's
setting) or a linear/cosine decay to zero."""

from __future__ import annotations

import torch
from transformers import get_scheduler

from ..recipes.recipe import Recipe


def make_optimizer(param_groups: list[dict], recipe: Recipe) -> torch.optim.Optimizer:
    return torch.optim.AdamW(
        param_groups,
        lr=recipe.lr,
        betas=(recipe.adam_beta1, recipe.adam_beta2),
        eps=recipe.adam_eps,
        weight_decay=recipe.weight_decay,
    )


def make_scheduler(optimizer, recipe: Recipe):
    return get_scheduler(
        recipe.lr_schedule, optimizer, num_warmup_steps=recipe.warmup_steps, num_training_steps=recipe.max_steps
    )


def mixed_precision_for(setting: str) -> str:
    """accelerate's mixed_precision for a recipe setting; `auto` uses what the device has."""
    if setting != "auto":
        return setting
    if torch.cuda.is_available():
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return "no"
