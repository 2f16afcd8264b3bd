"""Teacher-forced scoring under a kvpress press (the forgetting curve, perplexity).

A request's context, less its last token, is the press's prefill; its last token and the
continuation then run against the compressed cache, so every scored prediction (the first
continuation token's included) reads the compressed cache, never the full one. Logits exist
only for those scored positions, a bounded number at a time. Rows run one at a time: each has
its own cache, compressed by what its own context holds.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from lm_eval_longmem.models.kv_presses.pressed_sequence import PressedSequence
from lm_eval_longmem.models.runtime.requests import ScoredContinuation
from lm_eval_longmem.models.runtime.scoring import CHUNK_BYTES, ScoredSpan, SpanTotals


class PressScorer:
    def __init__(self, model, make_press: Callable[[], object], press_name: str):
        self.model = model
        self.make_press = make_press
        self.strategy = f"kvpress:{press_name}"
        self.last_sequence: PressedSequence | None = None  # kept for inspection (tests, benchmarks)

    @torch.no_grad()
    def score(self, input_ids: torch.Tensor, spans: list[ScoredSpan]) -> list[ScoredContinuation]:
        """Score a right-padded batch [B, T]: row b's real tokens end with its span."""
        return [self._score_row(input_ids[b, : s.start + len(s.targets)].tolist(), s) for b, s in enumerate(spans)]

    def _score_row(self, row: list[int], span: ScoredSpan) -> ScoredContinuation:
        vocab = self.model.get_output_embeddings().weight.shape[0]
        sequence = PressedSequence(self.model, self.make_press(), CHUNK_BYTES // (4 * vocab))
        sequence.prefill(row[: span.start])
        totals = SpanTotals()
        targets = torch.tensor(span.targets, device=self.model.device)
        done = 0
        for logits in sequence.logits_by_piece(row[span.start :]):
            totals.add(logits, targets[done : done + logits.shape[0]])
            done += logits.shape[0]
        self.last_sequence = sequence
        return totals.result(len(span.targets))
