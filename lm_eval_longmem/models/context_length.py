"""How many tokens a model takes: the one rule shared by the wrapper and the tasks.

The tasks size their inputs before any model is built (lm-eval builds tasks first), so they
must reach the same answer as `LongMemLM.max_length` from the model arguments alone.
"""

from __future__ import annotations

from lm_eval.models.utils import resolve_max_length

from lm_eval_longmem.models.methods import LongMemMethod


def training_length(config, tokenizer=None) -> int:
    """The context length the checkpoint declares (what it was trained for)."""
    return resolve_max_length(config, tokenizer)


def usable_context_length(config, method: LongMemMethod, max_length: int | None = None, tokenizer=None) -> int:
    """An explicit `max_length` wins; otherwise the method's extension of the training length."""
    if max_length:
        return int(max_length)
    return method.context_length(training_length(config, tokenizer))


def default_sizing_length(config, method: LongMemMethod, max_length: int | None = None, tokenizer=None) -> int:
    """What tasks size their default grids by: an explicit `max_length`, else the method's
    `sizing_length` of the training length."""
    if max_length:
        return int(max_length)
    return method.sizing_length(training_length(config, tokenizer))
