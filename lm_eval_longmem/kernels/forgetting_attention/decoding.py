"""Decoding: a few queries' keys split across programs (flash-decoding), and the merge of the
pieces (imported only when the Triton path runs).

One query block against a long cache is one program per (batch, head) walking every key, which
leaves most of a GPU's multiprocessors idle. With the keys split, each program attends to its
share and writes a normalised partial output with its base-2 log-sum-exp; ``merge_split_outputs``
weighs the pieces by ``2^(lse_s - lse)`` (the readable form). The Triton path merges in one
launch (``merge_split_outputs_triton``): a decoding step is a few queries, so each of the dozen
PyTorch ops of the readable merge would be a launch costing more host time than GPU time (the
measured decode times are in docs/benchmarks.md). Only for inference: training needs the whole
row's lse in one place for its backward, so a call that needs gradients is never split.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

DECODE_MAX_QUERIES = 16  # at most this many queries: the decode configs (BLOCK_M = 16) and splitting
MIN_KEYS_PER_SPLIT = 512
SPLIT_MULTIPLE = 128  # every split starts on a key block boundary for any BLOCK_N the configs use


def key_splits(num_queries: int, num_keys: int, programs: int, device: torch.device, needs_grad: bool) -> int:
    """How many programs share one query block's keys: enough for about two programs per
    multiprocessor, each with at least MIN_KEYS_PER_SPLIT keys; 1 for prefill or training."""
    if needs_grad or num_queries > DECODE_MAX_QUERIES or num_keys < 2 * MIN_KEYS_PER_SPLIT:
        return 1
    wanted = math.ceil(2 * _multiprocessors(device) / max(programs, 1))
    return max(1, min(wanted, num_keys // MIN_KEYS_PER_SPLIT))


def split_length(num_keys: int, splits: int) -> int:
    """Keys per split, a multiple of SPLIT_MULTIPLE (the last split may hold fewer)."""
    return math.ceil(math.ceil(num_keys / splits) / SPLIT_MULTIPLE) * SPLIT_MULTIPLE


def _multiprocessors(device: torch.device) -> int:
    if device.type != "cuda":
        return 4  # the Triton interpreter on the CPU: enough splits to exercise the merge
    return torch.cuda.get_device_properties(device).multi_processor_count


def merge_split_outputs(partial_out: torch.Tensor, partial_lse: torch.Tensor, q_heads: int):
    """Merge ``partial_out [S, B, Tq, HQ, D]`` (fp32, each normalised over its split) with
    ``partial_lse [S, B*HQ, Tq]`` (base 2; +inf where a split saw no key) into the output
    ``[B, Tq, HQ, D]`` and the row's lse ``[B*HQ, Tq]`` (+inf for rows with no key at all)."""
    splits, batch, num_queries = partial_out.shape[0], partial_out.shape[1], partial_out.shape[2]
    lse = partial_lse.masked_fill(partial_lse == float("inf"), float("-inf"))
    row_max = lse.amax(dim=0)
    finite_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    weights = torch.exp2(lse - finite_max)  # [S, B*HQ, Tq]; 0 for empty splits
    total = weights.sum(dim=0)
    weights = weights / torch.where(total > 0, total, torch.ones_like(total))
    weights = weights.reshape(splits, batch, q_heads, num_queries).transpose(2, 3)[..., None]
    out = (partial_out * weights).sum(dim=0)
    row_lse = torch.where(total > 0, finite_max + torch.log2(total), torch.full_like(total, float("inf")))
    return out, row_lse


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
    """One program per (batch x head, query): weights ``2^(lse_s - max)`` over the splits (0 for a
    split that saw no key, whose lse is +inf), normalised, the outputs summed with them, and the
    row's lse (+inf when no split saw a key, whose output is then 0)."""
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
    """As ``merge_split_outputs`` (same shapes in and out), the output in ``out_dtype``."""
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
