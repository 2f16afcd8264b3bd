"""Argument checks shared by every path of the grouped softmax."""

from __future__ import annotations

import torch


def check_grouped_softmax_args(scores: torch.Tensor, block_size: int) -> None:
    if scores.dim() < 2:
        raise ValueError(f"scores must be [..., Tq, Tk], got shape {tuple(scores.shape)}")
    if block_size < 2:
        raise ValueError(f"block_size must be at least 2 (a landmark and one token), got {block_size}")
    if scores.shape[-2] > scores.shape[-1]:
        raise ValueError(f"more queries ({scores.shape[-2]}) than keys ({scores.shape[-1]}): queries are the last keys")
    if not scores.is_floating_point():
        raise ValueError(f"scores must be floating point, got {scores.dtype}")
