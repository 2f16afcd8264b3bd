"""Passkey options from `--metadata pk_<name>=...`, and prompts sized to a length.

Lengths are prompt sizes in tokens of the evaluated model's tokenizer (like RULER's
`max_seq_lengths`): for each length the filler is the most whole filler sentences that keep
the prompt within it. Every prompt plus the answer's room must fit the model; a length that
does not is an error, never a truncation. `pk_protocol=chars` reproduces the original code
instead: each length is the filler's size in characters (its `n_garbage`), cut mid-sentence
as the original cuts it, and the prompt's token count is whatever it comes to.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lm_eval_longmem.data.passkey_prompt import ANSWER_TOKENS, KEY_RANGE, assemble, prompt_sized_to_tokens
from lm_eval_longmem.tasks.prompt_budget import max_gen_toks
from lm_eval_longmem.tasks.task_options import (
    MAX_COUNT,
    MAX_SEED,
    MAX_TOKENS,
    TaskOptionError,
    check_choice,
    check_range,
    parse_task_options,
)

OPTION_PREFIX = "pk_"
PROTOCOLS = ("tokens", "chars")


class PasskeyConfigError(TaskOptionError):
    """A passkey option is unknown or malformed, or a length does not fit the model."""


@dataclass(frozen=True)
class Options:
    """What `--metadata pk_<name>=...` can set. Small defaults: a bare run takes minutes on a CPU."""

    lengths: tuple[int, ...] = field(
        default=(512, 1024, 2048),
        metadata={"help": "prompt lengths in tokens (characters of filler with pk_protocol=chars)"},
    )
    depths: tuple[int, ...] = field(
        default=(0, 25, 50, 75, 100), metadata={"help": "key depth, % of the filler placed before it"}
    )
    samples: int = field(default=2, metadata={"help": "documents (keys) per length x depth cell"})
    seed: int = field(default=0, metadata={"help": "key seed; each (length, depth, sample) has its own stream"})
    protocol: str = field(
        default="tokens",
        metadata={"help": "tokens (fit to the tokenizer) or chars (the original code's character counts)"},
    )

    @classmethod
    def from_metadata(cls, metadata: dict[str, Any]) -> Options:
        return parse_task_options(cls, metadata, OPTION_PREFIX, PasskeyConfigError)

    def validate(self) -> None:
        """Ranges and choices, before any model loads (the start-up check runs it too)."""
        error = PasskeyConfigError
        check_choice(f"{OPTION_PREFIX}protocol", self.protocol, PROTOCOLS, error)
        check_range(f"{OPTION_PREFIX}lengths", self.lengths, 1, MAX_TOKENS, error=error)
        check_range(f"{OPTION_PREFIX}depths", self.depths, 0, 100, error=error)  # % of the filler before the key
        check_range(f"{OPTION_PREFIX}samples", self.samples, 1, MAX_COUNT, error=error)
        check_range(f"{OPTION_PREFIX}seed", self.seed, 0, MAX_SEED, error=error)

    @property
    def unit(self) -> str:
        return "tokens" if self.protocol == "tokens" else "characters"


def check_lengths_fit(options: Options, context_length: int, answer_tokens: int = ANSWER_TOKENS) -> None:
    """Token lengths must leave the answer's room; fails before any prompt is built."""
    if options.protocol != "tokens":
        return
    limit = context_length - answer_tokens
    if limit < 1:
        raise PasskeyConfigError(
            f"longmem_passkey: the answer's {answer_tokens} tokens (--gen_kwargs max_gen_toks) leave no room for a "
            f"prompt in the {context_length} tokens the model takes. Lower max_gen_toks. Nothing is truncated."
        )
    too_long = [L for L in options.lengths if L > limit]
    if too_long:
        raise PasskeyConfigError(
            f"longmem_passkey: length(s) {too_long} do not fit: the model takes {context_length} tokens and the "
            f"answer needs {answer_tokens}, so the longest prompt is {limit} tokens. Lower pk_lengths"
            + (" or --gen_kwargs max_gen_toks" if answer_tokens != ANSWER_TOKENS else "")
            + ", or raise the model's limit explicitly (max_length=N in --model_args, or a context-extension "
            "method). Nothing is truncated."
        )


def check_answer_fits(tokenizer, answer_room: int) -> None:
    """`--gen_kwargs max_gen_toks` too short for the longest key would cut every answer that long
    ("The pass key is 123" for 12345) and score it wrong: a run of zeros that looks like a finding."""
    needed = len(tokenizer(f" {KEY_RANGE[1]}", add_special_tokens=False)["input_ids"])
    if answer_room < needed:
        raise PasskeyConfigError(
            f"longmem_passkey: --gen_kwargs max_gen_toks={answer_room} is shorter than a key: the longest "
            f"({KEY_RANGE[1]}) is {needed} tokens of this tokenizer, so longer keys would be cut and scored "
            f"wrong. Give max_gen_toks={needed} or more (the task's default is {ANSWER_TOKENS})."
        )


def check_inputs_fit(metadata: dict[str, Any], model, gen_kwargs: dict[str, Any]) -> None:
    """The start-up check's (tasks/declaration.py): `--gen_kwargs max_gen_toks` replaces the
    answer's room the task asks for. Lengths too short for the prompt's fixed text are refused
    here too, before the model loads, rather than when the task builds its documents."""
    options = Options.from_metadata(metadata)
    answer_room = max_gen_toks(gen_kwargs, ANSWER_TOKENS)
    check_answer_fits(model.tokenizer, answer_room)
    check_lengths_fit(options, model.context_length, answer_room)
    if options.protocol != "tokens":
        return
    count = lambda text: len(model.tokenizer(text)["input_ids"])  # noqa: E731 (the task's own count)
    widest = count(assemble("", KEY_RANGE[1], ""))  # the prompt without filler, with a key of the most digits
    for length, depth, sample in cells(options):
        if length < widest:  # only lengths this short can be too short for a cell's own key
            prompt_for_tokens(length, depth, cell_key(options.seed, length, depth, sample), count)


def cells(options: Options):
    """(length, depth, sample) of every document, in the task's order."""
    for length in options.lengths:
        for depth in options.depths:
            for sample in range(options.samples):
                yield length, depth, sample


def cell_key(seed: int, length: int, depth: int, sample: int) -> int:
    """The pass key of one document: its own random stream, so adding cells moves no other key."""
    import numpy as np

    rng = np.random.default_rng([seed, length, depth, sample])
    return int(rng.integers(KEY_RANGE[0], KEY_RANGE[1] + 1))


def prompt_for_tokens(length: int, depth: int, key: int, count: Callable[[str], int]) -> tuple[str, int]:
    """The prompt with the most filler sentences whose token count is <= `length`, and that count
    (data/passkey_prompt.py); too short a length is this task's option error."""
    return prompt_sized_to_tokens(length, depth, key, count, error=PasskeyConfigError)


def check_prompt_fits(prompt_tokens: int, length: int, context_length: int) -> None:
    if prompt_tokens + ANSWER_TOKENS > context_length:
        raise PasskeyConfigError(
            f"longmem_passkey: with pk_protocol=chars, length {length} gives a prompt of {prompt_tokens} tokens; "
            f"with the answer's {ANSWER_TOKENS} it exceeds the model's {context_length}. Lower pk_lengths, or raise "
            "the model's limit explicitly (max_length=N in --model_args). Nothing is truncated."
        )
