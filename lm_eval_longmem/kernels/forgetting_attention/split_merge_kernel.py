"""The merge of split-key decoding as one Triton launch (imported only when the Triton path runs).

``split_decoding.merge_split_outputs`` does it in about a dozen PyTorch ops. A decoding step is a
few queries, so each op is a launch that costs more host time than GPU time: on an H100, one
query against 64k keys took 1.0 ms in all where SDPA took 0.1 ms. This kernel does the same sums
in one program per (batch x head, query): weights ``2^(lse_s - max)`` over the splits (0 for a
split that saw no key, whose lse is +inf), normalised, the outputs summed with them, and the
row's lse (+inf when no split saw a key, whose output is then 0).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def merge_split_outputs_kernel(
    PARTIAL_OUT,
    PARTIAL_LSE,
    OUT,
    LSE,
    stride_ps,
    stride_pb,
    stride_pt,
    stride_ph,
    stride_ls,
    stride_ob,
    stride_ot,
    stride_oh,
    num_splits,
    num_queries,
    q_heads,
    HEAD_DIM: tl.constexpr,
    SPLITS: tl.constexpr,
):
    batch_head = tl.program_id(0)
    row = tl.program_id(1)
    b = batch_head // q_heads
    head = batch_head % q_heads
    splits = tl.arange(0, SPLITS)
    dims = tl.arange(0, HEAD_DIM)
    split_ok = splits < num_splits
    lse = tl.load(PARTIAL_LSE + splits * stride_ls + batch_head * num_queries + row, mask=split_ok, other=float("inf"))
    lse = tl.where(lse == float("inf"), float("-inf"), lse)  # a split with no key weighs 0
    row_max = tl.max(lse, 0)
    finite_max = tl.where(row_max == float("-inf"), 0.0, row_max)
    weights = tl.math.exp2(lse - finite_max)
    total = tl.sum(weights, 0)
    weights = weights / tl.where(total > 0, total, 1.0)
    partial = tl.load(
        PARTIAL_OUT + splits[:, None] * stride_ps + b * stride_pb + row * stride_pt + head * stride_ph + dims[None, :],
        mask=split_ok[:, None],
        other=0.0,
    )
    out = tl.sum(partial * weights[:, None], 0)
    tl.store(OUT + b * stride_ob + row * stride_ot + head * stride_oh + dims, out.to(OUT.dtype.element_ty))
    row_lse = tl.where(total > 0, finite_max + tl.math.log2(total), float("inf"))
    tl.store(LSE + batch_head * num_queries + row, row_lse)


def merge_split_outputs_triton(partial_out: torch.Tensor, partial_lse: torch.Tensor, q_heads: int, out_dtype):
    """As ``split_decoding.merge_split_outputs`` (same shapes in and out), the output in ``out_dtype``."""
    splits, batch, num_queries, _, head_dim = partial_out.shape
    out = torch.empty(partial_out.shape[1:], dtype=out_dtype, device=partial_out.device)
    lse = torch.empty(partial_lse.shape[1:], dtype=torch.float32, device=partial_lse.device)
    merge_split_outputs_kernel[(batch * q_heads, num_queries)](
        partial_out,
        partial_lse,
        out,
        lse,
        partial_out.stride(0),
        partial_out.stride(1),
        partial_out.stride(2),
        partial_out.stride(3),
        partial_lse.stride(0),
        out.stride(0),
        out.stride(1),
        out.stride(2),
        splits,
        num_queries,
        q_heads,
        HEAD_DIM=head_dim,
        SPLITS=max(2, triton.next_power_of_2(splits)),
    )
    return out, lse
