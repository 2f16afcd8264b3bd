"""Each query's k best keys by q.k, each query seeing only a prefix of the keys: LongCache's recall
(every chunk's queries against the middle before that chunk) for all chunks of a layer at once.

`reference.py` says what is computed, readably; `triton_top_keys.py` computes it in one launch,
keeping each query's running best k in registers, so the [heads, queries, keys] scores never exist
in memory (imported only when used); `scan_top_keys.py` is the CPU's way: ATen's q.k in cached
tiles, ranked by a small C scan (`scan_top_keys.c`); `dispatch.py` says which runs."""

from .dispatch import top_keys_path, triton_has_top_k
from .reference import reference_top_keys

__all__ = ["reference_top_keys", "top_keys_path", "triton_has_top_k"]
