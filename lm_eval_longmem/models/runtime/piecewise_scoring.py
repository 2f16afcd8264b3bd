"""Teacher-forced scoring of rows fed piece by piece (chunks, segments, windows, or one layer-major pass).

A method that owns the forward loop sees a row in pieces and gives each piece's outputs as it goes
(`streaming_sequence.StreamingSequence`); scoring keeps a running total and sends only the scored
positions of a piece through the output head, a bounded number of positions at a time, so neither
the row's hidden states nor its full logits ever exist at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch

from lm_eval_longmem.models.runtime.heap_release import HeapRelease
from lm_eval_longmem.models.runtime.requests import ScoredContinuation
from lm_eval_longmem.models.runtime.scoring import CHUNK_BYTES, ScoredSpan, SpanTotals
from lm_eval_longmem.models.runtime.streaming_sequence import StreamingSequence


class StreamingScorer:
    """Scores each row through a fresh sequence of `start_sequence()` (rows run one at a time: each
    has its own memory, compressed at its own moments)."""

    def __init__(self, model, start_sequence: Callable[[], StreamingSequence], strategy: str):
        self.start_sequence = start_sequence
        self.strategy = strategy  # what results files record as `longmem_scoring`
        self.vocab_size = model.get_output_embeddings().weight.shape[0]

    @torch.no_grad()
    def score(self, input_ids: torch.Tensor, spans: list[ScoredSpan]) -> list[ScoredContinuation]:
        """Score a right-padded batch [B, T]: row b's real tokens end with its span."""
        return [self.score_row(input_ids[b, : s.start + len(s.targets)].tolist(), s) for b, s in enumerate(spans)]

    def score_row(self, row: list[int], span: ScoredSpan) -> ScoredContinuation:
        sequence = self.start_sequence()
        pieces = sequence.feed_pieces(row, read_from=span.start, last=True)
        return score_in_pieces(pieces, span, sequence.head, self.vocab_size)


def score_in_pieces(
    pieces: Iterable[tuple[int, torch.Tensor]],
    span: ScoredSpan,
    head: Callable[[torch.Tensor], torch.Tensor],
    vocab_size: int,
) -> ScoredContinuation:
    """`pieces` yields `(start, rows)`: the outputs of positions start, start + 1, ... in order."""
    totals = SpanTotals()
    scored_end = span.start + len(span.targets)
    head_positions = max(1, CHUNK_BYTES // (4 * vocab_size))
    release = HeapRelease()
    for start, rows in pieces:
        stop = start + rows.shape[0]
        release.fed(stop - start, rows.device)
        for first in range(max(start, span.start), min(stop, scored_end), head_positions):
            last = min(first + head_positions, stop, scored_end)
            targets = torch.tensor(span.targets[first - span.start : last - span.start], device=rows.device)
            totals.add(head(rows[first - start : last - start]), targets)
    return totals.result(len(span.targets))
