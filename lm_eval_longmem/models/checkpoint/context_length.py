"""How many tokens a model takes: the one rule shared by the wrapper and the tasks.

The tasks size their inputs before any model is built (lm-eval builds tasks first), so they
must reach the same answer as `LongMemLM.max_length` from the model arguments alone.

Three lengths, kept apart on purpose:

* the *training length* C: what the checkpoint declares (what it was trained on);
* the *context length*: the longest input an ordinary request may have (`max_length`): C, a
  context-extension method's C', any length for a bounded-memory method, or an explicit
  `max_length=N`;
* the *hard input limit*: what can run at all. Requests that probe memory past the trained
  length on purpose (the forgetting curve's copy sequences of 2L + 1 tokens up to the claimed
  length) may go past the context length, up to this limit: none for relative positions
  (RoPE, ALiBi, FoX's forget gate, no positions) or bounded memory, the position table for
  learned absolute positions (GPT-2 style), or an explicit `max_length=N`.
"""

from __future__ import annotations

from typing import Protocol

from lm_eval.models.utils import resolve_max_length

from lm_eval_longmem.errors import UsageError

# Config attributes that mean positions enter attention relatively (rotary or ALiBi).
_RELATIVE_POSITION_ATTRIBUTES = (
    "rope_parameters",
    "rope_scaling",
    "rope_theta",
    "rotary_dim",
    "rotary_pct",
    "rotary_emb_base",
)
# Config attributes that declare the size of a learned absolute-position table.
_POSITION_TABLE_ATTRIBUTES = ("n_positions", "max_position_embeddings")


class LengthRules(Protocol):
    """What these rules ask of a method: a `LongMemMethod` has it. Typed by shape, not by class,
    so that this module, shared by the wrapper and the tasks, sits below the methods."""

    bounded_memory: bool

    def read_lengths(self, config) -> None: ...

    def trained_length(self, base_length: int) -> int: ...

    def input_limit(self, base_length: int) -> int | None: ...

    def context_length(self, base_length: int) -> int: ...

    def sizing_length(self, base_length: int) -> int: ...


def training_length(config, tokenizer=None, method: LengthRules | None = None) -> int:
    """The context length the checkpoint was trained for: what its config declares, or, under a
    method that reads the model at another base length (clex's C), that length."""
    base = resolve_max_length(config, tokenizer)
    if method is None:
        return base
    method.read_lengths(config)
    return method.trained_length(base)


def _base_length(config, method: LengthRules, tokenizer=None) -> int:
    method.read_lengths(config)
    return resolve_max_length(config, tokenizer)


class BeyondMethodLimitError(UsageError):
    """`max_length=N` past what the method can run at all (its `input_limit`)."""


def usable_context_length(config, method: LengthRules, max_length: int | None = None, tokenizer=None) -> int:
    """An explicit `max_length` wins (up to the method's own limit: past it nothing runs);
    otherwise the method's extension of the training length."""
    base = _base_length(config, method, tokenizer)
    if max_length:
        own = method.input_limit(base)
        if own is not None and int(max_length) > own:
            name = getattr(method, "name", "this method")
            raise BeyondMethodLimitError(
                f"max_length={max_length} is more than method={name} can run: at most {own} tokens, its own "
                f"limit (clex: C x max_factor). Use max_length={own} or less, or raise the method's limit."
            )
        return int(max_length)
    return method.context_length(base)


def default_sizing_length(config, method: LengthRules, max_length: int | None = None, tokenizer=None) -> int:
    """What tasks size their default grids by (the claimed length l): an explicit `max_length`,
    else the method's `sizing_length` of the training length."""
    if max_length:
        return int(max_length)
    return method.sizing_length(_base_length(config, method, tokenizer))


def has_relative_positions(config) -> bool:
    """True unless the config declares a learned absolute-position table (GPT-2, OPT, GPT-Neo,
    StarCoder...): rotary or ALiBi settings, a FoX checkpoint, or no position count at all
    (recurrent models) all let inputs run past the training length without an index error."""
    from lm_eval_longmem.models.fox.configuration_fox import is_fox_config

    if is_fox_config(config) or getattr(config, "alibi", False) is True:
        return True
    if getattr(config, "position_embedding_type", "absolute") != "absolute":  # "rotary", "alibi", "relative_key"...
        return True
    if any(getattr(config, name, None) for name in _RELATIVE_POSITION_ATTRIBUTES):
        return True
    return not any(getattr(config, name, None) for name in _POSITION_TABLE_ATTRIBUTES)


def position_limit(config) -> int | None:
    """Inputs longer than this cannot run at all (the absolute-position table's size); None
    when positions are relative."""
    if has_relative_positions(config):
        return None
    return min(int(getattr(config, name)) for name in _POSITION_TABLE_ATTRIBUTES if getattr(config, name, None))


def hard_input_limit(config, method: LengthRules, max_length: int | None = None) -> int | None:
    """The longest input that may run when a request asks to go past the context length on
    purpose; None for no limit but memory. An explicit `max_length` is the user's cap; a
    bounded-memory method keeps positions inside its cache, so the position table does not bind;
    a method's own limit (`input_limit`) binds in every case."""
    own = method.input_limit(_base_length(config, method))  # clex: C x max_factor, whatever max_length says
    if max_length:
        limit = int(max_length)
    elif method.bounded_memory:
        limit = None
    else:
        limit = position_limit(config)
    return min((x for x in (limit, own) if x is not None), default=None)
