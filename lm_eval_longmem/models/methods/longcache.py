"""`longcache`: LongCache (Liu et al. 2024, "Farewell to length extrapolation"), the stated-CLM
paper's second baseline.

Every entry is kept, but attention sees a bounded window: the `sink_length` first entries, up
to `top_k_prime` middle tokens recalled by position-agnostic query-key relevance (each query
picks its `top_k` best pre-RoPE keys; see bounded_cache/recall.py), and the most recent
max_context_length - sink_length - top_k_prime entries. Positions are re-assigned inside that
window (recalled tokens in their original order), so the model never sees a position beyond
it. Settings are the stated-CLM paper's appendix B: top-k = 4, top-k' = 256 (its value for
models other than Llama-2/3 and Gemma-2B), and Table 3's sink/budget/chunk.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from lm_eval_longmem.models.bounded_cache import BoundedCacheMethod, BudgetArgs, CachePolicy, Evidence, LayerCache
from lm_eval_longmem.models.bounded_cache.recall import recall_middle


@dataclass(frozen=True)
class LongCacheArgs(BudgetArgs):
    top_k: int = field(default=4, metadata={"help": "keys each query picks from the middle (top-k)"})
    top_k_prime: int = field(default=256, metadata={"help": "middle tokens recalled into the window (top-k')"})
    span_size: int = field(default=1, metadata={"help": "tokens recalled around each picked key"})

    def __post_init__(self):
        super().__post_init__()
        if self.top_k < 0 or self.top_k_prime < 0 or self.span_size < 1:
            raise ValueError("top_k and top_k_prime must be >= 0 and span_size >= 1")
        if self.local_window < 1:
            raise ValueError(
                f"max_context_length ({self.max_context_length}) must exceed sink_length + top_k_prime "
                f"({self.sink_length} + {self.top_k_prime}) to leave a local window"
            )

    @property
    def local_window(self) -> int:
        return self.max_context_length - self.sink_length - self.top_k_prime


class LongCachePolicy(CachePolicy):
    name = "longcache"
    keeps_everything = True

    def window(self, layer_index: int, cache: LayerCache, queries: torch.Tensor) -> LayerCache:
        n, sinks, local = len(cache), self.args.sink_length, self.args.local_window
        if n <= self.budget:
            return cache
        middle_end = n - local
        recalled = recall_middle(
            queries, cache.keys[:, sinks:middle_end], self.args.top_k, self.args.top_k_prime, self.args.span_size
        )
        device = cache.counts.device
        index = torch.cat([torch.arange(sinks, device=device), recalled + sinks, torch.arange(middle_end, n, device=device)])
        return cache.take(index)

    def shrink(self, cache: LayerCache, remove: int, evidence: Evidence | None) -> LayerCache:
        raise AssertionError("LongCache keeps every entry")


class LongCache(BoundedCacheMethod):
    name = "longcache"
    summary = "LongCache: sinks + recalled top-k middle tokens + local window, positions re-assigned"
    Args = LongCacheArgs

    def make_policy(self) -> CachePolicy:
        return LongCachePolicy(self.args)
