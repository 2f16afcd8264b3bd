"""Which cached blocks each query head reads: the top-k landmark scores, sorted by block index.

`per_token_and_head` (the official default): every query token and head scores every cached
landmark and keeps its own top k. `max_over_tokens` (the official code's choice when the cache is
offloaded): landmark scores are softmaxed over the blocks and maxed over the window's tokens, one
choice per head. The official code maxes over the whole window at once, so a token's blocks
depend on tokens after it; ours maxes over the window's tokens up to and including the current
one, which keeps scoring causal and equal to token-by-token decoding.
"""

from __future__ import annotations

from typing import Literal

import torch

Selection = Literal["per_token_and_head", "max_over_tokens"]


class BlockChooser:
    """Per layer; `running` carries max_over_tokens' maximum across the pieces of one window."""

    def __init__(self, selection: Selection):
        self.selection = selection
        self.running: torch.Tensor | None = None  # [H, n]

    def reset(self) -> None:
        self.running = None

    def choose(self, landmark_scores: torch.Tensor, k: int) -> torch.Tensor:
        """landmark_scores [H, c, n] -> chosen block indices [H, c, k], ascending."""
        scores = landmark_scores.float()
        if self.selection == "max_over_tokens":
            probs = scores.softmax(dim=-1)
            if self.running is not None:
                probs = torch.cat([self.running[:, None], probs], dim=1)
                scores = probs.cummax(dim=1).values[:, 1:]
            else:
                scores = probs.cummax(dim=1).values
            self.running = scores[:, -1]
        return top_blocks(scores, k)


# Scores closer than this (relative) count as tied: float rounding alone moves equal scores this little.
TIE_TOLERANCE = 1e-5


def top_blocks(scores: torch.Tensor, k: int, visible: torch.Tensor | None = None) -> torch.Tensor:
    """Indices of the k highest scores, ascending; ties for the last places go to the most recent blocks.

    `visible` (bool, broadcast to scores) limits the choice to some blocks, for rows that see fewer
    blocks than there are columns (layer_major.py: every window's queries in one call). A row with
    fewer than k visible blocks takes all of them; its remaining places hold hidden blocks, whose
    indices are above every visible one (the visible blocks of a row are a prefix), so they come
    last and the caller masks them.

    Ties are built in: at the first layer every landmark key is the same token's embedding, and all
    blocks older than the last k are scored at one shared position, so their scores are equal up to
    float rounding, which differs with the number of queries in a pass. `torch.topk` would break
    them by that rounding; breaking them by recency makes the choice the same whether a window is
    fed whole or token by token (generation equals teacher forcing)."""
    if visible is not None:
        scores = scores.masked_fill(~visible, float("-inf"))
    kth = scores.topk(k, dim=-1).values[..., -1:]
    tolerance = TIE_TOLERANCE * (1 + kth.abs())
    # Fewer than k scores are surely above the k-th, so all of them are kept; the other places go to
    # the tied scores by recency (their index), of which there are enough (the k-th is one).
    n = scores.shape[-1]
    recency = torch.arange(n, device=scores.device)
    priority = torch.where(scores >= kth - tolerance, recency, -1)
    priority = torch.where(scores > kth + tolerance, n, priority)
    if visible is not None:
        priority = torch.where(visible, torch.where(kth == float("-inf"), n, priority), -1)
    return priority.topk(k, dim=-1).indices.sort(dim=-1).values
