"""LongCache's recall of middle tokens by query-key relevance (position-agnostic top-k).

Every stored entry is kept. For a chunk of queries, the "middle" (after the sinks, before the
local window) is ranked without positions: each query, averaged over its KV group (one
selection per KV head group), scores the middle's pre-RoPE keys by q.k and picks its `top_k`
best; entries are ranked by how many picks they got (ties: best single score), and the spans
of `span_size` tokens centred on them are recalled in that order until `top_k_prime` tokens
are taken. The recalled tokens keep their original order.
"""

from __future__ import annotations

import torch


def recall_middle(queries: torch.Tensor, middle_keys: torch.Tensor, top_k: int, top_k_prime: int, span_size: int) -> torch.Tensor:
    """Sorted indices (into the middle) of the recalled tokens.

    queries: pre-RoPE [H, c, d]; middle_keys: pre-RoPE [Hkv, m, d].
    """
    m = middle_keys.shape[1]
    if m == 0 or top_k_prime <= 0 or top_k <= 0:
        return torch.zeros(0, dtype=torch.long, device=middle_keys.device)
    kv_heads, (heads, c, d) = middle_keys.shape[0], queries.shape
    grouped = queries.float().view(kv_heads, heads // kv_heads, c, d).mean(dim=1)  # mean score over the group
    scores = grouped @ middle_keys.float().transpose(1, 2)  # [Hkv, c, m]
    best, picks = scores.topk(min(top_k, m), dim=-1)
    hits = torch.bincount(picks.flatten(), minlength=m).float()
    top_score = torch.full((m,), float("-inf"), device=scores.device).scatter_reduce_(
        0, picks.flatten(), best.flatten(), reduce="amax"
    )
    candidates = torch.nonzero(hits > 0).flatten()
    order = torch.argsort(top_score[candidates], descending=True, stable=True)
    candidates = candidates[order]
    candidates = candidates[torch.argsort(hits[candidates], descending=True, stable=True)]
    if span_size <= 1:
        return candidates[:top_k_prime].sort().values
    taken = torch.zeros(m, dtype=torch.bool, device=scores.device)
    count = 0
    for centre in candidates.tolist():
        start = max(0, centre - span_size // 2)
        stop = min(m, start + span_size)
        new = ~taken[start:stop]
        room = top_k_prime - count
        if int(new.sum()) > room:  # a partial last span: keep the tokens nearest the centre
            idx = torch.arange(start, stop, device=scores.device)[new]
            idx = idx[torch.argsort((idx - centre).abs(), stable=True)[:room]]
            taken[idx] = True
            break
        taken[start:stop] = True
        count += int(new.sum())
        if count >= top_k_prime:
            break
    return torch.nonzero(taken).flatten()
