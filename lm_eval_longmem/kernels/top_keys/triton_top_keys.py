"""Triton kernel of `reference_top_keys`: one program per (run of queries, query head) walks the
keys its queries see in tiles, scores a tile with one `tl.dot`, and folds the tile's best k into
the queries' running best k. Nothing but the [H, R, k] result is written.

Ties are broken by construction, not by the sort: each score is packed with its key's index into
one int64, the score's float32 bits mapped to an integer of the same order in the high half and
the index counted down from 2^32 - 1 in the low half. Packed keys are then all distinct, and the
larger of two is the better score or, between equal scores, the earlier key, so `tl.topk` of the
packed keys is exactly the reference's stable ranking.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

EMPTY = -(2**63)  # a packed slot that holds no key: below every packed score, -inf's included
LOW_BITS = 2**32 - 1


@triton.jit
def _ordered_bits(scores):
    """float32 -> int64 in the same order (-inf lowest): a negative float's magnitude bits are flipped."""
    bits = scores.to(tl.int32, bitcast=True)
    return tl.where(bits >= 0, bits, bits ^ 0x7FFFFFFF).to(tl.int64)


@triton.jit
def top_keys_kernel(
    q_ptr,
    k_ptr,
    visible_ptr,
    out_ptr,
    rows,
    width,
    DIM: tl.constexpr,
    DIM_PAD: tl.constexpr,
    GROUP: tl.constexpr,
    K_PAD: tl.constexpr,
    BLOCK_Q: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    run = tl.program_id(0)
    head = tl.program_id(1).to(tl.int64)
    row = run * BLOCK_Q + tl.arange(0, BLOCK_Q)
    in_rows = row < rows
    dims = tl.arange(0, DIM_PAD)
    in_dim = dims < DIM
    q = tl.load(
        q_ptr + (head * rows + row)[:, None] * DIM + dims[None, :],
        mask=in_rows[:, None] & in_dim[None, :],
        other=0.0,
    ).to(tl.float32)
    visible = tl.load(visible_ptr + row, mask=in_rows, other=0)
    best = tl.full((BLOCK_Q, K_PAD), -9223372036854775808, tl.int64)
    key_head = head // GROUP
    for start in range(0, tl.max(visible, axis=0), BLOCK_K):
        column = start + tl.arange(0, BLOCK_K)
        keys = tl.load(
            k_ptr + (key_head * width + column)[:, None] * DIM + dims[None, :],
            mask=(column < width)[:, None] & in_dim[None, :],
            other=0.0,
        ).to(tl.float32)
        scores = tl.dot(q, tl.trans(keys), input_precision="ieee")  # [BLOCK_Q, BLOCK_K], float32 sums
        packed = (_ordered_bits(scores) << 32) | (4294967295 - column.to(tl.int64))[None, :]
        packed = tl.where(column[None, :] < visible[:, None], packed, -9223372036854775808)
        both = tl.reshape(tl.join(best, tl.topk(packed, K_PAD)), (BLOCK_Q, 2 * K_PAD))
        best = tl.topk(both, K_PAD)
    slots = tl.arange(0, K_PAD)
    tl.store(out_ptr + (head * rows + row)[:, None] * K_PAD + slots[None, :], best, mask=in_rows[:, None])


def unpack(packed: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(scores float32, key indices int64) of packed keys, the first k slots; empty slots -> (-inf, 0)."""
    packed = packed[..., :k]
    empty = packed == EMPTY
    index = torch.where(empty, 0, LOW_BITS - (packed & LOW_BITS))
    high = (packed >> 32).to(torch.int32)
    bits = torch.where(high >= 0, high, high ^ 0x7FFFFFFF)
    scores = bits.view(torch.float32).masked_fill(empty, float("-inf"))
    return scores, index


def triton_top_keys(
    queries: torch.Tensor, keys: torch.Tensor, visible: torch.Tensor, k: int, block_q: int = 64, block_k: int = 64
) -> tuple[torch.Tensor, torch.Tensor]:
    """`reference_top_keys` in one launch (see the module docstring). `block_q` queries a program and
    `block_k` keys a tile (powers of two, at least 16): 64 x 64 on 8 warps compiles without spills
    for sm_80 and sm_90 at D 64 and 128 (4 warps spill; benchmarks/kernel_resources.py)."""
    heads, rows, dim = queries.shape
    kv_heads, width, _ = keys.shape
    if width >= 2**32:
        raise ValueError(f"{width} keys: a packed key holds an index below 2^32")
    k_pad = max(2, triton.next_power_of_2(k))  # tl.topk takes a power of two
    out = torch.empty(heads, rows, k_pad, dtype=torch.int64, device=queries.device)
    block_q = min(block_q, max(16, triton.next_power_of_2(rows)))
    top_keys_kernel[(triton.cdiv(rows, block_q), heads)](
        queries.contiguous(),
        keys.contiguous(),
        visible.to(torch.int32).contiguous(),
        out,
        rows,
        width,
        DIM=dim,
        DIM_PAD=max(16, triton.next_power_of_2(dim)),
        GROUP=heads // kv_heads,
        K_PAD=k_pad,
        BLOCK_Q=block_q,
        BLOCK_K=block_k,
        num_warps=8,
    )
    return unpack(out, k)
