"""What the top-keys kernel computes, written for reading (and for the kernel's tests)."""

from __future__ import annotations

import torch


def reference_top_keys(
    queries: torch.Tensor, keys: torch.Tensor, visible: torch.Tensor, k: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(scores, key indices) [H, R, k], best first, float32: each query's k best keys by q.k among
    the first `visible[r]` keys. Among equal scores the earlier key is picked; a query that sees
    fewer than k keys gets score -inf (and an index of no meaning) in the slots left over.

    queries [H, R, d]; keys [Hkv, W, d] (query head h reads key head h // (H // Hkv));
    visible [R] (int, at most W)."""
    heads, _, _ = queries.shape
    keys = keys.repeat_interleave(heads // keys.shape[0], dim=0)
    scores = queries.float() @ keys.float().transpose(1, 2)  # [H, R, W]
    hidden = torch.arange(keys.shape[1], device=keys.device)[None, :] >= visible[:, None]
    scores = scores.masked_fill(hidden[None], float("-inf"))
    if scores.shape[-1] < k:  # fewer keys than picks: the missing slots are empty
        scores = torch.nn.functional.pad(scores, (0, k - scores.shape[-1]), value=float("-inf"))
    value, index = scores.sort(dim=-1, descending=True, stable=True)
    return value[..., :k], index[..., :k]
