"""What every backend shares, so they agree: the argument checks and their messages, which keys
each query may see, and which output the backward pass takes delta from.

Which keys: queries are the last Tq of Tk positions (bottom-right causal alignment), so query i
sits at absolute position ``Tk - Tq + i`` and sees keys ``j <= Tk - Tq + i``. Left padding
(``seq_start``) and packed sequences (``cu_seqlens``) only raise the lowest visible key, so one
integer per query, ``key_lo``, describes the whole mask: query i sees keys
``key_lo[b, i] <= j <= Tk - Tq + i``. The backward pass of a key block needs the converse,
``query_end``: queries ``i < query_end[b, j]`` (and at or after the causal diagonal) are the only
ones that may see key j.

Which output delta comes from (``keeps_fp32_output``): FlashAttention-2 takes
``delta_i = dO_i . O_i`` from the stored output in the input's precision. That is harmless for
dq, dk and dv, but the bias gradient ``d k_bias_j = -sum_i dS_ij`` carries every row's delta
rounding (about |O| * 2^-8 in bf16), and FoX's gate gradient is a reverse cumulative sum of it
over time, so the rounding errors add up along the sequence (docs/kernels.md has the measured
errors). So when a bias gradient is wanted, the forward keeps its fp32 output for the backward
(one extra fp32 copy of the output per call, saved instead of the low-precision one).
"""

from __future__ import annotations

import math
import os

import torch


def triton_interpreter_enabled() -> bool:
    """Whether ``TRITON_INTERPRET`` asks Triton to run the kernels on the CPU."""
    return os.environ.get("TRITON_INTERPRET", "").lower() in ("1", "true", "on", "yes")


def check_attention_args(q, k, v, q_bias, k_bias, seq_start, cu_seqlens) -> None:
    """Raise ValueError on shapes the kernel's contract does not cover."""
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise ValueError("q, k, v must be [batch, time, heads, head_dim]")
    batch, num_queries, q_heads, head_dim = q.shape
    num_keys, kv_heads = k.shape[1], k.shape[2]
    if k.shape != v.shape[:3] + (head_dim,) or k.shape[0] != batch or k.shape[-1] != head_dim:
        raise ValueError(
            f"k {tuple(k.shape)} and v {tuple(v.shape)} must match q {tuple(q.shape)} in batch and head_dim"
        )
    if v.shape[-1] != head_dim:
        raise ValueError("v must have the same head_dim as q and k")
    if kv_heads == 0 or q_heads % kv_heads:
        raise ValueError(f"query heads ({q_heads}) must be a multiple of key/value heads ({kv_heads})")
    if num_queries > num_keys:
        raise ValueError(f"Tq ({num_queries}) must not exceed Tk ({num_keys}): queries are the last Tq positions")
    if q_bias.shape != (batch, num_queries, q_heads):
        raise ValueError(f"q_bias must be {(batch, num_queries, q_heads)}, got {tuple(q_bias.shape)}")
    if k_bias.shape != (batch, num_keys, q_heads):
        raise ValueError(f"k_bias must be {(batch, num_keys, q_heads)} (one per query head), got {tuple(k_bias.shape)}")
    if cu_seqlens is not None:
        if batch != 1 or num_queries != num_keys:
            raise ValueError("cu_seqlens needs batch 1 and Tq == Tk (packed prefill)")
        if cu_seqlens.dim() != 1 or int(cu_seqlens[0]) != 0 or int(cu_seqlens[-1]) != num_keys:
            raise ValueError("cu_seqlens must be [N+1] offsets from 0 to T")
    if seq_start is not None and seq_start.shape != (batch,):
        raise ValueError(f"seq_start must be [batch] = [{batch}], got {tuple(seq_start.shape)}")


def default_scale(scale: float | None, head_dim: int) -> float:
    return 1.0 / math.sqrt(head_dim) if scale is None else float(scale)


def fp32(t: torch.Tensor) -> torch.Tensor:
    """Biases always enter the logits in fp32."""
    return t if t.dtype == torch.float32 else t.float()


def keeps_fp32_output(dtype: torch.dtype, bias_needs_grad: bool) -> bool:
    """Whether the forward saves an fp32 output for delta (the caller still gets ``dtype``)."""
    return bias_needs_grad and dtype != torch.float32


def _segment_bounds(cu_seqlens: torch.Tensor, length: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Start and end (exclusive) of the packed sequence each position 0..length-1 belongs to."""
    cu = cu_seqlens.to(torch.long)
    positions = torch.arange(length, device=cu.device)
    segment = torch.searchsorted(cu[1:], positions, right=True).clamp(max=cu.numel() - 2)
    return cu[segment], cu[segment + 1]


def key_window_bounds(
    batch: int,
    num_queries: int,
    num_keys: int,
    seq_start: torch.Tensor | None,
    cu_seqlens: torch.Tensor | None,
    device: torch.device,
) -> tuple[torch.Tensor, torch.Tensor] | None:
    """``(key_lo [B, Tq], query_end [B, Tk])`` as int32, or None when plain causal masking suffices."""
    if seq_start is None and cu_seqlens is None:
        return None
    key_lo = torch.zeros(batch, num_queries, dtype=torch.long, device=device)
    query_end = torch.full((batch, num_keys), num_queries, dtype=torch.long, device=device)
    if cu_seqlens is not None:
        starts, ends = _segment_bounds(cu_seqlens.to(device), num_keys)
        key_lo = torch.maximum(key_lo, starts[None, num_keys - num_queries :])
        query_end = torch.minimum(query_end, (ends - (num_keys - num_queries))[None, :])
    if seq_start is not None:
        start = seq_start.to(device=device, dtype=torch.long).reshape(batch, 1)
        key_lo = torch.maximum(key_lo, start)
        before_start = torch.arange(num_keys, device=device)[None, :] < start
        query_end = query_end.masked_fill(before_start, 0)
    return key_lo.to(torch.int32).contiguous(), query_end.to(torch.int32).contiguous()


def visible_keys(
    key_lo: torch.Tensor | None,
    query_rows: range,
    key_cols: range,
    num_queries: int,
    num_keys: int,
    device: torch.device,
) -> torch.Tensor:
    """Boolean ``[B or 1, len(query_rows), len(key_cols)]`` mask of the visible (query, key) pairs."""
    rows = torch.arange(query_rows.start, query_rows.stop, device=device)
    cols = torch.arange(key_cols.start, key_cols.stop, device=device)
    mask = cols[None, :] <= (rows + (num_keys - num_queries))[:, None]
    mask = mask[None]
    if key_lo is not None:
        lo = key_lo[:, query_rows.start : query_rows.stop].to(torch.long)
        mask = mask & (cols[None, None, :] >= lo[:, :, None])
    return mask
