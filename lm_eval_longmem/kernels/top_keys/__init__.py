"""Each query's k best keys by q.k, each query seeing only a prefix of the keys: LongCache's recall
(every chunk's queries against the middle before that chunk) for all chunks of a layer at once.

`reference.py` says what is computed, readably; `triton_top_keys.py` computes it in one launch,
keeping each query's running best k in registers, so the [heads, queries, keys] scores never exist
in memory (imported only when used); `dispatch.py` says when it runs."""

from .dispatch import triton_has_top_k, use_triton
from .reference import reference_top_keys

__all__ = ["reference_top_keys", "triton_has_top_k", "use_triton"]
