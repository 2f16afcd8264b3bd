"""`statedclm`: stated causal language modeling (stated-CLM), §3 of the paper.

Once the cache holds `max_context_length` entries, every chunk of `chunk_size` new tokens is
absorbed by merging as many adjacent pairs of cached entries, per layer, in key/value space:
the pairs that received the least attention from the chunk (eq. 18, normalized by
exp(-i/sigma), eq. 19; the first `sink_length` entries never merge), each replaced by the
Fisher-weighted average of its keys and of its values (eq. 13-14, gradient terms dropped),
with the gradients of one backward of the chunk's causal-LM loss. A merged entry counts for
the tokens it stands for: its attention logit gets + log(count) (eq. 17).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lm_eval_longmem.models.bounded_cache import BudgetArgs, CachePolicy, Evidence, LayerCache
from lm_eval_longmem.models.bounded_cache.merging import fisher_merge, pair_scores, select_pairs
from lm_eval_longmem.models.bounded_cache.stated_clm_runner import StatedCLMRunner
from lm_eval_longmem.models.bounded_cache.stated_clm_step import StatedCLMStep
from lm_eval_longmem.models.method_framework.bounded_cache_family import BoundedCacheMethod
from lm_eval_longmem.models.method_framework.tiny_settings import TinySettings
from lm_eval_longmem.models.runtime.llama_decoder import Decoder
from lm_eval_longmem.models.runtime.piecewise_scoring import StreamingScorer


@dataclass(frozen=True)
class StatedCLMArgs(BudgetArgs):
    sigma: float | None = field(
        default=None,
        metadata={
            "help": "positional normalization exp(-i/sigma) of eq. 19; default: max_context_length (the paper "
            "sets sigma equal to its cache budget, 4096 and 4096)"
        },
    )
    compile_step: bool = field(
        default=False,
        metadata={
            "help": "score the chunks after the cache is full with torch.compile(fullgraph=True) of the steady-state "
            "step (same results; the first call compiles, tens of seconds; worth it on a GPU for long inputs)"
        },
    )

    def __post_init__(self):
        super().__post_init__()
        if self.sigma is None:  # resolved here so results and run names record the number used
            object.__setattr__(self, "sigma", float(self.max_context_length))
        if self.sigma <= 0:
            raise ValueError(f"sigma must be positive, got {self.sigma}")


class StatedCLMPolicy(CachePolicy):
    name = "statedclm"
    needs_evidence = True
    unit_counts = False

    def shrink(self, cache: LayerCache, remove: int, evidence: Evidence | None) -> LayerCache:
        scores = pair_scores(evidence.received, self.args.sink_length, self.args.sigma)
        pairs = select_pairs(scores, remove, self.args.sink_length)
        return fisher_merge(cache, pairs, evidence.key_grad, evidence.value_grad, remove)


class StatedCLM(BoundedCacheMethod):
    name = "statedclm"
    summary = "stated-CLM: merge adjacent KV pairs (Fisher-weighted) to keep a bounded cache"
    paper = "*Stated Causal Language Modeling*"
    docs_page = "methods/bounded-caches.md"
    tiny_settings = TinySettings(
        acting={"max_context_length": 24, "chunk_size": 8, "sink_length": 4},
        neutral={"max_context_length": 64, "chunk_size": 8, "sink_length": 4},
    )
    Args = StatedCLMArgs

    def make_policy(self) -> CachePolicy:
        return StatedCLMPolicy(self.args)

    def make_scorer(self, model):
        """The chunk runner until the cache is full, then one static-shape step per chunk."""
        decoder, a = Decoder(model), self.args
        step = StatedCLMStep(decoder, a.max_context_length, a.chunk_size, a.sink_length, a.sigma, a.compile_step)
        return StreamingScorer(model, lambda: StatedCLMRunner(decoder, self.make_policy(), step), self.scoring_strategy)
