"""What `--model longmem` does with an input longer than the model takes: `overlength=`.

* `refuse` (the default): stop the run with one message; memory tests are never silently cut.
* `skip`: the document is not scored, and its metric is taken over the rest. For loglikelihood
  tasks the whole document goes (all its choices, never one): scoring some choices and not
  others would change the answer. Each skipped request answers a marker (`SkippedScore`,
  `SkippedText`) that lm-eval's `--use_cache` stores like any score, so a rerun from the cache
  skips the same documents (lm_eval_model/overlength.py leaves them out of the metrics).
* `middle`: LongBench's rule: the middle of the prompt goes, its start and its end (where the
  question is) stay; the start keeps half of the room, the end the rest.
* `left`: lm-eval's `hf` rule: the start of the prompt goes (for numbers published that way).
  A cut request answers its score or text marked with what was cut (`CutScore`, `CutText`),
  which --use_cache stores too, so a rerun from the cache reports the same cuts.

Only the context is ever cut: a continuation or generation budget that alone exceeds the
model is refused whatever the policy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from lm_eval_longmem.errors import UsageError

POLICIES = ("refuse", "skip", "middle", "left")
DEFAULT_POLICY = "refuse"
CUTTING_POLICIES = ("middle", "left")


class UnknownOverlengthPolicyError(UsageError):
    """`overlength=` names no policy."""


def parse_policy(value) -> str:
    policy = DEFAULT_POLICY if value is None else str(value).strip().lower()
    if policy not in POLICIES:
        raise UnknownOverlengthPolicyError(
            f"--model_args overlength={value}: unknown policy; valid: {', '.join(POLICIES)} (default {DEFAULT_POLICY})."
        )
    return policy


def cut(ids: Sequence[int], keep: int, policy: str) -> list[int]:
    """`ids` shortened to `keep` tokens by `policy` (middle: LongBench's; left: lm-eval hf's)."""
    ids = list(ids)
    if len(ids) <= keep:
        return ids
    if policy == "left":
        return ids[len(ids) - keep :]
    head = keep // 2
    return ids[:head] + ids[len(ids) - (keep - head) :]


class SkippedScore(tuple):
    """A loglikelihood request left unscored (`overlength=skip`): (-inf, False), with the
    input's length in tokens. Pickles with its length (lm-eval's --use_cache stores it)."""

    def __new__(cls, tokens: int = 0):
        marker = super().__new__(cls, (-math.inf, False))
        marker.tokens = int(tokens)
        return marker

    def __getnewargs__(self):
        return (self.tokens,)


class SkippedText(str):
    """A generation request left unanswered (`overlength=skip`): "", with the prompt's length."""

    def __new__(cls, tokens: int = 0):
        marker = super().__new__(cls, "")
        marker.tokens = int(tokens)
        return marker

    def __getnewargs__(self):
        return (self.tokens,)


class CutScore(tuple):
    """A loglikelihood score of a request whose context was cut to fit (`overlength=middle|left`):
    the (loglikelihood, is_greedy) pair, with the input's length before the cut and the tokens
    removed. Pickles with both (lm-eval's --use_cache stores it)."""

    def __new__(cls, score=(0.0, False), tokens: int = 0, removed: int = 0):
        marker = super().__new__(cls, tuple(score))
        marker.tokens, marker.removed = int(tokens), int(removed)
        return marker

    def __getnewargs__(self):
        return (tuple(self), self.tokens, self.removed)


class CutText(str):
    """A generated text whose prompt was cut to fit, with the prompt's length before the cut and
    the tokens removed."""

    def __new__(cls, text: str = "", tokens: int = 0, removed: int = 0):
        marker = super().__new__(cls, text)
        marker.tokens, marker.removed = int(tokens), int(removed)
        return marker

    def __getnewargs__(self):
        return (str(self), self.tokens, self.removed)


def is_skipped(response) -> bool:
    return isinstance(response, (SkippedScore, SkippedText))


def is_cut(response) -> bool:
    return isinstance(response, (CutScore, CutText))
