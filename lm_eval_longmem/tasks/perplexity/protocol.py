"""The perplexity protocol: options from `--metadata ppl_*`, the length grid, the windows.

As LongLoRA and YaRN report it: for each evaluation length L, windows of L consecutive tokens
cut from books without overlap; the model reads each window once, teacher-forced, and the
perplexity at L is exp of the mean negative log-likelihood of the window's predicted tokens
(positions 1 .. L-1, each predicted from everything before it in the window). Windows are cut
inside single documents (a window never spans two books); the default grid halves down from
the model's claimed length (l, l/2, l/4, l/8), the powers of two those papers tabulate.

`ppl_stride=S` is sliding-window evaluation (Press et al., 2022, which the controlled study
follows with S = 256): the model's window of L tokens slides over the text S tokens at a time
and only the S tokens each step adds are scored, so every token is scored once, read after
L - S to L - 1 tokens of context, never after a short one. One window of L tokens here is one
such step: it reads its first L - S tokens as context and scores its last S. Perplexity is then
over the scored tokens, drawn from the same non-overlapping window slots: an estimate of the
sliding-window perplexity of the whole corpus from `ppl_windows` steps per length.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lm_eval_longmem.data.corpora import check_corpus_name
from lm_eval_longmem.tasks.task_options import (
    MAX_COUNT,
    MAX_SEED,
    MAX_TOKENS,
    TaskOptionError,
    check_range,
    parse_task_options,
)

OPTION_PREFIX = "ppl_"
MIN_LENGTH = 2  # one token read, one predicted


class PerplexityConfigError(TaskOptionError):
    """A perplexity option is unknown, malformed, or asks for more than the model or corpus gives."""


@dataclass(frozen=True)
class Options:
    """What `--metadata ppl_<name>=...` can set."""

    lengths: tuple[int, ...] | None = field(
        default=None, metadata={"help": "explicit window lengths, instead of the grid"}
    )
    max_length: int | None = field(
        default=None, metadata={"help": "top of the grid; default: the model's claimed length"}
    )
    points: int = field(default=4, metadata={"help": "grid lengths: max_length, max_length/2, ... (this many)"})
    windows: int = field(default=4, metadata={"help": "windows per length"})
    corpus: str = field(
        default="auto",
        metadata={
            "help": "auto (PG-19 when loadable, else Shakespeare with a warning) | pg19 | shakespeare | a path to text"
        },
    )
    bins: int = field(default=16, metadata={"help": "position bins of the loss curve"})
    seed: int = field(default=0, metadata={"help": "window sampling seed"})
    stride: int | None = field(
        default=None,
        metadata={
            "help": "sliding-window evaluation (Press et al.; the controlled study uses 256): score only each "
            "window's last STRIDE tokens, read after the L - STRIDE before them; default: every token but the first"
        },
    )

    @classmethod
    def from_metadata(cls, metadata: dict[str, Any]) -> Options:
        return parse_task_options(cls, metadata, OPTION_PREFIX, PerplexityConfigError)

    def validate(self) -> None:
        """Ranges, the corpus and one way of choosing lengths, before any model loads (the
        start-up check runs it too)."""
        error = PerplexityConfigError
        for name in ("points", "windows", "bins"):
            check_range(OPTION_PREFIX + name, getattr(self, name), 1, MAX_COUNT, error=error)
        check_range(f"{OPTION_PREFIX}lengths", self.lengths, MIN_LENGTH, MAX_TOKENS, error=error)
        check_range(f"{OPTION_PREFIX}max_length", self.max_length, MIN_LENGTH, MAX_TOKENS, error=error)
        check_range(f"{OPTION_PREFIX}seed", self.seed, 0, MAX_SEED, error=error)
        check_range(f"{OPTION_PREFIX}stride", self.stride, 1, MAX_TOKENS, error=error)
        check_corpus_name(self.corpus, f"{OPTION_PREFIX}corpus", error)
        if self.lengths is not None and self.max_length is not None:
            raise PerplexityConfigError(
                "give ppl_lengths or ppl_max_length (with ppl_points), not both (ppl_max_length=none clears the one "
                "the longmem group sets)"
            )


def halving_grid(top: int, points: int) -> list[int]:
    """top, top/2, top/4, ... (`points` lengths, none below MIN_LENGTH), ascending."""
    return sorted({max(MIN_LENGTH, top >> i) for i in range(points)})


def first_scored(length: int, stride: int | None) -> int:
    """Position of the first scored token of a window: 1 (every token a window predicts), or the
    start of its last `stride` tokens under sliding-window evaluation."""
    return 1 if stride is None else length - stride


def input_tokens(length: int) -> int:
    """Tokens the model reads for one window of `length` tokens (the last one is only a target)."""
    return length - 1


def window_lengths(options: Options, model) -> list[int]:
    """The window lengths for a `ModelView`; raises (never truncates) when one cannot run at all.

    The default grid tops at the claimed length, which always fits. Explicit lengths may go past
    the context length on purpose (perplexity beyond the training length is the classic way to
    show a method failing to extrapolate): their requests are length probes, refused only past
    the hard input limit (learned absolute positions, or an explicit max_length)."""
    if options.lengths is not None:
        lengths = list(options.lengths)
    else:
        top = (
            options.max_length if options.max_length is not None else min(model.sizing_length, model.context_length + 1)
        )
        lengths = halving_grid(top, options.points)
    if options.stride is not None and options.stride > min(lengths) - 1:
        raise PerplexityConfigError(
            f"longmem_perplexity: ppl_stride={options.stride} scores more tokens than a window of {min(lengths)} "
            f"predicts ({min(lengths) - 1}). Give a stride below every length (the study's is 256 at lengths of "
            "2k and up), or leave it out to score every token."
        )
    limit = model.hard_input_limit
    too_long = [L for L in lengths if limit is not None and input_tokens(L) > limit]
    if too_long:
        raise PerplexityConfigError(
            f"longmem_perplexity: window length(s) {too_long} make the model read {input_tokens(max(too_long))} "
            f"tokens, but it can take at most {limit} (learned absolute positions, or max_length in --model_args). "
            f"The longest window that can run is {limit + 1}: lower ppl_lengths or ppl_max_length. Nothing is "
            "truncated."
        )
    return lengths


def book_windows(
    documents: list[np.ndarray], length: int, count: int, rng: np.random.Generator
) -> list[tuple[int, int]]:
    """(document, start) of `count` non-overlapping windows of `length` tokens inside documents.

    Each document is cut into consecutive windows [0, L), [L, 2L), ...; `count` of all those
    slots are drawn without replacement (so windows never overlap), in a reproducible order."""
    slots = [(d, k * length) for d, tokens in enumerate(documents) for k in range(len(tokens) // length)]
    if len(slots) < count:
        longest = max((len(t) for t in documents), default=0)
        raise PerplexityConfigError(
            f"longmem_perplexity: the corpus has {len(slots)} non-overlapping windows of {length} tokens inside its "
            f"documents (longest document: {longest} tokens), {count} are asked for. Lower ppl_windows or the "
            "lengths, or use a corpus with longer or more documents (ppl_corpus=pg19, or a path)."
        )
    chosen = rng.choice(len(slots), size=count, replace=False)
    return [slots[i] for i in sorted(chosen)]
