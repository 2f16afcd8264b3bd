"""Teacher-forced scoring of one row fed piece by piece (chunks, segments).

Methods that own the forward loop see a row in pieces and produce each piece's final hidden
states as they go; scoring keeps a running total and sends only the scored positions of a
piece through the output head, a bounded number of positions at a time, so neither the row's
hidden states nor its full logits ever exist at once.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from lm_eval_longmem.models.runtime.heap_release import HeapRelease
from lm_eval_longmem.models.runtime.requests import ScoredContinuation
from lm_eval_longmem.models.runtime.scoring import CHUNK_BYTES, ScoredSpan, SpanTotals


def score_in_pieces(
    row_length: int,
    span: ScoredSpan,
    piece_length: int,
    run_piece: Callable[[int, int], torch.Tensor],
    head: Callable[[torch.Tensor], torch.Tensor],
    vocab_size: int,
) -> ScoredContinuation:
    """`run_piece(start, stop)` returns the final hidden states of positions [start, stop)."""
    totals = SpanTotals()
    scored_end = span.start + len(span.targets)
    head_positions = max(1, CHUNK_BYTES // (4 * vocab_size))
    release = HeapRelease()
    for start in range(0, row_length, piece_length):
        stop = min(start + piece_length, row_length)
        hidden = run_piece(start, stop)
        release.fed(stop - start, hidden.device)
        for first in range(max(start, span.start), min(stop, scored_end), head_positions):
            last = min(first + head_positions, stop, scored_end)
            targets = torch.tensor(span.targets[first - span.start : last - span.start], device=hidden.device)
            totals.add(head(hidden[first - start : last - start]), targets)
    return totals.result(len(span.targets))
