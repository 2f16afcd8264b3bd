"""The forgetting-curve protocol: options from `--metadata`, the model's tokenizer and limit.

lm-eval builds tasks before they meet a model, handing them `--model_args` merged with
`--metadata`. From those we resolve the same tokenizer and the same context length the
model will use, then the test lengths. Defaults are the paper's protocol: 32 lengths from
8 up to the longest that fits the model, linear spacing, 10 samples each, PG-19.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lm_eval_longmem.tasks.forgetting_curve.sequences import input_tokens
from lm_eval_longmem.tasks.task_options import TaskOptionError, parse_task_options

OPTION_PREFIX = "fc_"


class ForgettingCurveConfigError(TaskOptionError):
    """A forgetting-curve option is unknown, malformed, or asks for more than the model takes."""


@dataclass(frozen=True)
class Options:
    """What `--metadata fc_<name>=...` can set (paper defaults)."""

    max_length: int | None = None  # largest L; default: the longest that fits the model
    min_length: int = 8
    points: int = 32
    granularity: str = "linear"  # or "log"
    lengths: tuple[int, ...] | None = None  # explicit lengths, instead of the grid
    samples: int = 10
    seed: int = 0
    corpus: str = "auto"  # auto | pg19 | shakespeare | <path>

    @classmethod
    def from_metadata(cls, metadata: dict[str, Any]) -> Options:
        return parse_task_options(cls, metadata, OPTION_PREFIX, ForgettingCurveConfigError)

    def validate(self) -> None:
        if self.granularity not in ("linear", "log"):
            raise ForgettingCurveConfigError("fc_granularity must be 'linear' or 'log'")
        if self.points < 1 or self.samples < 1 or self.min_length < 1:
            raise ForgettingCurveConfigError("fc_points, fc_samples and fc_min_length must be positive")
        if self.lengths is not None and (not self.lengths or min(self.lengths) < 1):
            raise ForgettingCurveConfigError("fc_lengths must be a non-empty list of positive integers")


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


def test_lengths(options: Options, context_length: int, sizing_length: int | None = None) -> list[int]:
    """The lengths to test; raises (never truncates) when one would not fit the model.

    The default grid reaches the longest L that fits `sizing_length` (the context length,
    unless the method takes any length: then the base model's, see `LongMemMethod.sizing_length`).
    """
    limit = max_fitting_length(context_length)
    if options.lengths is not None:
        lengths = list(options.lengths)
    else:
        default_top = max_fitting_length(min(context_length, sizing_length or context_length))
        top = options.max_length if options.max_length is not None else default_top
        lengths = length_grid(options.min_length, top, options.points, options.granularity)
    too_long = [L for L in lengths if input_tokens(L) > context_length]
    if too_long:
        raise ForgettingCurveConfigError(
            f"forgetting_curve: length(s) {too_long} need {input_tokens(max(too_long))} input tokens "
            f"(2L + 1), but the model takes {context_length}. The longest length that fits is {limit}: "
            f"lower fc_max_length/fc_lengths, or raise the model's limit explicitly (max_length=N in "
            "--model_args, or a context-extension method) to probe beyond it. Nothing is truncated."
        )
    return lengths
