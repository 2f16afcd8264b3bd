"""`streamingllm`: attention sinks plus a recent window (Xiao et al., StreamingLLM).

Keeps the first `sink_length` entries and the most recent ones; once the cache would exceed
`max_context_length`, the oldest entries after the sinks are evicted (a chunk at a time, with
the same `chunk_size` as stated-CLM, as the stated-CLM paper runs its baselines). Keys are
cached before RoPE and positions are re-indexed inside the cache, as in the StreamingLLM paper.
"""

from __future__ import annotations

from dataclasses import dataclass

from lm_eval_longmem.models.bounded_cache import BudgetArgs, CachePolicy, Evidence, LayerCache
from lm_eval_longmem.models.bounded_cache.chunk_windows import WindowShape
from lm_eval_longmem.models.bounded_cache.layer_major_sequence import LayerMajorSequence
from lm_eval_longmem.models.method_framework.bounded_cache_family import BoundedCacheMethod
from lm_eval_longmem.models.method_framework.tiny_settings import TinySettings
from lm_eval_longmem.models.runtime.llama_decoder import Decoder
from lm_eval_longmem.models.runtime.piecewise_scoring import StreamingScorer


@dataclass(frozen=True)
class StreamingLLMArgs(BudgetArgs):
    pass


class StreamingLLMPolicy(CachePolicy):
    name = "streamingllm"
    spares_new_entries = True  # the oldest entries after the sinks go (a chunk never exceeds M - sinks)

    def shrink(self, cache: LayerCache, remove: int, evidence: Evidence | None) -> LayerCache:
        sinks = min(self.args.sink_length, len(cache))
        return cache.without(sinks, sinks + remove)


class StreamingLLM(BoundedCacheMethod):
    name = "streamingllm"
    summary = "StreamingLLM: attention sinks + recent window, positions re-indexed in the cache"
    paper = "StreamingLLM (Xiao et al.)"
    docs_page = "methods/bounded-caches.md"
    tiny_settings = TinySettings(
        acting={"max_context_length": 24, "chunk_size": 8, "sink_length": 4},
        neutral={"max_context_length": 64, "chunk_size": 8, "sink_length": 4},
    )
    Args = StreamingLLMArgs

    def make_policy(self) -> CachePolicy:
        return StreamingLLMPolicy(self.args)

    def make_scorer(self, model):
        """Scoring layer by layer (the chunk runner's results, a fixed number of ops per layer): the
        sinks, and the max_context_length - sink_length entries before each chunk at their own distance."""
        a = self.args
        shape = WindowShape(sinks=a.sink_length, local=a.max_context_length - a.sink_length, chunk=a.chunk_size)
        sequence = LayerMajorSequence(Decoder(model), shape)
        return StreamingScorer(model, lambda: sequence, self.scoring_strategy)
