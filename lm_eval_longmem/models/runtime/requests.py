"""The contract between our tasks and our model: token-exact requests and their scores.

Memory tests are built at the token level (a copy target is a span of corpus *tokens*),
but lm-eval requests are strings, and decoding then re-encoding a span does not give the
same tokens back. A `TokenText` is the decoded string *and* the exact token ids: any lm-eval
model sees an ordinary string, while `longmem` scores the ids themselves.

A `ScoredContinuation` is lm-eval's `(loglikelihood, is_greedy)` pair that also carries the
number of continuation tokens the model predicted correctly (teacher forcing, argmax), which
per-token accuracy metrics such as the forgetting curve need, and each continuation token's
negative log-likelihood, which per-position loss curves (`longmem_perplexity`) need.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class TokenText(str):
    """A string that remembers the exact token ids it was decoded from."""

    token_ids: tuple[int, ...]

    def __new__(cls, text: str, token_ids: Sequence[int]):
        obj = super().__new__(cls, text)
        obj.token_ids = tuple(int(t) for t in token_ids)
        return obj

    def __getnewargs__(self):  # keeps the ids through pickling (lm-eval request cache)
        return (str(self), self.token_ids)


def token_ids_of(text) -> tuple[int, ...] | None:
    """The exact token ids behind a request string, or None for a plain string."""
    return text.token_ids if isinstance(text, TokenText) else None


class ScoredContinuation(tuple):
    """`(loglikelihood, is_greedy)` plus `num_correct`, `num_tokens` and (when the scorer kept
    them) `token_nll`, the float32 array of each continuation token's negative log-likelihood."""

    num_correct: int
    num_tokens: int
    token_nll: np.ndarray | None

    def __new__(cls, loglikelihood: float, is_greedy: bool, num_correct: int, num_tokens: int, token_nll=None):
        obj = super().__new__(cls, (float(loglikelihood), bool(is_greedy)))
        obj.num_correct = int(num_correct)
        obj.num_tokens = int(num_tokens)
        obj.token_nll = None if token_nll is None else np.asarray(token_nll, dtype=np.float32)
        return obj

    def __getnewargs__(self):  # keeps the counts through lm-eval's sqlite cache (pickle)
        return (self[0], self[1], self.num_correct, self.num_tokens, self.token_nll)

    @property
    def accuracy(self) -> float:
        return self.num_correct / self.num_tokens if self.num_tokens else float("nan")

    def __repr__(self) -> str:
        return (
            f"ScoredContinuation(loglikelihood={self[0]:.4f}, is_greedy={self[1]}, "
            f"num_correct={self.num_correct}, num_tokens={self.num_tokens})"
        )
