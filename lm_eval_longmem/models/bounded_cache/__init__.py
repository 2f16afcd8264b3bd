"""Bounded KV caches: one forward loop (chunked prefill, decoding, count-weighted attention over
pre-RoPE keys re-indexed inside the cache) shared by stated-CLM, StreamingLLM and LongCache,
which differ only in their `CachePolicy` (models/methods/{statedclm,streamingllm,longcache}.py)."""

from lm_eval_longmem.models.bounded_cache.layer_cache import LayerCache
from lm_eval_longmem.models.bounded_cache.method import BoundedCacheMethod
from lm_eval_longmem.models.bounded_cache.policy import BudgetArgs, CachePolicy, Evidence
from lm_eval_longmem.models.bounded_cache.runner import BoundedCacheRunner

__all__ = ["BoundedCacheMethod", "BoundedCacheRunner", "BudgetArgs", "CachePolicy", "Evidence", "LayerCache"]
