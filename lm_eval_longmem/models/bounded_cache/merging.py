"""Stated-CLM's compression math (§3.2-3.3), as plain tensor functions.

* `pair_scores`: eq. 18-19. score_i = a_i + a_{i+1} (a = attention received, summed over
  queries and heads), score'_i = exp(-i / sigma) * score_i, and +inf for pairs touching the
  first `sink_length` entries, which are never merged.
* `select_pairs`: the `n` adjacent pairs with the lowest score'. Pairs may share an entry; a
  run of r chosen pairs merges r + 1 adjacent entries into one (a nested compression, as
  compress(compress(jumps, over), the) in eq. 5), so exactly n entries disappear.
* `fisher_merge`: eq. 13 with the diagonal Fisher H = g^2 (eq. 14) and the gradient terms
  dropped (the paper's choice). A diagonal H has no cross-token block (H^12 = 0), so eq. 13
  reduces, per element, to the Fisher-weighted average e* = sum_j g_j^2 e_j / sum_j g_j^2.
  Where every g_j of an element is zero (no information), the plain average is used.
  Counts add up (§3.2.2).
"""

from __future__ import annotations

import functools
import math

import torch

from lm_eval_longmem.models.bounded_cache import fisher_average_cpu
from lm_eval_longmem.models.bounded_cache.layer_cache import LayerCache


@functools.lru_cache(maxsize=8)
def position_decay(n: int, sigma: float, device: torch.device) -> torch.Tensor:
    """exp(-i / sigma) for i = 0 .. n-1 (eq. 19), made once per cache length: every layer of a
    chunk, and every chunk once the cache is full, has the same n. Read only."""
    return torch.exp(-torch.arange(n, device=device, dtype=torch.float32) / sigma)


def pair_scores(
    received: torch.Tensor, sink_length: int, sigma: float, decay: torch.Tensor | None = None
) -> torch.Tensor:
    """score'_i for the pairs (i, i + 1), i = 0 .. N-2 (eq. 18-19, sinks at +inf), from received [..., N]:
    leading dimensions (layers) are scored at once. `decay`: `position_decay(N - 1, sigma)` made by the
    caller (a compiled caller cannot use the memo)."""
    received = received.float()
    scores = received[..., :-1] + received[..., 1:]
    if decay is None:
        decay = position_decay(scores.shape[-1], sigma, scores.device)
    scores = decay * scores
    scores[..., : min(sink_length, scores.shape[-1])] = math.inf
    return scores


def select_pairs(scores: torch.Tensor, n: int, sink_length: int) -> torch.Tensor:
    """Boolean [..., N-1]: pair i (entries i, i+1) is merged. The n lowest scores outside the sinks.

    How many pairs lie outside the sinks is known from the shapes, so nothing is read back from
    the device (a read would stall the GPU queue once per layer and chunk)."""
    outside = scores.shape[-1] - min(sink_length, scores.shape[-1])
    if n > outside:
        raise ValueError(f"cannot merge {n} pairs: only {outside} pairs are outside the sinks")
    chosen = torch.zeros_like(scores, dtype=torch.bool)
    return chosen.scatter_(-1, torch.topk(scores, n, dim=-1, largest=False).indices, True)


def merge_groups(pairs: torch.Tensor) -> torch.Tensor:
    """Group id [..., N] of each entry after merging the chosen pairs [..., N-1] (runs become one group)."""
    starts_new = torch.ones(*pairs.shape[:-1], pairs.shape[-1] + 1, dtype=torch.long, device=pairs.device)
    starts_new[..., 1:] = (~pairs).long()
    return torch.cumsum(starts_new, -1) - 1


def merge_counts(counts: torch.Tensor, groups: torch.Tensor, num_groups: int) -> torch.Tensor:
    """Tokens per merged entry [L, G]: the counts [L, N] of each group's members add up (§3.2.2)."""
    merged = torch.zeros(*counts.shape[:-1], num_groups, dtype=counts.dtype, device=counts.device)
    return merged.scatter_add_(-1, groups, counts)


def fisher_average(x: torch.Tensor, grad: torch.Tensor, groups: torch.Tensor, num_groups: int) -> torch.Tensor:
    """Per-element Fisher-weighted average of x [S, L, Hkv, N, d] over `groups` [L, N] (per layer,
    non-decreasing ids of runs) -> [S, L, Hkv, G, d], for S stacked tensors (keys and values) of L
    layers, each weighted by its own gradients. Entries merged with nothing come out as they went
    in (weight 0: x / 1).

    Every shape is fixed by N and G (both known on the host) and the merged runs are picked out by
    masks, not by boolean indexing, so the merge never waits for the device; keys and values of
    every layer go through one set of ops. On the CPU, float32 goes to a C function that reads each
    run once (`fisher_average_cpu.py`); this is its reference."""
    if fisher_average_cpu.takes(x, grad):
        return fisher_average_cpu.cpu_fisher_average(x, grad, groups, num_groups)
    size = merge_counts(torch.ones_like(groups), groups, num_groups)  # [L, G] members per group
    involved = size.gather(-1, groups) > 1  # [L, N]: the entry belongs to a merged run
    members, g = x.float(), grad.float()
    # rescaled by the largest |g| over each tensor's and layer's merged entries: no underflow; ratios unchanged
    largest = torch.where(involved[:, None], g.abs().amax(dim=4), 0.0).amax(dim=(2, 3))[:, :, None, None, None]
    weighted_here = (largest > 0) & involved[:, None, :, None]  # [S, L, 1, N, 1]
    # in place where a temporary would be as large as the cache (every layer's, in the stacked step)
    fisher = (g / largest).square_().masked_fill_(~weighted_here, 0.0)
    index = groups[None, :, None, :, None].expand(x.shape)  # [S, L, Hkv, N, d]
    shape = (*x.shape[:3], num_groups, x.shape[4])
    weighted, weight, plain = torch.zeros(3, *shape, dtype=torch.float32, device=x.device).unbind(0)
    weight.scatter_add_(3, index, fisher)
    plain.scatter_add_(3, index, members).div_(size.float()[:, None, :, None])
    weighted.scatter_add_(3, index, fisher.mul_(members)).div_(weight.clamp_min(torch.finfo(torch.float32).tiny))
    return torch.where(weight > 0, weighted, plain).to(x.dtype)


def fisher_merge(
    cache: LayerCache, pairs: torch.Tensor, key_grad: torch.Tensor, value_grad: torch.Tensor, merged_pairs: int
) -> LayerCache:
    """The cache after merging the chosen pairs (`merged_pairs` of them, as the caller chose:
    the result has N - merged_pairs entries): keys and values each by their own Fisher weights."""
    groups = merge_groups(pairs)[None]  # one layer
    num_groups = len(cache) - merged_pairs
    counts = merge_counts(cache.counts[None], groups, num_groups)[0]
    stacked = torch.stack([cache.keys, cache.values])[:, None]
    keys, values = fisher_average(stacked, torch.stack([key_grad, value_grad])[:, None], groups, num_groups)[:, 0]
    return LayerCache(keys, values, counts)
