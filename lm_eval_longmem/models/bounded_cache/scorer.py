"""Teacher-forced scoring through a bounded cache (what `forgetting_curve` needs).

Each row is fed in chunks of `chunk_size`; the logits of a chunk's tokens are taken as the
chunk is processed (before the cache is shrunk for the next one), and only the scored
positions go through the output head. Rows are run one at a time: each has its own cache,
compressed at its own moments.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from lm_eval_longmem.models.bounded_cache.policy import CachePolicy
from lm_eval_longmem.models.bounded_cache.runner import BoundedCacheRunner
from lm_eval_longmem.models.runtime.llama_decoder import Decoder
from lm_eval_longmem.models.runtime.piecewise_scoring import score_in_pieces
from lm_eval_longmem.models.runtime.requests import ScoredContinuation
from lm_eval_longmem.models.runtime.scoring import ScoredSpan


class BoundedCacheScorer:
    def __init__(self, decoder: Decoder, make_policy: Callable[[], CachePolicy]):
        self.decoder = decoder
        self.make_policy = make_policy
        self.strategy = f"bounded_cache:{make_policy().name}"
        self.last_runner: BoundedCacheRunner | None = None  # kept for inspection (tests, benchmarks)

    @torch.no_grad()
    def score(self, input_ids: torch.Tensor, spans: list[ScoredSpan]) -> list[ScoredContinuation]:
        """Score a right-padded batch [B, T]: row b's real tokens end with its span."""
        return [self._score_row(input_ids[b, : s.start + len(s.targets)].tolist(), s) for b, s in enumerate(spans)]

    def _score_row(self, row: list[int], span: ScoredSpan) -> ScoredContinuation:
        policy = self.make_policy()
        runner = BoundedCacheRunner(self.decoder, policy)

        def run_chunk(start: int, stop: int) -> torch.Tensor:
            more = stop < len(row)  # after the last chunk nothing reads the cache: no shrink needed
            return runner.feed_chunk(row[start:stop], next_id=row[stop] if more else None, shrink=more)

        vocab = self.decoder.model.get_output_embeddings().weight.shape[0]
        result = score_in_pieces(len(row), span, policy.args.chunk_size, run_chunk, self.decoder.logits, vocab)
        self.last_runner = runner
        return result
