"""Readable PyTorch definition of Landmark Attention's grouped softmax (Mohtashami & Jaggi 2023, §3.1).

Keys come in blocks of ``B`` positions whose last one is the block's landmark. For a query at key
position ``p`` (own block ``o = p // B``) and scores ``s_j``:

    Z   = sum_{j in o, j <= p, j not a landmark} e^{s_j}  +  sum_{b < o} e^{s_{l_b}}
    w_j = e^{s_j} / Z                                        j in the own block
    w_j = (e^{s_{l_b}} / Z) * e^{s_j} / sum_{j' in b} e^{s_j'}   j in an earlier block b (non-landmark)
    w_j = 0                                                  landmarks, and keys after p

so a block's landmark key gates how much the query reads of that block, and the landmark's own
value is never read. Written term by term, one block at a time, as the oracle of the other paths;
not a path for long inputs.
"""

from __future__ import annotations

import torch

from .checks import check_grouped_softmax_args


def reference_grouped_softmax(scores: torch.Tensor, block_size: int) -> torch.Tensor:
    """scores ``[..., Tq, Tk]`` (queries are the last Tq of the Tk key positions) -> weights, same shape."""
    check_grouped_softmax_args(scores, block_size)
    s = scores.double()
    num_queries, num_keys = s.shape[-2:]
    weights = torch.zeros_like(s)
    for q in range(num_queries):
        p = num_keys - num_queries + q
        row = s[..., q, :]
        shift = row[..., : p + 1].amax(dim=-1, keepdim=True)  # exact: every term below shares it
        e = torch.exp(row - shift)
        own = p // block_size
        own_keys = [j for j in range(own * block_size, p + 1) if not _is_landmark(j, block_size)]
        total = e[..., own_keys].sum(dim=-1)
        for b in range(own):
            total = total + e[..., _landmark(b, block_size)]
        for j in own_keys:
            weights[..., q, j] = e[..., j] / total
        for b in range(own):
            members = list(range(b * block_size, _landmark(b, block_size)))
            inside = e[..., members] / e[..., members].sum(dim=-1, keepdim=True)
            weights[..., q, members] = (e[..., _landmark(b, block_size)] / total)[..., None] * inside
    return weights.to(scores.dtype)


def _landmark(block: int, block_size: int) -> int:
    return block * block_size + block_size - 1


def _is_landmark(position: int, block_size: int) -> bool:
    return position % block_size == block_size - 1
