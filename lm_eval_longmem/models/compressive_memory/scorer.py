"""Teacher-forced scoring under Infini-attention (what `forgetting_curve` needs): each row runs
segment by segment through its own memory, and only scored positions reach the output head, so
peak memory is set by the segment length, not by the row's length."""

from __future__ import annotations

from collections.abc import Callable

import torch

from lm_eval_longmem.models.compressive_memory.recurrence import SegmentRecurrence
from lm_eval_longmem.models.runtime.piecewise_scoring import score_in_pieces
from lm_eval_longmem.models.runtime.requests import ScoredContinuation
from lm_eval_longmem.models.runtime.scoring import ScoredSpan


class InfiniScorer:
    strategy = "infini_segments"

    def __init__(self, start_sequence: Callable[[], SegmentRecurrence]):
        self.start_sequence = start_sequence
        self.last_recurrence: SegmentRecurrence | None = None  # kept for inspection (tests, benchmarks)

    @torch.no_grad()
    def score(self, input_ids: torch.Tensor, spans: list[ScoredSpan]) -> list[ScoredContinuation]:
        """Score a right-padded batch [B, T]: row b's real tokens end with its span."""
        return [self._score_row(input_ids[b, : s.start + len(s.targets)].tolist(), s) for b, s in enumerate(spans)]

    def _score_row(self, row: list[int], span: ScoredSpan) -> ScoredContinuation:
        recurrence = self.start_sequence()
        self.last_recurrence = recurrence
        decoder = recurrence.decoder
        vocab = decoder.model.get_output_embeddings().weight.shape[0]
        return score_in_pieces(
            len(row), span, recurrence.segment_length, lambda a, b: recurrence.feed(row[a:b]), decoder.logits, vocab
        )
