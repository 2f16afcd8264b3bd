"""Stated-CLM's scorer: the chunk runner until the cache is full, then the static-shape step.

The fill (chunks before the cache first reaches its budget, and the chunk that crosses it) and the
row's last chunk (which shrinks nothing) run through `BoundedCacheRunner` as for every bounded cache;
every full chunk in between runs through `StatedCLMStep` over the stacked caches, with the row's
token ids uploaded once.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from lm_eval_longmem.models.bounded_cache.policy import CachePolicy
from lm_eval_longmem.models.bounded_cache.runner import BoundedCacheRunner
from lm_eval_longmem.models.bounded_cache.scorer import BoundedCacheScorer
from lm_eval_longmem.models.bounded_cache.stated_clm_step import StackedCache, StatedCLMStep
from lm_eval_longmem.models.runtime.llama_decoder import Decoder
from lm_eval_longmem.models.runtime.piecewise_scoring import score_in_pieces
from lm_eval_longmem.models.runtime.requests import ScoredContinuation
from lm_eval_longmem.models.runtime.scoring import ScoredSpan
from lm_eval_longmem.models.runtime.token_upload import ids_to_device


class StatedCLMScorer(BoundedCacheScorer):
    def __init__(self, decoder: Decoder, make_policy: Callable[[], CachePolicy], compiled: bool = False):
        super().__init__(decoder, make_policy)
        args = make_policy().args
        self.step = StatedCLMStep(
            decoder, args.max_context_length, args.chunk_size, args.sink_length, args.sigma, compiled
        )
        self.steady_chunks = 0  # chunks the step ran in the last row (tests, benchmarks)

    def _score_row(self, row: list[int], span: ScoredSpan) -> ScoredContinuation:
        policy = self.make_policy()
        runner = BoundedCacheRunner(self.decoder, policy)
        ids = ids_to_device(row, self.decoder.device)
        stacked: StackedCache | None = None
        self.steady_chunks = 0

        def run_chunk(start: int, stop: int) -> torch.Tensor:
            nonlocal stacked
            more = stop < len(row)  # after the last chunk nothing reads the cache: no shrink needed
            full = stacked is not None or len(runner) == policy.budget
            if more and full and stop - start == self.step.chunk_size:
                stacked = StackedCache.of(runner.caches) if stacked is None else stacked
                hidden, stacked = self.step(stacked, ids[start : stop + 1])
                self.steady_chunks += 1
                return hidden
            if stacked is not None:  # back to the runner (the row's last chunk)
                runner.caches, stacked = stacked.layers(), None
            return runner.feed_chunk(row[start:stop], next_id=row[stop] if more else None, shrink=more)

        vocab = self.decoder.model.get_output_embeddings().weight.shape[0]
        result = score_in_pieces(len(row), span, policy.args.chunk_size, run_chunk, self.decoder.logits, vocab)
        self.last_runner = runner
        return result
