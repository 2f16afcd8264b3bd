"""Every `lm-eval-longmem train ...` command that the docs or a message quote runs as written: the
first argument is a shipped recipe, a YAML path or --help. An error message once told users to
run `lm-eval-longmem train --recipe landmark`, which the command refuses (its recipe is
positional)."""

from __future__ import annotations

import re
from pathlib import Path

from lm_eval_longmem_training.recipes.loading import shipped_recipes

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("README.md", "docs", "lm_eval_longmem", "training", "scripts", "benchmarks")
QUOTED = re.compile(r"lm-eval-longmem train ([^\s`\"'),;]+)")


def quoted_first_arguments() -> list[tuple[str, str]]:
    found = []
    for source in SOURCES:
        path = ROOT / source
        files = [path] if path.is_file() else [p for p in path.rglob("*") if p.suffix in (".md", ".py", ".sh", ".yaml")]
        for file in files:
            for match in QUOTED.finditer(file.read_text("utf-8")):
                found.append((str(file.relative_to(ROOT)), match.group(1)))
    return found


def runs_as_written(first: str) -> bool:
    return first in shipped_recipes() or first.endswith((".yaml", ".yml")) or first in ("--help", "-h", "RECIPE")


def test_every_quoted_train_command_names_a_recipe_the_command_takes():
    quoted = quoted_first_arguments()
    assert len(quoted) >= 5, "the scan found too few quoted commands: the pattern no longer matches"
    wrong = [f"{file}: lm-eval-longmem train {first}" for file, first in quoted if not runs_as_written(first)]
    assert not wrong, "quoted commands the train command refuses:\n" + "\n".join(wrong)


def test_the_check_catches_the_flag_form():
    assert not runs_as_written("--recipe") and runs_as_written("tiny-landmark") and runs_as_written("landmark")
