"""LongCache's recall of middle spans by position-agnostic query-key relevance.

As the authors' code does it (OpenMOSS/ReAttention, `cache_utils_v0921.py`, `update` with
`recall_type='qk'`, `pe_original=False`): every stored entry is kept; for a chunk of queries,
each query *head* (GQA: through its KV head) scores the middle's pre-RoPE keys by q.k and
picks its `top_k` best ("mid_size"); the picks of every head and query of the layer are
pooled and counted, and when more distinct keys were picked than `top_k_prime`
("recall_clip") the `top_k_prime` most often picked are kept (ties: best single score, then
the earlier key). Each kept key is the centre of a span of `span_size` contiguous tokens
([centre - span_size//2, centre - span_size//2 + span_size), clamped to the middle); the
union of the spans is recalled, in the original order. So at most top_k_prime * span_size
tokens are recalled, fewer where spans overlap or meet the middle's edges.
"""

from __future__ import annotations

import torch

from lm_eval_longmem.models.bounded_cache.tiled_top_k import top_keys


def pick_counts(queries: torch.Tensor, middle_keys: torch.Tensor, top_k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(counts, best) [m]: how many (query, head) pairs picked each middle key among their `top_k`
    best by q.k (pre-RoPE), and the best score of those picks (-inf where none)."""
    heads = queries.shape[0]
    kv_heads, m, _ = middle_keys.shape
    value, index = top_keys(queries, middle_keys.repeat_interleave(heads // kv_heads, dim=0), top_k)
    counts = torch.zeros(m, dtype=torch.long, device=queries.device)
    counts.index_add_(0, index.flatten(), torch.ones_like(index.flatten()))
    best = torch.full((m,), float("-inf"), dtype=torch.float32, device=queries.device)
    return counts, best.scatter_reduce_(0, index.flatten(), value.flatten(), reduce="amax")


def recall_centres(counts: torch.Tensor, best: torch.Tensor, top_k_prime: int) -> torch.Tensor:
    """[..., top_k_prime]: the most picked keys of each row of counts/best [..., m], as span centres
    (unsorted); where fewer distinct keys were picked, the missing centres repeat the first one
    (same spans, no new token).

    Keys are ranked over all m (picked before unpicked, then by count, best score, index), so the
    number of centres is known on the host and no boolean selection waits for the device."""
    ranked = torch.argsort(best, dim=-1, descending=True, stable=True)  # ties: the earlier key
    ranked = ranked.gather(-1, torch.argsort(counts.gather(-1, ranked), dim=-1, descending=True, stable=True))
    ranked = ranked[..., :top_k_prime]
    if ranked.shape[-1] < top_k_prime:  # fewer keys than centres
        ranked = torch.cat([ranked, ranked[..., :1].expand(*ranked.shape[:-1], top_k_prime - ranked.shape[-1])], -1)
    return torch.where(counts.gather(-1, ranked) > 0, ranked, ranked[..., :1])


def spans_around(centres: torch.Tensor, span_size: int, m: int) -> torch.Tensor:
    """Boolean [m]: the tokens of the spans of `span_size` tokens around `centres`, within [0, m)."""
    offsets = torch.arange(span_size, device=centres.device) - span_size // 2
    covered = torch.zeros(m, dtype=torch.bool, device=centres.device)
    return covered.index_fill_(0, (centres[:, None] + offsets[None, :]).clamp(0, m - 1).flatten(), True)


def recall_middle(
    queries: torch.Tensor, middle_keys: torch.Tensor, top_k: int, top_k_prime: int, span_size: int
) -> torch.Tensor:
    """Sorted indices (into the middle) of the recalled tokens.

    queries: pre-RoPE [H, c, d]; middle_keys: pre-RoPE [Hkv, m, d]; top_k_prime counts spans.
    How many tokens the spans cover depends on the keys: reading it is this recall's one wait
    for the device.
    """
    m = middle_keys.shape[1]
    if m == 0 or top_k_prime <= 0 or top_k <= 0:
        return torch.zeros(0, dtype=torch.long, device=middle_keys.device)
    counts, best = pick_counts(queries, middle_keys, top_k)
    return torch.nonzero(spans_around(recall_centres(counts, best, top_k_prime), span_size, m)).flatten()
