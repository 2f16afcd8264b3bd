"""The forgetting-curve protocol: options from `--metadata`, the model's tokenizer and limit.

lm-eval builds tasks apart from the model, handing them `--model_args` merged with
`--metadata`. From those we resolve the same tokenizer and lengths the model will use, then
the test lengths. Defaults are the paper's protocol: 32 lengths from 8 up to the model's
claimed length l, linear spacing, 10 samples each, PG-19. The copy input is then up to 2l + 1
tokens, past the training length, as in the paper (that is where the amnesia region shows);
only models that cannot run such inputs at all (learned absolute positions) stop at about l/2.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lm_eval_longmem.data.corpora import check_corpus_name
from lm_eval_longmem.tasks.forgetting_curve.sequences import input_tokens
from lm_eval_longmem.tasks.task_options import (
    MAX_COUNT,
    MAX_SEED,
    MAX_TOKENS,
    TaskOptionError,
    check_choice,
    check_range,
    parse_task_options,
)

OPTION_PREFIX = "fc_"
GRANULARITIES = ("linear", "log")


class ForgettingCurveConfigError(TaskOptionError):
    """A forgetting-curve option is unknown, malformed, or asks for more than the model takes."""


@dataclass(frozen=True)
class Options:
    """What `--metadata fc_<name>=...` can set (paper defaults)."""

    max_length: int | None = field(
        default=None,
        metadata={  # see default_top_length
            "help": "largest L; default: the claimed length l "
            "(about l/2 for absolute positions or an explicit max_length)"
        },
    )
    min_length: int = field(default=8, metadata={"help": "smallest L"})
    points: int = field(default=32, metadata={"help": "number of lengths"})
    granularity: str = field(default="linear", metadata={"help": "linear or log spacing of the lengths"})
    lengths: tuple[int, ...] | None = field(default=None, metadata={"help": "explicit lengths, instead of the grid"})
    samples: int = field(default=10, metadata={"help": "samples per length"})
    seed: int = field(default=0, metadata={"help": "sampling seed; each length has its own stream"})
    corpus: str = field(
        default="auto",
        metadata={
            "help": "auto (PG-19 when loadable, else Shakespeare with a warning) | pg19 | shakespeare | a path to text"
        },
    )

    @classmethod
    def from_metadata(cls, metadata: dict[str, Any]) -> Options:
        return parse_task_options(cls, metadata, OPTION_PREFIX, ForgettingCurveConfigError)

    def validate(self) -> None:
        """Ranges and choices, before any model loads (the start-up check runs it too)."""
        error = ForgettingCurveConfigError
        check_choice(f"{OPTION_PREFIX}granularity", self.granularity, GRANULARITIES, error)
        for name in ("points", "samples"):
            check_range(OPTION_PREFIX + name, getattr(self, name), 1, MAX_COUNT, error=error)
        for name in ("min_length", "max_length", "lengths"):
            check_range(OPTION_PREFIX + name, getattr(self, name), 1, MAX_TOKENS, error=error)
        check_range(f"{OPTION_PREFIX}seed", self.seed, 0, MAX_SEED, error=error)
        check_corpus_name(self.corpus, f"{OPTION_PREFIX}corpus", error)


def length_grid(min_length: int, max_length: int, points: int, granularity: str) -> list[int]:
    """`points` lengths from min to max, as the reference code spaces them (truncated to int)."""
    if max_length < min_length:
        return [max_length]
    if granularity == "log":
        grid = np.geomspace(min_length, max_length, num=points)
    else:
        grid = np.linspace(min_length, max_length, num=points)
    return sorted({int(x) for x in grid.astype(int)} | {int(max_length)})


def max_fitting_length(context_length: int) -> int:
    """The largest L whose sequence fits the model: 2L + 1 input tokens <= context."""
    return (context_length - 1) // 2


@dataclass(frozen=True)
class LengthPlan:
    """One test length and what is known about it before it runs.

    `runs` is False when the input cannot run at all (past a learned absolute-position table,
    or an explicit `max_length`): the length stays in the results with status `model_limit`.
    """

    length: int
    input_tokens: int  # 2L + 1
    beyond_training_length: bool  # the input is longer than the checkpoint was trained on
    beyond_context_length: bool  # ... and than the method's context length (max_length)
    runs: bool
    reason: str | None = None

    @property
    def status(self) -> str:
        """Known before the run (`length_plan` in the results config): `planned` or `model_limit`.
        What happened is the `curve` metric's `lengths` status (`ok`, `out_of_memory`, ...)."""
        return "planned" if self.runs else "model_limit"


@dataclass(frozen=True)
class ModelLengths:
    """The lengths of `tasks.model_view.ModelView` that the protocol needs."""

    training_length: int
    context_length: int
    claimed_length: int  # l: the method's sizing length (or an explicit max_length)
    hard_input_limit: int | None  # None: only memory limits the input

    @classmethod
    def of(cls, view) -> ModelLengths:
        return cls(view.training_length, view.context_length, view.sizing_length, view.hard_input_limit)


def default_top_length(model: ModelLengths) -> int:
    """The paper's default largest L: the claimed length l itself (the copy input is then about
    2l tokens, past the training length: where the amnesia region shows), unless the input
    would pass a hard limit (learned absolute positions, an explicit max_length): then the
    largest L whose 2L + 1 tokens fit it, i.e. about l/2."""
    if model.hard_input_limit is None:
        return model.claimed_length
    return min(model.claimed_length, max_fitting_length(model.hard_input_limit))


def plan_lengths(options: Options, model: ModelLengths) -> list[LengthPlan]:
    """Every length to report, each with its input size and whether it can run.

    A length past the hard input limit is kept (status `model_limit`, logged), never dropped;
    only when no length can run at all is it an error, before any work is done.
    """
    if options.lengths is not None:
        lengths = list(options.lengths)
    else:
        top = options.max_length if options.max_length is not None else default_top_length(model)
        lengths = length_grid(options.min_length, top, options.points, options.granularity)
    plans = []
    for L in lengths:
        tokens = input_tokens(L)
        limit = model.hard_input_limit
        runs = limit is None or tokens <= limit
        reason = None if runs else (f"needs {tokens} input tokens (2L + 1); the model cannot take more than {limit}")
        plans.append(LengthPlan(L, tokens, tokens > model.training_length, tokens > model.context_length, runs, reason))
    if not any(p.runs for p in plans):
        limit = model.hard_input_limit
        raise ForgettingCurveConfigError(
            f"forgetting_curve: none of the lengths {lengths} can run: they need up to {input_tokens(max(lengths))} "
            f"input tokens (2L + 1), but the model takes at most {limit} (learned absolute positions, or max_length "
            f"in --model_args). The longest length that fits is {max_fitting_length(limit)}. Nothing is truncated."
        )
    return plans


def check_inputs_fit(metadata: dict[str, Any], model, gen_kwargs: dict[str, Any]) -> None:
    """The start-up check's (tasks/declaration.py): some length must fit the model."""
    plan_lengths(Options.from_metadata(metadata), ModelLengths.of(model))
