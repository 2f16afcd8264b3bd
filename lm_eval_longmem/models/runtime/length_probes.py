"""Requests that go past the model's context length on purpose, and what answers a failed one.

The forgetting curve tests lengths up to the claimed length l, so its copy inputs reach
2l + 1 tokens, past `max_length`: the paper's point (the amnesia region shows there). Such a
request is a `LengthProbe`: `longmem` runs it up to the model's hard input limit
(`models.context_length.hard_input_limit`: none for relative positions and bounded memory,
the position table for learned absolute positions, or an explicit `max_length`) instead of
refusing it at `max_length`, and when it does not fit in memory it answers a `ScoreFailure`
instead of stopping the run, so the task reports that length as failed rather than losing the
whole curve. Any other lm-eval model sees an ordinary string.
"""

from __future__ import annotations

from lm_eval_longmem.models.runtime.requests import TokenText

OUT_OF_MEMORY = "out_of_memory"


class LengthProbe(TokenText):
    """A `TokenText` that may run past `max_length`, up to the hard input limit."""

    def __getnewargs__(self):  # through pickling (lm-eval's request cache)
        return (str(self), self.token_ids)


def is_length_probe(text) -> bool:
    return isinstance(text, LengthProbe)


class ScoreFailure:
    """`longmem`'s answer to a `LengthProbe` request that could not run (`reason`, e.g.
    "out_of_memory", and the error in words). Tasks report it; it is never a score."""

    def __init__(self, reason: str, detail: str):
        self.reason = reason
        self.detail = detail

    def __reduce__(self):  # through lm-eval's sqlite cache (pickle)
        return (ScoreFailure, (self.reason, self.detail))

    def __eq__(self, other) -> bool:
        return isinstance(other, ScoreFailure) and (self.reason, self.detail) == (other.reason, other.detail)

    def __hash__(self) -> int:
        return hash((self.reason, self.detail))

    def __repr__(self) -> str:
        return f"ScoreFailure({self.reason!r}, {self.detail[:80]!r})"
