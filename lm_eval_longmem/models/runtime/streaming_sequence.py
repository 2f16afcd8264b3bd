"""What a method that runs its own forward loop gives the shared scorer and generator: one sequence.

Bounded caches, kvpress, Infini-attention and Landmark Attention each keep their own memory of a
sequence, but score and generate alike: feed a row piece by piece, send some outputs through the
output head, decode one token at a time. Each fills in this protocol for one sequence
(`BoundedCacheRunner`, `PressedSequence`, `SegmentRecurrence`, landmark's `VisibleStream`; the
layer-major scorers are sequences fed in one piece) and `piecewise_scoring.StreamingScorer` and
`stepwise_decoding.StreamingGenerator` do the rest, so a method writes no loop of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

import torch


class StreamingSequence(Protocol):
    """One sequence (a fresh memory) fed after what came before."""

    def feed_pieces(self, ids: list[int], read_from: int = 0, last: bool = False) -> Iterator[tuple[int, torch.Tensor]]:
        """Feed `ids` in the method's own pieces. Yields `(start, rows)` per piece: `rows[i]` is the
        output that predicts the token after `ids[start + i]` (a final hidden state, or its logits
        where `head` is the identity); the rows cover at least every position from `read_from` on,
        in order. `last`: nothing is fed after `ids`, so the memory need not be made ready for more.
        A generator: each piece runs when the caller asks for it, so the caller can score a piece
        before the next exists. Called once per sequence, on a fresh one (kvpress's prefill and the
        layer-major passes rely on it); `step` continues after it."""

    def head(self, rows: torch.Tensor) -> torch.Tensor:
        """Next-token logits of output rows."""


class DecodingSequence(StreamingSequence, Protocol):
    def step(self, token: int) -> torch.Tensor:
        """Decode: feed one token; the output row [1, ...] that predicts the token after it."""


def piece_bounds(length: int, piece_length: int) -> Iterator[tuple[int, int]]:
    """(start, stop) of consecutive pieces of `piece_length` tokens (the last may be shorter)."""
    for start in range(0, length, piece_length):
        yield start, min(start + piece_length, length)
