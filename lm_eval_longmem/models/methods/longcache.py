"""`longcache`: LongCache (Liu et al. 2024, "Farewell to length extrapolation", since renamed
ReAttention), the stated-CLM paper's second baseline, recalling what its authors' code recalls.

Every entry is kept, but attention sees a bounded window of `max_context_length` entries: the
`sink_length` first ones, spans of `span_size` contiguous tokens recalled from the middle by
position-agnostic query-key relevance (each query head picks its `top_k` best pre-RoPE keys;
the `top_k_prime` most picked keys become span centres; see bounded_cache/recall.py), and
the most recent max_context_length - sink_length - top_k_prime * span_size entries. Positions
are re-assigned inside that window (recalled spans in their original order), so the model
never sees a position beyond it.

Defaults are the authors' (OpenMOSS/ReAttention configs `global_size 32, mid_size 4,
span_size 32, chunk_size 512`; the stated-CLM paper's appendix B quotes top-k = 4): spans of
32 tokens, and, as in their configs (32 + 127 x 32 + 4096 = 8192 for an 8k model, 48 x 32
recalled beside a 2048 window for a 4k one), about half the budget for the local window and the
rest for recalled spans: top_k_prime = (max_context_length/2 - sink_length) // span_size,
63 spans for the shared budget of 4096. The stated-CLM paper's top-k' of 256 spans would
recall 8192 tokens, more than the budget the three bounded methods share.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from lm_eval_longmem.models.bounded_cache import BudgetArgs, CachePolicy, LayerCache
from lm_eval_longmem.models.bounded_cache.chunk_recall import RecalledSpans
from lm_eval_longmem.models.bounded_cache.chunk_windows import WindowShape
from lm_eval_longmem.models.bounded_cache.layer_major_sequence import LayerMajorSequence
from lm_eval_longmem.models.bounded_cache.recall import recall_middle
from lm_eval_longmem.models.method_framework.bounded_cache_family import BoundedCacheMethod
from lm_eval_longmem.models.method_framework.tiny_settings import TinySettings
from lm_eval_longmem.models.runtime.llama_decoder import Decoder
from lm_eval_longmem.models.runtime.piecewise_scoring import StreamingScorer


@dataclass(frozen=True)
class LongCacheArgs(BudgetArgs):
    top_k: int = field(default=4, metadata={"help": "middle keys each query head picks (the authors' mid_size)"})
    span_size: int = field(default=32, metadata={"help": "contiguous tokens recalled around each picked key"})
    top_k_prime: int | None = field(
        default=None,
        metadata={
            "help": "spans recalled (the authors' recall_clip; default: half the budget, "
            "(max_context_length/2 - sink_length) // span_size)"
        },
    )

    def __post_init__(self):
        super().__post_init__()
        if self.top_k < 0 or self.span_size < 1 or (self.top_k_prime is not None and self.top_k_prime < 0):
            raise ValueError("top_k and top_k_prime must be >= 0 and span_size >= 1")
        if self.top_k_prime is None:
            half = self.max_context_length // 2 - self.sink_length
            object.__setattr__(self, "top_k_prime", max(0, half // self.span_size))
        if self.local_window < 1:
            most = max(0, (self.max_context_length - self.sink_length - 1) // self.span_size)
            raise ValueError(
                f"max_context_length ({self.max_context_length}) must exceed sink_length + top_k_prime * span_size "
                f"({self.sink_length} + {self.top_k_prime} * {self.span_size}) to leave a local window. Fix: "
                f"top_k_prime={most} or fewer, "
                f"or max_context_length={self.sink_length + self.recalled_tokens + 1} or more."
            )

    @property
    def recalled_tokens(self) -> int:
        """The most tokens recalled into the window (spans may overlap: then fewer)."""
        return self.top_k_prime * self.span_size

    @property
    def local_window(self) -> int:
        return self.max_context_length - self.sink_length - self.recalled_tokens


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
        index = torch.cat(
            [torch.arange(sinks, device=device), recalled + sinks, torch.arange(middle_end, n, device=device)]
        )
        return cache.take(index)

    def shrink(self, cache: LayerCache, remove: int, evidence) -> LayerCache:
        raise AssertionError("LongCache keeps every entry")


class LongCache(BoundedCacheMethod):
    name = "longcache"
    summary = "LongCache: sinks + recalled spans of contiguous middle tokens (top-k q.k picks) + local window"
    paper = 'Liu et al. 2024, "Farewell to length extrapolation" (ReAttention)'
    docs_page = "methods/bounded-caches.md"
    tiny_settings = TinySettings(
        acting={"max_context_length": 24, "chunk_size": 8, "sink_length": 4, "top_k_prime": 3, "span_size": 2},
        neutral={"max_context_length": 64, "chunk_size": 8, "sink_length": 4, "top_k_prime": 3, "span_size": 2},
    )
    Args = LongCacheArgs

    def make_policy(self) -> CachePolicy:
        return LongCachePolicy(self.args)

    def make_scorer(self, model):
        """Scoring layer by layer (the chunk runner's results, a fixed number of ops per layer, no host
        read): the sinks, the recalled spans as fixed slot lists, the local window at its own distance."""
        a = self.args
        shape = WindowShape(a.sink_length, a.local_window, a.chunk_size, slots=a.recalled_tokens)
        recall = RecalledSpans(a.max_context_length, a.top_k, a.top_k_prime, a.span_size)
        sequence = LayerMajorSequence(Decoder(model), shape, recall)
        return StreamingScorer(model, lambda: sequence, self.scoring_strategy)
