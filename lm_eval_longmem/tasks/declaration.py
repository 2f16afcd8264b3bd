"""What one of our tasks declares about itself, in its own folder (`<task>/declaration.py`
exposing `DECLARATION`), so that adding a task is a new folder, not edits across the package.

The start-up check, `fetch-data`, the leaderboard, the figure subcommands and `lm-eval-longmem
tasks` read these through `tasks/registry.py`. A declaration module is read at start-up,
before any model loads: it imports nothing heavy (no torch, transformers or lm-eval task
code). What is heavy is named by an import string ("package.module:attribute") and imported
only when used: the options dataclass (protocol modules import numpy), the figure's drawing code.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lm_eval_longmem.data.requirements import HubDataset
from lm_eval_longmem.tasks.headlines import Headline, three_decimals


def import_object(reference: str | Any) -> Any:
    """The object an import string "package.module:attribute" names (anything else as given)."""
    if not isinstance(reference, str):
        return reference
    module_name, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module_name), attribute)


def option_given(options: Mapping[str, Any], key: str) -> str | None:
    """`key`'s value as text, or None when not given (or given as "", "none", "null")."""
    value = options.get(key)
    return None if value is None or str(value).strip().lower() in ("", "none", "null") else str(value).strip()


@dataclass(frozen=True)
class TaskOptions:
    """The task's `--metadata <prefix><name>=...` options: names, types, defaults and help are
    the fields of `dataclass` (an import string, or the class itself)."""

    prefix: str
    dataclass: str | type

    def load(self) -> type:
        return import_object(self.dataclass)

    def fields(self) -> tuple[dataclasses.Field, ...]:
        return dataclasses.fields(self.load())


def always(options: Mapping[str, Any]) -> bool:
    return True


@dataclass(frozen=True)
class DatasetNeed:
    """A Hub dataset the task needs when `when(options)` holds (options: `--model_args` and
    `--metadata` merged, as the task gets them)."""

    dataset: HubDataset
    when: Callable[[Mapping[str, Any]], bool] = always
    local_option: str = ""  # this task's --metadata option for local copies, if not the dataset's own

    @property
    def alternative(self) -> str:
        """What a user without the Hub passes instead: two tasks may name one dataset differently
        (PG-19 is `fc_corpus` for the forgetting curve, `ppl_corpus` for perplexity)."""
        return self.local_option or self.dataset.local_option


@dataclass(frozen=True)
class FigureArgument:
    """One extra option of a figure subcommand: `parser.add_argument(*flags, **settings)`."""

    flags: tuple[str, ...]
    settings: Mapping[str, Any] = dataclasses.field(default_factory=dict)


@dataclass(frozen=True)
class Figure:
    """A figure subcommand (`lm-eval-longmem <subcommand> RESULTS... -o FILE`) for this task.

    `draw(runs, output, args)`, `describe(run)` (the line printed per run) and `reader(data,
    source)` (turns each run into what `draw` takes; None: the runs as found) are import strings."""

    subcommand: str
    help: str
    default_output: str
    draw: str
    describe: str
    reader: str | None = None
    arguments: tuple[FigureArgument, ...] = ()


@dataclass(frozen=True)
class TaskDeclaration:
    name: str  # the lm-eval task name
    summary: str  # one line, for `lm-eval-longmem tasks`
    options: TaskOptions | None = None
    datasets: tuple[DatasetNeed, ...] = ()
    headlines: Callable[[dict], list[Headline]] | None = None  # results.<task> -> leaderboard headlines
    write_value: Callable[[Headline], str] = three_decimals  # a headline as tables write it
    no_numbers_note: Callable[[dict], str] | None = None  # why it gave no headline, where it can say
    figure: Figure | None = None
    # "module:function"(options, model view, --gen_kwargs) raising TaskOptionError for inputs the
    # model cannot take; the start-up check calls it with the model's config and tokenizer (no weights)
    inputs_check: str | None = None

    def needs(self, options: Mapping[str, Any]) -> list[HubDataset]:
        """The Hub datasets this task cannot run without, under `options`."""
        return [need.dataset for need in self.datasets if need.when(options)]

    def alternative_to(self, dataset_key: str) -> str | None:
        """This task's option that replaces the Hub dataset `dataset_key` by local copies."""
        return next((need.alternative for need in self.datasets if need.dataset.key == dataset_key), None)
