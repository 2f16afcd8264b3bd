"""Stated-CLM's scoring sequence: the chunk runner until the cache is full, then the static-shape step.

The fill (chunks before the cache first reaches its budget, and the chunk that crosses it) and the
row's last chunk run through `BoundedCacheRunner` as for every bounded cache; every full chunk in
between runs through `StatedCLMStep` over the stacked caches, with the row's token ids uploaded
once. Generation keeps the plain runner: a decoded token needs the cache as it stands.
"""

from __future__ import annotations

from lm_eval_longmem.models.bounded_cache.policy import CachePolicy
from lm_eval_longmem.models.bounded_cache.runner import BoundedCacheRunner
from lm_eval_longmem.models.bounded_cache.stated_clm_step import StackedCache, StatedCLMStep
from lm_eval_longmem.models.runtime.llama_decoder import Decoder
from lm_eval_longmem.models.runtime.streaming_sequence import piece_bounds
from lm_eval_longmem.models.runtime.token_upload import ids_to_device


class StatedCLMRunner(BoundedCacheRunner):
    def __init__(self, decoder: Decoder, policy: CachePolicy, steady_step: StatedCLMStep):
        super().__init__(decoder, policy)
        self.steady_step = steady_step  # one per scorer: its compiled graph serves every row

    def feed_pieces(self, ids: list[int], read_from: int = 0, last: bool = False):
        chunk = self.policy.args.chunk_size
        on_device = ids_to_device(ids, self.decoder.device)
        stacked: StackedCache | None = None
        for start, stop in piece_bounds(len(ids), chunk):
            more = stop < len(ids)
            full = stacked is not None or len(self) == self.policy.budget
            if more and full and stop - start == chunk:
                stacked = StackedCache.of(self.caches) if stacked is None else stacked
                hidden, stacked = self.steady_step(stacked, on_device[start : stop + 1])
                yield start, hidden
                continue
            if stacked is not None:  # back to the runner (the row's last chunk)
                self.caches, stacked = stacked.layers(), None
            yield start, self.feed_chunk(ids[start:stop], next_id=ids[stop] if more else None, shrink=more or not last)
