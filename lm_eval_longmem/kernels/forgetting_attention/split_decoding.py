"""Splitting a few queries' keys across programs (flash-decoding), and merging the pieces.

One query block against a long cache is one program per (batch, head) walking every key: on the
first GPU run, one query against 64k keys took 1.0 ms with 16 programs on an H200's 132
multiprocessors, 7-13x SDPA. With the keys split, each program attends to its share and writes a
normalised partial output with its base-2 log-sum-exp; ``merge_split_outputs`` weighs the
pieces by ``2^(lse_s - lse)`` (the readable form; the Triton path merges in one launch,
``split_merge_kernel.py``). Only for inference: training needs the whole row's lse in one
place for its backward, so a call that needs gradients is never split.
"""

from __future__ import annotations

import math

import torch

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
