"""`lm-eval-longmem train`: the training module (its own `--help` lists recipes and keys)."""

from __future__ import annotations

HELP = "train or extend a model from a recipe (train --help lists recipes and keys)"


def main(argv: list[str]) -> int:
    from lm_eval_longmem_training.cli import main as train_main

    return train_main(argv)
