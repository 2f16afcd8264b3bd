"""Bounded KV caches: one forward loop (chunked prefill, decoding, count-weighted attention over
pre-RoPE keys re-indexed inside the cache) shared by stated-CLM, StreamingLLM and LongCache,
which differ only in their `CachePolicy` (models/methods/{statedclm,streamingllm,longcache}.py; their
base class, `BoundedCacheMethod`, is in models/method_framework/bounded_cache_family.py, above this machinery)."""

from lm_eval_longmem.models.bounded_cache.layer_cache import LayerCache
from lm_eval_longmem.models.bounded_cache.policy import BudgetArgs, CachePolicy, Evidence
from lm_eval_longmem.models.bounded_cache.runner import BoundedCacheRunner

__all__ = ["BoundedCacheRunner", "BudgetArgs", "CachePolicy", "Evidence", "LayerCache"]
