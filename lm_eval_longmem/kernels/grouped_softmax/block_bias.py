"""The grouped softmax as one ordinary softmax with a per-(query, block) bias, in PyTorch.

For a key j of an earlier block b the grouped weight is ``softmax_j(s_j + beta_b)`` over the
non-landmark visible keys, with ``beta_b = s_{l_b} - logsumexp_{j' in b} s_j'`` (0 for the own
block): the landmark's share ``e^{s_l}/Z`` split by the block's own softmax. Reshaping the keys
into ``[blocks, B]`` makes that a handful of vectorised reductions, differentiated by autograd;
it is the CPU path and the fallback of the Triton kernel.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .checks import check_grouped_softmax_args


def block_bias_grouped_softmax(scores: torch.Tensor, block_size: int) -> torch.Tensor:
    check_grouped_softmax_args(scores, block_size)
    num_queries, num_keys = scores.shape[-2:]
    num_blocks = -(-num_keys // block_size)
    s = F.pad(
        scores.to(torch.promote_types(scores.dtype, torch.float32)),
        (0, num_blocks * block_size - num_keys),
        value=float("-inf"),
    )
    s = s.unflatten(-1, (num_blocks, block_size))  # [..., Tq, nb, B]
    members, landmarks = s[..., :-1], s[..., -1]
    positions = torch.arange(num_keys - num_queries, num_keys, device=scores.device)
    own = (positions // block_size)[:, None]  # [Tq, 1]
    blocks = torch.arange(num_blocks, device=scores.device)[None, :]  # [1, nb]
    beta = torch.where(blocks < own, landmarks - torch.logsumexp(members, dim=-1), 0.0)
    offsets = blocks[..., None] * block_size + torch.arange(block_size - 1, device=scores.device)  # [1, nb, B-1]
    visible = (blocks[..., None] < own[..., None]) | (
        (blocks[..., None] == own[..., None]) & (offsets <= positions[:, None, None])
    )
    logits = torch.where(visible, members + beta[..., None], float("-inf"))
    weights = torch.softmax(logits.flatten(-2), dim=-1).unflatten(-1, (num_blocks, block_size - 1))
    weights = torch.cat([weights, torch.zeros_like(weights[..., :1])], dim=-1).flatten(-2)
    return weights[..., :num_keys].to(scores.dtype)
