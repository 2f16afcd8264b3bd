"""Argument checks and normalisation shared by all backends, so they fail with the same messages."""

from __future__ import annotations

import math

import torch


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
