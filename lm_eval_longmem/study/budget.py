"""The one place the study's budget and base become training-recipe overrides.

Every trained row runs its own recipe (its method, method arguments and approach) with the same
`model` (the base), `data`, `seq_len`, `micro_batch_size`, `grad_accum_steps`, `seed` and
number of steps set on the command line. The training module packs its text into chunks of
`seq_len` tokens with the base's tokenizer and draws them in an order seeded by `seed`
(training/data/batch_order.py), so equal values give every row the same chunks in the same
order: the same data, the same tokens, seen the same way. A row that trains at its own length
(`seq_len:` on the row, as the study trains Landmark at 512) keeps the budget's token count,
in more steps of shorter chunks.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from lm_eval_longmem.study.schema import Budget, Row, Study, StudyConfigError

# Recipe keys the budget owns: a row may not set them itself.
OWNED_KEYS = ("model", "data", "seq_len", "max_steps", "micro_batch_size", "grad_accum_steps", "seed", "output_dir")


def sequences_per_step(budget: Budget) -> int:
    return budget.micro_batch_size * budget.grad_accum_steps * budget.processes


def budget_tokens(budget: Budget) -> int:
    return budget.tokens if budget.tokens is not None else budget.steps * sequences_per_step(budget) * budget.seq_len


def steps_for(budget: Budget, seq_len: int, label: str, source: str) -> int:
    """Optimizer steps that spend the budget's tokens at `seq_len` (whole steps, rounded up)."""
    if budget.steps is not None and seq_len == budget.seq_len:
        return budget.steps
    per_step = sequences_per_step(budget) * seq_len
    tokens = budget_tokens(budget)
    if tokens < per_step:
        raise StudyConfigError(
            f"{source}: the budget of {tokens:,} tokens is less than one step of row {label} "
            f"({sequences_per_step(budget)} sequences x {seq_len} tokens = {per_step:,}). Raise budget.tokens "
            "or lower seq_len or the batch."
        )
    return math.ceil(tokens / per_step)


def training_folder(study: Study, row: Row) -> Path:
    return study.output_path / "train" / row.label


def training_overrides(study: Study, row: Row) -> dict[str, Any]:
    """The recipe keys set for `row`: its own `recipe_keys`, then the budget's shared ones, then
    the keys the budget owns (which a row cannot set)."""
    budget = study.budget
    owned = sorted(set(row.recipe_keys) & set(OWNED_KEYS))
    if owned:
        raise StudyConfigError(
            f"{study.source}: row {row.label} sets {', '.join(owned)} in recipe_keys; the budget sets these for "
            "every trained row alike (change budget:, or the row's seq_len: for its own training length)"
        )
    seq_len = row.seq_len or budget.seq_len
    values = {**row.recipe_keys, **budget.recipe_keys}
    values.update(
        model=study.base.get("pretrained", "default"),
        seq_len=seq_len,
        max_steps=steps_for(budget, seq_len, row.label, study.source),
        micro_batch_size=budget.micro_batch_size,
        grad_accum_steps=budget.grad_accum_steps,
        seed=budget.seed,
        output_dir=str(training_folder(study, row)),
        progress_bar=False,
    )
    if budget.data is not None:
        values["data"] = budget.data
    return values


def override_words(values: dict[str, Any]) -> list[str]:
    """`key=value` words as `lm-eval-longmem train` reads them (mappings one entry at a time)."""
    words = []
    for key, value in values.items():
        if isinstance(value, dict):
            words += [f"{key}.{k}={_text(v)}" for k, v in value.items()]
        else:
            words.append(f"{key}={_text(value)}")
    return words


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_text(v) for v in value) + "]"
    return str(value)


def check_trained_row(study: Study, row: Row):
    """The row's recipe as the training module loads it with the budget applied (its own checks:
    an unknown recipe, a key it refuses, a length its method cannot take); one StudyConfigError."""
    from lm_eval_longmem_training.errors import TrainingError
    from lm_eval_longmem_training.recipes.loading import load_recipe

    try:
        recipe = load_recipe(row.recipe, override_words(training_overrides(study, row)))
    except TrainingError as err:
        raise StudyConfigError(f"{study.source}: row {row.label} (recipe {row.recipe}) cannot train: {err}") from None
    if recipe.approach == "from_scratch":
        raise StudyConfigError(
            f"{study.source}: row {row.label}: recipe {row.recipe} trains a new model from scratch; the study "
            "extends one base model (pick an extension recipe, or evaluate that model as its own study's base)"
        )
    return recipe
